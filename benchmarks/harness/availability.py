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
``Var(U) / E[Var(U | inputs)]`` (``input_ceiling``). docs/performance.md#variance-of-availability
explains both; docs/benchmarks.md#availability records them.

The estimator that acts on both (:mod:`mcengine.standalone.unavailability`, control
variates on the event counts and on their expectations, and the host stock-out control:
conditional Monte Carlo on the repairs, docs/availability-vr.md) is measured on
:data:`ESTIMATOR_TRIALS` lifetimes of each design and of the failure-heavy cluster
(:func:`estimator`): its variance reduction at equal trials, at equal CPU (the lifetimes
that keep the host log, the controls' and the input means' CPU seconds, against the
plain lifetimes'), without the input means' own error, with the counts alone (no
stock-out control), and, as an account of what is left, with each lifetime's host
stock-out hours as one more control (an oracle: that control's mean is not known, so it
only measures the share they hold).
"""

from __future__ import annotations

import numpy as np

#: Case-study designs measured, trials per design, the input seed and the two kernel seeds.
SCENARIOS = ("h100", "lite-h100")
TRIALS, QUICK_TRIALS = 4096, 256
SEED, SEEDS = 0, (0, 1)
#: Lifetimes per design of the estimator's figures (:func:`estimator`).
ESTIMATOR_TRIALS, QUICK_ESTIMATOR_TRIALS = 16384, 512
#: The estimator's designs: the case study's and the failure-heavy cluster
#: (:data:`~.reliability.FAILURE_HEAVY`).
ESTIMATOR_SCENARIOS = (*SCENARIOS, "h100-heavy")


def _scenario(name: str):
    """A design of :data:`ESTIMATOR_SCENARIOS` by name."""
    from mcengine.scenario import load_scenario

    from .reliability import failure_heavy

    return failure_heavy() if name == "h100-heavy" else load_scenario(name)


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
    from mcengine.scenario.sampling import draw_inputs
    from mcengine.stages.reliability import lifetimes
    from mcengine.standalone.unavailability import ControlMoments, controls, host_log_size, input_means, stockout_control

    s = _scenario(name)
    warm = draw_inputs(s, SEED, 0, 2)
    stockout_control(s, warm, lifetimes(s, warm, SEED, reshard_capacity(s), 1))  # (compiled or loaded before the clock)
    start = time.process_time()
    inputs = draw_inputs(s, SEED, 0, trials)
    plain = lifetimes(s, inputs, SEED, reshard_capacity(s))
    plain_cpu = time.process_time() - start
    start = time.process_time()
    inputs = draw_inputs(s, SEED, 0, trials)
    columns = lifetimes(s, inputs, SEED, reshard_capacity(s), host_log_size(s, inputs))
    u, (lifetime, expected) = 1.0 - columns["instance_availability"], controls(s, inputs, columns)
    mu, mu_cov = input_means(s, SEED)
    result = ControlMoments().add(u, lifetime, expected).estimate(mu, mu_cov)
    estimator_cpu = time.process_time() - start
    assert all(np.array_equal(plain[k], columns[k]) for k in plain)  # the log moves no other column
    exact_means = ControlMoments().add(u, lifetime, expected).estimate(mu, 0.0 * mu_cov)
    counts_only = ControlMoments().add(u, lifetime[:, :-1], expected).estimate(mu, mu_cov)
    stock = columns["host_stockout_hours"][:, None]
    oracle = ControlMoments().add(u, lifetime, np.hstack([expected, stock])).estimate(
        np.append(mu, stock.mean()), np.zeros((mu.size + 1,) * 2))
    vr = result["variance_reduction"]
    return {**result, "plain_cpu_s": plain_cpu, "estimator_cpu_s": estimator_cpu,
            "variance_reduction_equal_cpu": vr * plain_cpu / estimator_cpu,
            "variance_reduction_exact_input_means": exact_means["variance_reduction"],
            "variance_reduction_counts_only": counts_only["variance_reduction"],
            "host_stockout_lifetimes": float(np.mean(stock > 0.0)),
            "variance_reduction_with_stockout_oracle": oracle["variance_reduction"]}


def run(quick: bool = False) -> dict:
    """The split of each design in :data:`SCENARIOS`, and the estimator (``estimator``) of
    each in :data:`ESTIMATOR_SCENARIOS`."""
    out = {name: split(name, QUICK_TRIALS if quick else TRIALS) for name in SCENARIOS}
    for name in ESTIMATOR_SCENARIOS:
        out.setdefault(name, {})["estimator"] = estimator(name, QUICK_ESTIMATOR_TRIALS if quick else ESTIMATOR_TRIALS)
    return out
