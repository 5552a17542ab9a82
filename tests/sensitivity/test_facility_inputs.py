"""Tornado and Sobol' see the fabric's, the hall's and the cost of capital's inputs when
they are uncertain (configs/studies/facility.toml's settings)."""

from __future__ import annotations

from mcengine.scenario import load_scenario
from mcengine.scenario.study import load_study
from mcengine.sensitivity import methods as sensitivity

NEW = {"econ.wacc", "econ.facility_usd_per_mw", "econ.air_cooling_limit_kw", "econ.optics_cost_exponent", "econ.floor_usd_per_m2"}


def test_tornado_and_sobol_include_the_new_inputs():
    overrides = list(load_study("facility")["set"])
    keys = set(load_scenario("h100", overrides).uncertain_inputs())
    assert NEW <= keys
    tornado = sensitivity.tornado("h100", trials=16, seed=2, overrides=overrides)
    assert set(tornado["bars"]) == keys
    # dearer capital, hall and floor: dearer tokens; a higher exponent makes the 400G pluggables cheaper
    assert tornado["bars"]["econ.optics_cost_exponent"]["high"] < tornado["bars"]["econ.optics_cost_exponent"]["low"]
    for key in ("econ.wacc", "econ.facility_usd_per_mw", "econ.floor_usd_per_m2"):
        assert tornado["bars"][key]["high"] > tornado["bars"][key]["low"]
    sobol = sensitivity.sobol("h100", trials=16, seed=5, overrides=overrides)
    assert set(sobol["indices"]) == keys | {"model_noise"}
    assert sobol["indices"]["econ.wacc"]["ST"] > 0.0 and sobol["indices"]["econ.floor_usd_per_m2"]["ST"] > 0.0
