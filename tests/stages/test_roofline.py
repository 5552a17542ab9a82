"""Roofline stage: the `mcengine roofline` body, per-trial columns, errors, calibration
against measured H100 results, and the Lite-GPU comparison."""

from __future__ import annotations

import numpy as np
import pytest

from mcengine.analytic.roofline import model as rm
from mcengine.errors import InputError
from mcengine.scenario.sampling import draw_inputs, quantile_inputs
from mcengine.stages import roofline
from mcengine.standalone import roofline as study
from mcengine.validation.roofline import calibrated_scenario as calibrated


TP8 = ("workload.tensor_parallel=8", "workload.pipeline_parallel=1")


def test_throughput_columns_match_the_study_at_the_median(h100_body):
    s = calibrated("h100")
    cols = roofline.throughput(s, quantile_inputs(s, 0.5))
    assert set(cols) == {"tokens_per_s_instance", "tokens_per_s_per_gpu", "ttft_ms", "tpot_ms", "batch", "slo_met", "busy_fraction",
                         "output_tokens_per_request"}
    assert cols["output_tokens_per_request"][0] == s.workload.output_tokens
    assert cols["slo_met"][0] == 1.0 and h100_body["slo_met"]
    assert cols["batch"].dtype == np.int64
    assert cols["tokens_per_s_instance"][0] == pytest.approx(h100_body["tokens_per_s_instance"])
    assert cols["tpot_ms"][0] == pytest.approx(h100_body["decode"]["tpot_ms"])
    assert cols["ttft_ms"][0] == pytest.approx(h100_body["prefill"]["ttft_ms"])
    assert cols["batch"][0] == h100_body["decode"]["batch"]


def test_throughput_per_trial_keeps_the_layout_and_is_chunk_independent():
    s = calibrated("lite-h100")
    inputs = draw_inputs(s, 7, 0, 64)
    cols = roofline.throughput(s, inputs)
    assert all(v.shape == (64,) for v in cols.values())
    assert np.all(cols["tpot_ms"] <= 50.0 + 1e-9) and np.all(cols["batch"] >= 1)
    np.testing.assert_allclose(cols["tokens_per_s_per_gpu"], cols["tokens_per_s_instance"] / 32)
    assert np.ptp(cols["tokens_per_s_instance"]) > 0  # the sampled efficiencies matter
    halves = [roofline.throughput(s, draw_inputs(s, 7, start, 32)) for start in (0, 32)]
    for key, values in cols.items():
        np.testing.assert_array_equal(values, np.concatenate([h[key] for h in halves]))
    # every trial at the median layout: a trial's numbers are those of that layout alone
    best = study.roofline_summary(s)["parallelism"]
    layout = rm.Layout(best["tensor"], best["pipeline"])
    from mcengine.stages.roofline.layout import evaluate

    np.testing.assert_array_equal(evaluate(s, layout, inputs).tokens_per_s_instance, cols["tokens_per_s_instance"])


def test_throughput_rejects_trials_where_the_weights_do_not_fit():
    s = calibrated("h100", (*TP8, 'gpu.hbm_gb={dist="uniform", low=15, high=80}'))
    with pytest.raises(InputError) as err:
        roofline.throughput(s, draw_inputs(s, 1, 0, 256))
    assert err.value.problems[0].key == "gpu.hbm_gb"




def test_busy_fraction_is_the_compute_or_memory_share_of_the_serving_cycle():
    """Utilisation of the power model by hand from the phase terms: (max(c, m) of the
    prefill + O x max(c, m) of a decode step) / (prefill + O x TPOT)."""
    from mcengine.stages.roofline.median_plan import choose_layout
    from mcengine.stages.roofline.layout import evaluate

    s = calibrated("lite-h100-2x")
    inputs = draw_inputs(s, 3, 0, 8)
    e = evaluate(s, choose_layout(s)[0].layout, inputs)
    o = s.workload.output_tokens
    busy = np.maximum(e.prefill.compute_s, e.prefill.memory_s) + o * np.maximum(e.decode.compute_s, e.decode.memory_s)
    cycle = np.maximum(e.prefill.compute_s, e.prefill.memory_s) + e.prefill.comm_s + e.prefill.overhead_s \
        + o * (np.maximum(e.decode.compute_s, e.decode.memory_s) + e.decode.comm_s + e.decode.overhead_s)
    cols = roofline.throughput(s, inputs)
    np.testing.assert_allclose(cols["busy_fraction"], busy / cycle, rtol=1e-12)
    assert np.all((cols["busy_fraction"] > 0.3) & (cols["busy_fraction"] < 1.0))


def test_dvfs_scale_multiplies_the_peak_flops():
    """s = 0.8: compute terms / 0.8, memory terms unchanged."""
    from mcengine.stages.roofline.layout import rates_of

    s = calibrated("h100")
    slow = calibrated("h100", ["gpu.dvfs_scale=0.8"])
    a, b = rates_of(s, quantile_inputs(s)), rates_of(slow, quantile_inputs(slow))
    np.testing.assert_allclose(b.flops_per_s, 0.8 * a.flops_per_s, rtol=1e-15)
    np.testing.assert_array_equal(b.hbm_bytes_per_s, a.hbm_bytes_per_s)
