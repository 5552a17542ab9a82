"""Chain trials/s with a demand (the load stage, docs/load.md) against ``"saturate"``:
the same trials of the case study's designs through :func:`mcengine.pipeline.run_chunk`,
warmed up outside the timer; the ratio of the times per trial is the load stage's cost."""

from __future__ import annotations

import time

from mcengine import api
from mcengine.pipeline import run_chunk

#: The case study's designs; the demand of configs/studies/load-diurnal.toml.
DESIGNS = ("h100", "lite-h100", "lite-h100-2x", "lite-h100-2x-fastswap")
DEMAND = ["workload.load.demand=200000", "workload.load.peak_to_mean=1.5"]


def _rate(scenarios: tuple, trials: int, repeats: int) -> float:
    """Trials/s of one chunk of ``trials`` of ``scenarios`` (the best of ``repeats``, after a warm-up)."""
    run_chunk(scenarios, 0, 0, min(trials, 64))
    best = float("inf")
    for r in range(repeats):
        start = time.perf_counter()
        run_chunk(scenarios, 0, (r + 1) * trials, trials)
        best = min(best, time.perf_counter() - start)
    return trials / best


def run(quick: bool = False) -> dict:
    """Trials/s of the case study saturated and at the load-diurnal demand, and their ratio."""
    trials, repeats = (256, 1) if quick else (2048, 3)
    saturate = _rate(tuple(api.check(n) for n in DESIGNS), trials, repeats)
    demand = _rate(tuple(api.check(n, DEMAND) for n in DESIGNS), trials, repeats)
    return {"trials": trials, "repeats": repeats, "demand": DEMAND, "saturate_trials_per_s": saturate, "demand_trials_per_s": demand,
            "time_per_trial_ratio": saturate / demand}
