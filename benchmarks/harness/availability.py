"""Why no variance reduction acting on the lifetime alone reaches 10x on mean
unavailability: the variance of a trial's unavailability ``U = 1 - instance_availability``
split into the part its drawn inputs explain and the part its lifetime's own events add.

Each trial's inputs are drawn once (seed 0) and its lifetime simulated twice, on the
kernel streams of two seeds: the two lifetimes are independent given the inputs, so the
covariance of their ``U`` estimates the between-inputs variance ``Var(E[U | inputs])``
and the rest of ``Var(U)`` is the within-lifetime variance ``E[Var(U | inputs)]``.

Any method that acts on a lifetime at fixed inputs (conditional Monte Carlo on the repair
process, importance sampling of failure times, splitting) can at best remove the
within-lifetime part, so its variance reduction is at most ``Var(U) / Var(E[U | inputs])``
(``ceiling``; ``ceiling_at_2_sem`` with the between part two standard errors higher, the
ceiling the sample cannot rule out); a method on the inputs alone (Sobol' inputs, ``run.sampler = "sobol"``, the
``rqmc`` harness) can at best remove the between part: at most
``Var(U) / E[Var(U | inputs)]`` (``input_ceiling``). docs/performance.md quotes both.
"""

from __future__ import annotations

import numpy as np

#: Case-study designs measured, trials per design, the input seed and the two kernel seeds.
SCENARIOS = ("h100", "lite-h100")
TRIALS, QUICK_TRIALS = 4096, 256
SEED, SEEDS = 0, (0, 1)


def split(name: str, trials: int) -> dict:
    """The variance split of design ``name``'s unavailability over ``trials`` trials."""
    from mcengine.pipeline import reshard_capacity
    from mcengine.scenario import load_scenario
    from mcengine.scenario.sampling import draw_inputs
    from mcengine.stages.reliability import lifetimes

    s = load_scenario(name)
    inputs, capacity = draw_inputs(s, SEED, 0, trials), reshard_capacity(s)
    a, b = (1.0 - lifetimes(s, inputs, seed, capacity)["instance_availability"] for seed in SEEDS)
    total = float(np.var(a, ddof=1))
    between = float(np.cov(a, b)[0, 1])
    sem = float(np.std((a - a.mean()) * (b - b.mean()), ddof=1)) / np.sqrt(trials)  # of the covariance
    within = total - between
    return {"trials": trials, "mean_unavailability": float(a.mean()), "variance": total, "between_inputs": between,
            "between_share": between / total, "between_share_sem": sem / total,
            "ceiling": total / between if between > 0 else float("inf"),
            "ceiling_at_2_sem": total / (between + 2.0 * sem),
            "input_ceiling": total / within if within > 0 else float("inf")}


def run(quick: bool = False) -> dict:
    """The split of each design in :data:`SCENARIOS`."""
    return {name: split(name, QUICK_TRIALS if quick else TRIALS) for name in SCENARIOS}
