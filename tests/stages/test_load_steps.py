"""mcengine/stages/roofline/load_steps.py and the load stage's searches (docs/load.md#chain):
the plan's step times the chain feeds the per-mode load models are the simulator's step
tables at batch 1 and at the top batch, so the chain's latencies are the fast model that
docs/load/fit-table.csv validates; and the searches' work never grows with a load key's value."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mcengine import api
from mcengine.pipeline import run_block, run_chunk
from mcengine.scenario.sampling import draw_inputs, quantile_inputs
from mcengine.stages import load
from mcengine.stages.roofline import rule_of
from mcengine.stages.roofline import planner
from mcengine.stages.roofline.load_steps import PREFIX, plan_steps, row_steps
from mcengine.standalone.roofline import plan_weight
from mcengine.standalone.serve import fast_latency, serving_system

from ..conftest import with_threads

INSTANCES = 16


@pytest.mark.parametrize("name,spread", [("h100", 0.0), ("lite-h100", 0.0), ("h100", 0.77)])
def test_the_chains_step_times_are_the_simulators_tables_and_its_latency_the_fast_model(name, spread):
    """At the median inputs, each serving mode's plan: :func:`plan_steps` equals the
    simulator's step tables (serving_system) at batch 1 (continuous: the micro-batch
    count) and at the top batch, and the load stage's model of it on 16 instances equals
    make_fit_table.py's fast model (fast_latency) at 0.2-0.8 of capacity, to 1e-12, with
    the lengths' spread the chain reads (``workload.load.length_cv``, make_length_table.py's)."""
    s = api.check(name, ["workload.load.demand=100000", f"workload.load.length_cv={spread}"])
    median = quantile_inputs(s, 0.5)
    best, _ = rule_of(s).modes(s, median, plan_weight(s, median))
    for mode, e in best.items():
        if e is None:
            continue
        system = serving_system(s, mode, INSTANCES)
        terms = {PREFIX + k: v for k, v in plan_steps(s, e, mode, median).items()}
        b = system.batch_max
        if mode == "continuous":
            low = min(system.pipeline, b)
            want = {"decode_1_s": system.mixed_s[low, 0], "decode_s": system.mixed_s[b, 0], "chunk_step_1_s": system.mixed_s[low, -1],
                    "step_s": system.mixed_s[b, -1], "chunk_tokens": system.chunk_tokens, "tail_step_1_s": system.tail_steps_s[0],
                    "tail_step_s": system.tail_steps_s[1]}
        elif mode == "static":
            want = {"decode_1_s": system.decode_s[1], "decode_s": system.decode_s[b], "prefill_1_s": system.prefill_s[1], "prefill_s": system.prefill_s[b]}
        else:
            p = system.prefill_batch_max
            want = {"decode_1_s": system.decode_s[1], "decode_s": system.decode_s[b], "prefill_1_s": system.prefill_s[1], "prefill_s": system.prefill_s[p],
                    "busy_1_s": system.prefill_busy_s[1], "busy_s": system.prefill_busy_s[p], "transfer_1_s": system.transfer_s[1],
                    "transfer_s": system.transfer_s[p], "prefill_batch": p}
        assert terms[PREFIX + "batch"][0] == b
        for k, v in want.items():
            assert terms[PREFIX + k][0] == pytest.approx(float(v), rel=1e-12), (mode, k)
        columns = {**terms, "output_tokens_per_request": np.array([float(system.output_tokens)])}
        plans = load.Plans.of(s, median, columns)
        for share in (0.2, 0.5, 0.8):
            rate = share * system.capacity_tokens_per_s / system.output_tokens
            got, ref = plans.latency(np.array([rate]), np.array([float(INSTANCES)])), fast_latency(system, rate, 1.0, float(median["workload.slo_quantile"][0]))
            for field in ("ttft_q_s", "tpot_q_s", "ttft_mean_s", "tpot_mean_s"):
                assert getattr(got, field)[0] == pytest.approx(float(getattr(ref, field)), rel=1e-12), (mode, share, field)


#: Each load key at the ends of its legal range (and the SLO keys the searches read).
EXTREMES = [("workload.load.demand", v) for v in (1.0, 1e4, 1e7, 1e12)] + \
    [("workload.load.peak_to_mean", v) for v in (1.0, 2.0)] + \
    [("workload.load.arrival_cv", v) for v in (0.0, 10.0)] + \
    [("workload.load.length_cv", v) for v in (0.0, 3.0)] + \
    [("workload.slo_quantile", v) for v in (0.5, 0.999)] + \
    [("cluster.headroom_quantile", v) for v in (0.5, 0.9999)]


def test_the_searches_work_never_grows_with_a_load_keys_value():
    """At each load key's extremes, with the fleet bought, the load stage evaluates the
    models at most a bound set by its step caps alone (the fleet's two searches, the
    capacity's, the peak), whatever the value, and every column it writes is a number (no NaN)."""
    from mcengine.stages.econ import served_availability

    n, calls, original = 8, [], load.Plans.latency

    def counted(self, rate, k):
        calls.append(self.q.size)
        return original(self, rate, k)

    bound = (1 + 2 * load.FLEET_STEPS) + (3 + load.CAPACITY_STEPS) + 1
    for key, value in EXTREMES:
        demand = [] if key == "workload.load.demand" else ["workload.load.demand=200000", 'workload.load.arrival="gamma"']
        s = api.check("lite-h100", ['workload.plan="quantile"', 'cluster.instances="auto"', *demand, f"{key}={value!r}"])
        columns = run_block(s, 0, 0, n)
        calls.clear()
        load.Plans.latency = counted
        try:
            got = load.load_columns(s, draw_inputs(s, 0, 0, n), columns, served_availability(s, columns))
        finally:
            load.Plans.latency = original
        assert len(calls) <= bound, (key, value, len(calls))
        for name, values in got.items():
            assert not np.isnan(values).any(), (key, value, name)


def test_the_load_columns_of_a_trial_do_not_depend_on_its_block():
    """Every search stops per trial on its own values: a block of 16 trials gives the load
    columns of two blocks of 8, bit for bit (whatever the chunk size)."""
    s = api.check("lite-h100", ['cluster.instances="auto"', "workload.load.demand=200000", "workload.load.peak_to_mean=1.5"])
    whole = run_block(s, 0, 0, 16)
    halves = [run_block(s, 0, start, 8) for start in (0, 8)]
    for name in whole:
        if name.startswith(("load.", "load_steps.")):
            np.testing.assert_array_equal(whole[name], np.concatenate([h[name] for h in halves]), err_msg=name)


#: The load harness's demand (benchmarks/harness/load.py, configs/studies/load-diurnal.toml's):
#: on each design's fixed cluster and with the fleet bought.
DEMAND = ["workload.load.demand=200000", "workload.load.peak_to_mean=1.5"]
#: The shipped Azure 2023 mix of request classes (docs/case-study/mix-azure-2023).
MIX = [str(Path(__file__).resolve().parents[2] / "docs" / "case-study" / "mix-azure-2023" / f"{n}.toml") for n in ("h100", "lite-h100")]


@pytest.mark.parametrize("designs", [("h100", "lite-h100"), MIX], ids=["case-study", "mix"])
@pytest.mark.parametrize("bought", [False, True], ids=["fixed", "auto"])
def test_a_chunk_under_a_demand_gives_the_same_bits_on_one_or_two_threads_and_in_other_chunks(designs, bought):
    """Under a demand the chain's choice, the load stage and the fleet's econ run beside the
    threads of the reliability and plan stages: one numba thread or two, one chunk or two,
    every column of every design the same to the bit (the load stage's columns included)."""
    scenarios = tuple(api.check(d, DEMAND + (['cluster.instances="auto"'] if bought else [])) for d in designs)
    one, two = (with_threads(k, run_chunk, scenarios, 3, 96, 40) for k in (1, 2))
    first, second = run_chunk(scenarios, 3, 96, 24), run_chunk(scenarios, 3, 120, 16)
    for s in scenarios:
        assert set(one[s.name]) == set(two[s.name]) and any(k.startswith("load.") for k in one[s.name])
        for column, values in one[s.name].items():
            np.testing.assert_array_equal(two[s.name][column], values, err_msg=f"{s.name}: {column}")
            np.testing.assert_array_equal(np.concatenate([first[s.name][column], second[s.name][column]]), values, err_msg=f"{s.name}: {column}")


def test_a_tables_rows_share_their_layouts_terms_with_the_same_numbers():
    """row_steps keeps a disaggregated pair's decode terms by decode layout and its prefill
    terms by prefill layout for the table's other pairs, and reads a pair not yet
    evaluated from its block's rows (CandidateTable.steps_plan, no evaluation made), as
    it reads a static or continuous plan from the batch its block keeps: every
    disaggregated row of a lite-h100 block (and every static and continuous row) read
    that way equals plan_steps of that row's evaluation, bit for bit."""
    s = api.check("lite-h100", ["workload.load.demand=100000"])
    inputs = draw_inputs(s, 0, 0, 8)
    table = planner.evaluate_candidates(s, inputs)
    modes = [p.mode for p in table.plans]
    rows = [k for k, m in enumerate(modes) if m == "disaggregated"][:60] + [k for mode in ("static", "continuous") for k in [k for k, m in enumerate(modes) if m == mode][:3]]
    light = []
    for k in rows:
        kept = row_steps(s, table, k, inputs)
        light += [modes[k]] if k not in table.built else []  # read from its block's rows
        alone = plan_steps(s, table.evaluation(k), table.plans[k].mode, inputs)
        assert kept.keys() == alone.keys()
        for name in alone:
            np.testing.assert_array_equal(kept[name], alone[name], err_msg=f"row {k} {name}")
    pairs = {(table.plans[k].layout, table.plans[k].prefill_layout) for k in rows if modes[k] == "disaggregated"}
    assert len({d for d, _ in pairs}) >= 2 and len({p for _, p in pairs}) >= 10  # layouts shared by several rows
    assert len(light) >= 26 and set(light) == set(modes)
    assert sum(kind in ("decode", "prefill") for kind, _ in table.steps) == len({d for d, _ in pairs}) + len({p for _, p in pairs})
