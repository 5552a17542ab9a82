"""Benchmark of the request-level serving simulator (mcengine/kernels/serve): requests/s,
beside a SimPy peer of the plain queue.

Cases: the simulator as an M/M/4 queue at utilisation 0.7 (the same model as the SimPy
peer: Poisson arrivals, a FIFO queue, four servers, exponential service), and each
shipped design (h100, lite-h100) in each serving mode at half its capacity on 128
instances (fixed output lengths, Poisson arrivals). The first call (numba compile, or
load from the on-disk cache) is timed apart; the best of ``repeats`` timed runs is
reported, per wall-clock second and per CPU second of this process (the figure that
means something on a shared machine).
"""

from __future__ import annotations

import dataclasses
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


def _best(fn, repeats: int) -> tuple[float, float]:
    """The best wall-clock and the best CPU seconds (this process's user + system time) of
    ``repeats`` calls of ``fn``: on a shared machine only the CPU figure means anything."""
    wall = cpu = float("inf")
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall, cpu = min(wall, time.perf_counter() - start), min(cpu, time.process_time() - start_cpu)
    return wall, cpu


def _rates(n: int, fn, repeats: int) -> dict:
    """Requests/s of ``fn`` simulating ``n`` requests, per wall-clock second and per CPU second."""
    wall, cpu = _best(fn, repeats)
    return {"requests_per_s": n / wall, "requests_per_cpu_s": n / cpu}


def run(quick: bool = False) -> dict:
    """Requests/s of the simulator per case (wall clock and CPU), and of the SimPy peer on
    the plain queue; the h100 continuous case also with request lengths spread at CV 1
    (``workload.load.length_cv``)."""
    n = 20_000 if quick else 200_000
    repeats = 1 if quick else 3
    system, lengths = queue_system(4, 1.0, exponential=True)
    start = time.perf_counter()
    simulate_requests(system, 2.8, 100, lengths=lengths)
    first_call_s = time.perf_counter() - start
    ours = _rates(n, lambda: simulate_requests(system, 2.8, n, lengths=lengths), repeats)
    peer_n = n // 10
    peer = _rates(peer_n, lambda: simpy_mmc(peer_n, 2.8, 1.0, 4), 1)
    doc = {"requests": n, "first_call_s": first_call_s,
           "mmc": {**ours, "simpy_requests_per_s": peer["requests_per_s"], "simpy_requests_per_cpu_s": peer["requests_per_cpu_s"],
                   "ratio_cpu": ours["requests_per_cpu_s"] / peer["requests_per_cpu_s"]}, "designs": {}}
    for name in DESIGNS:
        scenario = load_scenario(name)
        for mode in MODES:
            s = serving_system(scenario, mode)
            rate = LOAD * s.capacity_tokens_per_s / s.output_tokens
            doc["designs"][f"{name}/{mode}"] = {"instances": s.instances, "batch_max": s.batch_max,
                                                **_rates(n, lambda: simulate_requests(s, rate, n), repeats)}
            if (name, mode) == ("h100", "continuous"):
                spread = dataclasses.replace(s, length_cv=1.0)
                doc["designs"][f"{name}/{mode}/length_cv=1"] = {"instances": s.instances, "batch_max": s.batch_max,
                                                                 **_rates(n, lambda: simulate_requests(spread, rate, n), repeats)}
    return doc
