"""The gain of randomised quasi-Monte Carlo inputs (``run.sampler = "sobol"``) over
pseudo-random ones, at equal trials, measured over repeated runs.

The case study (``quick``: h100 against lite-h100) runs ``repeats`` times per sampler,
each run a different seed (so a different scrambling, or different random draws), with
the same trials. For each headline estimate (every design's mean cost per token and
mean availability; each pair's mean and median paired cost ratio and P(B cheaper than
A)) the standard error at equal trials is the spread of its ``repeats`` values; the gain
is ``(SE random / SE sobol)**2``, the factor of trials plain Monte Carlo would need for
the precision of one Sobol' run. The mean ``sem`` each run reports beside the spread
checks that the scramblings' standard error is honest (it should match the spread).
"""

from __future__ import annotations

import math

import numpy as np

SAMPLERS = ("random", "sobol")


def _estimates(doc: dict) -> dict[str, tuple[float, float]]:
    """``name -> (estimate, the run's own sem or nan)`` of one run's summary."""
    out = {}
    for name, metrics in doc["scenarios"].items():
        for metric in ("cost_per_mtok_usd", "availability"):
            s = metrics[metric]
            out[f"{name}: mean {metric}"] = (s["mean"], s["sem"])
    for pair, metrics in doc.get("paired_all", {}).items():
        ratio = metrics["cost_per_mtok_usd"]
        out[f"{pair}: mean paired cost ratio"] = (ratio["ratio"]["mean"], ratio["ratio"]["sem"])
        out[f"{pair}: median paired cost ratio"] = (ratio["ratio"]["p50"], math.nan)
        out[f"{pair}: P(B cheaper)"] = (ratio["p_b_below_a"], math.nan)
    return out


def run(quick: bool = False) -> dict:
    """Standard errors at equal trials, sobol against random, over repeated runs.

    Returns
    -------
    dict
        JSON-able: ``trials``, ``repeats``, ``scramblings`` and one row per estimate:
        its mean over every run, per sampler the spread over repeats (``se_<sampler>``)
        and the mean reported ``sem`` (``reported_sem_<sampler>``), and
        ``variance_gain`` = (se_random / se_sobol)**2.
    """
    from mcengine.runner import RunSpec, execute
    from mcengine.scenario import load_scenario
    from mcengine.scenario.load import load_study

    refs = ["h100", "lite-h100"] if quick else list(load_study("case-study")["scenarios"])
    trials, repeats = (1024, 4) if quick else (4096, 12)
    values: dict[str, dict[str, list]] = {s: {} for s in SAMPLERS}
    scramblings = 0
    for sampler in SAMPLERS:
        scenarios = tuple(load_scenario(ref, [f'run.sampler="{sampler}"']) for ref in refs)
        scramblings = scenarios[0].run.scramblings
        for seed in range(repeats):
            outcome = execute(RunSpec(scenarios, 1000 + seed, trials))
            for key, pair in _estimates(outcome.accumulators.summary()).items():
                values[sampler].setdefault(key, []).append(pair)
    rows = []
    for key in values["random"]:
        row = {"estimate": key}
        every = [v for s in SAMPLERS for v, _ in values[s][key]]
        row["value"] = float(np.mean(every))
        for s in SAMPLERS:
            est = np.array([v for v, _ in values[s][key]])
            row[f"se_{s}"] = float(est.std(ddof=1))
            sems = [e for _, e in values[s][key]]
            row[f"reported_sem_{s}"] = None if math.isnan(sems[0]) else float(np.mean(sems))
        se_r, se_s = row["se_random"], row["se_sobol"]
        row["variance_gain"] = (se_r / se_s) ** 2 if se_s > 0 else None  # (None: no spread to compare)
        rows.append(row)
    return {"scenarios": refs, "trials": trials, "repeats": repeats, "scramblings": scramblings, "estimates": rows}
