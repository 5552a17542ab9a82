"""Benchmark harnesses: each module's ``run(quick)`` times a kernel next to its peer.

`mcengine bench` and the scripts in ``benchmarks/`` call :func:`run_all`.
"""

from __future__ import annotations

import importlib
import os
import platform

from ..errors import InputError, Problem

#: Harness modules, in report order.
BENCH_MODULES = ("fab", "reliability", "chain")


def machine() -> dict:
    import numba

    return {
        "python": platform.python_version(),
        "numba": numba.__version__,
        "cpus": os.cpu_count(),
        "numba_threads": numba.config.NUMBA_NUM_THREADS,
        "machine": platform.machine(),
    }


def run_all(quick: bool = False, stages: tuple[str, ...] = ()) -> dict:
    unknown = [s for s in stages if s not in BENCH_MODULES]
    if unknown:
        raise InputError([Problem("--stage", s, "allowed: " + ", ".join(BENCH_MODULES)) for s in unknown])
    out = {"machine": machine(), "quick": quick}
    for name in stages or BENCH_MODULES:
        out[name] = importlib.import_module(f"{__name__}.{name}").run(quick=quick)
    return out
