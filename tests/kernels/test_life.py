"""The reliability kernel and its helpers: heap, law tables, invariants, an independent twin.

The closed-form checks live in tests/stages/test_reliability.py; here the kernel's
bookkeeping is compared with a slow, independently written event simulation
(tests/kernels/reference_life.py) on configurations no closed form covers (host mode,
finite crews, stock-outs, Weibull ages, lognormal laws), in distribution.
"""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numba
import numpy as np
import pytest

from mcengine.jit import kernel
from mcengine.kernels import life
from mcengine.kernels.life.heap import heap_remove, heap_set, times_heapify, times_pop, times_push
from mcengine.kernels.laws import law_part, resolve_law, sample_law, sample_resolved
from mcengine.kernels.life.hazard import life_within, past_uniform
from mcengine.rng import new_stream, uniform, weibull_scale
from mcengine.kernels.law_codes import MAX_LAW_PARTS
from mcengine.scenario.sampling import draw_inputs
from mcengine.stages import reliability as R
from mcengine.validation.reliability import toy_scenario

from .reference_life import Config, simulate_many

# ----------------------------------------------------------------------------- the package


def test_the_modules_of_the_life_package_share_only_public_names():
    """The life kernel is a package by interface: no module takes an underscore name from
    another (each file's private helpers stay its own), and its indices live in one module."""
    package = Path(life.__file__).parent
    crossing = []
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mcengine"):
                crossing += [f"{path.name}: {a.name} from {node.module}" for a in node.names if a.name.startswith("_")]
    assert crossing == []
    assert life.OUT_NIC_FAULTS == life.indices.OUT_NIC_FAULTS and life.N_PARAMS == life.indices.N_PARAMS
    assert set(life.indices.__all__) <= set(life.__all__)

# ----------------------------------------------------------------------------- heap


@kernel
def _heap_ops(n_ids, ops, idents, keys_in, tops):
    """Apply ops (0 set, 1 remove, 2 pop) and record the top key after each (inf if empty)."""
    keys = np.empty(n_ids)
    ids = np.empty(n_ids, dtype=np.int64)
    pos = np.full(n_ids, -1, dtype=np.int64)
    n = 0
    for k in range(ops.size):
        if ops[k] == 0:
            n = heap_set(keys, ids, pos, n, idents[k], keys_in[k])
        elif ops[k] == 1:
            n = heap_remove(keys, ids, pos, n, idents[k])
        elif n > 0:
            n = heap_remove(keys, ids, pos, n, ids[0])
        tops[k] = keys[0] if n > 0 else np.inf
    return n


def test_indexed_heap_matches_a_reference_priority_queue():
    rng = np.random.default_rng(7)
    n_ids, n_ops = 50, 20_000
    ops = rng.choice(3, n_ops, p=[0.6, 0.2, 0.2])
    idents = rng.integers(0, n_ids, n_ops)
    keys = rng.random(n_ops)
    tops = np.empty(n_ops)
    n = _heap_ops(n_ids, ops, idents, keys, tops)
    armed: dict[int, float] = {}
    expected = np.empty(n_ops)
    for k in range(n_ops):
        if ops[k] == 0:
            armed[int(idents[k])] = keys[k]
        elif ops[k] == 1:
            armed.pop(int(idents[k]), None)
        elif armed:
            armed.pop(min(armed, key=armed.get))
        expected[k] = min(armed.values()) if armed else np.inf
    np.testing.assert_array_equal(tops, expected)
    assert n == len(armed)


@kernel
def _times_ops(pushes, keys_in, out):
    """Push ``keys_in[k]`` when ``pushes[k]``, else pop (if any) into ``out[k]`` (nan: nothing)."""
    keys = np.empty(keys_in.size)
    n = 0
    for k in range(pushes.size):
        out[k] = np.nan
        if pushes[k]:
            n = times_push(keys, n, keys_in[k])
        elif n > 0:
            out[k], n = times_pop(keys, n)
    return n


@kernel
def _heapify_then_pop_all(keys_in, out):
    """Heapify ``keys_in`` (any order) in place, then pop every entry into ``out``."""
    n = keys_in.size
    times_heapify(keys_in, n)
    for k in range(out.size):
        out[k], n = times_pop(keys_in, n)


@pytest.mark.parametrize("size", [0, 1, 2, 3, 64, 65, 1000])
def test_times_heapify_makes_a_heap_of_any_list(size):
    """A list of pending repairs turned into the heap (past RQ_HEAP_ABOVE) pops in order."""
    keys = np.round(np.random.default_rng(size).random(size) * 30.0)  # ties included
    out = np.empty(size)
    _heapify_then_pop_all(keys.copy(), out)
    assert out.tolist() == sorted(keys.tolist())


def test_times_heap_pops_the_earliest_like_heapq():
    """The repairs' heap of bare times (ties included) against Python's heapq."""
    import heapq

    rng = np.random.default_rng(11)
    n_ops = 20_000
    pushes = rng.random(n_ops) < 0.55
    keys = np.round(rng.random(n_ops) * 50.0)  # many ties
    out = np.empty(n_ops)
    n = _times_ops(pushes, keys, out)
    ref: list[float] = []
    expected = np.full(n_ops, np.nan)
    for k in range(n_ops):
        if pushes[k]:
            heapq.heappush(ref, keys[k])
        elif ref:
            expected[k] = heapq.heappop(ref)
    np.testing.assert_array_equal(out, expected)
    assert n == len(ref)


# ----------------------------------------------------------------------------- laws


@kernel
def _draw_many(laws, w, n, seed):
    st = new_stream(np.uint64(seed), 3, 99, 0)
    out = np.empty(n)
    for k in range(n):
        out[k] = sample_law(st, laws, w)
    return out, st[3]


def _table(law_toml):
    s = toy_scenario(instances=1, repair_hours=law_toml)
    inputs = draw_inputs(s, 0, 0, 1)
    return R.law_table(s.reliability.repair_hours, inputs.law_values("reliability.repair_hours", s.reliability.repair_hours), 1)[0][None]


@pytest.mark.parametrize("law, mean, draws_per_event", [
    (2.5, 2.5, 0),
    ({"law": "exponential", "mean": 3.0}, 3.0, 1),
    ({"law": "lognormal", "median": 72.0, "sigma": 0.9}, 72.0 * math.exp(0.405), None),
    ({"law": "weibull", "mean": 10.0, "shape": 0.7}, 10.0, 1),
    ({"law": "mixture", "parts": [{"weight": 0.2, "law": "fixed", "value": 2},
                                  {"weight": 0.8, "law": "lognormal", "median": 72, "sigma": 0.9}]},
     0.2 * 2 + 0.8 * 72 * math.exp(0.405), None),
])
def test_sample_law_means_within_4_sem(law, mean, draws_per_event):
    n = 200_000
    x, used = _draw_many(_table(law), 0, n, 11)
    assert np.all(x >= 0)
    if draws_per_event == 0:
        assert np.all(x == mean) and used == 0
        return
    sem = x.std(ddof=1) / math.sqrt(n)
    assert abs(x.mean() - mean) < 4 * sem
    if draws_per_event is not None:
        assert used == draws_per_event * n


@kernel
def _draw_resolved(laws, w, n, seed):
    st = new_stream(np.uint64(seed), 3, 99, 0)
    r = resolve_law(laws, w)
    out = np.empty(n)
    for k in range(n):
        out[k] = sample_resolved(st, laws, r)
    return out, st[3], r.parts


@pytest.mark.parametrize("law, parts", [
    (2.5, 1),
    ({"law": "exponential", "mean": 3.0}, 1),
    ({"law": "weibull", "mean": 10.0, "shape": 0.7}, 1),
    ({"law": "mixture", "parts": [{"weight": 0.2, "law": "fixed", "value": 2},
                                  {"weight": 0.8, "law": "lognormal", "median": 72, "sigma": 0.9}]}, 2),
    ({"law": "mixture", "parts": [{"weight": 0.5, "law": "exponential", "mean": 4},
                                  {"weight": 0.5, "law": "fixed", "value": 1}]}, 2),
    ({"law": "mixture", "parts": [{"weight": 0.2, "law": "fixed", "value": 2},
                                  {"weight": 0.3, "law": "exponential", "mean": 5},
                                  {"weight": 0.5, "law": "lognormal", "median": 72, "sigma": 0.9}]}, 3),
])
def test_a_resolved_law_draws_the_tables_numbers_bit_for_bit(law, parts):
    table = _table(law)
    x, used, resolved_parts = _draw_resolved(table, 0, 20_000, 11)
    y, used_table = _draw_many(table, 0, 20_000, 11)
    assert resolved_parts == parts
    assert used == used_table
    np.testing.assert_array_equal(x, y)


def test_law_table_layout_and_part_selection():
    table = _table({"law": "mixture", "parts": [{"weight": 1, "law": "fixed", "value": 1},
                                                {"weight": 3, "law": "exponential", "mean": 5}]})
    assert table.shape == (1, MAX_LAW_PARTS, 4)
    np.testing.assert_allclose(table[0, :3, 0], [0.25, 1.0, 1.0])
    assert law_part(table, 0, 0.25) == 0 and law_part(table, 0, 0.2500001) == 1 and law_part(table, 0, 0.999) == 1


# ----------------------------------------------------------------------------- kernel


def _run(scenario, n, seed=5, start=0):
    return R.lifetimes(scenario, draw_inputs(scenario, seed, start, n), seed)


def test_no_failures_means_full_availability_and_no_events():
    c = _run(toy_scenario(instances=8, instance_gpus=4, gpus_per_host=2, spare_gpus=3), 4)
    np.testing.assert_array_equal(c["instance_availability"], 1.0)
    for name in ("failures_per_year", "interruptions_per_year", "swaps_per_year", "stockout_hours", "repairs", "events",
                 "max_failed_gpus"):
        np.testing.assert_array_equal(c[name], 0)


def test_zero_length_swaps_and_restarts_still_count_as_events_and_host_failures_fail_all_gpus():
    # hosts of 8 GPUs fail; each failure empties 8 slots at once, all refilled at once
    s = toy_scenario(instances=4, instance_gpus=8, gpus_per_host=8, spare_gpus=64, host_afr=20.0,
                     repair_hours=0.0, horizon_years=1.0)
    c = _run(s, 20)
    host_failures = c["interruptions_per_year"]  # each host failure = one instance interruption
    np.testing.assert_array_equal(c["failures_per_year"], 8 * host_failures)
    np.testing.assert_array_equal(c["swaps_per_year"], c["failures_per_year"])
    np.testing.assert_array_equal(c["repairs"], c["failures_per_year"])
    np.testing.assert_array_equal(c["instance_availability"], 1.0)  # zero-length outages
    # per host failure: the failure, 8 repairs, 8 swaps, 1 restart
    np.testing.assert_array_equal(c["events"], host_failures * (1 + 8 + 8 + 1))


@pytest.mark.parametrize("host_mode", [False, True])
def test_counting_invariants(host_mode):
    s = toy_scenario(instances=6, instance_gpus=4, gpus_per_host=8, spare_gpus=8, afr=3.0, transient_afr=4.0,
                     weibull_shape=1.5, host_afr=2.0, host_transient_afr=3.0, repair_crews=2,
                     repair_hours={"law": "lognormal", "median": 200, "sigma": 0.5}, swap_hours=1.0, restart_hours=0.5,
                     replace_unit="host" if host_mode else "gpu", horizon_years=2.0)
    c = _run(s, 50)
    years = 2.0
    units = (s.total_gpus // 8) if host_mode else s.total_gpus
    assert np.all((c["instance_availability"] > 0) & (c["instance_availability"] < 1))
    assert np.all(c["swaps_per_year"] * years <= c["repairs"] + (8 // 8 if host_mode else 8))
    assert np.all(c["max_failed_gpus"] <= units * (8 if host_mode else 1))
    if host_mode:
        assert np.all(c["repairs"] <= c["failures_per_year"] * years)
    else:
        np.testing.assert_array_equal(c["repairs"], c["failures_per_year"] * years)
    assert np.all(c["events"] > 0)
    assert c["stockout_hours"].max() > 0  # 2 crews, long repairs: the pool runs dry


def test_no_spares_single_gpu_instances_waiting_time_is_downtime():
    s = toy_scenario(instances=10, afr=200.0, repair_hours={"law": "exponential", "mean": 5}, repair_crews=1,
                     horizon_years=0.5)
    c = _run(s, 10)
    hours = 10 * 0.5 * 8766
    np.testing.assert_allclose(c["stockout_hours"], hours * (1 - c["instance_availability"]), rtol=1e-9)


TWIN_CASES = {
    "gpu mode, spares, 2 crews, lognormal repair, transients": (
        dict(instances=6, instance_gpus=4, gpus_per_host=8, spare_gpus=3, afr=4.0, transient_afr=6.0,
             host_afr=1.0, host_transient_afr=2.0, repair_hours={"law": "lognormal", "median": 150, "sigma": 0.6},
             swap_hours={"law": "exponential", "mean": 3}, restart_hours=0.7, repair_crews=2, horizon_years=1.0),
        Config(6, 4, 8, 3, 1.0, [(1, 4.0, 6.0, 1.0)], 1.0, 2.0, 1.0, ("lognormal", 150, 0.6), ("exponential", 3),
               ("fixed", 0.7), 2)),
    "host mode, Weibull ages in two classes, instances sharing hosts": (
        dict(instances=8, instance_gpus=2, gpus_per_host=4, spare_gpus=4,
             components={"die": {"count": 2, "afr": 2.0, "weibull_shape": 2.0, "transient_afr": 3.0},
                         "laser": {"afr": 3.0, "weibull_shape": 0.7}, "hbm": {"afr": 1.0}},
             host_afr=1.5, host_transient_afr=1.0, host_weibull_shape=3.0, replace_unit="host",
             repair_hours={"law": "exponential", "mean": 300}, swap_hours=2.0, restart_hours=0.4, horizon_years=2.0),
        Config(8, 2, 4, 4, 2.0, [(2, 2.0, 3.0, 2.0), (1, 3.0, 0.0, 0.7), (1, 1.0, 0.0, 1.0)], 1.5, 1.0, 3.0,
               ("exponential", 300), ("fixed", 2.0), ("fixed", 0.4), math.inf, True)),
    "gpu mode, Weibull GPUs and hosts (renewed in place), spares, 3 crews": (
        dict(instances=8, instance_gpus=2, gpus_per_host=4, spare_gpus=5,
             components={"die": {"afr": 3.0, "weibull_shape": 2.5}, "laser": {"count": 2, "afr": 1.0, "weibull_shape": 0.6}},
             host_afr=2.0, host_weibull_shape=0.7, host_transient_afr=1.0, repair_crews=3,
             repair_hours={"law": "exponential", "mean": 200}, swap_hours=1.5, restart_hours=0.5, horizon_years=2.0),
        Config(8, 2, 4, 5, 2.0, [(1, 3.0, 0.0, 2.5), (2, 1.0, 0.0, 0.6)], 2.0, 1.0, 0.7,
               ("exponential", 200), ("fixed", 1.5), ("fixed", 0.5), 3)),
    "gpu mode, wear-out lasers and hosts thinned (k * H(horizon) small), lognormal mixture repair": (
        dict(instances=6, instance_gpus=4, gpus_per_host=4, spare_gpus=2,
             components={"die": {"afr": 2.0, "transient_afr": 3.0}, "laser": {"afr": 0.3, "weibull_shape": 2.0}},
             host_afr=0.4, host_weibull_shape=1.5, host_transient_afr=1.0,
             repair_hours={"law": "mixture", "parts": [{"weight": 0.3, "law": "fixed", "value": 2.0},
                                                        {"weight": 0.7, "law": "lognormal", "median": 200, "sigma": 0.8}]},
             swap_hours=30.0, restart_hours={"law": "exponential", "mean": 5.0}, horizon_years=1.0),
        Config(6, 4, 4, 2, 1.0, [(1, 2.0, 3.0, 1.0), (1, 0.3, 0.0, 2.0)], 0.4, 1.0, 1.5,
               ("mixture", [(0.3, ("fixed", 2.0)), (0.7, ("lognormal", 200, 0.8))]), ("fixed", 30.0),
               ("exponential", 5.0))),
    "gpu mode, host failures emptying 4 slots at once with units and crews to spare, hosts spanning instances": (
        dict(instances=8, instance_gpus=2, gpus_per_host=4, spare_gpus=16,
             components={"die": {"afr": 1.0, "transient_afr": 2.0}, "laser": {"afr": 1.0, "weibull_shape": 0.6}},
             host_afr=4.0, host_transient_afr=1.0,
             repair_hours={"law": "mixture", "parts": [{"weight": 0.3, "law": "fixed", "value": 2.0},
                                                        {"weight": 0.7, "law": "lognormal", "median": 150, "sigma": 0.7}]},
             swap_hours={"law": "exponential", "mean": 3}, restart_hours=0.5, horizon_years=1.0),
        Config(8, 2, 4, 16, 1.0, [(1, 1.0, 2.0, 1.0), (1, 1.0, 0.0, 0.6)], 4.0, 1.0, 1.0,
               ("mixture", [(0.3, ("fixed", 2.0)), (0.7, ("lognormal", 150, 0.7))]), ("exponential", 3),
               ("fixed", 0.5))),
    "instances spanning hosts, no spares, 1 crew": (
        dict(instances=2, instance_gpus=6, gpus_per_host=4, afr=3.0, host_afr=2.0, host_transient_afr=4.0,
             repair_hours={"law": "exponential", "mean": 100}, swap_hours=1.0, restart_hours=0.3, repair_crews=1,
             horizon_years=1.0),
        Config(2, 6, 4, 0, 1.0, [(1, 3.0, 0.0, 1.0)], 2.0, 4.0, 1.0, ("exponential", 100), ("fixed", 1.0),
               ("fixed", 0.3), 1)),
}


@pytest.mark.parametrize("case", list(TWIN_CASES))
def test_kernel_agrees_with_independent_twin(case):
    toy, cfg = TWIN_CASES[case]
    n = 400
    kern = _run(toy_scenario(**toy), n, seed=17)
    twin = simulate_many(cfg, n, seed=17)
    for name in ("instance_availability", "failures_per_year", "interruptions_per_year", "swaps_per_year", "repairs",
                 "stockout_hours", "max_failed_gpus"):
        a, b = np.asarray(kern[name], float), twin[name]
        sem = math.hypot(a.std(ddof=1), b.std(ddof=1)) / math.sqrt(n)
        assert abs(a.mean() - b.mean()) <= 4 * sem + 1e-12, (name, a.mean(), b.mean(), sem)


# ----------------------------------------------------------------------------- reproducibility


def _with_threads(threads, fn):
    previous = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        return fn()
    finally:
        numba.set_num_threads(previous)


def test_identical_at_1_and_2_threads_and_across_chunks():
    s = toy_scenario(**TWIN_CASES["host mode, Weibull ages in two classes, instances sharing hosts"][0])
    one = _with_threads(1, lambda: _run(s, 300, seed=9))
    two = _with_threads(2, lambda: _run(s, 300, seed=9))
    halves = [_with_threads(2, lambda start=start: _run(s, 150, seed=9, start=start)) for start in (0, 150)]
    for name in R.COLUMNS:
        np.testing.assert_array_equal(one[name], two[name])
        np.testing.assert_array_equal(one[name], np.concatenate([h[name] for h in halves]))
    other_seed = _run(s, 300, seed=10)
    assert not np.array_equal(one["instance_availability"], other_seed["instance_availability"])


def test_kernel_driver_block_split_does_not_matter():
    """300 lifetimes run as 256 blocks of 1-2, or a single lifetime per call: same rows."""
    s = toy_scenario(instances=3, instance_gpus=2, gpus_per_host=2, spare_gpus=1, afr=10.0, transient_afr=5.0,
                     repair_hours={"law": "weibull", "mean": 50, "shape": 1.5}, swap_hours=1.0, restart_hours=0.2)
    block = _run(s, 300, seed=4)
    singles = [_run(s, 1, seed=4, start=i) for i in (0, 137, 299)]
    for i, single in zip((0, 137, 299), singles):
        for name in R.COLUMNS:
            assert block[name][i] == single[name][0]


def test_config_layout_is_consistent():
    cfg = life.cluster_config(12, 4, 8, True, 2, 10**9, False)
    # 12 GPUs in 2 hosts; host mode: 2 slots, 2 pool hosts, so at most 4 repairs at once
    assert cfg.hosts == 2 and cfg.slots == 2 and cfg.crews == 4
    # per-unit clocks: one per GPU position and one per host
    assert cfg.clock_ids == 12 + 2


@pytest.mark.parametrize("case", ["gpu mode, wear-out lasers and hosts thinned (k * H(horizon) small), lognormal mixture repair",
                                  "host mode, Weibull ages in two classes, instances sharing hosts"])
def test_thinned_wear_out_laws_agree_with_per_unit_clocks(case):
    """The same lifetimes with every Weibull law on per-unit clocks (``thin_max = 0``) and
    with wear-out laws thinned (or, raised, every wear-out law): equal in distribution."""
    s = toy_scenario(**TWIN_CASES[case][0])
    n = 600
    k = R._params(s, draw_inputs(s, 3, 0, n))
    k["laws"] = np.ascontiguousarray(k["laws"][:, None])  # one variant
    runs = [np.column_stack([out[:, 0] for out in life.simulate_lifetimes(np.uint64(3), 0, **k, thin_max=thin_max)])
            for thin_max in (0.0, 1e9)]
    # the two differ in their draws, so they are independent samples of the same law
    for col in (life.OUT_AVAILABILITY, life.OUT_STOCKOUT_HOURS, life.N_OUT_F + life.OUT_FAILURES,
                life.N_OUT_F + life.OUT_INTERRUPTIONS):
        a, b = runs[0][:, col], runs[1][:, col]
        sem = math.hypot(a.std(ddof=1), b.std(ddof=1)) / math.sqrt(n)
        assert abs(a.mean() - b.mean()) <= 4 * sem + 1e-12, (col, a.mean(), b.mean(), sem)


# ----------------------------------------------------------------------------- variants in one pass

_VARIANT_BASE = dict(
    instances=8, instance_gpus=2, gpus_per_host=4, spare_gpus=3, repair_crews=2,
    components={"die": {"afr": 2.0, "transient_afr": 3.0}, "laser": {"afr": 0.5, "weibull_shape": 2.0}},
    host_afr=2.0, host_transient_afr=1.0,
    repair_hours={"law": "mixture", "parts": [{"weight": 0.3, "law": "fixed", "value": 2.0},
                                               {"weight": 0.7, "law": "lognormal", "median": 150, "sigma": 0.7}]},
    swap_hours=2.0, restart_hours=1.0, horizon_years=1.0)

_WEAR_ONLY = dict(instances=16, spare_gpus=4, components={"laser": {"afr": 8.0, "weibull_shape": 2.0}},
                  swap_hours=60.0, horizon_years=0.1)  # k * H(horizon) = 1: thinned

_CLOCKS_ONLY = dict(components={"laser": {"afr": 2.0, "weibull_shape": 0.6}}, host_afr=0.0, host_transient_afr=0.0)

VARIANT_CASES = {
    # (base changes, [(variant changes, share of lifetimes in which the variant parts: "none", "some", "all")])
    "gpu mode, stock-outs and a queue, thinned wear-out, fast swap and restart": (
        {}, [(dict(swap_hours=0.5, restart_hours=0.1), "some"), (dict(restart_hours=0.0), "none"), ({}, "none")]),
    "host mode, thinned host wear-out": (
        dict(replace_unit="host", spare_gpus=4, host_afr=0.5, host_weibull_shape=2.0), [(dict(swap_hours=0.5), "some")]),
    # per-unit clocks only (infant mortality): a swap of another length parts at its first install
    "per-unit clocks only, units and crews to spare (the short path)": (
        dict(_CLOCKS_ONLY, spare_gpus=16, repair_crews="inf"),
        [(dict(swap_hours=0.5), "all"), (dict(restart_hours=0.1), "none")]),
    "per-unit clocks only, host mode (the general pass)": (
        dict(_CLOCKS_ONLY, replace_unit="host", spare_gpus=4), [(dict(swap_hours=0.5), "all")]),
    "thinned wear-out only, long swaps: a unit of another age takes another candidate": (
        dict(_WEAR_ONLY, host_afr=0.0, host_transient_afr=0.0), [(dict(swap_hours=1.0), "some")]),
    "host mode, thinned wear-out GPUs and hosts, long swaps": (
        dict(_WEAR_ONLY, gpus_per_host=4, replace_unit="host", host_afr=8.0, host_weibull_shape=2.0,
             host_transient_afr=0.0), [(dict(swap_hours=1.0), "some")]),
    "a swap law that draws parts at once": ({}, [(dict(swap_hours={"law": "exponential", "mean": 2.0}), "all")]),
    "another repair law parts at once": ({}, [(dict(repair_hours=100.0), "all")]),
}


@pytest.mark.parametrize("case", list(VARIANT_CASES))
def test_variants_in_one_pass_have_the_numbers_of_their_own_runs(case):
    """Variants that differ in swap, restart or repair laws, run in one kernel call: each
    row is bit-identical to the variant's own run, whether it stayed with the leader or
    parted (and then ran alone); and the joint pass is really taken where it can be."""
    changes, variants = VARIANT_CASES[case]
    scenarios = [toy_scenario(**{**_VARIANT_BASE, **changes})]
    scenarios += [toy_scenario(**{**_VARIANT_BASE, **changes, **v}) for v, _ in variants]
    n = 256
    tables = [R._params(s, draw_inputs(s, 8, 0, n)) for s in scenarios]
    laws = R._variant_laws([t["laws"] for t in tables])
    joint_f, joint_i = life.simulate_lifetimes(np.uint64(8), 0, **{**tables[0], "laws": laws})
    for v, table in enumerate(tables):
        alone_f, alone_i = life.simulate_lifetimes(np.uint64(8), 0, **{**table, "laws": table["laws"][:, None].copy()})
        np.testing.assert_array_equal(joint_f[:, v], alone_f[:, 0])
        np.testing.assert_array_equal(joint_i[:, v, :life.OUT_PARTED], alone_i[:, 0, :life.OUT_PARTED])
        assert not alone_i[:, 0, life.OUT_PARTED].any()
    assert not joint_i[:, 0, life.OUT_PARTED].any()  # the leader never parts
    for v, (_, expected) in enumerate(variants, start=1):
        share = joint_i[:, v, life.OUT_PARTED].mean()
        assert {"none": share == 0.0, "some": 0.0 < share < 1.0, "all": share == 1.0}[expected], (v, share)
    # the stage groups them the same way
    cols = R.lifetimes_of(scenarios, [draw_inputs(s, 8, 0, n) for s in scenarios], 8)
    for s, c in zip(scenarios, cols):
        alone = _run(s, n, seed=8)
        for name in R.COLUMNS:
            np.testing.assert_array_equal(c[name], alone[name])


def test_scenarios_with_equal_tables_are_simulated_once(monkeypatch):
    """Scenarios whose kernel tables are equal in full, laws too (``lite-h100`` and
    ``lite-h100-2x``: links change no reliability input), are one variant of the kernel
    call: with a fast-swap twin beside them the call has two variants, and each scenario
    has the columns of its own run, in arrays of its own."""
    scenarios = [toy_scenario(**_VARIANT_BASE), toy_scenario(**_VARIANT_BASE, name="twin"),
                 toy_scenario(**{**_VARIANT_BASE, "swap_hours": 0.5})]
    n = 64
    calls = []
    simulate = life.simulate_lifetimes

    def recording(*args, **kwargs):
        calls.append(kwargs["laws"].shape[1])
        return simulate(*args, **kwargs)

    monkeypatch.setattr(R.life, "simulate_lifetimes", recording)
    cols = R.lifetimes_of(scenarios, [draw_inputs(s, 8, 0, n) for s in scenarios], 8)
    assert calls == [2]
    for s, c in zip(scenarios, cols):
        alone = _run(s, n, seed=8)
        for name in R.COLUMNS:
            np.testing.assert_array_equal(c[name], alone[name])
    assert not any(np.shares_memory(cols[0][name], cols[1][name]) for name in R.COLUMNS)


def _module_pair(pool: int):
    """A cluster whose GPUs and laser modules fail often (each a module with its GPU), and
    its fast-swap twin: a module that came with a replaced GPU fails at another time in
    each, about half a swap apart."""
    import dataclasses

    from mcengine.scenario import Fixed

    base = dict(instances=8, instance_gpus=2, gpus_per_host=4, spare_gpus=8, horizon_years=1.0, restart_hours=0.5,
                repair_hours=48.0, components={"die": {"afr": 2.0, "transient_afr": 1.0},
                                               "laser": {"afr": 2.0, "replace_unit": "module"}})
    out = []
    for swap in (2.0, 0.5):
        s = toy_scenario(**base, swap_hours=swap)
        r = dataclasses.replace(s.reliability, module_swap_hours=Fixed(1.0), module_restock_hours=Fixed(300.0))
        out.append(dataclasses.replace(s, reliability=r, cluster=dataclasses.replace(s.cluster, spare_modules=pool)))
    return out


@pytest.mark.parametrize("pool", [1, 64])
def test_module_failures_at_other_times_keep_the_variants_in_one_pass(pool):
    """A module that came with a GPU installed at another time in each variant fails at
    another time in each: the variants stay in one pass through it (each failing at its
    own time) while nothing else happens in between, also when the module pool runs dry
    (restocks and waits per variant). Each row is bit-identical to the variant's own run,
    through the fast paths and through the general passes alone, and most lifetimes never
    part (71 and 57 of 256 here; a pass that parts at the first such failure parts in all 256)."""
    scenarios = _module_pair(pool)
    n = 256
    tables = [R._params(s, draw_inputs(s, 9, 0, n)) for s in scenarios]
    joint_f, joint_i = life.simulate_lifetimes(np.uint64(9), 0, **R.group_arguments(tables))
    general_f, general_i = life.simulate_lifetimes(np.uint64(9), 0, **R.group_arguments(tables), fast_paths=False)
    for v, table in enumerate(tables):
        alone_f, alone_i = life.simulate_lifetimes(np.uint64(9), 0, **R.group_arguments([table]))
        for out_f, out_i in ((joint_f, joint_i), (general_f, general_i)):
            np.testing.assert_array_equal(out_f[:, v], alone_f[:, 0])
            np.testing.assert_array_equal(out_i[:, v, :life.OUT_PARTED], alone_i[:, 0, :life.OUT_PARTED])
    assert joint_i[:, 0, life.OUT_MODULE_SWAPS].mean() > 20
    stockout = joint_f[:, :, life.OUT_MODULE_STOCKOUT_HOURS]
    assert (stockout > 0).all() if pool == 1 else (stockout == 0).all()  # one module runs dry every lifetime; 64 never do
    assert joint_i[:, 1, life.OUT_PARTED].sum() == {1: 71, 64: 57}[pool]  # of 256 lifetimes (seed 9), pinned


# ----------------------------------------------------------------------------- fast paths

FAST_PATH_CASES = {
    # every GPU failure finds a pool unit and a crew; transients while nothing waits
    "exponential, ample spares, unlimited crews, transients": dict(
        instances=16, instance_gpus=4, gpus_per_host=8, spare_gpus=64, afr=6.0, transient_afr=8.0,
        repair_hours={"law": "exponential", "mean": 72}, swap_hours=1.0, restart_hours=0.5),
    "Weibull thinned and clocked classes, hosts failing as a common cause": dict(
        instances=8, instance_gpus=4, gpus_per_host=8, spare_gpus=48,
        components={"die": {"afr": 2.0, "transient_afr": 3.0}, "laser": {"afr": 0.5, "weibull_shape": 2.0},
                    "hbm": {"afr": 2.0, "weibull_shape": 0.7}},
        host_afr=3.0, host_transient_afr=2.0, host_weibull_shape=1.5,
        repair_hours={"law": "lognormal", "median": 100, "sigma": 0.6},
        swap_hours={"law": "exponential", "mean": 2}, restart_hours=0.3),
    "few spares and finite crews: fast path taken only while they suffice": dict(
        instances=12, instance_gpus=2, gpus_per_host=4, spare_gpus=3, repair_crews=2, afr=8.0, transient_afr=6.0,
        host_afr=2.0, host_transient_afr=1.0, repair_hours={"law": "exponential", "mean": 150}, swap_hours=2.0,
        restart_hours={"law": "exponential", "mean": 0.5}),
    "field-replaceable modules (two groups, one wearing out) beside common-cause host failures": dict(
        instances=8, instance_gpus=4, gpus_per_host=8, spare_gpus=48,
        components={"die": {"afr": 2.0, "transient_afr": 3.0},
                    "laser": {"afr": 1.5, "replace_unit": "module"},
                    "laser2": {"afr": 1.0, "weibull_shape": 2.0, "replace_unit": "module"}},
        host_afr=2.0, host_transient_afr=2.0, repair_hours={"law": "lognormal", "median": 100, "sigma": 0.6},
        swap_hours=1.0, restart_hours=0.3),
    "host mode (transient fast path only)": dict(
        instances=8, instance_gpus=2, gpus_per_host=4, spare_gpus=8, afr=4.0, transient_afr=6.0, host_afr=2.0,
        host_transient_afr=3.0, replace_unit="host", repair_hours=48.0, swap_hours=1.0, restart_hours=0.2),
}


@pytest.mark.parametrize("thin_max", [life.THIN_MAX_CANDIDATES, 0.0])
@pytest.mark.parametrize("case", list(FAST_PATH_CASES))
def test_fast_paths_are_bit_identical_to_the_general_passes(case, thin_max):
    """The fast paths (a transient fault while nothing waits; GPUs failing with a pool unit
    and a crew for each) make the draws and decisions of the general passes: every output
    of every lifetime is the same bit for bit, alone and with a draw-free variant in the
    same pass."""
    base = FAST_PATH_CASES[case]
    scenarios = [toy_scenario(**base)]
    if not isinstance(base["swap_hours"], dict) and not isinstance(base["restart_hours"], dict):
        scenarios.append(toy_scenario(**{**base, "swap_hours": 0.1, "restart_hours": 0.0}))
    n = 96
    tables = [R._params(s, draw_inputs(s, 21, 0, n)) for s in scenarios]
    args = R.group_arguments(tables)
    fast = life.simulate_lifetimes(np.uint64(21), 0, **args, thin_max=thin_max)
    general = life.simulate_lifetimes(np.uint64(21), 0, **args, thin_max=thin_max, fast_paths=False)
    assert fast[1][:, :, life.OUT_FAILURES].sum() > 0 and fast[1][:, :, life.OUT_INTERRUPTIONS].min() > 0
    for a, b in zip(fast, general):
        np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------- lives past the horizon


@kernel
def _lives_both_ways(seed, scale, shape, u_past, n):
    """``n`` lives of one stream through life_within, and of a copy of it through
    weibull_scale, with each draw's uniform."""
    a, b, u = new_stream(seed, 3, 0, 0), new_stream(seed, 3, 0, 0), new_stream(seed, 3, 0, 0)
    cut, full, us = np.empty(n), np.empty(n), np.empty(n)
    for j in range(n):
        cut[j] = life_within(a, scale, shape, u_past)
        full[j] = weibull_scale(b, scale, shape)
        us[j] = uniform(u)
    return cut, full, us


@pytest.mark.parametrize("shape, scale, bound", [(1.0, 3.78e6, 43830.0), (2.0, 9.0e6, 43830.0), (0.7, 1.4e6, 43830.0),
                                                 (0.3, 5e3, 8766.0), (5.0, 5e4, 43830.0), (1.0, 1e30, 43830.0)])
def test_a_life_cut_at_the_bound_is_past_it_and_the_others_are_the_same_draws(shape, scale, bound):
    """life_within consumes the same uniform as weibull_scale: below past_uniform's cut the
    life it would have computed is past the bound (so no clock is armed either way), and
    every other life is the same bits. Checked on a stream, and on uniforms packed around
    the cut (its 200 neighbouring doubles each side), where rounding would show."""
    u_past = past_uniform(shape, scale, bound)
    cut, full, us = _lives_both_ways(np.uint64(5), scale, shape, u_past, 20_000)
    skipped = us < u_past
    assert np.array_equal(cut[~skipped], full[~skipped]) and np.isinf(cut[skipped]).all()
    assert (full[skipped] > bound).all() and skipped.any()
    below = [u_past]
    for _ in range(200):
        below.append(np.nextafter(below[-1], 0.0))
    assert (_weibull_at(np.array(below[1:]), scale, shape) > bound).all()


@kernel
def _weibull_at(us, scale, shape):
    """weibull_scale's arithmetic at given uniforms."""
    out = np.empty(us.size)
    for j in range(us.size):
        out[j] = scale * (-math.log(us[j])) ** (1.0 / shape)
    return out
