"""Roofline stage: the `mcengine roofline` body, per-trial columns, errors, calibration
against measured H100 results, and the Lite-GPU comparison."""

from __future__ import annotations

import pytest

from mcengine.analytic.roofline import weights as rw
from mcengine.errors import InputError
from mcengine.standalone import roofline as study
from mcengine.validation.roofline import calibrated_scenario as calibrated


TP8 = ("workload.tensor_parallel=8", "workload.pipeline_parallel=1")


def test_study_body_has_the_interface_keys(h100_body):
    b = h100_body
    assert set(b["prefill"]) >= {"ttft_ms", "tokens_per_s", "bound"}
    assert set(b["decode"]) >= {"batch", "tpot_ms", "tokens_per_s", "bound"}
    assert {b["prefill"]["bound"], b["decode"]["bound"]} <= {"compute", "memory", "network"}
    assert isinstance(b["decode"]["batch"], int) and isinstance(b["parallelism"]["tensor"], int)
    assert b["parallelism"]["tensor"] * b["parallelism"]["pipeline"] == 8
    assert b["tokens_per_s_per_gpu"] == pytest.approx(b["tokens_per_s_instance"] / 8)
    assert b["tokens_per_s_per_h100_equivalent"] == pytest.approx(b["tokens_per_s_per_gpu"])
    assert b["decode"]["tokens_per_s"] == pytest.approx(b["decode"]["batch"] / b["decode"]["tpot_ms"] * 1e3)
    for phase in ("prefill", "ttft", "decode"):
        assert set(b["terms"][phase]) == {"compute_ms", "memory_ms", "comm_ms", "overhead_ms", "total_ms"}
    t = b["terms"]["decode"]
    assert max(t["compute_ms"], t["memory_ms"]) + t["comm_ms"] + t["overhead_ms"] == pytest.approx(b["decode"]["tpot_ms"])
    t = b["terms"]["ttft"]
    assert max(t["compute_ms"], t["memory_ms"]) + t["comm_ms"] + t["overhead_ms"] == pytest.approx(b["prefill"]["ttft_ms"])
    assert [(r["tensor"], r["pipeline"]) for r in b["layouts"]] == [(8, 1), (4, 2), (2, 4), (1, 8)]
    assert sum(r["chosen"] for r in b["layouts"]) == 1


def test_auto_layout_is_the_best_per_gpu_under_the_slo(h100_body):
    rows = [r for r in h100_body["layouts"] if r["fits"] and r["slo_met"]]
    best = max(rows, key=lambda r: r["tokens_per_s_per_gpu"])
    assert best["chosen"]
    assert (best["tensor"], best["pipeline"]) == (h100_body["parallelism"]["tensor"], h100_body["parallelism"]["pipeline"])
    assert h100_body["slo_met"] and h100_body["decode"]["tpot_ms"] <= 50.0


def test_memory_limited_batch_at_tp8():
    # the KV cache read at the weights' median efficiency (0.85, docs/model.md#kv-read): at the
    # fitted 0.34 the TPOT SLO binds first (440 sequences)
    b = study.roofline_summary(calibrated("h100", (*TP8, "workload.kv_efficiency=0.85")))
    # (0.9 x 80 GB - 2 x 70.5537 B / 8) / (2,304 tokens x 40,960 B) = 576.04
    weights = 2 * rw.params_total(calibrated("h100").workload.model) / 8
    assert b["weights_gb_per_gpu"] == pytest.approx(weights / 1e9)
    assert b["kv_bytes_per_token_per_gpu"] == 40_960
    assert b["batch_limits"]["memory"] == int((72e9 - weights) // (2304 * 40_960)) == 576
    assert b["batch_limits"]["slo"] > 576
    assert b["decode"]["batch"] == 576 and b["decode"]["bound"] == "memory"


def test_slo_limited_batch():
    b = study.roofline_summary(calibrated("h100", (*TP8, "workload.tpot_slo_ms=20")))
    assert b["decode"]["batch"] == b["batch_limits"]["slo"] < b["batch_limits"]["memory"]
    assert b["decode"]["tpot_ms"] <= 20.0
    worse = study.roofline_summary(calibrated("h100", (*TP8, f"workload.batch={b['decode']['batch'] + 1}")))
    assert worse["decode"]["tpot_ms"] > 20.0


def test_unreachable_slo_delivers_no_tokens_and_names_the_limit():
    b = study.roofline_summary(calibrated("h100", (*TP8, "workload.tpot_slo_ms=1")))
    assert b["batch_limits"]["slo"] == 0 and b["decode"]["batch"] == 1 and not b["slo_met"]
    assert b["tokens_per_s_per_gpu"] == 0.0 and b["tokens_per_s_instance"] == 0.0
    (fail,) = b["slo_failed"]
    assert fail["limit"] == "tpot" and fail["slo_ms"] == 1.0
    assert fail["over_ms"] == pytest.approx(b["decode"]["tpot_ms"] - 1.0)


def test_integer_batch_that_does_not_fit_names_the_max():
    with pytest.raises(InputError) as err:
        study.roofline_summary(calibrated("h100", (*TP8, "workload.batch=600")))
    (problem,) = err.value.problems
    assert problem.key == "workload.batch" and problem.value == 600 and "at most 576" in problem.allowed


def test_model_that_does_not_fit_names_model_and_hbm():
    with pytest.raises(InputError) as err:
        study.roofline_summary(calibrated("h100", ("workload.model='llama-3.1-405b'",)))
    (problem,) = err.value.problems
    assert problem.key == "workload.model" and "gpu.hbm_gb" in problem.allowed and "8x1" in problem.allowed


def test_unshardable_tensor_degree_is_an_input_error():
    s = calibrated("h100", ("workload.model={layers=4, hidden=96, heads=12, kv_heads=4, head_dim=8, ffn=256, vocab=100}", *TP8))
    with pytest.raises(InputError) as err:
        study.roofline_summary(s)
    assert err.value.problems[0].key == "workload.tensor_parallel"


def test_moe_expert_parallel_replaces_the_mlp_all_reduce():
    tp = study.roofline_summary(calibrated("h100", ("workload.model='mixtral-8x7b'", *TP8, "workload.batch=64")))
    ep = study.roofline_summary(calibrated("h100", ("workload.model='mixtral-8x7b'", *TP8, "workload.batch=64", "workload.expert_parallel=true")))
    assert ep["parallelism"]["expert_parallel"] and not tp["parallelism"]["expert_parallel"]
    assert ep["terms"]["decode"]["memory_ms"] == pytest.approx(tp["terms"]["decode"]["memory_ms"])
    # small decode messages: one more collective start per layer makes EP dearer (latency);
    # big prefill messages: the all-to-alls carry k/t of the tokens, cheaper than an all-reduce
    assert ep["terms"]["decode"]["comm_ms"] > tp["terms"]["decode"]["comm_ms"]
    assert ep["terms"]["ttft"]["comm_ms"] < tp["terms"]["ttft"]["comm_ms"]
    # at batch 64 nearly every expert is touched: 8 (1 - (6/8)^64) = 8 - 1e-7
    m = calibrated("h100", ("workload.model='mixtral-8x7b'",)).workload.model
    assert float(rw.experts_touched(m, 64)) == pytest.approx(8.0)


def test_lite_gpu_loses_per_h100_equivalent_and_more_link_bandwidth_helps():
    """The Lite-GPU finding at the median inputs (Llama-3-70B bf16, 2,048/256, 50 ms SLO, the bf16
    efficiency table with its fitted KV-read efficiency 0.34: the FP8-fit efficiencies gave 285.4 /
    197.7 / 224.2 at TP4 x PP2 on the H100, the KV cache read at 0.85 376.3 / 283.8 / 332.4)."""
    h100 = study.roofline_summary(calibrated("h100"))
    lite = study.roofline_summary(calibrated("lite-h100"))
    lite2x = study.roofline_summary(calibrated("lite-h100", ("gpu.link_gbps=225",)))
    per_h100 = [b["tokens_per_s_per_h100_equivalent"] for b in (h100, lite, lite2x)]
    assert per_h100 == pytest.approx([312.2, 227.8, 258.4], abs=0.1)
    assert [(b["parallelism"]["tensor"], b["parallelism"]["pipeline"]) for b in (h100, lite, lite2x)] == [(4, 2), (8, 4), (8, 4)]
    # TP32 is capped by KV-head replication: 141 sequences vs 576 at TP8 x PP4
    tp32 = next(r for r in lite["layouts"] if r["tensor"] == 32)
    assert tp32["batch_limits"]["memory"] == 141
