"""Benchmark of the request-level serving simulator (mcengine/kernels/serve): requests/s,
beside a SimPy peer of the plain queue.

Cases: the simulator as an M/M/4 queue at utilisation 0.7 (the same model as the SimPy
peer: Poisson arrivals, a FIFO queue, four servers, exponential service), and each
shipped design (h100, lite-h100) in each serving mode at half its capacity on 128
instances (fixed output lengths, Poisson arrivals). The first call (numba compile, or
load from the on-disk cache) is timed apart; the best of ``repeats`` timed runs is
reported.
"""

from __future__ import annotations

import time

import numpy as np

from mcengine.scenario import load_scenario
from mcengine.standalone.serve import queue_system, serving_system, simulate_requests

DESIGNS = ("h100", "lite-h100")
MODES = ("static", "continuous", "disaggregated")
LOAD = 0.5


def simpy_mmc(requests: int, lam: float, mu: float, servers: int, seed: int = 0) -> np.ndarray:
    """Waits of ``requests`` customers of an M/M/c FIFO queue in SimPy (the peer)."""
    import simpy

    rng = np.random.default_rng(seed)
    env = simpy.Environment()
    desk = simpy.Resource(env, capacity=servers)
    waits = np.empty(requests)

    def customer(i):
        arrived = env.now
        with desk.request() as req:
            yield req
            waits[i] = env.now - arrived
            yield env.timeout(rng.exponential(1.0 / mu))

    def source():
        for i in range(requests):
            yield env.timeout(rng.exponential(1.0 / lam))
            env.process(customer(i))

    env.process(source())
    env.run()
    return waits


def _best(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def run(quick: bool = False) -> dict:
    """Requests/s of the simulator per case, and of the SimPy peer on the plain queue."""
    n = 20_000 if quick else 200_000
    repeats = 1 if quick else 3
    system, lengths = queue_system(4, 1.0, exponential=True)
    start = time.perf_counter()
    simulate_requests(system, 2.8, 100, lengths=lengths)
    first_call_s = time.perf_counter() - start
    ours = n / _best(lambda: simulate_requests(system, 2.8, n, lengths=lengths), repeats)
    peer_n = n // 10
    peer = peer_n / _best(lambda: simpy_mmc(peer_n, 2.8, 1.0, 4), 1)
    doc = {"requests": n, "first_call_s": first_call_s,
           "mmc": {"requests_per_s": ours, "simpy_requests_per_s": peer, "ratio": ours / peer}, "designs": {}}
    for name in DESIGNS:
        scenario = load_scenario(name)
        for mode in MODES:
            s = serving_system(scenario, mode)
            rate = LOAD * s.capacity_tokens_per_s / s.output_tokens
            doc["designs"][f"{name}/{mode}"] = {"instances": s.instances, "batch_max": s.batch_max,
                                                "requests_per_s": n / _best(lambda: simulate_requests(s, rate, n), repeats)}
    return doc
