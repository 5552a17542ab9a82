"""``shared = false`` in a dist table (docs/model.md#per-design-inputs): in a comparison
each design draws that input on its own stream, so the designs may differ where nobody
knows they are equal; every other input stays common (paired trials)."""

from __future__ import annotations

import numpy as np
import pytest

from mcengine import api
from mcengine.errors import InputError
from mcengine.pipeline import run_block
from mcengine.scenario.load import load_scenario, load_scenarios, scenario_from_dict
from mcengine.scenario.sampling import draw_inputs
from mcengine.sensitivity import methods

SMALL = ["cluster.instances=4", "cluster.spare_gpus=8"]
KEY = "workload.compute_efficiency"
OWN = f'{KEY}={{dist="uniform", low=0.33, high=0.57, shared=false}}'
COMMON = f'{KEY}={{dist="uniform", low=0.33, high=0.57}}'


def test_shared_false_parses_prints_and_loads_back():
    s = load_scenarios(["h100"], [OWN])[0]
    assert not s.workload.efficiency_of("compute").shared and s.workload.efficiency_of("memory").shared
    table = s.to_dict()["workload"]["compute_efficiency"]
    assert table == {"dist": "uniform", "low": 0.33, "high": 0.57, "shared": False}
    assert scenario_from_dict(s.to_dict()) == s
    assert "shared" not in load_scenario("h100").to_dict()["workload"]["efficiency"]["bf16"]["compute"]


def test_shared_must_be_a_boolean_naming_the_key():
    with pytest.raises(InputError) as exc:
        load_scenarios(["h100"], [f'{KEY}={{dist="uniform", low=0.3, high=0.5, shared="no"}}'])
    assert [p.key.split(": ")[-1] for p in exc.value.problems] == [f"{KEY}.shared"]


def test_each_design_draws_its_own_stream_and_shared_inputs_stay_common():
    a, b = load_scenarios(["h100", "lite-h100"], [OWN])
    da, db = draw_inputs(a, 5, 0, 2000).values, draw_inputs(b, 5, 0, 2000).values
    np.testing.assert_array_equal(da["workload.memory_efficiency"], db["workload.memory_efficiency"])
    assert not np.array_equal(da[KEY], db[KEY])
    # independent streams: the sample correlation of 2,000 pairs is within 4 standard errors of 0
    assert abs(np.corrcoef(da[KEY], db[KEY])[0, 1]) < 4 / np.sqrt(2000)
    # a scenario draws the same per-design values alone or in a comparison, whatever the chunking
    alone = load_scenarios(["lite-h100"], [OWN])[0]
    chunks = np.concatenate([draw_inputs(alone, 5, start, n).values[KEY] for start, n in ((0, 700), (700, 1), (701, 1299))])
    np.testing.assert_array_equal(chunks, db[KEY])


def _band(doc: dict) -> float:
    r = doc["paired"]["cost_per_mtok_usd"]["ratio"]
    return r["p95"] - r["p05"]


def test_per_design_efficiency_widens_the_paired_ratio_band():
    common = api.compare("h100", "lite-h100", trials=128, seed=3, overrides=[*SMALL, COMMON]).summary()
    own = api.compare("h100", "lite-h100", trials=128, seed=3, overrides=[*SMALL, OWN]).summary()
    assert _band(own) > _band(common)


def test_self_pairing_is_exact_for_shared_inputs_and_not_for_per_design_ones():
    doc = api.compare("h100", "h100", trials=64, seed=2, overrides=SMALL).summary()
    for metric, block in doc["paired"].items():
        assert block["ratio"]["min"] == block["ratio"]["max"] == 1.0, metric
    own = api.compare("h100", "h100", trials=64, seed=2, overrides=[*SMALL, OWN]).summary()
    assert own["paired"]["cost_per_mtok_usd"]["ratio"]["max"] > 1.0 > own["paired"]["cost_per_mtok_usd"]["ratio"]["min"]


def test_same_seed_same_numbers_across_chunking_with_a_per_design_input():
    s = load_scenarios(["lite-h100"], [*SMALL, OWN])[0]
    whole = run_block(s, 9, 0, 48)
    parts = [run_block(s, 9, start, n) for start, n in ((0, 20), (20, 1), (21, 27))]
    for column in ("cost_per_mtok_usd", "tokens_per_s", "availability"):
        np.testing.assert_array_equal(np.concatenate([p[column] for p in parts]), whole[column])


def test_tornado_sees_one_factor_per_design():
    doc = methods.tornado(["h100", "lite-h100"], trials=4, seed=1, overrides=[*SMALL, OWN])
    assert f"A:{KEY}" in doc["bars"] and f"B:{KEY}" in doc["bars"] and KEY not in doc["bars"]
    assert "workload.memory_efficiency" in doc["bars"]
    # B's efficiency moves the ratio B/A up when it falls; A's the other way
    b, a = doc["bars"][f"B:{KEY}"], doc["bars"][f"A:{KEY}"]
    assert b["low"] > b["high"] and a["low"] < a["high"]


def test_sobol_attributes_variance_to_each_design_s_own_input():
    from mcengine.sensitivity.sampling import MIN_BASE_SAMPLES

    doc = methods.sobol(["h100", "lite-h100"], trials=MIN_BASE_SAMPLES, seed=1, overrides=[*SMALL, OWN])
    assert {f"A:{KEY}", f"B:{KEY}"} <= set(doc["indices"]) and KEY not in doc["indices"]
