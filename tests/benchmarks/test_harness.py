"""The benchmark harnesses (benchmarks/harness) run and report throughputs; speed itself is never asserted."""

from __future__ import annotations

import os
import platform
import shutil

import pytest


pytestmark = pytest.mark.slow


def test_chain_harness_reports_throughput():
    from benchmarks.harness import chain

    doc = chain.run(quick=True)
    case = doc["cases"]["case-study"]
    assert case["trials_per_s_all_threads"] > 0 and case["speedup"] > 0
    assert set(case["stage_cpu_s"]) == {"inputs", "fab", "reliability", "roofline", "econ"}
    assert set(case["stage_seconds"]) == {"fab", "reliability", "roofline", "econ"}  # (the keys of 731b8e4: wall, every thread)
    assert case["orchestration_overhead"] == pytest.approx(case["trials"] / case["trials_per_s_all_threads"] / sum(case["stage_seconds"].values()) - 1.0)
    # one thread overlaps nothing: the chain takes at least its stages' time alone (10 %: timing noise)
    assert case["orchestration_overhead_cpu_1_thread"] > -0.1
    assert 0 < case["core_use_all_threads"] <= (os.cpu_count() or 1) / case["threads"]


def test_memory_harness_reports_the_peak_per_trial_count():
    from benchmarks.harness import memory

    doc = memory.run(quick=True)
    assert list(doc["warm_up"]) == ["after"] and doc["warm_up"]["after"]["cpu_s"] > 0  # (the compile, outside the measurements)
    assert [row["trials"] for row in doc["after"]] == list(memory.QUICK_TRIALS)
    assert all(row["peak_mb"] > 0 and row["cpu_s"] > 0 for row in doc["after"])
    assert [row["chunks"] for row in doc["after"]] == ["2048 x 1", "8192 x 1"]  # (under the cap of 16,384: one chunk each)
    assert all(0 < row["rss_mb"]["before_chunks"] and row["rss_mb"]["first_chunk"] <= row["rss_mb"]["largest"] <= row["peak_mb"] for row in doc["after"])
    if platform.libc_ver()[0] == "glibc":  # malloc's arenas: what they hold is what is in use in them and free
        assert all(row["malloc_mb"]["arenas"] == pytest.approx(row["malloc_mb"]["in_use"] + row["malloc_mb"]["free"]) for row in doc["after"])


def test_plans_harness_times_the_distinct_tables_and_their_searches():
    """The case study's four scenarios make three plan tables (lite-h100-2x and its
    fast-swap variant share one, as in the chain); the searches are part of the tables'
    time, the rest is what the tables take besides them; the wrappers are removed after."""
    from benchmarks.harness import plans
    from mcengine.analytic import serving as sv
    from mcengine.analytic.roofline import limits as rl

    before = (rl.largest_batch, sv.largest_batch_within_ttft)
    doc = plans.run(quick=True)
    cpu = doc["cpu_s_per_1e5_trials"]
    assert doc["tables"] == 3 and doc["trials"] == 1024
    assert 0.0 < cpu["searches"] < cpu["tables"] and cpu["rest"] == pytest.approx(cpu["tables"] - cpu["searches"], rel=1e-12)
    assert cpu["choice"] > 0.0  # the choice and the chosen plans' columns, timed apart from the tables
    assert set(doc["probe_ns_per_trial"]) == {"continuous_step", "decode_step", "batch_time_to_first_token"}
    assert all(ns > 0 for ns in doc["probe_ns_per_trial"].values())
    assert doc["numpy_step_times_per_trial"] == 0.0  # every case-study search compiled: no NumPy step time
    assert doc["searches_per_trial"] >= 3 * 2 * 11 and doc["search_ns_per_search"] > 0  # at least two limits of 11 h100 layouts in 3 tables
    assert (rl.largest_batch, sv.largest_batch_within_ttft) == before


def test_plans_harness_runs_in_a_fresh_process_on_a_tree():
    """The side-by-side mode's child: the harness on the tree it is given, one round."""
    from benchmarks.harness import plans
    from benchmarks.harness.compile import ROOT

    doc = plans._in_child(ROOT, quick=True)
    assert doc["tables"] == 3 and doc["trials"] == 1024 and doc["repeats"] == 1
    assert 0.0 < doc["cpu_s_per_1e5_trials"]["searches"] < doc["cpu_s_per_1e5_trials"]["tables"]


def test_load_harness_runs_in_a_fresh_process_on_a_tree():
    """``load --against``'s child: the load harness on the tree it is given, one round of
    each case, its ratios and the load average at its end."""
    from benchmarks.harness import load
    from benchmarks.harness.compile import ROOT

    doc = load._in_child(ROOT, quick=True)
    assert doc["trials"] == 256 and doc["repeats"] == 1 and len(doc["load_average"]) == 3
    assert all(doc[k] > 0 for k in load.RATIOS)
    assert doc["time_per_trial_ratio"] == pytest.approx(doc["saturate_trials_per_s"] / doc["demand_trials_per_s"], rel=1e-12)


def test_bench_quick_run_reports_rates_and_ratios():
    from benchmarks.harness.reliability import run as bench

    doc = bench(quick=True)
    assert doc["quick"] and "first_call_s" in doc["compile"]
    peer_rows = [r for r in doc["cases"] if "ratio" in r]
    assert {r["case"] for r in peer_rows} == {"machine repairman, exponential", "machine repairman, Weibull k=2"}
    for r in doc["cases"]:
        assert r["kernel_lifetimes_per_s"] > 0 and r["kernel_events_per_s_per_core"] > 0
    exp_row = peer_rows[0]
    # The harness reports means only: recompute its kernel lifetimes (the stage on the
    # peer case, seed 11, lifetimes 0..n-1, benchmarks/harness/reliability.py) for their
    # spread. Kernel: within 4 SEM of the machine-repairman closed form. Peer (SimPy, its
    # own seeds): the same model, so a lifetime has the same spread; within 4 of its
    # standard errors at the peer's sample size.
    from benchmarks.harness.reliability import _case_scenario
    from mcengine.scenario.sampling import draw_inputs
    from mcengine.stages.reliability import lifetimes

    n = doc["config"]["kernel_lifetimes"]
    s = _case_scenario(1.0)
    avail = lifetimes(s, draw_inputs(s, 11, 0, n), 11)["instance_availability"]
    assert exp_row["kernel_availability"] == float(avail.mean())  # the same lifetimes
    sd = avail.std(ddof=1)
    assert abs(exp_row["kernel_availability"] - doc["closed_form_availability"]) <= 4 * sd / n**0.5
    assert abs(exp_row["peer_availability"] - doc["closed_form_availability"]) <= 4 * sd / doc["config"]["peer_lifetimes"] ** 0.5




def test_instruction_harness_measures_the_stage_kernel_call():
    """The harness counts the call the stage makes: same arguments, same numbers."""
    import numpy as np

    from benchmarks.harness.instructions import CASES, SEED, kernel_arguments
    from mcengine.kernels.life import OUT_AVAILABILITY, OUT_FAILURES, simulate_lifetimes
    from mcengine.scenario import load_scenario
    from mcengine.scenario.sampling import draw_inputs
    from mcengine.stages.reliability import lifetimes_of

    out_f, out_i = simulate_lifetimes(np.uint64(SEED), 0, **kernel_arguments("lite-pair", 8))
    scenarios = [load_scenario(ref) for ref in CASES["lite-pair"]]
    inputs = [draw_inputs(s, SEED, 0, 8) for s in scenarios]
    cols = lifetimes_of(scenarios, inputs, SEED)
    years = inputs[0]["run.horizon_years"]
    assert out_i[:, :, OUT_FAILURES].sum() > 0  # (the lifetimes are not empty)
    for v, col in enumerate(cols):
        assert np.array_equal(out_f[:, v, OUT_AVAILABILITY], col["instance_availability"])
        assert np.array_equal(out_i[:, v, OUT_FAILURES] / years, col["failures_per_year"])


def test_instruction_harness_without_valgrind_is_a_clear_input_error(monkeypatch):
    from benchmarks.harness import instructions
    from mcengine.errors import InputError

    monkeypatch.setattr(instructions.shutil, "which", lambda tool: None)
    with pytest.raises(InputError, match="valgrind, callgrind_control"):
        instructions.run()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None or shutil.which("callgrind_control") is None,
                    reason="valgrind is not installed")
def test_instruction_harness_counts_a_kernel_call():
    from benchmarks.harness.instructions import run

    doc = run(("h100",), 4)["cases"]["h100"]
    # an h100 lifetime is about half a million instructions (`python -m benchmarks instructions`); the band only catches a count of
    # the wrong thing (nothing, or the imports and the compile)
    assert 1e5 < doc["instructions_per_lifetime"] < 1e7


def test_rqmc_harness_reports_the_gain_at_equal_trials():
    """Sobol' inputs shrink the spread of the mean cost per token over repeated runs (a
    smooth function of the inputs) far more than the availability's: the lifetimes keep
    their pseudo-random streams, and the one uncertain input the availability reads (the
    Lite's external-laser failure rate) moves it little."""
    from benchmarks.harness import rqmc

    doc = rqmc.run(quick=True)
    assert doc["scramblings"] == 16 and doc["repeats"] == 4
    rows = {r["estimate"]: r for r in doc["estimates"]}
    cost = rows["lite-h100: mean cost_per_mtok_usd"]
    assert cost["variance_gain"] > 4
    avail = rows["lite-h100: mean availability"]
    assert avail["se_sobol"] > 0 and avail["se_random"] > 0
    assert avail["variance_gain"] < cost["variance_gain"]


def test_compile_harness_reports_a_cold_start():
    from benchmarks.harness import compile as cold

    doc = cold.run(quick=True)
    assert doc["reliability"]["cpu_s"] > 0 and doc["reliability"]["peak_mb"] > 0
    # where the compile went: the life kernels among the functions compiled, each function's
    # own seconds (nested compiles subtracted) adding up to no more than the process's CPU
    kernels = doc["reliability"]["kernels"]
    assert any(name.startswith("kernels.life.") for name in kernels) and len(kernels) == cold.PROFILE_TOP + 1
    assert 0 < sum(k["own_s"] for k in kernels.values()) <= doc["reliability"]["cpu_s"]
    # each listed function with its compiles (one specialisation of the life kernel's block
    # driver) and its final LLVM IR, the driver's holding the event loop it links
    block, loop = kernels["kernels.life.driver.run_block"], kernels["kernels.life.loop.simulate_one"]
    assert block["compiles"] == 1 and block["ir_kb"] > loop["ir_kb"] > 0
    # by stage: LLVM's calls and numba's passes, each pass less what runs inside it, the
    # passes listed adding up to the front end, all within the process's CPU
    stages = doc["reliability"]["stages"]
    passes = {k: v for k, v in stages.items() if k not in ("llvm", "numba front end")}
    assert stages["llvm"] > 0 and stages["numba nopython_type_inference"] > 0 and stages["numba native_lowering"] > 0
    assert len(passes) == cold.STAGES_TOP + 1 and abs(sum(passes.values()) - stages["numba front end"]) < 0.05
    assert stages["llvm"] + stages["numba front end"] <= doc["reliability"]["cpu_s"]


def test_sobol_harness_times_both_seeds_and_ranks_their_drivers():
    from benchmarks.harness import sobol

    doc = sobol.run(quick=True)
    assert [r["seed"] for r in doc["runs"]] == list(sobol.SEEDS)
    for row in doc["runs"]:
        assert row["base_trials"] == sobol.QUICK_BASE_TRIALS and row["evaluations"] == 2 * 32 * 28  # two scenarios, d = 25
        assert row["cpu_s"] > 0 and row["wall_s"] > 0 and row["peak_mb"] > 0
        assert row["drivers"] and all(st >= sobol.DRIVER_ST and 0 < conf <= row["widest_st_conf"] for st, conf in row["drivers"].values())
    assert isinstance(doc["ranking_agrees"], bool) and 0 <= doc["ranking_pairs_apart"] <= doc["ranking_pairs"]


def test_counts_harness_instruments_this_trees_life_kernel(tmp_path):
    """``counts`` finds every place it counts at in the present life kernel (the lifetime's
    start, the loop, the clocks, the close), so a change to the kernel that moves one of them
    fails here and not in a benchmark run; the copy's start resets the counters once."""
    from benchmarks.harness import counts

    counts._copy(None, tmp_path)
    counts.instrument(tmp_path / "mcengine")
    start = (tmp_path / "mcengine" / "kernels" / "life" / "handlers.py").read_text()
    assert start.count("s.loops, s.heap_ops = 0, 0") == 1
    assert "out_i[row, v, OUT_PARTED] = s.loops" in start
