"""The SimPy peer: the machine-repairman cluster as a Python user would write it.

``N`` single-GPU instances, each a SimPy process that lives an exponential (or
Weibull) time, then queues for one of ``c`` repair crews (a ``simpy.Resource``, FIFO),
is repaired for an exponential time and is up again; no spares, so a failed GPU's
instance is down from its failure until its repair ends. Randomness from one
``random.Random(seed)`` per lifetime. This is the model of
``benchmarks.harness.reliability`` with ``spare_gpus = 0`` and zero swap and restart times
(a repaired unit goes straight back into the empty slot), and of the closed form
:func:`mcengine.analytic.reliability.machine_repairman` when lives are exponential.

Reference: ConcurrentSim/SimPy's repair-problem examples (docs/sources.md#rel-simulation-peers) and
AIReSim (same entry), a SimPy reliability simulator built the same way.
"""

from __future__ import annotations

import math
import random


def lifetime(n_gpus: int, afr: float, mean_repair_hours: float, crews: float, horizon_hours: float,
             seed: int, weibull_shape: float = 1.0) -> dict:
    """One lifetime of the cluster; returns availability and the events simulated.

    Parameters
    ----------
    n_gpus : int
        Single-GPU instances.
    afr : float
        Permanent failures per GPU-year (1/MTTF, a year of 8,766 h).
    mean_repair_hours : float
        Mean of the exponential repair time.
    crews : float
        Repairs at once (``math.inf``: one per GPU).
    horizon_hours : float
        Length of the lifetime.
    seed : int
        Seed of this lifetime's ``random.Random``.
    weibull_shape : float
        Shape of the time to failure (1: exponential), mean kept at 1/afr.

    Returns
    -------
    dict
        ``instance_availability``, ``failures``, ``repairs`` (completed), ``events``
        (failures + completed repairs).
    """
    import simpy

    rng = random.Random(seed)
    mttf = 8766.0 / afr
    scale = mttf / math.gamma(1.0 + 1.0 / weibull_shape)
    env = simpy.Environment()
    shop = simpy.Resource(env, capacity=int(min(crews, n_gpus)))
    stats = {"down_hours": 0.0, "failures": 0, "repairs": 0}
    down_since: dict[int, float] = {}

    def gpu(i: int):
        while True:
            if weibull_shape == 1.0:
                yield env.timeout(rng.expovariate(1.0 / mttf))
            else:
                yield env.timeout(rng.weibullvariate(scale, weibull_shape))
            stats["failures"] += 1
            down_since[i] = env.now
            with shop.request() as crew:
                yield crew
                yield env.timeout(rng.expovariate(1.0 / mean_repair_hours))
            stats["repairs"] += 1
            stats["down_hours"] += env.now - down_since.pop(i)

    for i in range(n_gpus):
        env.process(gpu(i))
    env.run(until=horizon_hours)
    stats["down_hours"] += sum(horizon_hours - t for t in down_since.values())
    return {
        "instance_availability": 1.0 - stats["down_hours"] / (n_gpus * horizon_hours),
        "failures": stats["failures"],
        "repairs": stats["repairs"],
        "events": stats["failures"] + stats["repairs"],
    }
