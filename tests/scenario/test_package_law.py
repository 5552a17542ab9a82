"""The Lite's package and test costs follow a stated law of the H100's (docs/model.md#package-cost-law):
cost = reference x (die area / reference area)^k, k drawn per trial; a typed-in cost replaces the law."""

from __future__ import annotations

import numpy as np
import pytest

from mcengine.errors import InputError
from mcengine.scenario.load import load_scenario, load_scenarios
from mcengine.scenario.sampling import draw_inputs

#: A quarter of the H100 die: 12.95 x 15.7 over 25.9 x 31.4 mm (813.26 mm2)
QUARTER = 12.95 * 15.7 / 813.26


def test_the_lite_package_and_test_follow_the_area_law_per_trial():
    v = draw_inputs(load_scenario("lite-h100"), seed=11, trial_start=0, n=256).values
    kp, kt = v["fab.package_cost_area_exponent"], v["fab.test_cost_area_exponent"]
    assert 0.66 <= kp.min() < kp.max() <= 1.5 and 0.5 <= kt.min() < kt.max() <= 1.0
    np.testing.assert_allclose(v["fab.package_cost_usd"], 750 * QUARTER ** kp, rtol=1e-12)
    np.testing.assert_allclose(v["fab.test_cost_usd"], 900 * QUARTER ** kt, rtol=1e-12)
    # the ends by hand: 750 x 0.25^0.66 = $300.4 (the CoWoS floor), 750 x 0.25^1.5 = $93.75; 900 x 0.25^0.5 = $450, x 0.25 = $225
    assert 750 * 0.25 ** 0.66 == pytest.approx(300.4, abs=0.01) and QUARTER == pytest.approx(0.25, rel=1e-6)
    assert 93.75 * 0.999 < v["fab.package_cost_usd"].min() and v["fab.package_cost_usd"].max() < 300.5
    assert 224.9 < v["fab.test_cost_usd"].min() and v["fab.test_cost_usd"].max() < 450.1


def test_the_h100_keeps_its_own_costs_and_the_half_die_scales_by_its_area():
    h = draw_inputs(load_scenario("h100"), seed=2, trial_start=0, n=8).values
    assert (h["fab.package_cost_usd"] == 750).all() and (h["fab.test_cost_usd"] == 900).all()
    s = load_scenario("lite-h100-half")
    v = draw_inputs(s, seed=2, trial_start=0, n=64).values
    ratio = s.fab.die_width_mm.value * s.fab.die_height_mm.value / 813.26
    assert ratio == pytest.approx(0.5, rel=1e-3)
    np.testing.assert_allclose(v["fab.package_cost_usd"], 750 * ratio ** v["fab.package_cost_area_exponent"], rtol=1e-12)


def test_a_typed_in_cost_replaces_the_law(tmp_path):
    s = load_scenarios(["lite-h100"], ["fab.package_cost_usd=190", "fab.test_cost_usd=250"])[0]
    v = draw_inputs(s, seed=1, trial_start=0, n=4).values
    assert (v["fab.package_cost_usd"] == 190).all() and (v["fab.test_cost_usd"] == 250).all()
    child = tmp_path / "c.toml"
    child.write_text('extends = "lite-h100"\n[fab]\ntest_cost_usd = 300\n')
    v = draw_inputs(load_scenario(str(child)), seed=1, trial_start=0, n=4).values
    assert (v["fab.test_cost_usd"] == 300).all() and not (v["fab.package_cost_usd"] == v["fab.package_cost_usd"][0]).all()


def test_a_half_set_law_is_refused_naming_the_missing_key():
    with pytest.raises(InputError) as exc:
        load_scenarios(["h100"], ["fab.package_cost_area_exponent=1"])
    assert [p.key.split(": ")[-1] for p in exc.value.problems] == ["fab.package_cost_reference_usd"]
