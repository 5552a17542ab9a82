"""Fab stage: the `mcengine yield` body, production runs, options, reproducibility."""

from __future__ import annotations


import numpy as np
import pytest

from mcengine.analytic import fab as analytic
from mcengine.errors import InputError, NumericalError
from mcengine.scenario import load_scenario
from mcengine.scenario.sampling import draw_inputs
from mcengine.stages import fab
from mcengine.standalone import fab as study
from tests.conftest import with_threads

# Fixed inputs, so Monte Carlo means have exact closed forms to meet.
FIXED = ["fab.defect_density_per_cm2=0.1", "fab.defect_clustering=3.0", "fab.wafer_cost_usd=17000"]


def test_impossible_dies_are_input_errors():
    with pytest.raises(InputError) as err:
        load_scenario("h100", ["fab.die_width_mm=250", "fab.die_height_mm=250"])
    assert "fab.die_width_mm" in str(err.value)
    with pytest.raises(InputError):
        load_scenario("h100", ["fab.units_required=200"])


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
    # shipped h100: HBM per GB, 80 GB over 5 stacks = 16 GB a stack + the stack's fixed part
    stack = 16 * inputs["fab.hbm_cost_per_gb_usd"] + inputs["fab.hbm_stack_assembly_usd"]
    attempt = f.hbm_stacks * stack / inputs["fab.hbm_stack_yield"] + inputs["fab.package_cost_usd"] + inputs["fab.test_cost_usd"]
    spend = cols["wafers"] * wafer_cost + cols["good_dies"] * attempt
    assert np.allclose(cols["gpu_cost_usd"], spend / cols["packages"] + inputs["fab.optics_cost_usd"], rtol=1e-12)
    parts = [cols[f"gpu_cost_{p}_usd"] for p in ("die", "hbm", "packaging", "test", "optics")]
    np.testing.assert_allclose(np.sum(parts, axis=0), cols["gpu_cost_usd"], rtol=1e-12)
    np.testing.assert_allclose(cols["gpu_cost_die_usd"], cols["wafers"] * wafer_cost / cols["packages"], rtol=1e-15)
    assert np.allclose(cols["cost_per_good_die_usd"], cols["wafers"] * wafer_cost / cols["good_dies"], rtol=1e-12)
    assert np.allclose(cols["die_yield"] * 67, cols["good_dies_per_wafer"], rtol=1e-12)
    assert np.all(cols["wafers"] * 67 >= s.total_gpus)  # no run makes more packages than dies


def _without(scenario, table: str, key: str):
    """``scenario`` with the optional ``table.key`` unset (as in a file that omits it)."""
    from mcengine.scenario.schema import build

    raw = scenario.to_dict()
    del raw[table][key]
    return build(raw)


def test_hbm_priced_per_gb_by_hand():
    """$13/GB + $72 a stack: the H100's 16 GB stacks cost 16 x 13 + 72 = $280 (the old
    per-stack price), the Lite-H100's one 20 GB stack 20 x 13 + 72 = $332; without the
    per-GB key the per-stack price holds whatever the capacity."""
    per_gb = ["fab.hbm_cost_per_gb_usd=13", "fab.hbm_stack_assembly_usd=72"]
    for name, expected in (("h100", 280.0), ("lite-h100", 332.0)):
        s = load_scenario(name, per_gb)
        np.testing.assert_array_equal(fab.hbm_stack_price_usd(s, draw_inputs(s, 0, 0, 3)), expected)
        old = _without(s, "fab", "hbm_cost_per_gb_usd")
        np.testing.assert_array_equal(fab.hbm_stack_price_usd(old, draw_inputs(old, 0, 0, 3)), 280.0)
    doubled = load_scenario("lite-h100", per_gb + ["gpu.hbm_gb=40"])
    np.testing.assert_array_equal(fab.hbm_stack_price_usd(doubled, draw_inputs(doubled, 0, 0, 3)), 40 * 13 + 72)


def test_hbm_part_of_a_run_by_hand():
    s = load_scenario("lite-h100", FIXED + ["fab.hbm_cost_per_gb_usd=13", "fab.hbm_stack_assembly_usd=72", "fab.hbm_stack_yield=0.98"])
    cols = fab.production_runs(s, draw_inputs(s, 3, 0, 8), 3)
    np.testing.assert_allclose(cols["gpu_cost_hbm_usd"], cols["good_dies"] * 332.0 / 0.98 / cols["packages"], rtol=1e-14)


def test_optics_priced_per_link_bandwidth():
    """$2 per GB/s: 112.5 GB/s of links cost $225 of optics, 225 GB/s $450; the same
    production runs, so the package cost moves by exactly the optics difference."""
    base = ["fab.optics_cost_usd=0", "fab.optics_cost_per_gbps_usd=2"]
    one = load_scenario("lite-h100", FIXED + base)
    two = load_scenario("lite-h100-2x", FIXED + base)
    a = fab.production_runs(one, draw_inputs(one, 4, 0, 16), 4)
    b = fab.production_runs(two, draw_inputs(two, 4, 0, 16), 4)
    np.testing.assert_array_equal(a["gpu_cost_optics_usd"], 225.0)
    np.testing.assert_array_equal(b["gpu_cost_optics_usd"], 450.0)
    np.testing.assert_array_equal(a["packages"], b["packages"])
    np.testing.assert_allclose(b["gpu_cost_usd"] - a["gpu_cost_usd"], 225.0, rtol=1e-9)
    fixed_too = load_scenario("lite-h100", FIXED + ["fab.optics_cost_usd=50", "fab.optics_cost_per_gbps_usd=2"])
    np.testing.assert_array_equal(fab.optics_price_usd(draw_inputs(fixed_too, 0, 0, 2)), 275.0)


@pytest.mark.parametrize("name", ["h100", "lite-h100"])
def test_production_runs_pooled_yield_and_cost_match_closed_forms(name):
    # the Lite's package-cost law at its median exponents: area^k is not linear in k, so the
    # closed form at the median inputs is the runs' expectation only with k fixed
    law = ["fab.package_cost_area_exponent=1.08", "fab.test_cost_area_exponent=0.75"] if name == "lite-h100" else []
    s = load_scenario(name, FIXED + law)
    n = 300
    cols = fab.production_runs(s, draw_inputs(s, 13, 0, n), 13)
    dies = fab.fab_model(s).wafer.dies
    # Wald's identity: E[good dies of a run] = p * dies * E[wafers of the run], even with
    # the stopping rule; ratio of means with its delta-method standard error.
    good, made = cols["good_dies"].astype(float), cols["wafers"] * float(dies)
    ratio = good.sum() / made.sum()
    sem = np.sqrt(((good - ratio * made) ** 2).sum() / (n * (n - 1))) / made.mean()
    expected = study.analytic_at_median(s)
    assert abs(ratio - expected["yields"]["harvesting"]) <= 4 * sem
    # the run cost sits on the long-run closed form, within 4 standard errors of the mean
    # (a run of ~1,000+ packages: the stopping rule's bias is far below that)
    cost = cols["gpu_cost_usd"]
    assert abs(cost.mean() - expected["cost"]["gpu_cost_usd"]) <= 4 * cost.std(ddof=1) / np.sqrt(n)


def test_production_runs_reproducible_across_threads_and_chunks():
    s = load_scenario("lite-h100", ["cluster.instances=8"])
    full = with_threads(1, fab.production_runs, s, draw_inputs(s, 2, 0, 60), 2)
    two = with_threads(2, fab.production_runs, s, draw_inputs(s, 2, 0, 60), 2)
    a = fab.production_runs(s, draw_inputs(s, 2, 0, 30), 2)
    b = fab.production_runs(s, draw_inputs(s, 2, 30, 30), 2)
    for key in full:
        assert np.array_equal(full[key], two[key])
        assert np.array_equal(full[key], np.concatenate([a[key], b[key]]))


def test_a_run_that_falls_short_is_a_numerical_error_naming_the_trial(monkeypatch):
    """No repairable units outside the die edge (f = 1): the bound cannot refuse, the
    simulated run falls short of its target within the wafer budget."""
    monkeypatch.setattr(fab, "MAX_WAFERS_PER_RUN", 30)
    s = load_scenario("h100", ["fab.defect_density_per_cm2=3.0", "fab.defect_clustering='inf'", "fab.units_required=144",
                               "fab.unit_area_fraction=1.0"])
    with pytest.raises(NumericalError) as err:
        fab.production_runs(s, draw_inputs(s, 1, 40, 2), 1)
    assert "trial 40" in str(err.value) and "fab.defect_density_per_cm2" in str(err.value)


def test_an_infeasible_fab_is_refused_before_any_wafer_is_simulated(monkeypatch):
    """D0 = 100/cm²: even the clean-remainder bound needs millions of wafers per run."""
    import mcengine.kernels.fab as kernels

    monkeypatch.setattr(kernels, "simulate_runs", lambda *a: pytest.fail("wafers were simulated"))
    s = load_scenario("h100", ["fab.defect_density_per_cm2=100"])
    inputs = draw_inputs(s, 1, 40, 2)
    with pytest.raises(InputError) as err:
        fab.production_runs(s, inputs, 1)
    assert "fab.defect_density_per_cm2" in str(err.value) and "in trial 40" in str(err.value)


def test_the_packages_bound_is_above_the_closed_form_yield():
    """The bound (clean remainder only) is at least the harvesting yield's packages."""
    s = load_scenario("lite-h100", ["fab.defect_density_per_cm2=0.3", "fab.defect_clustering=2.0", "fab.defect_edge_ratio=2.0"])
    model = fab.fab_model(s)
    inputs = draw_inputs(s, 1, 0, 1)
    a = {k: np.asarray(inputs[v], float) for k, v in fab._KERNEL_INPUTS.items()}
    bound = fab.packages_per_wafer_bound(model, a, np.ones(1))[0]
    exact = model.wafer.dies * analytic.harvest_yield(model.wafer.die_area_cm2, 0.3, 2.0, model.units, model.units - model.spares,
                                                      float(a["unit_fraction"][0]), model.wafer.weights(2.0))
    assert exact <= bound


def test_h100_package_cost_anchor():
    """docs/sources.md#fab-h100-cost: an H100 package should land near $3.0-3.5k."""
    s = load_scenario("h100", [])
    cost = fab.production_runs(s, draw_inputs(s, 1, 0, 200), 1)["gpu_cost_usd"]
    assert 3000 <= np.median(cost) <= 3500




# --------------------------------------------------------------------------- dies per package
def test_two_dies_per_package_cost_as_two_good_half_dies_by_hand():
    """B200's 51.8 x 31.4 mm of silicon as two 25.9 x 31.4 mm dies (80 units, 74 required,
    each yielded on its own): 67 half dies a wafer against 31 whole ones. By hand, at D0 0.1
    and alpha 3: the die cost per good package is 2 x wafer / (67 Y_half) / assembly, with
    Y_half the harvest yield of one 813 mm² die; the production runs meet it within 4 SEM,
    and it is below the one logical die's wafer / (31 Y_whole) / assembly."""
    fixed = FIXED + ["fab.defect_edge_ratio=1", "fab.unit_area_fraction=0.8", "fab.assembly_yield=0.932"]
    two = load_scenario("b200", fixed)
    one = load_scenario("b200", [*fixed, "gpu.dies_per_package=1"])
    m2, m1 = fab.fab_model(two), fab.fab_model(one)
    assert (m2.wafer.dies, m2.units, m2.spares, m2.dies_per_package) == (67, 80, 6, 2)
    assert (m1.wafer.dies, m1.units, m1.spares, m1.dies_per_package) == (31, 160, 12, 1)
    assert m2.wafer.die_area_cm2 == pytest.approx(25.9 * 31.4 / 100, rel=1e-12)
    y_half = analytic.harvest_yield(25.9 * 31.4 / 100, 0.1, 3.0, 80, 74, 0.8)
    y_whole = analytic.harvest_yield(51.8 * 31.4 / 100, 0.1, 3.0, 160, 148, 0.8)
    die_two = 2 * 17000 / (67 * y_half) / 0.932
    die_one = 17000 / (31 * y_whole) / 0.932
    assert die_two < 0.85 * die_one  # two known-good dies are cheaper than one logical die
    n = 200
    cols = fab.production_runs(two, draw_inputs(two, 21, 0, n), 21)
    die = cols["gpu_cost_die_usd"]
    assert abs(die.mean() - die_two) <= 4 * die.std(ddof=1) / np.sqrt(n)
    # every package takes two good dies: the stacks, package and test are paid per package
    attempts = cols["good_dies"] // 2
    np.testing.assert_allclose(cols["gpu_cost_packaging_usd"], attempts * two.fab.package_cost_usd.value / cols["packages"], rtol=1e-14)
    expected = fab.expected_package_costs(two, draw_inputs(two, 21, 0, 1))
    assert float(expected["gpu_cost_die_usd"][0]) == pytest.approx(die_two, rel=1e-9)


def test_dies_per_package_must_divide_the_units():
    with pytest.raises(InputError) as err:
        load_scenario("b200", ["gpu.dies_per_package=3"])
    assert "fab.units_per_die" in str(err.value) and "gpu.dies_per_package = 3" in str(err.value)
