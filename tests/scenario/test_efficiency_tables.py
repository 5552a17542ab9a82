"""Efficiencies per precision (``[workload.efficiency.PRECISION]``, ``workload.precision``;
docs/sources.md#roof-calibration): the table of the precision in use fills
``workload.compute_efficiency`` / ``memory_efficiency`` when they are "auto", an explicit old
key still wins, and the tables load, print and list like every other key."""

from __future__ import annotations

import pytest

from mcengine.errors import InputError
from mcengine.scenario.dists import Fixed, Uniform
from mcengine.scenario.keys import key_rows
from mcengine.scenario.load import load_scenario, scenario_from_dict
from mcengine.scenario.sections.workload import DEFAULT_EFFICIENCY, PRECISIONS

C, M = "workload.compute_efficiency", "workload.memory_efficiency"


def test_bf16_weights_take_the_bf16_table_and_fp8_weights_the_fp8_one():
    bf16 = load_scenario("h100")
    assert bf16.workload.precision_in_use() == "bf16"
    assert bf16.inputs()[C] == Uniform(0.47, 0.71) and bf16.inputs()[M] == Uniform(0.82, 0.88)
    fp8 = load_scenario("h100", ["workload.bytes_per_param=1"])
    assert fp8.workload.precision_in_use() == "fp8"
    assert fp8.inputs()[C] == Uniform(0.33, 0.57) and fp8.inputs()[M] == Uniform(0.52, 0.72)
    named = load_scenario("h100", ['workload.precision="fp8"'])
    assert named.inputs()[C] == Uniform(0.33, 0.57)


def test_an_explicit_old_key_wins_over_the_table():
    s = load_scenario("h100", [f"{C}=0.4"])
    assert s.inputs()[C] == Fixed(0.4) and s.inputs()[M] == Uniform(0.82, 0.88)
    assert s.workload.efficiency_of("compute") == Fixed(0.4)


def test_setting_one_table_key_keeps_the_rest_of_the_table():
    s = load_scenario("h100", ["workload.efficiency.bf16.compute=0.6"])
    assert s.inputs()[C] == Fixed(0.6) and s.inputs()[M] == Uniform(0.82, 0.88)
    alone = scenario_from_dict({"workload": {"efficiency": {"fp8": {"memory": 0.5}}, "bytes_per_param": 1}})
    assert alone.inputs()[M] == Fixed(0.5)
    assert alone.inputs()[C] == dict(DEFAULT_EFFICIENCY)["fp8"].compute


def test_an_unknown_precision_or_key_is_named():
    with pytest.raises(InputError) as exc:
        load_scenario("h100", ["workload.efficiency.fp16.compute=0.5"])
    (problem,) = exc.value.problems
    assert problem.key == "workload.efficiency.fp16" and all(p in problem.allowed for p in PRECISIONS)
    with pytest.raises(InputError) as exc:
        load_scenario("h100", ["workload.efficiency.bf16.compute=1.5"])
    assert [p.key for p in exc.value.problems] == ["workload.efficiency.bf16.compute"]
    with pytest.raises(InputError) as exc:
        load_scenario("h100", ['workload.precision="fp16"'])
    assert [p.key for p in exc.value.problems] == ["workload.precision"]


def test_tables_print_and_load_back():
    s = load_scenario("h100", ["workload.efficiency.fp8.memory=0.7"])
    d = s.to_dict()
    assert d["workload"]["compute_efficiency"] == "auto"
    assert d["workload"]["efficiency"]["fp8"]["memory"] == 0.7
    assert d["workload"]["efficiency"]["bf16"]["compute"] == {"dist": "uniform", "low": 0.47, "high": 0.71}
    assert scenario_from_dict(d) == s


def test_keys_lists_the_table_keys():
    keys = {r["key"]: r for r in key_rows("workload")}
    assert {"workload.efficiency.PRECISION.compute", "workload.efficiency.PRECISION.memory", "workload.precision"} <= set(keys)
    assert keys[C]["auto_ok"] and keys[C]["default"] == "auto"
