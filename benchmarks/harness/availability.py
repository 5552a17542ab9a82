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

The estimator that acts on both (:mod:`mcengine.standalone.unavailability`, control
variates on the event counts and on their expectations, docs/availability-vr.md) is
measured on :data:`ESTIMATOR_TRIALS` lifetimes of each design (:func:`estimator`): its
variance reduction at equal trials, at equal CPU (its controls' and input means' CPU
seconds added to the lifetimes'), without the input means' own error, and, as an account
of what limits it, with each lifetime's host stock-out hours as one more control (an
oracle: that control's mean is not known, so it only measures the share they hold).
"""

from __future__ import annotations

import numpy as np

#: Case-study designs measured, trials per design, the input seed and the two kernel seeds.
SCENARIOS = ("h100", "lite-h100")
TRIALS, QUICK_TRIALS = 4096, 256
SEED, SEEDS = 0, (0, 1)
#: Lifetimes per design of the estimator's figures (:func:`estimator`).
ESTIMATOR_TRIALS, QUICK_ESTIMATOR_TRIALS = 16384, 512


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


def estimator(name: str, trials: int) -> dict:
    """The control-variate estimator of design ``name``'s mean unavailability over
    ``trials`` lifetimes (seed :data:`SEED`), its variance reduction and CPU seconds."""
    import time

    from mcengine.pipeline import reshard_capacity
    from mcengine.scenario import load_scenario
    from mcengine.scenario.sampling import draw_inputs
    from mcengine.stages.reliability import lifetimes
    from mcengine.standalone.unavailability import ControlMoments, controls, input_means

    s = load_scenario(name)
    lifetimes(s, draw_inputs(s, SEED, 0, 2), SEED, reshard_capacity(s))  # (compiled or loaded before the clock)
    start = time.process_time()
    inputs = draw_inputs(s, SEED, 0, trials)
    columns = lifetimes(s, inputs, SEED, reshard_capacity(s))
    plain_cpu = time.process_time() - start
    start = time.process_time()
    u, (lifetime, expected) = 1.0 - columns["instance_availability"], controls(s, inputs, columns)
    mu, mu_cov = input_means(s, SEED)
    result = ControlMoments().add(u, lifetime, expected).estimate(mu, mu_cov)
    extra_cpu = time.process_time() - start
    exact_means = ControlMoments().add(u, lifetime, expected).estimate(mu, 0.0 * mu_cov)
    stock = columns["host_stockout_hours"][:, None]
    oracle = ControlMoments().add(u, lifetime, np.hstack([expected, stock])).estimate(
        np.append(mu, stock.mean()), np.zeros((mu.size + 1,) * 2))
    vr = result["variance_reduction"]
    return {**result, "plain_cpu_s": plain_cpu, "estimator_cpu_s": extra_cpu,
            "variance_reduction_equal_cpu": vr * plain_cpu / (plain_cpu + extra_cpu),
            "variance_reduction_exact_input_means": exact_means["variance_reduction"],
            "host_stockout_lifetimes": float(np.mean(stock > 0.0)),
            "variance_reduction_with_stockout_oracle": oracle["variance_reduction"]}


def run(quick: bool = False) -> dict:
    """The split of each design in :data:`SCENARIOS`, and its estimator (``estimator``)."""
    return {name: {**split(name, QUICK_TRIALS if quick else TRIALS),
                   "estimator": estimator(name, QUICK_ESTIMATOR_TRIALS if quick else ESTIMATOR_TRIALS)}
            for name in SCENARIOS}
