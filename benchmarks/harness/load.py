"""Chain trials/s with a demand (the load stage, the per-trial choice under load and the
fleet bought, docs/load.md) against ``"saturate"``: the same trials of the case study's
designs through :func:`mcengine.pipeline.run_chunk`, warmed up outside the timer, the two
timed in alternation (A, B, A, B, ...: a shared machine's drift falls on both alike), the
best of each; the ratio of the times per trial is what the demand costs."""

from __future__ import annotations

import time

from mcengine import api
from mcengine.pipeline import run_chunk

#: The case study's designs; the demand and fleet of configs/studies/load-diurnal.toml.
DESIGNS = ("h100", "lite-h100", "lite-h100-2x", "lite-h100-2x-fastswap")
DEMAND = ["workload.load.demand=200000", "workload.load.peak_to_mean=1.5", 'cluster.instances="auto"']


def _seconds(scenarios: tuple, start: int, trials: int) -> float:
    """Seconds of one chunk of ``trials`` of ``scenarios`` from trial ``start``."""
    began = time.perf_counter()
    run_chunk(scenarios, 0, start, trials)
    return time.perf_counter() - began


def run(quick: bool = False) -> dict:
    """Trials/s of the case study saturated and at the load-diurnal demand (the best of
    ``repeats`` alternating chunks each, after a warm-up of both), and their ratio."""
    trials, repeats = (256, 1) if quick else (2048, 3)
    pair = (tuple(api.check(n) for n in DESIGNS), tuple(api.check(n, DEMAND) for n in DESIGNS))
    for scenarios in pair:
        run_chunk(scenarios, 0, 0, min(trials, 64))
    best = [float("inf"), float("inf")]
    for r in range(repeats):
        for i, scenarios in enumerate(pair):
            best[i] = min(best[i], _seconds(scenarios, (r + 1) * trials, trials))
    saturate, demand = trials / best[0], trials / best[1]
    return {"trials": trials, "repeats": repeats, "demand": DEMAND, "saturate_trials_per_s": saturate, "demand_trials_per_s": demand,
            "time_per_trial_ratio": saturate / demand}
