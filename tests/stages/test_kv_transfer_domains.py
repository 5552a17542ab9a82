"""The KV cache of a disaggregated prompt crosses scale-up domains at scale-out speed
(docs/sources.md#roof-scale-up-domain): a prefill and a decode instance share NVLink only
when one domain holds both."""

from __future__ import annotations

import pytest

from mcengine.scenario import load_scenario
from mcengine.scenario.sampling import quantile_inputs
from mcengine.stages.roofline.layout import rates_of
from mcengine.stages.roofline.median_plan import choose_serving
from mcengine.stages.roofline.serving import kv_rates

BASE = ("workload.serving='disaggregated'", "workload.tensor_parallel=8", "workload.ttft_slo_ms='inf'", "workload.attention='tensor'",
        "workload.allreduce='ring'", "workload.comm_overlap=0")
#: Llama-3-70B bf16 KV per token (docs/sources.md#roof-kv-bytes): 2 x 80 layers x 8 KV heads x 128 x 2 B.
KV_TOKEN_BYTES = 327_680


def _kv_ms(*overrides):
    s = load_scenario("h100", (*BASE, *overrides))
    e = choose_serving(s).best["disaggregated"]
    r = rates_of(s, quantile_inputs(s, 0.5))
    return s, r, float(e.kv_transfer_s[0]) * 1e3 / float(e.prefill_batch[0])


def test_two_hgx_hosts_move_the_kv_cache_over_infiniband():
    """8-GPU instances in 8-GPU NVLink domains: each GPU sends its 1/8 of the 2,048-token prompt's
    KV (83,886,080 B) over its 50 GB/s NIC at link efficiency 0.82 = 41 GB/s: 2.05 ms plus the
    start and one scale-out hop, per prompt of the pass."""
    s, r, per_prompt_ms = _kv_ms()
    nbytes = 2048 * KV_TOKEN_BYTES / 8
    assert nbytes == 83_886_080
    start_s, hop_s = float(r.collective_start_s[0]), float(r.scale_out_hop_s[0])
    batch = choose_serving(s).best["disaggregated"].prefill_batch[0]
    by_hand_ms = (start_s + hop_s + batch * nbytes / (50e9 * 0.82)) * 1e3 / batch
    assert per_prompt_ms == pytest.approx(by_hand_ms, rel=1e-12)
    assert kv_rates(s, r).link_bytes_per_s == pytest.approx(41e9)


def test_one_domain_holding_both_instances_keeps_nvlink_and_is_faster():
    s, r, scale_up_ms = _kv_ms("cluster.scale_up_domain_gpus=16")
    assert kv_rates(s, r) is r
    _, _, scale_out_ms = _kv_ms()
    # 450 GB/s x 0.82 against 50 GB/s x 0.82: the bytes move 9x faster
    assert scale_out_ms > 5 * scale_up_ms


def test_auto_domain_is_one_instance_so_the_lite_crosses_too():
    s = load_scenario("lite-h100")
    r = rates_of(s, quantile_inputs(s, 0.5))
    assert s.cluster.scale_up_domain_gpus == "auto"
    assert float(kv_rates(s, r).link_bytes_per_s[0]) == pytest.approx(float(r.scale_out_bytes_per_s[0]))
