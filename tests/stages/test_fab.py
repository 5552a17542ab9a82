"""Fab stage: the `mcengine yield` body, production runs, options, reproducibility."""

from __future__ import annotations

import io
import json
import math

import numba
import numpy as np
import pytest
from rich.console import Console

from mcengine.analytic import fab as analytic
from mcengine.errors import InputError, NumericalError
from mcengine.results import SUMMARY_KEYS
from mcengine.scenario import load_scenario
from mcengine.scenario.sampling import draw_inputs
from mcengine.stages import fab

# Fixed inputs, so Monte Carlo means have exact closed forms to meet.
FIXED = ["fab.defect_density_per_cm2=0.1", "fab.defect_clustering=3.0", "fab.wafer_cost_usd=17000"]


def _with_threads(threads, fn, *args):
    previous = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        return fn(*args)
    finally:
        numba.set_num_threads(previous)


# --------------------------------------------------------------------------- yield study
def test_yield_body_shape_and_values():
    s = load_scenario("h100", [])
    body = fab.yield_study(s, 3000, 7)
    json.dumps(body)  # JSON-able as it stands
    assert isinstance(body["dies_per_wafer"], int) and body["dies_per_wafer"] == 67
    assert body["dies_per_wafer_formula"] == pytest.approx(60.07, abs=0.01)
    for key in ("die_yield", "good_dies_per_wafer", "cost_per_good_die_usd", "gpu_cost_usd", "good_h100_equivalents_per_wafer"):
        assert tuple(body[key]) == SUMMARY_KEYS
    assert set(analytic.YIELD_MODELS) <= set(body["analytic"]) and "harvesting" in body["analytic"]
    an = body["analytic"]
    m = 0.81326
    assert an["poisson"] == pytest.approx(math.exp(-m), rel=1e-4)
    assert an["negative_binomial"] == pytest.approx((1 + m / 3) ** -3, rel=1e-4)
    assert an["harvesting"] == pytest.approx(0.8535, abs=2e-4)
    assert body["good_h100_equivalents_per_wafer"]["mean"] == body["good_dies_per_wafer"]["mean"]
    assert 0 < body["harvested_share"] < 1
    assert body["harvesting"] == {"units_per_die": 144, "units_required": 132, "enabled": True}
    # MC integrates over the lognormal D0 and alpha; still close to the median closed form
    assert body["die_yield"]["mean"] == pytest.approx(an["harvesting"], abs=0.02)
    assert 0 <= body["die_yield"]["min"] <= body["die_yield"]["max"] <= 1


@pytest.mark.parametrize("name, harvest", [("h100", True), ("h100", False), ("lite-h100", True), ("lite-h100", False)])
def test_yield_study_matches_closed_form_at_fixed_inputs(name, harvest):
    s = load_scenario(name, FIXED)
    over = [] if harvest else [f"fab.units_required={s.fab.units_per_die}"]
    s = load_scenario(name, FIXED + over)
    body = fab.yield_study(s, 4000, 11)
    y = body["die_yield"]
    assert abs(y["mean"] - body["analytic"]["harvesting"]) <= 4 * y["sem"]
    good = body["good_dies_per_wafer"]
    assert abs(good["mean"] - body["analytic_cost"]["good_dies_per_wafer"]) <= 4 * good["sem"]
    if not harvest:
        assert body["analytic"]["harvesting"] == pytest.approx(body["analytic"]["negative_binomial"], rel=1e-9)
        assert body["harvested_share"] == 0.0


def test_yield_study_reproducible_across_threads_seeds_and_chunks(monkeypatch):
    s = load_scenario("lite-h100", [])
    one = _with_threads(1, fab.yield_study, s, 2500, 3)
    two = _with_threads(2, fab.yield_study, s, 2500, 3)
    assert one == two
    monkeypatch.setattr(fab, "CHUNK_WAFERS", 1000)  # not a whole number of summary blocks
    assert fab.yield_study(s, 2500, 3) == one
    assert fab.yield_study(s, 2500, 4)["die_yield"] != one["die_yield"]


@pytest.mark.parametrize("wafers", [0, -5, 2.5, True, "10", None])
def test_bad_wafer_count_is_an_input_error(wafers):
    with pytest.raises(InputError) as err:
        fab.yield_study(load_scenario("h100", []), wafers, 1)
    assert err.value.problems[0].key == "--wafers"
    assert "positive integer" in str(err.value)


@pytest.mark.parametrize("seed", [-1, 2**64, 1.5, "1"])
def test_bad_seed_is_an_input_error(seed):
    with pytest.raises(InputError) as err:
        fab.yield_study(load_scenario("h100", []), 10, seed)
    assert err.value.problems[0].key == "--seed"


def test_impossible_dies_are_input_errors():
    with pytest.raises(InputError) as err:
        load_scenario("h100", ["fab.die_width_mm=250", "fab.die_height_mm=250"])
    assert "fab.die_width_mm" in str(err.value)
    with pytest.raises(InputError):
        load_scenario("h100", ["fab.units_required=200"])


def test_render_is_a_table_with_both_columns():
    body = fab.yield_study(load_scenario("h100", []), 500, 1)
    body.update(scenario="h100", wafers=500)
    out = io.StringIO()
    Console(file=out, width=100).print(fab.render(body))
    text = out.getvalue()
    for word in ("dies per wafer", "closed form", "negative binomial", "moore", "seeds", "GPU package", "67"):
        assert word in text


# --------------------------------------------------------------------------- production runs
def test_production_runs_columns_and_cost_identity():
    s = load_scenario("h100", [])
    inputs = draw_inputs(s, 5, 0, 200)
    cols = fab.production_runs(s, inputs, 5)
    n = 200
    for key in ("gpu_cost_usd", "die_yield", "good_dies_per_wafer", "wafers", "cost_per_good_die_usd", "packages", "good_dies"):
        assert cols[key].shape == (n,) and np.all(np.isfinite(cols[key]))
    assert np.all(cols["packages"] >= s.total_gpus) and np.all(cols["good_dies"] >= cols["packages"])
    f = s.fab
    wafer_cost = inputs["fab.wafer_cost_usd"]
    attempt = f.hbm_stacks * inputs["fab.hbm_stack_cost_usd"] / inputs["fab.hbm_stack_yield"] + inputs["fab.package_cost_usd"] + inputs["fab.test_cost_usd"]
    spend = cols["wafers"] * wafer_cost + cols["good_dies"] * attempt
    assert np.allclose(cols["gpu_cost_usd"], spend / cols["packages"] + inputs["fab.optics_cost_usd"], rtol=1e-12)
    assert np.allclose(cols["cost_per_good_die_usd"], cols["wafers"] * wafer_cost / cols["good_dies"], rtol=1e-12)
    assert np.allclose(cols["die_yield"] * 67, cols["good_dies_per_wafer"], rtol=1e-12)
    assert np.all(cols["wafers"] * 67 >= s.total_gpus)  # no run makes more packages than dies


@pytest.mark.parametrize("name", ["h100", "lite-h100"])
def test_production_runs_pooled_yield_and_cost_match_closed_forms(name):
    s = load_scenario(name, FIXED)
    n = 300
    cols = fab.production_runs(s, draw_inputs(s, 13, 0, n), 13)
    dies = fab.fab_model(s).wafer.dies
    # Wald's identity: E[good dies of a run] = p * dies * E[wafers of the run], even with
    # the stopping rule; ratio of means with its delta-method standard error.
    good, made = cols["good_dies"].astype(float), cols["wafers"] * float(dies)
    ratio = good.sum() / made.sum()
    sem = np.sqrt(((good - ratio * made) ** 2).sum() / (n * (n - 1))) / made.mean()
    expected = fab.analytic_at_median(s)
    assert abs(ratio - expected["yields"]["harvesting"]) <= 4 * sem
    # the run cost sits near the long-run closed form (a run of ~1,000+ packages)
    assert cols["gpu_cost_usd"].mean() == pytest.approx(expected["cost"]["gpu_cost_usd"], rel=0.01)


def test_production_runs_reproducible_across_threads_and_chunks():
    s = load_scenario("lite-h100", ["cluster.instances=8"])
    full = _with_threads(1, fab.production_runs, s, draw_inputs(s, 2, 0, 60), 2)
    two = _with_threads(2, fab.production_runs, s, draw_inputs(s, 2, 0, 60), 2)
    a = fab.production_runs(s, draw_inputs(s, 2, 0, 30), 2)
    b = fab.production_runs(s, draw_inputs(s, 2, 30, 30), 2)
    for key in full:
        assert np.array_equal(full[key], two[key])
        assert np.array_equal(full[key], np.concatenate([a[key], b[key]]))


def test_infeasible_run_is_a_numerical_error_naming_the_trial(monkeypatch):
    monkeypatch.setattr(fab, "MAX_WAFERS_PER_RUN", 30)
    s = load_scenario("h100", ["fab.defect_density_per_cm2=3.0", "fab.defect_clustering='inf'", "fab.units_required=144"])
    with pytest.raises(NumericalError) as err:
        fab.production_runs(s, draw_inputs(s, 1, 40, 2), 1)
    assert "trial 40" in str(err.value) and "fab.defect_density_per_cm2" in str(err.value)


def test_h100_package_cost_anchor():
    """docs/sources.md#fab-h100-cost: an H100 package should land near $3.0-3.5k."""
    s = load_scenario("h100", [])
    cost = fab.production_runs(s, draw_inputs(s, 1, 0, 200), 1)["gpu_cost_usd"]
    assert 3000 <= np.median(cost) <= 3500


# --------------------------------------------------------------------------- validate
def test_validation_checks_pass():
    checks = fab.validation_checks()
    assert len(checks) >= 8
    failed = [c for c in checks if not c.passed]
    assert not failed, failed
