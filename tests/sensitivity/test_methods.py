"""Sweeps, tornado and Sobol' indices on the full chain (mcengine.sensitivity), their
errors, and their tables and figures (mcengine.report.sensitivity)."""

from __future__ import annotations

import io
import json

import numba
import numpy as np
import pytest
from scipy import stats

from mcengine.sensitivity import methods as sensitivity
from mcengine.report import sensitivity as report_sensitivity
from mcengine.errors import InputError
from mcengine.pipeline import run_block
from mcengine.summaries import SUMMARY_KEYS
from mcengine.scenario import load_scenario
from mcengine.scenario.sampling import TrialInputs
from mcengine.validation.roofline import CALIBRATED_SERVING
from tests.conftest import FP8_FIT_EFFICIENCIES

DENSITIES = [0.05, 0.1, 0.2, 0.4]


@pytest.fixture(scope="module")
def density_sweep():
    return sensitivity.sweep("h100", "fab.defect_density_per_cm2", DENSITIES, trials=64, seed=1)


@pytest.fixture(scope="module")
def h100_tornado():
    return sensitivity.tornado("h100", trials=32, seed=2)


@pytest.fixture(scope="module")
def paired_sweep():
    return sensitivity.sweep(["h100", "lite-h100-2x"], "B:fab.optics_cost_usd", ["0", "200", "400"], outputs=["cost_per_mtok_usd", "gpu_cost_usd"], trials=32, seed=3)


# ----------------------------------------------------------------------------- sweep
def test_sweep_document_shape(density_sweep):
    doc = density_sweep
    assert doc["param"] == "fab.defect_density_per_cm2"
    assert doc["values"] == DENSITIES
    assert (doc["scenario"], doc["seed"], doc["trials"]) == ("h100", 1, 64)
    assert [r["value"] for r in doc["rows"]] == DENSITIES
    for row in doc["rows"]:
        assert set(row) == {"value", *sensitivity.SWEEP_OUTPUTS}
        for m in sensitivity.SWEEP_OUTPUTS:
            assert tuple(row[m]) == SUMMARY_KEYS
    json.dumps(doc, allow_nan=False)


def test_sweep_is_monotone_where_the_model_is(density_sweep):
    """Yield falls with defect density, so the fab cost per GPU (and the cost per token) rises."""
    rows = density_sweep["rows"]
    for m in ("gpu_cost_usd", "cost_per_mtok_usd"):
        means = [r[m]["mean"] for r in rows]
        assert all(b > a for a, b in zip(means, means[1:])), (m, means)
        # medians are streamed with 0.1% relative accuracy: a step smaller than a bucket
        # may leave two neighbours equal, but never reverses, and the ends must differ
        medians = [r[m]["p50"] for r in rows]
        assert all(b >= a for a, b in zip(medians, medians[1:])) and medians[-1] > medians[0], (m, medians)


def test_sweep_rows_are_paired(density_sweep):
    """Same seed at every value: what the defect density does not touch is identical."""
    rows = density_sweep["rows"]
    for m in ("tokens_per_s", "availability"):
        assert all(r[m] == rows[0][m] for r in rows), m


def test_paired_sweep_of_one_scenario_only(paired_sweep):
    doc = paired_sweep
    assert doc["ratio_of"] == "lite-h100-2x / h100"
    assert doc["applies_to"] == {"B:fab.optics_cost_usd": ["lite-h100-2x"]}
    rows = doc["rows"]
    assert [r["value"] for r in rows] == [0, 200, 400]
    for row in rows:
        assert set(row) == {"value", "cost_per_mtok_usd", "gpu_cost_usd", "p_b_below_a", "p_tie", "scenarios"}
        assert 0.0 <= row["p_b_below_a"]["cost_per_mtok_usd"] <= 1.0
        assert row["scenarios"]["h100"] == rows[0]["scenarios"]["h100"]  # A untouched
    ratio = [r["cost_per_mtok_usd"]["p50"] for r in rows]
    assert ratio[0] < ratio[1] < ratio[2]
    # the optics are added to every good package: +200 USD of fab cost per Lite-GPU, same trials
    lite = [r["scenarios"]["lite-h100-2x"]["gpu_cost_usd"]["mean"] for r in rows]
    np.testing.assert_allclose(np.diff(lite), 200.0, rtol=1e-9)
    assert set(doc["crossings"]) == {"cost_per_mtok_usd", "gpu_cost_usd"}


def test_crossings_interpolate_where_p_crosses_one_half():
    rows = [{"value": v, "p_b_below_a": {"m": p}} for v, p in ((1.0, 0.9), (2.0, 0.7), (3.0, 0.3), (4.0, 0.1))]
    assert sensitivity._crossings(rows, "m") == [pytest.approx(2.5)]


def test_two_dimensional_sweep_grid_order():
    doc = sensitivity.sweep(["h100", "lite-h100"], ["workload.collective_start_us", "fab.defect_density_per_cm2"], [[2, 10], ["0.1", "0.3", "0.5"]], outputs=["cost_per_mtok_usd"], trials=8,
                             overrides=CALIBRATED_SERVING)  # one fixed serving model: the search's choice of mode may move with the latency
    assert doc["param"] == ["workload.collective_start_us", "fab.defect_density_per_cm2"]
    assert [r["value"] for r in doc["rows"]] == [[2, 0.1], [2, 0.3], [2, 0.5], [10, 0.1], [10, 0.3], [10, 0.5]]
    assert "crossings" not in doc
    # a longer collective start slows the 32-GPU Lite instances more than the 8-GPU H100 ones
    r = {tuple(row["value"]): row["cost_per_mtok_usd"]["p50"] for row in doc["rows"]}
    assert r[(10, 0.1)] > r[(2, 0.1)]


def test_parse_values_respects_brackets_and_quotes():
    text = '0.05, "inf",{dist="lognormal", median=0.2, sigma=0.3},[1,2]'
    assert sensitivity.parse_values(text) == ["0.05", '"inf"', '{dist="lognormal", median=0.2, sigma=0.3}', "[1,2]"]
    for bad in ("0.1,,0.2", "{a=1", '"x'):
        with pytest.raises(InputError):
            sensitivity.parse_values(bad)


def test_sweep_with_a_distribution_value():
    doc = sensitivity.sweep("h100", "fab.defect_density_per_cm2", ['{dist="lognormal", median=0.3, sigma=0.25}'], outputs=["gpu_cost_usd"], trials=8)
    assert doc["rows"][0]["value"] == {"dist": "lognormal", "median": 0.3, "sigma": 0.25}


# ----------------------------------------------------------------------------- errors
def _problem(call):
    with pytest.raises(InputError) as exc:
        call()
    return exc.value.problems[0]


def test_unknown_output_names_the_option_and_the_allowed_metrics():
    p = _problem(lambda: sensitivity.tornado("h100", output="cost_per_token"))
    assert p.key == "--output" and p.value == "cost_per_token"
    assert "cost_per_mtok_usd" in p.allowed and "availability" in p.allowed
    assert _problem(lambda: sensitivity.sweep("h100", "fab.defect_density_per_cm2", [0.1], outputs=["nope"])).key == "--output"
    # a ratio of a metric that can be 0 (stock-out hours) means nothing
    p = _problem(lambda: sensitivity.sobol(["h100", "lite-h100"], output="stockout_hours"))
    assert p.key == "--output" and "two scenarios" in p.allowed and "stockout_hours" not in p.allowed.split(": ")[1]
    assert sensitivity.check_output("stockout_hours") == "stockout_hours"


def test_unknown_param_names_the_option_and_suggests():
    p = _problem(lambda: sensitivity.sweep("h100", "fab.defect_densty_per_cm2", [0.1]))
    assert (p.key, p.value) == ("--param", "fab.defect_densty_per_cm2")
    assert "fab.defect_density_per_cm2" in p.hint
    assert "fab.defect_density_per_cm2" in p.allowed
    assert _problem(lambda: sensitivity.sweep(["h100", "lite-h100"], "C:gpu.link_gbps", [1])).key == "--param"
    # a key only Lite-GPUs have, asked of H100 alone
    assert _problem(lambda: sensitivity.sweep("h100", "reliability.components.laser.afr", [0.1])).key == "--param"


def test_bad_value_names_the_values_option():
    p = _problem(lambda: sensitivity.sweep("h100", "fab.defect_density_per_cm2", [-1.0]))
    assert p.key.startswith("--values fab.defect_density_per_cm2=-1.0")


def test_other_bad_options():
    assert _problem(lambda: sensitivity.sobol("h100", trials=1000)).key == "--trials"
    assert _problem(lambda: sensitivity.tornado("h100", trials=0)).key == "--trials"
    assert _problem(lambda: sensitivity.tornado("h100", seed=-1)).key == "--seed"
    assert _problem(lambda: sensitivity.sweep("h100", ["fab.scribe_mm", "fab.scribe_mm"], [[0.1], [0.2]])).key == "--param"
    assert _problem(lambda: sensitivity.sweep(["h100", "h100", "h100"], "fab.scribe_mm", [0.1])).key == "SCENARIO"
    assert _problem(lambda: sensitivity.tornado("h100", quantiles=(0.6, 0.9))).key == "quantiles"


# ----------------------------------------------------------------------------- tornado
def test_tornado_bars_cover_every_uncertain_input_sorted_by_swing(h100_tornado):
    doc = h100_tornado
    assert (doc["method"], doc["output"], doc["trials"]) == ("tornado", "cost_per_mtok_usd", 32)
    assert set(doc["bars"]) == set(load_scenario("h100").uncertain_inputs())
    swings = [b["swing"] for b in doc["bars"].values()]
    assert swings == sorted(swings, reverse=True)
    for b in doc["bars"].values():
        assert b["swing"] == pytest.approx(abs(b["high"] - b["low"]))
    json.dumps(doc, allow_nan=False)


def test_tornado_directions_and_baseline(h100_tornado):
    bars = h100_tornado["bars"]
    assert bars["econ.gpu_markup"]["high"] > h100_tornado["baseline"] > bars["econ.gpu_markup"]["low"]
    assert bars["workload.compute_efficiency"]["high"] < bars["workload.compute_efficiency"]["low"]
    d = load_scenario("h100").uncertain_inputs()["econ.gpu_markup"]
    assert bars["econ.gpu_markup"]["input_low"] == pytest.approx(d.quantile(0.05))
    # the baseline: every input at its median, trials 0..31 of the same seed
    s = load_scenario("h100")
    inputs = TrialInputs(0, 32, {k: np.full(32, dist.median()) for k, dist in s.inputs().items()})
    expected = np.median(run_block(s, 2, 0, 32, inputs=inputs)["cost_per_mtok_usd"])
    assert h100_tornado["baseline"] == expected


def test_tornado_of_an_output_no_input_touches_has_zero_bars():
    doc = sensitivity.tornado("h100", output="availability", trials=16)
    assert all(b["swing"] == 0.0 for b in doc["bars"].values())


def test_tornado_does_not_depend_on_chunking():
    a = sensitivity.tornado("h100", output="tokens_per_s", trials=16, seed=4)
    b = sensitivity.tornado("h100", output="tokens_per_s", trials=16, seed=4, chunk_trials=8)
    assert a["bars"] == b["bars"] and a["baseline"] == b["baseline"]


# ----------------------------------------------------------------------------- sobol
def test_sobol_document_and_noise_only_output():
    """Availability depends on no uncertain input of h100: every input index is exactly
    0 and the model's own randomness explains the whole variance."""
    doc = sensitivity.sobol("h100", output="availability", trials=32, seed=5)
    keys = set(load_scenario("h100").uncertain_inputs())
    assert set(doc["indices"]) == keys | {"model_noise"}
    assert doc["evaluations"] == 32 * (len(keys) + 3)
    assert (doc["method"], doc["output"], doc["base_samples"]) == ("sobol", "availability", 32)
    assert "model_noise" in doc["model_noise_treatment"]
    for key in keys:
        assert doc["indices"][key] == {"S1": 0.0, "S1_conf": 0.0, "ST": 0.0, "ST_conf": 0.0}
    noise = doc["indices"]["model_noise"]
    t95 = stats.t.ppf(0.975, doc["scramblings"] - 1)  # *_conf are 95% half-widths, t95 standard errors wide
    assert abs(noise["ST"] - 1.0) <= 4.0 * noise["ST_conf"] / t95
    assert abs(noise["S1"] - 1.0) <= 4.0 * noise["S1_conf"] / t95
    json.dumps(doc, allow_nan=False)


def test_sobol_same_numbers_at_one_and_two_threads_and_any_chunking():
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = sensitivity.sobol("h100", trials=16, seed=6, chunk_trials=16)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = sensitivity.sobol("h100", trials=16, seed=6, chunk_trials=7)
    finally:
        numba.set_num_threads(before)
    assert one["indices"] == two["indices"]
    assert one["output_variance"] == two["output_variance"]


def test_sobol_of_the_paired_ratio_uses_the_union_of_inputs():
    a = load_scenario("h100")
    b = load_scenario("lite-h100-2x", ['gpu.link_gbps={dist="uniform", low=150, high=300}'])
    doc = sensitivity.sobol([a, b], trials=16, seed=7)
    assert doc["ratio_of"] == "lite-h100-2x / h100"
    # the union: h100's inputs, the Lite's own link bandwidth, optics price per GB/s, its
    # external laser module's failure rate and price, its optical port's price, its package
    # and test costs' area exponents and its optics' link flaps
    lite_only = {"gpu.link_gbps", "fab.optics_cost_per_gbps_usd", "reliability.components.laser.afr", "econ.module_cost_usd",
                 "econ.optical_port_cost_per_gbps_usd", "fab.package_cost_area_exponent", "fab.test_cost_area_exponent",
                 "reliability.components.optics.transient_afr"}
    assert set(b.uncertain_inputs()) - set(a.uncertain_inputs()) == lite_only
    assert set(doc["indices"]) == set(a.uncertain_inputs()) | lite_only | {"model_noise"}
    assert doc["evaluations"] == 2 * 16 * (len(a.uncertain_inputs()) + len(lite_only) + 3)
    # more link bandwidth for Lite-GPUs alone moves the ratio
    assert doc["indices"]["gpu.link_gbps"]["ST"] > 0.0


# ----------------------------------------------------------------------------- report
def _rendered(doc) -> str:
    from rich.console import Console

    buf = io.StringIO()
    Console(file=buf, width=200).print(report_sensitivity.render(doc))
    return buf.getvalue()


def test_tables_and_figures(tmp_path, density_sweep, paired_sweep, h100_tornado):
    grid = sensitivity.sweep(["h100", "lite-h100-2x"], ["B:gpu.hbm_tbps", "B:fab.optics_cost_usd"], [[0.84, 1.2], [0, 200]], outputs=["cost_per_mtok_usd"], trials=8)
    sob = sensitivity.sobol("h100", trials=16)
    expected = {
        id(density_sweep): ["sweep_fab-defect-density-per-cm2.png"],
        id(paired_sweep): ["sweep_B-fab-optics-cost-usd.png"],
        id(grid): ["sweep_B-gpu-hbm-tbps_x_B-fab-optics-cost-usd_cost-per-mtok-usd.png"],
        id(h100_tornado): ["tornado_cost-per-mtok-usd.png"],
        id(sob): ["sobol_cost-per-mtok-usd.png"],
    }
    for doc in (density_sweep, paired_sweep, grid, h100_tornado, sob):
        paths = report_sensitivity.write_figures(doc, tmp_path)
        assert [p.name for p in paths] == expected[id(doc)]
        for p in paths:
            assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert _rendered(doc).strip()
    assert "workload.compute_efficiency" in _rendered(h100_tornado)
    assert not list(tmp_path.glob(".*.tmp"))  # atomic writes leave no temporaries


@pytest.mark.slow
def test_sobol_cost_drivers_of_lite_h100():
    """A moderate design: the cost per token of Lite-H100 is decided by five inputs (ST at
    seed 8): compute efficiency 0.25, the share of communication overlapped 0.21, the area
    exponents of its test and package costs 0.18 and 0.16, and the markup 0.14; each is
    non-zero by more than 4 of its standard errors. The bf16 memory efficiency, fitted to
    0.82-0.88, does not rank; fab inputs and model noise are minor."""
    doc = sensitivity.sobol("lite-h100", trials=128, seed=8)
    ix = doc["indices"]
    drivers = {"workload.compute_efficiency", "workload.comm_overlap", "fab.test_cost_area_exponent",
               "fab.package_cost_area_exponent", "econ.gpu_markup"}
    assert set(list(ix)[:5]) == drivers
    z = stats.t.ppf(0.5 + doc["conf_level"] / 2, doc["scramblings"] - 1)  # ST_conf is Student's t of the standard errors
    assert all(ix[k]["ST"] - 4 * ix[k]["ST_conf"] / z > 0 for k in drivers)
    assert ix["workload.memory_efficiency"]["ST"] < ix["workload.compute_efficiency"]["ST"] / 10
    # "minor" means under 5% of the variance (a threshold of meaning, not a tolerance);
    # the estimate plus 4 of its standard errors must stay under it, so a noisy estimate
    # cannot pass by luck
    assert ix["model_noise"]["ST"] + 4 * ix["model_noise"]["ST_conf"] / z < 0.05
    assert sum(v["ST"] for v in ix.values()) > 0.9


SLO_DISTS = ('workload.tpot_slo_ms={dist="uniform", low=45, high=70}', 'workload.ttft_slo_ms={dist="uniform", low=60000, high=120000}')


def test_sobol_sees_both_slos_given_as_dist_tables():
    """Issue #19: `sensitivity h100 lite-h100-2x --method sobol` lists the SLOs among its indices."""
    doc = sensitivity.sobol(["h100", "lite-h100-2x"], trials=16, seed=3, overrides=SLO_DISTS)
    assert {"workload.tpot_slo_ms", "workload.ttft_slo_ms"} <= set(doc["indices"])


def test_sobol_of_an_infinite_cost_analyses_the_served_share_instead():
    """A TPOT SLO below the Lite design's batch-1 TPOT in some trials: cost per token is +inf
    there, so the indices are those of the served indicator, and the TPOT SLO drives it."""
    overrides = (*CALIBRATED_SERVING, *FP8_FIT_EFFICIENCIES, 'workload.tpot_slo_ms={dist="uniform", low=20, high=70}')
    doc = sensitivity.sobol(["h100", "lite-h100-2x"], trials=16, seed=3, overrides=overrides)
    assert doc["output"] == "served" and doc["requested_output"] == "cost_per_mtok_usd" and "infinite" in doc["note"]
    assert 0.0 < doc["output_mean"] < 1.0  # the feasible share
    assert max(doc["indices"], key=lambda k: doc["indices"][k]["ST"]) == "workload.tpot_slo_ms"
    tornado = sensitivity.tornado(["h100", "lite-h100-2x"], trials=16, seed=3, overrides=overrides)
    bar = tornado["bars"]["workload.tpot_slo_ms"]
    assert bar["infeasible_share"]["low"] == 1.0 and bar["infeasible_share"]["high"] == 0.0 and bar["low"] == np.inf


def test_an_uncertain_markup_scope_is_one_input_of_the_tornado():
    """``econ.markup_applies_to`` as a choice (docs/model.md#cost): the tornado moves it
    from the first list (at its 5th percentile) to the last (95th), and the scope moves the
    paired cost ratio."""
    scope = 'econ.markup_applies_to={dist="choice", values=[["die"], ["die", "hbm", "packaging", "test", "optics"]]}'
    doc = sensitivity.tornado(["h100", "lite-h100"], trials=4, seed=1, overrides=["cluster.instances=4", "cluster.spare_gpus=8", scope])
    bar = doc["bars"]["econ.markup_applies_to"]
    assert (bar["input_low"], bar["input_high"]) == (0.0, 1.0) and bar["swing"] > 0
