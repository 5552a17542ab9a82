"""Running chunks on a Dask distributed cluster (``--scheduler tcp://HOST:PORT``).

Chunks are submitted a bounded window ahead and gathered strictly in chunk order, so
the driver merges them exactly as a local run would: identical numbers. Workers need
mcengine installed in the same version (``pip install 'mcengine[dask]'`` on each).
"""

from __future__ import annotations

from collections import deque

from .errors import InputError, Problem
from .pipeline import run_chunk

#: Chunks in flight per worker thread (keeps workers busy, memory bounded).
WINDOW_PER_THREAD = 2


def connect(scheduler: str):
    try:
        from dask.distributed import Client
    except ImportError:
        raise InputError(Problem("--scheduler", scheduler, "needs the dask extra: pip install 'mcengine[dask]'")) from None
    try:
        return Client(scheduler, timeout="10s")
    except (OSError, TimeoutError) as exc:
        raise InputError(Problem("--scheduler", scheduler, f"no Dask scheduler answers there ({exc})")) from None


def map_chunks(scheduler: str, spec, bounds):
    """Yield (start, chunk result) in chunk order, computed on the cluster."""
    with connect(scheduler) as client:
        threads = max(1, sum(client.nthreads().values()))
        window = WINDOW_PER_THREAD * threads
        pending: deque = deque()
        todo = iter(bounds)
        for start, n in todo:
            pending.append((start, client.submit(run_chunk, spec.scenarios, spec.seed, start, n, pure=False)))
            if len(pending) >= window:
                break
        while pending:
            start, future = pending.popleft()
            result = future.result()
            future.release()
            nxt = next(todo, None)
            if nxt is not None:
                pending.append((nxt[0], client.submit(run_chunk, spec.scenarios, spec.seed, nxt[0], nxt[1], pure=False)))
            yield start, result
