"""mcengine/pipeline.py: one block through the chained stages, the chunk memo, the keys,
and the finiteness check after each stage.

Everything here is exact: the pipeline only routes the stages' arrays, so a chunk must
give the same bits as the stages called by hand, as each scenario alone, and as the same
trials cut into other chunks.
"""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest

from mcengine import api
from mcengine.errors import InputError, NumericalError, Problem
from mcengine.columns import INPUT_PREFIX, METRICS, PAIRED_METRICS, TRAINING_METRICS, metrics_of
from mcengine.pipeline import (
    fab_key, reliability_key, roofline_key, run_block, run_chunk, share_lifetimes,
    shared_columns,
)
from mcengine.analytic.fabric import switch_traversals
from mcengine.scenario.fabric import scale_out
from mcengine.scenario.sampling import draw_inputs
from mcengine.stages import econ, fab, reliability, roofline
from mcengine.stages.roofline import planner
from mcengine.stages.roofline.layout import rates_of

from .conftest import with_threads

SMALL = ["cluster.instances=4", "cluster.spare_gpus=8"]
#: The production runs (shared between scenarios of equal fab keys); their prices
#: (gpu_cost_usd and its parts) read [gpu] too and are each scenario's own.
FAB_COLUMNS = ("die_yield", "good_dies_per_wafer", "wafers", "cost_per_good_die_usd", "packages", "good_dies")
REL_COLUMNS = ("instance_availability", "failures_per_year", "interruptions_per_year", "swaps_per_year",
               "stockout_hours", "repairs", "events", "max_failed_gpus")


@pytest.fixture(scope="module")
def case():
    """The case study's four scenarios, at a small cluster size."""
    return tuple(api.check(n, SMALL) for n in ("h100", "lite-h100", "lite-h100-2x", "lite-h100-2x-fastswap"))


def test_block_equals_the_stages_called_one_by_one(case):
    s, seed, start, n = case[1], 4, 2048, 64
    got = run_block(s, seed, start, n)
    inputs = draw_inputs(s, seed, start, n)
    cols = {}
    cols.update(fab.production_runs(s, inputs, seed))
    cols.update(reliability.lifetimes(s, inputs, seed))
    cols.update(roofline.throughput(s, inputs, econ.plan_power_weight(s, inputs, cols)))
    cols.update(econ.economics(s, inputs, cols))
    for name, values in cols.items():
        np.testing.assert_array_equal(got[name], values, err_msg=name)
    np.testing.assert_array_equal(got["trial"], np.arange(2048, 2048 + 64))
    np.testing.assert_array_equal(got["tokens_per_s_per_h100_equivalent"], cols["tokens_per_s_per_gpu"] / 0.25)
    inputs_cols = {k for k in got if k.startswith(INPUT_PREFIX)}
    assert inputs_cols == {INPUT_PREFIX + k for k in s.uncertain_inputs()}
    for key in s.uncertain_inputs():
        np.testing.assert_array_equal(got[INPUT_PREFIX + key], inputs[key])
    assert set(metrics_of(False)) <= set(got) and set(PAIRED_METRICS) < set(METRICS)
    assert not set(TRAINING_METRICS) & set(got)  # an inference scenario has no training job


def test_keys_follow_what_each_stage_reads(case):
    h100, lite, lite2x, fast = case
    # lite-h100-2x differs in gpu.link_gbps only: neither fab nor reliability reads it
    assert fab_key(lite) == fab_key(lite2x) == fab_key(fast) != fab_key(h100)
    assert reliability_key(lite) == reliability_key(lite2x) != reliability_key(fast)
    # the fab builds total_gpus packages: more spares, another production run
    assert fab_key(api.check("lite-h100", ["cluster.instances=4", "cluster.spare_gpus=16"])) != fab_key(lite)
    # an econ or workload change keeps both keys
    other = api.check("lite-h100", SMALL + ["econ.pue=1.1", "workload.output_tokens=512"])
    assert fab_key(other) == fab_key(lite) and reliability_key(other) == reliability_key(lite)
    assert reliability_key(api.check("lite-h100", SMALL + ["run.horizon_years=3"])) != reliability_key(lite)


def test_chunk_shares_columns_of_equal_keys_and_keeps_its_own_otherwise(case):
    h100, lite, lite2x, fast = case
    chunk = run_chunk(case, 3, 1024, 128)
    assert list(chunk) == [s.name for s in case]
    # equal keys: the very same arrays (computed once), not copies
    for col in FAB_COLUMNS:
        assert chunk["lite-h100"][col] is chunk["lite-h100-2x"][col] is chunk["lite-h100-2x-fastswap"][col], col
        assert not np.shares_memory(chunk["h100"][col], chunk["lite-h100"][col]), col
    for col in REL_COLUMNS:
        assert chunk["lite-h100"][col] is chunk["lite-h100-2x"][col], col
        assert chunk["lite-h100-2x-fastswap"][col] is not chunk["lite-h100"][col], col
    # fast swaps: the same failures (common random numbers) but where a wear-out laser
    # installed a few minutes earlier is a few minutes older at a candidate failure (rare), better availability
    fast_failures, plain_failures = chunk["lite-h100-2x-fastswap"]["failures_per_year"], chunk["lite-h100"]["failures_per_year"]
    assert np.mean(fast_failures == plain_failures) > 0.95
    np.testing.assert_allclose(fast_failures, plain_failures, atol=2 / 5)  # two failures in the 5-year horizon
    assert (chunk["lite-h100-2x-fastswap"]["instance_availability"] >= chunk["lite-h100"]["instance_availability"]).all()
    assert (chunk["lite-h100-2x-fastswap"]["instance_availability"] > chunk["lite-h100"]["instance_availability"]).any()
    # the prices and econ columns are each scenario's own: 2x the links, 2x the optics
    assert chunk["lite-h100"]["cost_per_mtok_usd"] is not chunk["lite-h100-2x"]["cost_per_mtok_usd"]
    np.testing.assert_allclose(chunk["lite-h100-2x"]["gpu_cost_optics_usd"], 2 * chunk["lite-h100"]["gpu_cost_optics_usd"], rtol=1e-15)
    np.testing.assert_array_equal(chunk["lite-h100-2x"]["gpu_cost_die_usd"], chunk["lite-h100"]["gpu_cost_die_usd"])


def test_scenarios_with_equal_fab_or_reliability_share_columns_bit_for_bit(case):
    """The chunk memo must give exactly what each scenario computes on its own."""
    shared = run_chunk(case, 3, 1024, 256)
    for s in case:
        alone = run_block(s, 3, 1024, 256)
        assert set(shared[s.name]) == set(alone)
        for col, values in alone.items():
            np.testing.assert_array_equal(shared[s.name][col], values, err_msg=f"{s.name}: {col}")


def test_chunk_split_in_two_equals_one_chunk(case):
    whole = run_chunk(case, 11, 0, 96)
    first, second = run_chunk(case, 11, 0, 40), run_chunk(case, 11, 40, 56)
    for s in case:
        for col, values in whole[s.name].items():
            np.testing.assert_array_equal(values, np.concatenate([first[s.name][col], second[s.name][col]]), err_msg=col)
    # and the seed matters
    other = run_chunk(case[:1], 12, 0, 96)["h100"]
    assert not np.array_equal(other["gpu_cost_usd"], whole["h100"]["gpu_cost_usd"])


#: A two-class mix (each class its own lengths and plan tables).
MIX = ["workload.classes.chat.share=2", "workload.classes.chat.prompt_tokens=1024", "workload.classes.chat.output_tokens=256",
       "workload.classes.code.share=1", "workload.classes.code.prompt_tokens=4096", "workload.classes.code.output_tokens=32"]


@pytest.mark.parametrize("extra", [[], MIX], ids=["case-study", "mix"])
def test_plan_tables_made_beside_the_reliability_kernel_change_no_bit(case, extra):
    """With two numba threads the chunk makes the roofline plan tables while the life kernel
    runs; with one it makes them in the stage: the same columns, bit for bit, and each
    scenario's (the 2x-links pair sharing its table) equal to the scenario run alone."""
    scenarios = case if not extra else tuple(api.check(s.name, SMALL + extra) for s in case)
    two, one = (with_threads(k, run_chunk, scenarios, 5, 512, 200) for k in (2, 1))
    for s in scenarios:
        alone = run_block(s, 5, 512, 200)
        assert set(two[s.name]) == set(one[s.name]) == set(alone)
        assert ("mix.code.instance_share" in alone) == bool(extra)
        for col, values in one[s.name].items():
            np.testing.assert_array_equal(two[s.name][col], values, err_msg=f"{s.name}: {col}")
            np.testing.assert_array_equal(alone[col], values, err_msg=f"{s.name}: {col}")


def test_a_plan_that_fits_nowhere_is_refused_alike_on_one_or_two_threads():
    """A plan refused for its inputs while the tables are made ahead is raised by the
    roofline stage, in order: the same InputError, naming the key, on one thread and on two."""
    broken = (api.check("lite-h100", SMALL + ["gpu.hbm_gb=1"]),)
    messages = []
    for threads in (1, 2):
        with pytest.raises(InputError) as info:
            with_threads(threads, run_chunk, broken, 1, 0, 16)
        messages.append(str(info.value))
    assert messages[0] == messages[1] and "gpu.hbm_gb" in messages[0] and "no plan fits the weights" in messages[0]


def test_plan_tables_are_made_ahead_once_per_key_on_two_threads_only(case, monkeypatch):
    """Two numba threads: each distinct roofline key's tables are made once, on the planning
    thread, and the stage takes them from the memo; one thread: the stage makes them."""
    made = []
    evaluate = planner.evaluate_candidates

    def spy(scenario, inputs, *args, **kwargs):
        made.append(threading.current_thread().name)
        return evaluate(scenario, inputs, *args, **kwargs)

    monkeypatch.setattr(planner, "evaluate_candidates", spy)
    keys = {roofline_key(s, draw_inputs(s, 5, 512, 64)) for s in case}
    with_threads(2, run_chunk, case, 5, 512, 64)
    assert made == ["mcengine-plan-ahead"] * len(keys) and len(keys) == 3  # the 2x-links pair shares its tables
    made.clear()
    with_threads(1, run_chunk, case, 5, 512, 64)
    assert len(made) == len(keys) and "mcengine-plan-ahead" not in made


def test_an_error_of_the_planning_thread_that_is_not_the_inputs_is_raised(case, monkeypatch):
    def broken(scenario, inputs):
        raise RuntimeError("a bug of the threaded path")

    monkeypatch.setattr(roofline, "plan_tables", broken)
    with pytest.raises(RuntimeError, match="threaded path"):
        with_threads(2, run_chunk, case, 5, 0, 16)


def test_shared_columns_produces_once_per_key():
    calls = []

    def produce():
        calls.append(1)
        return {"x": np.arange(3.0)}

    assert shared_columns(None, ("k",), produce)["x"].tolist() == [0.0, 1.0, 2.0]
    memo: dict = {}
    a = shared_columns(memo, ("k",), produce)
    b = shared_columns(memo, ("k",), produce)
    assert len(calls) == 2  # once without a memo, once for the key
    assert a is not b and a["x"] is b["x"]  # a new dict each time, around the same arrays
    a["y"] = 1  # adding a column to one scenario's dict does not reach the memo
    assert set(memo[("k",)]) == {"x"}


def test_share_lifetimes_fills_one_entry_per_distinct_key(case):
    memo: dict = {}
    inputs = {s.name: draw_inputs(s, 5, 0, 48) for s in case}
    share_lifetimes(case, inputs, 5, memo)
    assert set(memo) == {reliability_key(s) for s in case}
    assert len(memo) == 3  # lite-h100 and lite-h100-2x share theirs
    for s in case:
        alone = reliability.lifetimes(s, inputs[s.name], 5)
        for col, values in alone.items():
            np.testing.assert_array_equal(memo[reliability_key(s)][col], values, err_msg=f"{s.name}: {col}")


def test_finiteness_check_names_the_stage_the_trial_and_its_inputs(case, monkeypatch):
    """Instance availability 0 in one trial gives no tokens, so an infinite cost per
    token: the econ stage is named, with the global trial index and its drawn inputs."""
    h100 = case[0]
    real = reliability.lifetimes

    def down_in_trial_5(scenario, inputs, seed, capacity):
        cols = dict(real(scenario, inputs, seed, capacity))
        cols["instance_availability"] = cols["instance_availability"].copy()
        cols["instance_availability"][5] = 0.0
        return cols

    monkeypatch.setattr(reliability, "lifetimes", down_in_trial_5)
    with pytest.raises(NumericalError) as err:
        run_block(h100, 2, 300, 8)
    text = str(err.value)
    assert text.startswith("econ stage of scenario 'h100': ")
    assert "cost_per_mtok_usd = inf at trial 305" in text
    drawn = draw_inputs(h100, 2, 305, 1)
    assert f"'fab.defect_density_per_cm2': {float(drawn['fab.defect_density_per_cm2'][0])}" in text
    assert "econ.pue" not in text  # fixed inputs are not listed, only the drawn ones


def test_finiteness_check_stops_at_the_first_bad_stage(case, monkeypatch):
    real = fab.package_costs

    def nan_cost(scenario, inputs, runs):
        cols = dict(real(scenario, inputs, runs))
        cols["gpu_cost_usd"] = np.where(np.arange(inputs.n) == 2, np.nan, cols["gpu_cost_usd"])
        return cols

    monkeypatch.setattr(fab, "package_costs", nan_cost)
    monkeypatch.setattr(reliability, "lifetimes", lambda *a: pytest.fail("reliability ran after a bad fab stage"))
    with pytest.raises(NumericalError, match=r"^fab stage of scenario 'h100': gpu_cost_usd = nan at trial 12;"):
        run_block(case[0], 2, 10, 4)


def test_a_chunk_computed_in_slices_gives_the_numbers_of_one_pass(case, monkeypatch):
    """A chunk longer than SLICE_TRIALS is computed slice by slice (bounded memory): the
    same columns, bit for bit, as one pass of the stages over the whole chunk."""
    import mcengine.pipeline as pipeline

    pair = case[::2]  # h100 and lite-h100-2x
    whole = pipeline.run_slice(pair, 11, 1000, 72)
    monkeypatch.setattr(pipeline, "SLICE_TRIALS", 40)
    for threads in (1, 2):  # slice after slice; each next slice's kernels beside the stages finishing the one before
        sliced = with_threads(threads, run_chunk, pair, 11, 1000, 72)
        for name in whole:
            assert list(sliced[name]) == list(whole[name])
            for column, values in whole[name].items():
                np.testing.assert_array_equal(sliced[name][column], values, err_msg=f"{threads} threads: {name}.{column}")
                assert sliced[name][column].dtype == values.dtype, f"{name}.{column}"


def test_the_next_chunks_first_kernels_started_beside_a_chunk_give_the_same_numbers(case, monkeypatch):
    """run_chunk with ``then`` starts the kernels of the next chunk's first slice beside its
    own last slice (two threads) and keeps them in ``handoff`` for the next call, which
    uses them: every column as one pass over both chunks; kernels kept for another slice
    are dropped, and the call computes its own, to the same numbers."""
    import mcengine.pipeline as pipeline

    pair = case[::2]
    whole = pipeline.run_slice(pair, 11, 1000, 144)
    monkeypatch.setattr(pipeline, "SLICE_TRIALS", 40)
    handoff: dict = {}
    first = with_threads(2, run_chunk, pair, 11, 1000, 72, handoff, (1072, 40))
    assert handoff["kernels"][0] == (1072, 40)
    second = with_threads(2, run_chunk, pair, 11, 1072, 72, handoff)
    assert handoff == {}
    handoff["kernels"] = (1000, 40), with_threads(2, pipeline._Kernels, pair, 11, 1000, 40)
    dropped = handoff["kernels"][1]
    third = with_threads(2, run_chunk, pair, 11, 1072, 72, handoff)
    assert dropped._dropped and handoff == {}
    for name in whole:
        for column, values in whole[name].items():
            for part in (second, third):
                np.testing.assert_array_equal(np.concatenate([first[name][column], part[name][column]]), values, err_msg=f"{name}.{column}")


def test_dropped_kernels_not_yet_started_are_never_run(case, monkeypatch):
    """A slice's kernels dropped while the jobs before them run (the kernels thread held)
    neither draw its inputs nor run its kernels, and hold nothing once their turn is
    past; the slicing rule is read at the call (a patched SLICE_TRIALS)."""
    import threading

    import mcengine.pipeline as pipeline
    from mcengine.runner.execution import _next_slice

    calls = []
    monkeypatch.setattr(pipeline, "_drawn", lambda *a: calls.append(a))
    monkeypatch.setattr(pipeline, "_kernel_columns", lambda *a: calls.append(a))
    held = threading.Event()
    pipeline._kernels_thread().ask(held.wait)
    kernels = with_threads(2, pipeline._Kernels, case[:1], 11, 0, 40)
    kernels.drop()
    held.set()
    assert kernels._done.wait(60) and calls == [] and kernels._inputs is None and kernels._memo is None
    monkeypatch.setattr(pipeline, "SLICE_TRIALS", 40)
    assert pipeline.slices_of(100, 90) == [(100, 40), (140, 40), (180, 10)]
    assert _next_slice(200, 0, 40) == (40, 40) and _next_slice(200, 0, 39) is None and _next_slice(200, 160, 40) is None


def test_an_error_drawing_a_later_slices_inputs_is_raised_on_one_or_two_threads(case, monkeypatch):
    import mcengine.pipeline as pipeline

    drawn = pipeline._drawn

    def failing(scenarios, seed, trial_start, n):
        if trial_start == 40:
            raise RuntimeError("the draw of the slice from trial 40")
        return drawn(scenarios, seed, trial_start, n)

    monkeypatch.setattr(pipeline, "SLICE_TRIALS", 40)
    monkeypatch.setattr(pipeline, "_drawn", failing)
    for threads in (1, 2):
        with pytest.raises(RuntimeError, match="trial 40"):
            with_threads(threads, run_chunk, case[:1], 11, 0, 72)


@pytest.mark.parametrize("first_fails", [False, True], ids=["a later slice's kernels", "an earlier slice's stages first"])
def test_an_error_of_a_slice_is_raised_in_slice_order_on_one_or_two_threads(case, monkeypatch, first_fails):
    """A slice's kernels run beside the stages finishing the slice before (two threads):
    their error is raised after that slice is finished, so the error raised is the one
    slice after slice raises (the earlier slice's, when both fail)."""
    import mcengine.pipeline as pipeline

    lifetimes, block = pipeline.share_lifetimes, pipeline.run_block

    def failing_lifetimes(scenarios, inputs, seed, memo):
        if next(iter(inputs.values())).trial_start == 40:
            raise RuntimeError("the kernels of the slice from trial 40")
        return lifetimes(scenarios, inputs, seed, memo)

    def failing_block(scenario, seed, trial_start, n, inputs=None, memo=None):
        if first_fails and trial_start == 0:
            raise InputError(Problem("workload.x", 0, "refused in the slice from trial 0"))
        return block(scenario, seed, trial_start, n, inputs=inputs, memo=memo)

    monkeypatch.setattr(pipeline, "SLICE_TRIALS", 40)
    monkeypatch.setattr(pipeline, "share_lifetimes", failing_lifetimes)
    monkeypatch.setattr(pipeline, "run_block", failing_block)
    for threads in (1, 2):
        with pytest.raises(InputError if first_fails else RuntimeError, match="slice from trial 0" if first_fails else "trial 40"):
            with_threads(threads, run_chunk, case[:1], 11, 0, 72)


def test_a_chunk_writes_its_slices_in_place_widening_a_column_as_concatenation_would(monkeypatch):
    """run_chunk writes each slice into the chunk's columns (no list of slices joined): the
    columns ``numpy.concatenate`` of the slices would give, types included, a column a
    later slice widens (int, then float) widened."""
    import mcengine.pipeline as pipeline

    def fake(scenarios, seed, start, n):
        trials = np.arange(start, start + n)
        return {"a": {"t": trials if start < 8 else trials + 0.5, "pair": np.stack([trials, -trials], axis=1)}}

    monkeypatch.setattr(pipeline, "SLICE_TRIALS", 4)
    monkeypatch.setattr(pipeline, "run_slice", fake)
    chunk = with_threads(1, run_chunk, (), 0, 0, 10)  # (slice by slice: run_slice itself)
    parts = [fake((), 0, s, min(4, 10 - s)) for s in (0, 4, 8)]
    for column in ("t", "pair"):
        joined = np.concatenate([p["a"][column] for p in parts])
        assert chunk["a"][column].dtype == joined.dtype and np.array_equal(chunk["a"][column], joined)
    assert chunk["a"]["t"].dtype == np.float64 and chunk["a"]["pair"].shape == (10, 2)


def test_the_switched_fabric_keeps_scenarios_differing_in_switch_latency_apart():
    """With econ.fabric_model = "fat_tree" the scale-out hop reads econ.switch_latency_us
    (stages/roofline/layout.py: each switch crossed past the first adds it), so two
    scenarios differing only there get their own roofline evaluations in one run: each
    equals its run alone. Without the switched fabric the latency is not read and the
    two share one key."""
    fast, slow = (api.check("h100", [*SMALL, f"econ.switch_latency_us={us}"]) for us in (0.5, 50.0))
    slow = dataclasses.replace(slow, name="h100-slow-switches")
    assert roofline_key(fast, draw_inputs(fast, 0, 0, 8)) == roofline_key(slow, draw_inputs(slow, 0, 0, 8))
    fast, slow = (api.check("h100", ['econ.fabric_model="fat_tree"', f"econ.switch_latency_us={us}"]) for us in (0.5, 50.0))
    slow = dataclasses.replace(slow, name="h100-slow-switches")
    assert roofline_key(fast, draw_inputs(fast, 0, 0, 8)) != roofline_key(slow, draw_inputs(slow, 0, 0, 8))
    together = run_chunk((fast, slow), 0, 0, 16)
    for s in (fast, slow):
        assert np.array_equal(together[s.name]["tokens_per_s"], run_chunk((s,), 0, 0, 16)[s.name]["tokens_per_s"])
    hops = [rates_of(s, draw_inputs(s, 0, 0, 8)).scale_out_hop_s for s in (fast, slow)]
    assert np.all(hops[1] - hops[0] == pytest.approx(49.5e-6 * (switch_traversals(scale_out(fast).tiers, False) - 1)))  # what the evaluations read differs
