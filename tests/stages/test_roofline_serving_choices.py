"""The serving choices of issue #19 in the roofline stage: today's numbers with the
explicit defaults, the fabric's allowed algorithms, the search over attention modes and
algorithms, and the SLOs that make a trial deliver no tokens."""

from __future__ import annotations

import numpy as np
import pytest

from mcengine.analytic.roofline import model as rm
from mcengine.errors import InputError
from mcengine.scenario.sampling import TrialInputs, quantile_inputs
from mcengine.stages import roofline
from mcengine.stages.roofline.median_plan import choose_layout
from mcengine.stages.roofline.layout import candidate_layouts
from mcengine.standalone import roofline as study
from mcengine.validation.roofline import CALIBRATION, KNOWN_MISSES, Anchor, calibrated_scenario as calibrated


TODAY = ('workload.allreduce="ring"', "workload.comm_overlap=0", 'workload.attention="tensor"', 'workload.ttft_slo_ms="inf"')

#: ``mcengine validate``'s calibration values before the serving choices existed (commit
#: 8955525), to the bit: the explicit defaults must reproduce them exactly.
VALIDATE_ROWS = {
    "MLPerf offline Llama-2-70B tok/s on 8xH100": 23030.039431163754,
    "NIM ITL ms, 5,000 in / 500 out": 18.728254719370206,  # the KV cache read at the fitted fp8 0.53
    "NIM ITL ms, 500 in / 2,000 out": 18.55523303533754,
    "NIM TTFT ms, 5,000-token prompt": 439.9932668602663,
    "TRT-LLM TTFT ms, 2,048-token prompt, 4xH100 FP8 TP4": 104.55100890456212,
}


@pytest.mark.parametrize("anchor", (*CALIBRATION, *KNOWN_MISSES), ids=lambda a: a.name)
def test_explicit_defaults_reproduce_the_validate_rows_exactly(anchor):
    """Rows older than the serving choices keep their value to the bit; newer rows (the
    continuous-serving anchor) give the same value with the choices spelled out."""
    expected = VALIDATE_ROWS.get(anchor.name)
    if expected is not None:
        assert anchor.value() == expected
    explicit = Anchor(anchor.name, (*anchor.overrides, *TODAY), anchor.output, anchor.scale, anchor.low, anchor.high, anchor.source,
                      anchor.known_miss)
    assert explicit.value() == anchor.value()


def test_a_ring_fabric_allows_only_ring():
    with pytest.raises(InputError) as err:
        candidate_layouts(calibrated("h100", ('cluster.scale_up="ring"', 'workload.allreduce="two_shot"')))
    (problem,) = err.value.problems
    assert problem.key == "workload.allreduce" and problem.value == "two_shot" and '"ring"' in problem.allowed
    layouts = candidate_layouts(calibrated("h100", ('cluster.scale_up="ring"', 'workload.allreduce="auto"')))
    assert {lay.allreduce for lay in layouts} == {"ring"}


def test_auto_algorithm_is_at_least_as_fast_as_ring_and_reported_per_phase():
    ring = study.roofline_summary(calibrated("lite-h100-2x"))
    auto = study.roofline_summary(calibrated("lite-h100-2x", ('workload.allreduce="auto"',)))
    assert auto["tokens_per_s_per_gpu"] > ring["tokens_per_s_per_gpu"]
    assert ring["allreduce"] == {"prefill": "ring", "decode": "ring"}
    assert set(auto["allreduce"].values()) <= set(rm.SWITCHED_ALGORITHMS)
    assert auto["allreduce"]["decode"] != "ring"  # at t = 8, two-shot or one-shot beat the 14-hop ring


def test_attention_auto_searches_every_mode_and_keeps_the_better():
    s = calibrated("lite-h100", ('workload.attention="auto"',))
    layouts = candidate_layouts(s)
    assert {lay.attention for lay in layouts} == {"tensor", "data", "grouped"}
    # grouped: every g with 1 < g < t whose t/g ranks divide the 8 KV heads (t = 32: 4, 8, 16)
    assert sorted(lay.attention_groups for lay in layouts if lay.attention == "grouped" and lay.tensor == 32) == [4, 8, 16]
    best, evaluations = choose_layout(s)
    meeting = [e for e in evaluations if e.fits[0] and e.slo_met[0]]
    assert best.tokens_per_s_per_gpu[0] == max(e.tokens_per_s_per_gpu[0] for e in meeting)
    body = study.roofline_summary(s)
    labels = {r["attention"] for r in body["layouts"]}
    assert body["attention"] == best.layout.attention_label and {"tensor", "data", "grouped/4", "grouped/8"} <= labels


def test_data_attention_lifts_the_kv_head_constraint():
    # 28 divides the MLP (ffn 28,672) but neither divides 64 heads nor is a multiple of 8 KV
    # heads: only data-parallel attention shards it
    s = calibrated("h100", ("cluster.instance_gpus=28", "workload.tensor_parallel=28", "workload.pipeline_parallel=1", 'workload.attention="auto"'))
    # (or grouped attention whose groups of t/g ranks do: g = 7 and 14 give 4 and 2 ranks)
    assert [lay.attention_label for lay in candidate_layouts(s)] == ["data", "grouped/7", "grouped/14"]


def _two_trials(scenario, **columns) -> TrialInputs:
    median = quantile_inputs(scenario, 0.5)
    values = {k: np.repeat(v, 2) for k, v in median.values.items()}
    values.update({k: np.asarray(v, float) for k, v in columns.items()})
    return TrialInputs(0, 2, values)


def test_a_trial_that_misses_the_ttft_slo_at_batch_one_delivers_no_tokens():
    s = calibrated("h100", ('workload.ttft_slo_ms={dist="uniform", low=50, high=400}',))
    best, _ = choose_layout(s)
    one_prompt = float(best.ttft.total_s[0]) * 1e3  # ~110 ms at the median inputs
    cols = roofline.throughput(s, _two_trials(s, **{"workload.ttft_slo_ms": [one_prompt * 1.5, one_prompt * 0.9]}))
    assert cols["slo_met"].tolist() == [1.0, 0.0]
    assert cols["tokens_per_s_instance"][0] > 0 and cols["tokens_per_s_instance"][1] == 0.0
    assert cols["batch"][1] == 1


def test_roofline_names_the_failed_ttft_limit():
    body = study.roofline_summary(calibrated("h100", ("workload.ttft_slo_ms=50",)))
    (fail,) = body["slo_failed"]
    assert fail["limit"] == "ttft" and fail["slo_ms"] == 50.0 and fail["over_ms"] == pytest.approx(fail["ms"] - 50.0)
    assert body["tokens_per_s_per_gpu"] == 0.0 and body["ttft_slo_ms"] == 50.0 and body["tpot_slo_ms"] == 50.0


def test_ttft_slo_caps_the_static_batch():
    body = study.roofline_summary(calibrated("h100", ("workload.ttft_slo_ms=2000",)))
    assert body["slo_failed"] == [] and body["prefill"]["ttft_batch_ms"] <= 2000.0
    assert body["decode"]["batch"] == body["batch_limits"]["ttft"] < body["batch_limits"]["slo"]


def test_overlap_raises_throughput_when_communication_is_exposed():
    base = study.roofline_summary(calibrated("lite-h100"))
    half = study.roofline_summary(calibrated("lite-h100", ("workload.comm_overlap=0.5",)))
    assert half["tokens_per_s_per_gpu"] > base["tokens_per_s_per_gpu"]
    t = half["terms"]["decode"]
    total = max(max(t["compute_ms"], t["memory_ms"]), 0.5 * t["comm_ms"]) + 0.5 * t["comm_ms"] + t["overhead_ms"]
    assert t["total_ms"] == pytest.approx(total, rel=1e-12)
