"""Peak resident memory of the case study against its trial count: a child
``mcengine run --trials N --chunk-trials 16384`` (the shipped case study, two numba
threads) per N, its peak RSS, CPU seconds (user + system of the child alone) and wall
seconds. The chunks are the largest the adaptive rule picks
(:data:`~mcengine.runner.DEFAULT_CHUNK_TRIALS`, its cap; it picks smaller ones when the
machine is slow or busy), so the peak is the worst case whatever the load, and the
numbers those of any chunking. The peak must stay flat from 10⁴ to 10⁶ trials (docs/performance.md):
a chunk's stages hold at most :data:`mcengine.pipeline.SLICE_TRIALS` trials at once.

``python -m benchmarks memory --against REV`` measures a checkout of git revision REV
too, alternating between the two trees at each trial count (a slow spell of the shared
machine falls on both), and reports the after/before ratios of the peaks.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcengine.runner import DEFAULT_CHUNK_TRIALS

from .compile import ROOT, _checkout, _usage

#: Trial counts of a full measurement and of ``--quick``.
TRIALS = (10_000, 100_000, 1_000_000)
QUICK_TRIALS = (2_048, 8_192)


def measured(args: list[str], root: Path = ROOT, env: dict | None = None) -> tuple[bytes, float, dict]:
    """(stdout, wall seconds, CPU seconds and peak MB) of ``python -m mcengine.cli ARGS`` in a
    fresh process importing the tree at ``root`` with two numba threads (and ``env``);
    RuntimeError with the end of its stderr when it fails."""
    cmd = [sys.executable, "-m", "mcengine.cli", *args]
    env = {**os.environ, "PYTHONPATH": str(root), "NUMBA_NUM_THREADS": "2", **(env or {})}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)  # the child's own CPU time and peak memory
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # (reaped by wait4: tell the Popen object)
        if proc.returncode:
            err.seek(0)
            raise RuntimeError(f"`mcengine {' '.join(args)}` failed in {root}: {err.read().decode()[-2000:]}")
        out.seek(0)
        return out.read(), wall, _usage(usage)


def peak(trials: int, root: Path = ROOT) -> dict:
    """Peak MB, CPU and wall seconds of `mcengine run --trials N` (chunks of
    :data:`DEFAULT_CHUNK_TRIALS`) in a fresh process
    importing the tree at ``root`` (numba's cache as that tree keeps it)."""
    _, wall, usage = measured(["run", "--trials", str(trials), "--seed", "0", "--quiet", "--json",
                               "--chunk-trials", str(DEFAULT_CHUNK_TRIALS)], root)
    return {"trials": trials, "wall_s": wall, **usage}


def run(quick: bool = False, against: str | None = None) -> dict:
    """Peak memory per trial count of this tree (``after``) and, with ``against``, of that
    revision (``before``) measured alternately, with the ratios of the peaks."""
    counts = QUICK_TRIALS if quick else TRIALS
    if against is None:
        return {"after": [peak(n) for n in counts]}
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"before": _checkout(against, tmp), "after": ROOT}
        peak(QUICK_TRIALS[0], trees["before"])  # compile the revision's kernels outside the measurement
        out: dict = {"against": against, "before": [], "after": []}
        for n in counts:
            for side, root in trees.items():
                out[side].append(peak(n, root))
    out["peak_ratio"] = [a["peak_mb"] / b["peak_mb"] for a, b in zip(out["after"], out["before"])]
    return out
