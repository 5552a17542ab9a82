"""A component's permanent-failure law in its source's words (issue 18, part 3).

``weibull_shape`` with exactly one of ``afr`` (exponential rate; 1/MTTF for another
shape, as in old files), ``mttf_hours``, ``scale_hours``, ``first_year_fraction``; the
conversions against their closed forms (docs/sources.md#rel-unit-conversions) and
``mcengine check``'s ``resolved`` view.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import tomli_w

from mcengine.errors import InputError
from mcengine.scenario import load_scenario
from mcengine.scenario.load import scenario_from_dict
from mcengine.scenario.sampling import draw_inputs
from mcengine.analytic.reliability import resolved_law, weibull_rate_per_hour
from mcengine.scenario.sections.reliability import LAW_KEYS
from mcengine.stages.reliability import _weibull_groups
from mcengine.units import HOURS_PER_YEAR as H
from mcengine.validation.reliability import toy_scenario


def one_class(**law) -> object:
    return toy_scenario(instances=4, components={"laser": {"count": 1, **law}})


def problems_of(**law) -> list:
    with pytest.raises(InputError) as err:
        one_class(**law)
    return err.value.problems


# ----------------------------------------------------------------------------- conversions


@pytest.mark.parametrize("shape", [0.7, 1.0, 2.0, 3.5])
def test_the_four_statements_of_one_law_agree_with_the_closed_forms(shape):
    eta = 50_000.0
    mttf = eta * math.gamma(1 + 1 / shape)
    first_year = 1 - math.exp(-((H / eta) ** shape))
    for key, value in (("scale_hours", eta), ("mttf_hours", mttf), ("first_year_fraction", first_year), ("afr", H / mttf)):
        assert weibull_rate_per_hour(key, value, shape) == pytest.approx(1 / eta, rel=1e-12), key
        got = resolved_law(key, value, shape)
        assert got["scale_hours"] == pytest.approx(eta, rel=1e-12)
        assert got["mttf_hours"] == pytest.approx(mttf, rel=1e-12)
        assert got["first_year_fraction"] == pytest.approx(first_year, rel=1e-12)
        assert got["afr_long_run"] == pytest.approx(H / mttf, rel=1e-12)


def test_a_law_that_never_fails_resolves_to_inf():
    assert resolved_law("first_year_fraction", 0.0, 2.0) == {"afr_long_run": 0.0, "mttf_hours": "inf", "scale_hours": "inf",
                                                             "first_year_fraction": 0.0}
    assert resolved_law(None, 0.0, 1.0)["mttf_hours"] == "inf"


@pytest.mark.parametrize("key", ["mttf_hours", "scale_hours", "first_year_fraction"])
def test_each_parameterisation_gives_the_stage_the_same_weibull_group(key):
    """The kernel's table depends on the law, not on the words it was given in."""
    shape, fraction = 2.0, 0.01
    value = resolved_law("first_year_fraction", fraction, shape)[key]
    s = one_class(weibull_shape=shape, **{key: value})
    _, wb, n_wb, _ = _weibull_groups(s, draw_inputs(s, 1, 0, 3))
    assert n_wb.tolist() == [1, 1, 1]
    np.testing.assert_allclose(wb[:, 0, 1], H / math.sqrt(-math.log1p(-fraction)), rtol=1e-12)


def test_old_files_keep_afr_as_one_over_mttf():
    s = one_class(afr=0.01, weibull_shape=2.0)
    (_, comp), = s.reliability.components
    assert comp.law_key() == "afr"
    got = s.to_dict(with_unset=True)["reliability"]["components"]["laser"]["resolved"]
    assert got["mttf_hours"] == pytest.approx(H / 0.01) and got["first_year_fraction"] == pytest.approx(7.8537e-5, rel=1e-4)


def test_exponential_class_may_give_its_mttf():
    s = one_class(mttf_hours=H / 0.02)
    lam, _, n_wb, _ = _weibull_groups(s, draw_inputs(s, 1, 0, 2))
    assert lam == pytest.approx(0.02 / H, rel=1e-12) and n_wb.tolist() == [0, 0]


@pytest.mark.parametrize("key", ["mttf_hours", "scale_hours", "first_year_fraction"])
def test_each_law_key_may_be_a_dist(key):
    center = {"mttf_hours": 1e6, "scale_hours": 1e6, "first_year_fraction": 0.01}[key]
    s = one_class(weibull_shape=2.0, **{key: {"dist": "uniform", "low": center / 2, "high": center}})
    inputs = draw_inputs(s, 7, 0, 64)
    drawn = inputs[f"reliability.components.laser.{key}"]
    assert drawn.min() >= center / 2 and drawn.max() <= center and np.unique(drawn).size == 64
    _, wb, _, _ = _weibull_groups(s, inputs)
    np.testing.assert_allclose(1 / wb[:, 0, 1], weibull_rate_per_hour(key, drawn, 2.0), rtol=1e-12)


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("a, b", [("afr", "mttf_hours"), ("mttf_hours", "first_year_fraction"), ("scale_hours", "first_year_fraction")])
def test_two_law_keys_are_exit_2_naming_both(a, b):
    values = {"afr": 0.01, "mttf_hours": 1e6, "scale_hours": 1e6, "first_year_fraction": 0.01}
    (problem,) = problems_of(weibull_shape=2.0, **{a: values[a], b: values[b]})
    assert problem.key == f"reliability.components.laser.{b}"
    assert a in str(problem.value) and b in str(problem.value)
    assert all(k in problem.allowed for k in LAW_KEYS)


def test_a_weibull_shape_without_a_scale_is_exit_2():
    (problem,) = problems_of(weibull_shape=2.0)
    assert problem.key == "reliability.components.laser.weibull_shape" and "first_year_fraction" in problem.allowed


@pytest.mark.parametrize("key, value", [("first_year_fraction", 1.0), ("first_year_fraction", -0.1), ("mttf_hours", 0.0),
                                        ("scale_hours", 1e13)])
def test_out_of_range_law_keys_are_exit_2(key, value):
    (problem,) = problems_of(weibull_shape=2.0, **{key: value})
    assert problem.key == f"reliability.components.laser.{key}" and "allowed" in problem.allowed


def test_the_event_bound_sees_a_first_year_fraction():
    """A law key other than afr still counts towards the events per lifetime."""
    with pytest.raises(InputError) as err:
        toy_scenario(instances=1_000_000, horizon_years=30, components={"laser": {"first_year_fraction": 0.999, "weibull_shape": 0.3}})
    assert err.value.problems[0].key == "reliability.components.laser.first_year_fraction"


# ----------------------------------------------------------------------------- check's view


def test_check_output_reads_back_and_a_stale_resolved_table_is_exit_2(tmp_path):
    s = load_scenario("lite-h100")
    doc = s.to_dict(with_unset=True)

    def strip(node):
        return {k: strip(v) if isinstance(v, dict) else v for k, v in node.items() if v is not None}

    path = tmp_path / "resolved.toml"
    path.write_text(tomli_w.dumps(strip(doc)))
    assert load_scenario(str(path)) == s
    doc["reliability"]["components"]["laser"]["resolved"]["mttf_hours"] = 5.0
    path.write_text(tomli_w.dumps(strip(doc)))
    with pytest.raises(InputError) as err:
        load_scenario(str(path))
    (problem,) = err.value.problems
    assert problem.key == "reliability.components.laser.resolved.mttf_hours" and "derived from the law" in problem.allowed


def test_to_dict_round_trips_each_parameterisation():
    for key, value in (("mttf_hours", 1e6), ("scale_hours", 2e6), ("first_year_fraction", 0.02), ("afr", 0.01)):
        s = one_class(weibull_shape=2.0, **{key: value})
        again = scenario_from_dict(s.to_dict())
        assert again == s and "resolved" not in s.to_dict()["reliability"]["components"]["laser"]
