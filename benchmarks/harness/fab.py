"""Benchmark of the fab defect kernel against a plain NumPy peer, side by side.

Both sample the same model: per wafer a gamma-distributed defect density (shape
``alpha``, mean ``D0``), per die Poisson defects; with harvesting the die is good when
its non-redundant remainder is clean and at most ``U - K`` of its ``U`` units are hit.
The NumPy peer is the textbook vectorised form of that model with
``numpy.random.Generator``: ``rng.gamma`` per wafer, then per die
``rng.poisson(lam A)`` (no harvesting) or ``rng.poisson(lam A (1 - f))`` for the
remainder and ``rng.binomial(U, 1 - exp(-lam A f / U))`` for the dead units (Poisson
splitting makes the units independent), in chunks of wafers.

Reported per case (die, harvesting on/off, thread count): dies/s of each, their ratio,
and the kernel's uniforms drawn per die and per second (its bound: the Philox-4x32-10
block costs most of a draw). Warm-up calls are outside the timers; the first call of
each kernel in the process (numba compile, or load from the on-disk cache) is timed
separately.
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

#: Benchmark dies: GH100-like and the quarter (Lite) die, 300 mm wafer, 3 mm edge,
#: 0.1 mm scribe, D0 = 0.1 /cm², alpha = 3, 80% of the die in repairable units.
CASES = {
    "h100": dict(width_mm=25.9, height_mm=31.4, units=144, required=132),
    "lite": dict(width_mm=12.95, height_mm=15.7, units=36, required=33),
}
D0_PER_CM2 = 0.1
CLUSTERING = 3.0
UNIT_FRACTION = 0.8
_PEER_CHUNK_WAFERS = 2048


def numpy_peer(generator: np.random.Generator, wafers: int, dies: int, die_area_cm2: float, units: int,
               required: int) -> np.ndarray:
    """Good dies per wafer by the vectorised NumPy model (module text); int64[wafers]."""
    out = np.empty(wafers, dtype=np.int64)
    spares = units - required
    for start in range(0, wafers, _PEER_CHUNK_WAFERS):
        n = min(_PEER_CHUNK_WAFERS, wafers - start)
        lam = generator.gamma(CLUSTERING, D0_PER_CM2 / CLUSTERING, n)
        m = np.broadcast_to((lam * die_area_cm2)[:, None], (n, dies))
        if spares == 0:
            good = generator.poisson(m) == 0
        else:
            remainder_clean = generator.poisson(m * (1.0 - UNIT_FRACTION)) == 0
            dead = generator.binomial(units, -np.expm1(-m * UNIT_FRACTION / units))
            good = remainder_clean & (dead <= spares)
        out[start:start + n] = good.sum(axis=1)
    return out


def _peer_rate(threads: int, wafers: int, dies: int, area: float, units: int, required: int, repeats: int):
    """Best dies/s of the peer over ``repeats`` runs; ``threads`` workers split the wafers."""
    seeds = np.random.SeedSequence(2024).spawn(threads)
    share = -(-wafers // threads)
    best, yields = 0.0, np.empty(0)
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for _ in range(repeats):
            gens = [np.random.Generator(np.random.PCG64(s)) for s in seeds]
            t0 = time.perf_counter()
            parts = list(pool.map(lambda g: numpy_peer(g, share, dies, area, units, required), gens))
            dt = time.perf_counter() - t0
            best = max(best, share * threads * dies / dt)
            yields = np.concatenate(parts) / dies
    return best, yields.mean(), _sem(yields)


def _kernel_rate(wafers: int, wafer, units: int, required: int, repeats: int):
    from mcengine.kernels.fab import TABLE_MAX_DEFECTS, harvest_table, simulate_wafers

    table = harvest_table(units, units - required, TABLE_MAX_DEFECTS)
    args = (np.full(wafers, D0_PER_CM2), np.full(wafers, CLUSTERING), np.ones(wafers), np.full(wafers, UNIT_FRACTION))
    best, draws, yields = 0.0, 0, np.empty(0)
    for _ in range(repeats):
        t0 = time.perf_counter()
        g, _h, u = simulate_wafers(np.uint64(7), 0, *args, wafer.die_area_cm2, wafer.r2_fraction, units,
                                   units - required, table)
        dt = time.perf_counter() - t0
        best = max(best, wafers * wafer.dies / dt)
        draws, yields = int(u.sum()), g / wafer.dies
    return best, draws / (wafers * wafer.dies), yields.mean(), _sem(yields)


def _sem(per_wafer_yields: np.ndarray) -> float:
    """Standard error of the mean die yield over wafers."""
    return float(per_wafer_yields.std(ddof=1) / math.sqrt(per_wafer_yields.size))


def _first_calls() -> dict:
    """Time of the first call of each kernel in this process (compile or cache load)."""
    from mcengine.kernels.fab import TABLE_MAX_DEFECTS, _wafer_block, harvest_table, simulate_runs, simulate_wafers
    from mcengine.stages.fab.geometry import wafer_map

    out = {}
    t0 = time.perf_counter()
    w = wafer_map(300, 3, 12.95, 15.7, 0.1)
    out["geometry_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    table = harvest_table(36, 3, TABLE_MAX_DEFECTS)
    out["harvest_table_s"] = time.perf_counter() - t0
    one = np.ones(2)
    t0 = time.perf_counter()
    simulate_wafers(np.uint64(1), 0, 0.1 * one, 3.0 * one, one, 0.8 * one, w.die_area_cm2, w.r2_fraction, 36, 3, table)
    out["simulate_wafers_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    simulate_runs(np.uint64(1), 0, 0.1 * one, 3.0 * one, one, 0.8 * one, 0.98 * one, w.die_area_cm2, w.r2_fraction,
                  36, 3, table, 10, 1000)
    out["simulate_runs_s"] = time.perf_counter() - t0
    # simulate_wafers is a Python driver running blocks on threads: its kernel is _wafer_block
    out["cache"] = {"hits": int(sum(_wafer_block.stats.cache_hits.values())),
                    "misses": int(sum(_wafer_block.stats.cache_misses.values()))}
    return out


def _production_rate(name: str, trials: int, repeats: int) -> float:
    from mcengine.scenario import load_scenario
    from mcengine.scenario.sampling import draw_inputs
    from mcengine.stages.fab import production_runs

    scenario = load_scenario(name, [])
    inputs = draw_inputs(scenario, 3, 0, trials)
    production_runs(scenario, draw_inputs(scenario, 3, 0, 4), 3)  # warm-up
    best = 0.0
    for _ in range(repeats):
        t0 = time.perf_counter()
        production_runs(scenario, inputs, 3)
        best = max(best, trials / (time.perf_counter() - t0))
    return best


def run(quick: bool = False) -> dict:
    """Kernel vs NumPy peer, with and without harvesting, at 1 and 2 threads.

    Parameters
    ----------
    quick : bool
        A seconds-long version (fewer wafers, one repeat) for tests.

    Returns
    -------
    dict
        JSON-able: ``first_call_s`` (compile / cache-load times), ``cases`` (one row per
        die x harvesting x threads with ``kernel_dies_per_s``, ``numpy_dies_per_s``,
        ``ratio``, ``kernel_uniforms_per_die``, ``kernel_uniforms_per_s``, both die
        yields with their standard errors, and the closed-form die yield), ``production_runs_trials_per_s`` per shipped scenario and thread count.
    """
    import numba

    from mcengine.analytic.fab import harvest_yield
    from mcengine.stages.fab.geometry import wafer_map

    first = _first_calls()
    repeats = 1 if quick else 3
    dies_target = 200_000 if quick else 20_000_000
    max_threads = numba.config.NUMBA_NUM_THREADS
    thread_counts = [t for t in (1, 2) if t <= max_threads]
    previous = numba.get_num_threads()
    rows = []
    production = {}
    try:
        for name, case in CASES.items():
            wafer = wafer_map(300, 3, case["width_mm"], case["height_mm"], 0.1)
            wafers = max(8, dies_target // wafer.dies)
            for harvest in (True, False):
                required = case["required"] if harvest else case["units"]
                for threads in thread_counts:
                    numba.set_num_threads(threads)
                    _kernel_rate(8, wafer, case["units"], required, 1)  # warm-up outside the timer
                    k_rate, per_die, k_yield, k_sem = _kernel_rate(wafers, wafer, case["units"], required, repeats)
                    p_rate, p_yield, p_sem = _peer_rate(threads, max(threads, wafers // 8), wafer.dies, wafer.die_area_cm2,
                                                 case["units"], required, repeats)
                    rows.append({
                        "die": name, "dies_per_wafer": wafer.dies, "harvesting": harvest,
                        "units_required": required, "units_per_die": case["units"], "threads": threads,
                        "kernel_dies_per_s": k_rate, "numpy_dies_per_s": p_rate, "ratio": k_rate / p_rate,
                        "kernel_uniforms_per_die": per_die, "kernel_uniforms_per_s": k_rate * per_die,
                        "kernel_die_yield": k_yield, "kernel_die_yield_sem": k_sem,
                        "numpy_die_yield": p_yield, "numpy_die_yield_sem": p_sem,
                        "closed_form_die_yield": harvest_yield(wafer.die_area_cm2, D0_PER_CM2, CLUSTERING, case["units"],
                                                               required, UNIT_FRACTION),
                    })
        for name in ("h100", "lite-h100"):
            for threads in thread_counts:
                numba.set_num_threads(threads)
                production[f"{name}@{threads}"] = _production_rate(name, 500 if quick else 20_000, repeats)
    finally:
        numba.set_num_threads(previous)
    return {
        "model": {"defect_density_per_cm2": D0_PER_CM2, "defect_clustering": CLUSTERING,
                  "unit_area_fraction": UNIT_FRACTION, "wafer_mm": 300, "edge_mm": 3, "scribe_mm": 0.1},
        "quick": quick,
        "threads_available": max_threads,
        "first_call_s": first,
        "cases": rows,
        "production_runs_trials_per_s": production,
        "min_ratio": min(r["ratio"] for r in rows) if rows else math.nan,
    }
