"""End-to-end benchmark of the trial chain (`mcengine bench --stage chain`).

For each shipped scenario and the case study it measures, in one run:

* trials/s of the whole chain (inputs → fab → reliability → roofline → econ, chunked
  runner with streaming summaries) at 1 and at 2 numba threads, and the speed-up;
* the time of the stage functions alone on the same trials, so the orchestration
  overhead (sampling, checks, summaries, chunking) is ``chain / sum(stages) − 1``;
* peak resident memory of a child process running ``mcengine run`` (10⁶ trials of
  h100, or a small run with ``quick``), which must not grow with the trial count.

Compile time is kept out of the timings by a warm-up run first (reported apart). Each
timing is the best of ``repeats`` runs (:data:`REPEATS`; 1 with ``quick``), the 1- and
2-thread runs alternating and the repeats going round all the cases, so that a busy
neighbour on a shared machine, which slows a run and never speeds one up, weighs on the
figures as little as it can (the ``timeit`` convention): a slow spell of a minute
spreads over every case instead of taking all the runs of one (it did: the same
reliability kernel, in ``lite-h100`` and ``lite-h100-2x``, once showed speed-ups of 1.5
and 1.9 side by side).
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time

import numba

from .. import api
from ..pipeline import fab_key, reliability_key, share_lifetimes, shared_columns
from ..scenario import load_scenario
from ..scenario.load import load_study
from ..scenario.sampling import draw_inputs

#: Timed runs per case and thread count (the best counts).
REPEATS = 5


def _chain_seconds(refs: list[str], trials: int, threads: int) -> float:
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        start = time.perf_counter()
        api.run(refs, trials=trials, seed=1, keep_trials=False, figures=False)
        return time.perf_counter() - start
    finally:
        numba.set_num_threads(before)


def _stage_seconds(refs: list[str], trials: int) -> dict[str, float]:
    from ..stages import econ, fab, roofline

    out = {"fab": 0.0, "reliability": 0.0, "roofline": 0.0, "econ": 0.0}
    # as in the chain: scenarios with equal fab_key / reliability_key share columns, and
    # those that differ only in swap or restart laws share a reliability kernel pass
    memo: dict = {}
    scenarios = tuple(load_scenario(ref) for ref in refs)
    drawn = {s.name: draw_inputs(s, 1, 0, trials) for s in scenarios}
    t0 = time.perf_counter()
    share_lifetimes(scenarios, drawn, 1, memo)
    out["reliability"] = time.perf_counter() - t0
    for s in scenarios:
        inputs = drawn[s.name]
        t0 = time.perf_counter()
        cols = shared_columns(memo, fab_key(s), lambda: fab.production_runs(s, inputs, 1))
        t1 = time.perf_counter()
        cols.update(memo[reliability_key(s)])
        cols.update(roofline.throughput(s, inputs))
        t2 = time.perf_counter()
        econ.economics(s, inputs, cols)
        t3 = time.perf_counter()
        for key, dt in (("fab", t1 - t0), ("roofline", t2 - t1), ("econ", t3 - t2)):
            out[key] += dt
    return out


def _peak_rss_mb(trials: int) -> dict:
    """Peak RSS of a child `mcengine run h100 --trials N` (bounded-memory check)."""
    cmd = [sys.executable, "-m", "mcengine.cli", "run", "h100", "--trials", str(trials), "--quiet", "--json"]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    elapsed = time.perf_counter() - start
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"trials": trials, "peak_rss_mb": peak_kb / 1024, "elapsed_s": elapsed, "trials_per_s": trials / elapsed}


def run(quick: bool = False) -> dict:
    trials = 1024 if quick else 8192
    t0 = time.perf_counter()
    _chain_seconds(["h100", "lite-h100"], 1024, numba.config.NUMBA_NUM_THREADS)
    compile_s = time.perf_counter() - t0
    cases = {name: [name] for name in ("h100", "lite-h100", "lite-h100-2x", "lite-h100-2x-fastswap")}
    cases["case-study"] = list(load_study("case-study")["scenarios"])
    repeats = 1 if quick else REPEATS
    if quick:
        cases = {"case-study": cases["case-study"]}
    one = {label: float("inf") for label in cases}
    two = dict(one)
    stages: dict[str, dict[str, float]] = {label: {} for label in cases}
    for _ in range(repeats):  # round the cases: a slow spell of the machine spreads over them all
        for label, refs in cases.items():
            one[label] = min(one[label], _chain_seconds(refs, trials, 1))
            two[label] = min(two[label], _chain_seconds(refs, trials, min(2, numba.config.NUMBA_NUM_THREADS)))
            for stage, seconds in _stage_seconds(refs, trials).items():
                stages[label][stage] = min(stages[label].get(stage, float("inf")), seconds)
    rows = {}
    for label, refs in cases.items():
        kernels = sum(stages[label].values())
        rows[label] = {
            "scenarios": len(refs),
            "trials": trials,
            "repeats": repeats,
            "trials_per_s_1_thread": trials / one[label],
            "trials_per_s_2_threads": trials / two[label],
            "speedup_1_to_2_threads": one[label] / two[label],
            "stage_seconds_2_threads": stages[label],
            "orchestration_overhead": two[label] / kernels - 1.0,
            "projected_s_for_1e6_trials": two[label] * 1e6 / trials,
        }
    return {"warmup_and_compile_s": compile_s, "cases": rows, "memory": _peak_rss_mb(4096 if quick else 1_000_000)}
