"""The verdict map (docs/verdict-map.md): the grid of registered readings, weights, the
weighted total by hand, and a run's map whose shipped cell is the run itself."""

from __future__ import annotations

import numpy as np
import pytest

from mcengine import api
from mcengine.errors import InputError
from mcengine.sensitivity import verdict_map as vm


def test_the_grid_is_the_product_of_the_readings_options_shipped_first():
    grid = vm.cells()
    assert len(grid) == vm.cell_count() == 3 * 2 * 2 * 2
    assert grid[0] == {"readings": {"markup": "per_part", "port": "optical_own", "die_faults": "per_area", "memory": "typed"}, "overrides": []}
    assert grid[-1]["overrides"] == ['econ.markup_scope="value"', 'econ.scale_up_fabric="electrical"', *vm.READINGS["die_faults"].options[1].overrides,
                                     'gpu.hbm_part="hbm3-h100"']


def test_the_per_package_die_reading_is_the_h100s_die_rates():
    from mcengine.scenario.load import load_scenario, load_scenarios

    die = dict(load_scenario("h100").reliability.components)["die"]
    lite_die = dict(load_scenarios(["lite-h100"], list(vm.READINGS["die_faults"].options[1].overrides))[0].reliability.components)["die"]
    assert (lite_die.afr, lite_die.transient_afr) == (die.afr, die.transient_afr)
    assert dict(load_scenario("lite-h100").reliability.components)["die"].afr != die.afr


def test_a_reading_registers_with_its_shipped_option_first():
    with pytest.raises(ValueError, match="shipped"):
        vm.register(vm.Reading("x", "", (vm.Option("a", ("k=1",), ""),)))
    assert "x" not in vm.READINGS


def test_weights_multiply_per_cell_and_normalise():
    grid = vm.cells()
    w = vm.cell_weights(grid, vm.parse_weights(["markup.value=2", "port.electrical_equal=0", "die_faults.per_package=3"]))
    # per_part / package / value weigh 1 / 1 / 2, optical_own 1 and electrical_equal 0, per_area 1 and per_package 3,
    # both memory options 1: 4 x 1 x 4 x 2 = 32 in all, the last reading varying fastest
    one_memory = np.array([1, 3, 0, 0, 1, 3, 0, 0, 2, 6, 0, 0])
    np.testing.assert_allclose(w, np.repeat(one_memory, 2) / 32)


@pytest.mark.parametrize("text", ["markup.nope=1", "markup.value", "nope.x=1", "markup.value=-1", "markup.value=nan"])
def test_a_bad_weight_is_refused_naming_it(text):
    with pytest.raises(InputError) as exc:
        vm.parse_weights([text])
    assert exc.value.problems[0].key == "--map-weight" and exc.value.problems[0].value == text


def test_every_cell_at_zero_weight_is_refused():
    with pytest.raises(InputError):
        vm.cell_weights(vm.cells(), vm.parse_weights(["port.optical_own=0", "port.electrical_equal=0"]))


def test_the_weighted_median_and_total_by_hand():
    # cell 1 (weight 0.25): 1, 2; cell 2 (weight 0.75): 3, 4, 5 -> weights 0.125 0.125 0.25 0.25 0.25;
    # cumulative 0.125 0.25 0.5: the median is 3
    assert vm.weighted_median([np.array([2.0, 1.0]), np.array([5.0, 3.0, 4.0])], np.array([0.25, 0.75])) == 3.0
    grid = vm.cells()[:2]
    verdicts = [{"B / A": {"cost_ratio": 1.5, "p_cheaper": 0.2}}, {"B / A": {"cost_ratio": 4.0, "p_cheaper": 0.6}}]
    ratios = [{"B / A": np.array([1.0, 2.0])}, {"B / A": np.array([3.0, 4.0, 5.0])}]
    doc = vm.document(grid, verdicts, ratios, np.array([0.25, 0.75]), 8)
    assert doc["total"]["B / A"] == {"cost_ratio": 3.0, "p_cheaper": 0.25 * 0.2 + 0.75 * 0.6}
    assert doc["trials_per_cell"] == 8 and [c["readings"] for c in doc["cells"]] == [c["readings"] for c in grid]


@pytest.mark.slow
def test_a_runs_map_holds_the_run_in_its_shipped_cell_and_each_reading_as_its_own_run():
    r = api.run(["h100", "lite-h100"], trials=16, seed=3, progress=None, figures=False, verdict_map=16, map_weights=["markup.value=0"])
    vmap, pair = r.doc["verdict_map"], "lite-h100 / h100"
    shipped = r.doc["paired_all"][pair]["cost_per_mtok_usd"]
    assert vmap["cells"][0]["verdict"][pair] == {"cost_ratio": shipped["ratio"]["p50"], "p_cheaper": shipped["p_b_below_a"]}
    alone = api.run(["h100", "lite-h100"], trials=16, seed=3, progress=None, figures=False, overrides=['econ.scale_up_fabric="electrical"'])
    assert vmap["cells"][4]["readings"] == {"markup": "per_part", "port": "electrical_equal", "die_faults": "per_area", "memory": "typed"}
    assert vmap["cells"][4]["verdict"][pair]["cost_ratio"] == alone.doc["paired_all"][pair]["cost_per_mtok_usd"]["ratio"]["p50"]
    # the electrical-equal reading prices the Lite's port at the H100's draw: the Lite's ratio moves
    assert vmap["cells"][4]["verdict"][pair]["cost_ratio"] != vmap["cells"][0]["verdict"][pair]["cost_ratio"]
    assert vmap["weights"][16:] == [0.0] * 8 and set(vmap["total"]) == {pair}
