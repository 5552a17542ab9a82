"""Tornado and Sobol' see the fabric's, the hall's and the cost of capital's inputs when
they are uncertain (configs/studies/facility.toml's settings)."""

from __future__ import annotations

from mcengine.scenario import load_scenario
from mcengine.scenario.study import load_study
from mcengine.sensitivity import methods as sensitivity

NEW = {"econ.wacc", "econ.facility_usd_per_mw", "econ.air_cooling_limit_kw"}


def test_tornado_and_sobol_include_the_new_inputs():
    overrides = list(load_study("facility")["set"])
    keys = set(load_scenario("h100", overrides).uncertain_inputs())
    assert NEW <= keys
    tornado = sensitivity.tornado("h100", trials=16, seed=2, overrides=overrides)
    assert set(tornado["bars"]) == keys
    for key in ("econ.wacc", "econ.facility_usd_per_mw"):  # dearer capital, dearer hall: dearer tokens
        assert tornado["bars"][key]["high"] > tornado["bars"][key]["low"]
    sobol = sensitivity.sobol("h100", trials=16, seed=5, overrides=overrides)
    assert set(sobol["indices"]) == keys | {"model_noise"}
    assert sobol["indices"]["econ.wacc"]["ST"] > 0.0
