"""Benchmark of the reliability kernel against its SimPy peer, side by side.

Same model, same configuration, one run (:mod:`benchmarks.harness.simpy_peer`): 4,096
single-GPU instances, AFR 0.1 per GPU-year, exponential repairs of mean 72 h, 4 crews,
no spares, 5 years (the finite-source M/M/4//4096 machine repairman, whose availability
is printed beside both). mcengine runs it through the stage
(:func:`mcengine.stages.reliability.lifetimes`) with zero swap and restart times.
Also timed: the same cluster with Weibull (shape 2, wear-out) lives, and the shipped
``h100`` and ``lite-h100`` scenarios (no peer).

Reported per case and thread count: lifetimes/s, kernel events/s per core (the
kernel's own count, which includes the zero-length swaps and restarts) and, for the
peer's configuration, failure + repair events/s per core (the events SimPy simulates,
two uniforms and one log each for the kernel), and the lifetimes/s ratio to the peer
(single-threaded). Warm-up calls are outside the timers; the first call in this process
is timed separately, and (full run only) a cold compile in a fresh process with an
empty numba cache.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from . import simpy_peer

#: The peer's configuration (the machine-repairman bench case of the reliability issue).
PEER_CASE = dict(n_gpus=4096, afr=0.1, mean_repair_hours=72.0, crews=4, years=5.0)

#: The failure-heavy cluster: the shipped ``h100`` with every GPU component's permanent
#: and transient rates ten times the shipped ones (``--set`` overrides; hosts and NICs as
#: shipped): about 1,900 GPU swaps and 3,500 GPU faults per 5-year lifetime of 1,024
#: GPUs, so the kernel's work per failure, not per lifetime, sets its rate.
FAILURE_HEAVY = ("h100", tuple(f"reliability.components.{name}.{key}={10 * value:g}" for name, key, value in (
    ("die", "afr", 0.025), ("die", "transient_afr", 0.044), ("hbm", "afr", 0.002), ("hbm", "transient_afr", 0.004),
    ("gsp", "afr", 0.002), ("gsp", "transient_afr", 0.005))))


def failure_heavy():
    """The failure-heavy scenario (:data:`FAILURE_HEAVY`)."""
    from mcengine.scenario import load_scenario

    return load_scenario(FAILURE_HEAVY[0], FAILURE_HEAVY[1])

_COLD_COMPILE = """
import time, numpy as np
t0 = time.perf_counter()
from mcengine.validation.reliability import toy_scenario
from mcengine.scenario.sampling import draw_inputs
from mcengine.stages.reliability import lifetimes
s = toy_scenario(instances=2, afr=1.0)
t1 = time.perf_counter()
lifetimes(s, draw_inputs(s, 0, 0, 2), 0)
print(time.perf_counter() - t1)
"""


def _case_scenario(weibull_shape: float = 1.0):
    from mcengine.validation.reliability import toy_scenario

    c = PEER_CASE
    return toy_scenario(instances=c["n_gpus"], afr=c["afr"], weibull_shape=weibull_shape,
                        repair_hours={"law": "exponential", "mean": c["mean_repair_hours"]},
                        repair_crews=c["crews"], horizon_years=c["years"], name=f"peer-case-k{weibull_shape:g}")


def _kernel_rate(scenario, lifetimes: int, repeats: int) -> dict:
    """Best of ``repeats`` timed calls of the stage on ``lifetimes`` lifetimes."""
    from mcengine.scenario.sampling import draw_inputs
    from mcengine.stages.reliability import lifetimes as run_lifetimes

    inputs = draw_inputs(scenario, 11, 0, lifetimes)
    run_lifetimes(scenario, draw_inputs(scenario, 11, 0, 2), 11)  # warm-up outside the timer
    best, cols = math.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        cols = run_lifetimes(scenario, inputs, 11)
        best = min(best, time.perf_counter() - t0)
    years = scenario.run.horizon_years.value
    events = float(cols["events"].sum())
    # failures + completed repairs: here every completion refills a waiting slot (a swap)
    failure_repair = float((cols["failures_per_year"] + cols["swaps_per_year"]).sum() * years)
    return {"lifetimes_per_s": lifetimes / best, "events_per_s": events / best,
            "failure_repair_events_per_s": failure_repair / best, "events_per_lifetime": events / lifetimes,
            "availability": float(cols["instance_availability"].mean()), "seconds": best}


def _peer_rate(lifetimes: int, weibull_shape: float) -> dict:
    c = PEER_CASE
    t0 = time.perf_counter()
    rows = [simpy_peer.lifetime(c["n_gpus"], c["afr"], c["mean_repair_hours"], c["crews"], c["years"] * 8766.0,
                                seed=1000 + i, weibull_shape=weibull_shape) for i in range(lifetimes)]
    dt = time.perf_counter() - t0
    events = sum(r["events"] for r in rows)
    return {"lifetimes_per_s": lifetimes / dt, "events_per_s": events / dt, "events_per_lifetime": events / lifetimes,
            "availability": float(np.mean([r["instance_availability"] for r in rows])), "lifetimes": lifetimes,
            "seconds": dt}


def _first_call_s() -> float:
    from mcengine.validation.reliability import toy_scenario
    from mcengine.scenario.sampling import draw_inputs
    from mcengine.stages.reliability import lifetimes

    s = toy_scenario(instances=2, afr=1.0)
    t0 = time.perf_counter()
    lifetimes(s, draw_inputs(s, 0, 0, 2), 0)
    return time.perf_counter() - t0


def _cold_compile_s() -> float:
    """Compile time of the reliability kernels in a fresh process with an empty cache."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
        out = subprocess.run([sys.executable, "-c", _COLD_COMPILE], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def run(quick: bool = False) -> dict:
    """Kernel vs SimPy peer (exponential and Weibull lives), plus the shipped scenarios.

    Parameters
    ----------
    quick : bool
        A seconds-long version (few lifetimes, one repeat, no cold compile) for tests.

    Returns
    -------
    dict
        JSON-able: ``config``, ``compile`` (``first_call_s`` in this process and, full
        run only, ``cold_compile_s``), ``cases`` (one row per case x thread count with
        the kernel's rates, the peer's where it has one, and ``ratio`` =
        kernel lifetimes/s over peer lifetimes/s), ``closed_form_availability`` of the
        peer case, ``min_ratio`` and ``threads_available``.
    """
    import numba

    from mcengine.analytic.reliability import machine_repairman
    from mcengine.scenario import load_scenario

    first = _first_call_s()
    repeats = 1 if quick else 3
    kernel_lifetimes = 40 if quick else 4000
    peer_lifetimes = 1 if quick else 20
    max_threads = numba.config.NUMBA_NUM_THREADS
    thread_counts = [t for t in (1, 2) if t <= max_threads]
    peers = {shape: _peer_rate(peer_lifetimes, shape) for shape in (1.0, 2.0)}
    cases = [("machine repairman, exponential", _case_scenario(1.0), 1.0),
             ("machine repairman, Weibull k=2", _case_scenario(2.0), 2.0),
             ("h100 (shipped)", load_scenario("h100"), None),
             ("lite-h100 (shipped)", load_scenario("lite-h100"), None),
             ("h100, GPU rates x10 (failure-heavy)", failure_heavy(), None)]
    rows = []
    previous = numba.get_num_threads()
    try:
        for name, scenario, shape in cases:
            for threads in thread_counts:
                numba.set_num_threads(threads)
                k = _kernel_rate(scenario, kernel_lifetimes if shape else kernel_lifetimes // 4, repeats)
                row = {"case": name, "threads": threads, "gpus": scenario.total_gpus,
                       "kernel_lifetimes_per_s": k["lifetimes_per_s"],
                       "kernel_events_per_s_per_core": k["events_per_s"] / threads,
                       "kernel_events_per_lifetime": k["events_per_lifetime"],
                       "kernel_availability": k["availability"]}
                if shape is not None:
                    p = peers[shape]
                    row.update({
                        "kernel_failure_repair_events_per_s_per_core": k["failure_repair_events_per_s"] / threads,
                        "peer_lifetimes_per_s": p["lifetimes_per_s"], "peer_events_per_s": p["events_per_s"],
                        "peer_events_per_lifetime": p["events_per_lifetime"], "peer_availability": p["availability"],
                        "peer_lifetimes_timed": p["lifetimes"], "ratio": k["lifetimes_per_s"] / p["lifetimes_per_s"],
                    })
                rows.append(row)
    finally:
        numba.set_num_threads(previous)
    c = PEER_CASE
    ratios = [r["ratio"] for r in rows if "ratio" in r]
    return {
        "config": {**c, "spare_gpus": 0, "swap_hours": 0.0, "restart_hours": 0.0,
                   "kernel_lifetimes": kernel_lifetimes, "peer_lifetimes": peer_lifetimes, "repeats": repeats},
        "quick": quick,
        "threads_available": max_threads,
        "compile": {"first_call_s": first, **({} if quick else {"cold_compile_s": _cold_compile_s()})},
        "closed_form_availability": machine_repairman(c["n_gpus"], c["afr"] / 8766.0, 1.0 / c["mean_repair_hours"],
                                                      c["crews"])["availability"],
        "cases": rows,
        "min_ratio": min(ratios) if ratios else math.nan,
    }
