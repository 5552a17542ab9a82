"""Run a serial kernel over blocks of independent trials on Python threads.

The drivers of the fab and life kernels split their trials into blocks and call a
serial, GIL-free :data:`~mcengine.jit.kernel` per block on a pool of
``numba.get_num_threads()`` threads, rather than ``prange`` over the trials: numba links
every callee's code into its caller's module and optimises and compiles that whole
module again, and a ``prange`` driver stacks four such layers (the loop body, two
gufunc wrappers and the driver) over the kernel it calls. A block's trials write only
their own rows, so the numbers depend neither on the blocks nor on the threads.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

#: Blocks per thread: a few, so a slow block does not leave a thread idle for long.
BLOCKS_PER_THREAD = 4


def run_blocks(kernel, args: tuple, n: int, outs: tuple) -> None:
    """Call ``kernel(*args, i0, i1, *outs)`` for blocks ``[i0, i1)`` covering ``0 .. n - 1``.

    ``kernel`` fills rows ``i0 .. i1 - 1`` of the arrays ``outs``; the blocks run on
    ``numba.get_num_threads()`` threads. The kernel is compiled (or loaded from numba's
    cache) in the calling thread before the pool starts: memory a compile takes in a
    short-lived thread's malloc arena is not reused afterwards (measured: +40 MB peak on
    a first run).
    """
    threads = numba.get_num_threads()
    edges = np.linspace(0, n, min(n, threads * BLOCKS_PER_THREAD) + 1).astype(np.int64)
    blocks = [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]
    if threads == 1 or len(blocks) < 2:
        for i0, i1 in blocks:
            kernel(*args, i0, i1, *outs)
        return
    kernel.compile(tuple(numba.typeof(a) for a in (*args, 0, 0, *outs)))
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(lambda b: kernel(*args, b[0], b[1], *outs), blocks))  # (list: raises a block's error)
