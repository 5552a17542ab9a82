"""Chain trials/s with a demand (the load stage, the per-trial choice under load and the
fleet bought, docs/load.md) against ``"saturate"``: the same trials of the case study's
designs through :func:`mcengine.pipeline.run_chunk`, warmed up outside the timer, the
cases timed in alternation (saturate, fixed cluster, fleet bought, saturate, ...: a shared
machine's drift falls on all alike), the best of each, in wall seconds and in this
process's CPU seconds (user + system of every thread, what a shared machine's other jobs
disturb least); the ratios of the times per trial are what the demand costs."""

from __future__ import annotations

import time

from mcengine import api
from mcengine.pipeline import run_chunk

#: The case study's designs; the demand and fleet of configs/studies/load-diurnal.toml.
DESIGNS = ("h100", "lite-h100", "lite-h100-2x", "lite-h100-2x-fastswap")
DEMAND = ["workload.load.demand=200000", "workload.load.peak_to_mean=1.5", 'cluster.instances="auto"']
#: The cases timed: saturated, the demand on the scenarios' fixed clusters, the fleet bought.
CASES = {"saturate": [], "fixed": DEMAND[:2], "demand": DEMAND}


def _seconds(scenarios: tuple, start: int, trials: int) -> tuple[float, float]:
    """Wall and CPU seconds of one chunk of ``trials`` of ``scenarios`` from trial ``start``."""
    wall, cpu = time.perf_counter(), time.process_time()
    run_chunk(scenarios, 0, start, trials)
    return time.perf_counter() - wall, time.process_time() - cpu


def run(quick: bool = False) -> dict:
    """Trials/s of the case study saturated, at the load-diurnal demand on fixed clusters
    and with the fleet bought (the best of ``repeats`` alternating chunks each, after a
    warm-up of each), and the ratios of their times per trial to saturation's, wall and CPU."""
    trials, repeats = (256, 1) if quick else (2048, 3)
    cases = {k: tuple(api.check(n, v) for n in DESIGNS) for k, v in CASES.items()}
    for scenarios in cases.values():
        run_chunk(scenarios, 0, 0, min(trials, 64))
    wall, cpu = dict.fromkeys(cases, float("inf")), dict.fromkeys(cases, float("inf"))
    for r in range(repeats):
        for k, scenarios in cases.items():
            w, c = _seconds(scenarios, (r + 1) * trials, trials)
            wall[k], cpu[k] = min(wall[k], w), min(cpu[k], c)
    return {"trials": trials, "repeats": repeats, "demand": DEMAND, "saturate_trials_per_s": trials / wall["saturate"],
            "demand_trials_per_s": trials / wall["demand"], "fixed_trials_per_s": trials / wall["fixed"],
            "time_per_trial_ratio": wall["demand"] / wall["saturate"], "fixed_time_per_trial_ratio": wall["fixed"] / wall["saturate"],
            "cpu_time_per_trial_ratio": cpu["demand"] / cpu["saturate"], "fixed_cpu_time_per_trial_ratio": cpu["fixed"] / cpu["saturate"]}
