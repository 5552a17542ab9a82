"""Disaggregated serving: prefill instances batching prompts per pass, and the KV stream
capped by the scale-up links (docs/model.md#serving)."""

from __future__ import annotations

import numpy as np
import pytest

from mcengine.analytic.roofline import model as rm, steps as rt
from mcengine.analytic import serving as sv
from mcengine.scenario import load_scenario
from mcengine.scenario.cards import load_model_card
from mcengine.scenario.sampling import quantile_inputs
from mcengine.stages.roofline.layout import rates_of
from mcengine.stages.roofline.median_plan import choose_serving
from mcengine.standalone.roofline import roofline_summary
from tests.conftest import FP8_FIT_EFFICIENCIES

#: h100 disaggregated at tensor 8 x pipeline 1 for both kinds of instance (heads sharded,
#: ring all-reduce, no overlap), no TTFT SLO, the efficiencies the hand numbers were worked at,
#: and a 16-GPU scale-up domain that holds a prefill and a decode instance, so the KV caches
#: ride the scale-up links (gpu.link_gbps) the link-cap cases below vary.
BASE = ("workload.serving='disaggregated'", "workload.tensor_parallel=8", "workload.ttft_slo_ms='inf'", "workload.attention='tensor'",
        "workload.allreduce='ring'", "workload.comm_overlap=0", "cluster.scale_up_domain_gpus=16", *FP8_FIT_EFFICIENCIES)


def _chosen(*overrides):
    s = load_scenario("h100", (*BASE, *overrides))
    return s, choose_serving(s).best["disaggregated"]


def test_prefill_batch_is_the_token_budget_over_the_prompt():
    # S = 128: 8192 // 128 = 64 prompts per pass (their KV fits, no TTFT SLO)
    s, e = _chosen("workload.prompt_tokens=128")
    assert int(e.prefill_batch[0]) == 64
    r = rates_of(s, quantile_inputs(s, 0.5))
    f_s, w_s, link_s = float(r.flops_per_s[0]), float(r.hbm_bytes_per_s[0]), float(r.link_bytes_per_s[0])
    latency_s = float(r.collective_start_s[0] + r.hop_latency_s[0])
    # by hand, Llama-3-70B on 8 ranks (docs/sources.md#roof-params): P_stream = 69,503,025,152,
    # V d = 1,050,673,152; one prompt's FLOPs 2 (P_stream - V d) S + 2 L n_h d_h S^2 + 2 V d,
    # one rank's KV per token 2 L 1 d_h 2 = 40,960 B; ring all-reduce 2L (a + 14 h + 1.75 M/W_link)
    S, L, p_stream, vd = 128, 80, 69_503_025_152, 1_050_673_152
    flops_prompt = 2 * (p_stream - vd) * S + 2 * L * 64 * 128 * S**2 + 2 * vd

    def pass_s(prompts):
        compute = prompts * flops_prompt / 8 / f_s
        memory = (2 * p_stream / 8 + prompts * S * 40_960) / w_s
        comm = 2 * L * (float(r.collective_start_s[0]) + 14 * float(r.hop_latency_s[0]) + 1.75 * prompts * S * 8192 * 2 / link_s)
        return max(compute, memory) + comm + float(r.step_overhead_s[0])

    # one prompt is memory-bound (4.93 ms compute, 8.37 ms weights, 5.02 ms all-reduces:
    # 13.88 ms, 72.0 prompts/s); 64 stream the weights once (315.3 + 105.3 + 0.5 ms =
    # 421.1 ms, 152.0 prompts/s): 2.11x the prompts per instance
    assert pass_s(1) * 1e3 == pytest.approx(13.88, abs=0.005)
    assert pass_s(64) * 1e3 == pytest.approx(421.07, abs=0.005)
    assert float(e.prefill.total_s[0]) == pytest.approx(pass_s(64), rel=1e-12)
    assert float(e.prompts_per_s_prefill[0]) == pytest.approx(64 / pass_s(64), rel=1e-12)
    assert float(e.prompts_per_s_prefill[0]) * pass_s(1) == pytest.approx(2.11, abs=0.005)
    # the pass's KV caches cross the links: 64 x 128 x 327,680 B / 8 GPUs over W_link; TTFT
    # is the whole pass (its last prompt) plus that transfer
    kv_s = latency_s + 64 * S * 327_680 / 8 / link_s
    assert float(e.kv_transfer_s[0]) == pytest.approx(kv_s, rel=1e-12)
    assert float(e.ttft_s[0]) == pytest.approx(pass_s(64) + kv_s, rel=1e-12)
    row = roofline_summary(s)["serving_modes"]["disaggregated"]
    assert row["prefill"] == {"tensor": 8, "pipeline": 1, "batch": 64}


@pytest.mark.parametrize("prompt, budget", [(512, 1000), (2048, 1000), (2048, 4095)])
def test_prefill_batch_of_one_when_two_prompts_exceed_the_budget(prompt, budget):
    # floor(1000/512) = 1; a 2048-token prompt alone exceeds 1000 and still runs; 4095 // 2048 = 1
    _, e = _chosen(f"workload.prompt_tokens={prompt}", f"workload.prefill_chunk_tokens={budget}")
    assert int(e.prefill_batch[0]) == 1


def test_ttft_slo_caps_the_prefill_batch():
    # S = 512: the largest P whose pass latency + KV transfer meets the SLO; an SLO half-way
    # between P = 3 and P = 4 gives 3
    s, free = _chosen("workload.prompt_tokens=512")
    r, m, layout = rates_of(s, quantile_inputs(s, 0.5)), s.workload.model, free.prefill_layout

    def latency_ms(p):
        return 1e3 * float((rt.batch_time_to_first_token(m, layout, p, 512, r).total_s + sv.kv_transfer_s(m, 512, 8, r, p))[0])

    assert latency_ms(3) < latency_ms(4)
    _, e = _chosen("workload.prompt_tokens=512", f"workload.ttft_slo_ms={(latency_ms(3) + latency_ms(4)) / 2}")
    assert int(e.prefill_batch[0]) == 3 and bool(e.slo_met[0])


def test_kv_link_capacity_by_hand():
    # 8 GPUs, 450 GB/s x 0.8 per direction, collectives busy a quarter of the phase:
    # 8 x 360e9 x 0.75 / (2048 x 327,680 B) = 3,218.7 prompts/s
    m = load_model_card("llama-3-70b", "workload.model", [])
    r = rm.Rates.from_peaks(989.4, 3.35, 450.0, link_efficiency=0.8)
    phase = rm.PhaseTimes(np.array([1.0]), np.array([2.0]), np.array([1.0]), np.array([1.0]))  # total 4, comm 1
    cap = float(sv.kv_link_prompts_per_s(m, 2048, 8, phase, r)[0])
    assert cap == pytest.approx(8 * 360e9 * 0.75 / (2048 * 327_680), rel=1e-12)
    assert cap == pytest.approx(3218.7, abs=0.05)


def test_slow_links_cap_the_prompt_stream():
    # At 0.2 GB/s per link the prefill instance's links cannot send the KV caches it
    # computes: its prompt rate is the link's, and the split and throughput follow it.
    s, e = _chosen("gpu.link_gbps=0.2")
    load = e.kv_link_load
    assert float(load["send"][0]) > 1 and float(load["receive"][0]) < 1
    o = s.workload.output_tokens
    assert float(e.prompts_per_s_prefill[0]) == float(e.kv_send_prompts_per_s[0])
    f = float(e.prefill_share[0])
    assert float(e.tokens_per_s_instance[0]) == pytest.approx(f * float(e.kv_send_prompts_per_s[0]) * o, rel=1e-12)
    # by hand: the link's free share is 1 - comm/total of the prefill pass
    median = quantile_inputs(s, 0.5)
    r = rates_of(s, median)
    free = 1 - float(e.prefill.comm_s[0] / e.prefill.total_s[0])
    assert float(e.kv_send_prompts_per_s[0]) == pytest.approx(8 * float(r.link_bytes_per_s[0]) * free / (2048 * 327_680), rel=1e-12)
    # at the shipped 450 GB/s the links are far from full
    _, fast = _chosen()
    assert float(fast.kv_link_load["send"][0]) < 0.01
