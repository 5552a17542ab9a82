"""End-to-end chain throughput (:func:`mcengine.bench.chain`) and the peak resident
memory of a child ``mcengine run``, which must not grow with the trial count."""

from __future__ import annotations

import resource
import subprocess
import sys
import time

from mcengine.bench import chain


def peak_rss_mb(trials: int) -> dict:
    """Peak RSS of a child `mcengine run h100 --trials N` (bounded-memory check)."""
    cmd = [sys.executable, "-m", "mcengine.cli", "run", "h100", "--trials", str(trials), "--quiet", "--json"]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    elapsed = time.perf_counter() - start
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"trials": trials, "peak_rss_mb": peak_kb / 1024, "elapsed_s": elapsed, "trials_per_s": trials / elapsed}


def run(quick: bool = False) -> dict:
    """The chain's throughput per case, and the memory of a 10⁶-trial run (4,096 with ``quick``)."""
    return {**chain(quick), "memory": peak_rss_mb(4096 if quick else 1_000_000)}
