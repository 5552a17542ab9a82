"""Whether numba's on-disk cache already holds a command's compiled kernels.

The first run after an install compiles the kernels (the life kernel most of the time;
``python -m benchmarks compile`` measures it) and numba caches the machine code on disk (``cache=True``,
:mod:`mcengine.jit`). :func:`cold` looks at that cache the way numba will: a driver
whose cache index has no entry for the current kernel sources (missing, or stale because
any of :data:`mcengine.jit.KERNEL_SOURCES` changed) will be compiled on its first call. Only the drivers that Python
calls are looked at: the kernels they call are compiled into them.
"""

from __future__ import annotations

#: The drivers each kind of work calls: (kernel module, function).
DRIVERS = {
    "fab": (("fab", "_wafer_block"),),
    "reliability": (("life", "run_block"),),
    "chain": (("fab", "_run_trials"), ("life", "run_block"), ("plan", "fold_best"), ("plan", "disaggregated_rows"),
              ("searches", "largest_batches"), ("continuous", "batches_within_ttft")),
    "serve": (("serve.loop", "simulate"),),
}


def _cached(dispatcher) -> bool:
    """True when the dispatcher's on-disk cache index holds a compiled entry that is
    current for the kernel sources (numba's own index, stamped by
    :func:`mcengine.jit.kernel_sources_digest`)."""
    cache = getattr(dispatcher, "_cache", None)
    load = getattr(getattr(cache, "_cache_file", None), "_load_index", None)
    if load is None:  # caching off (or a numba without this layout): say nothing
        return True
    try:
        return bool(load())
    except (OSError, EOFError, ValueError):  # an unreadable index: numba recompiles
        return False


def cold(work: str) -> bool:
    """True when running ``work`` (a key of :data:`DRIVERS`) will compile kernels first."""
    import importlib

    for module, name in DRIVERS[work]:
        if not _cached(getattr(importlib.import_module(f"mcengine.kernels.{module}"), name)):
            return True
    return False
