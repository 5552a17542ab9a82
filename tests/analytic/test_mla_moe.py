"""Multi-head latent attention and mixture of experts as deployed (docs/generation.md#mla,
docs/generation.md#moe): DeepSeek-V3's card against its technical report and by hand."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from mcengine.analytic.roofline import collectives as rc, model as rm, steps as rt, weights as rw

from .roofline_cases import RATES, card


@pytest.fixture(scope="module")
def dsv3():
    return card("deepseek-v3")


def test_deepseek_v3_mla_kv_bytes_per_token_by_hand(dsv3):
    # 61 layers x (latent 512 + rope 64) x 2 bytes (bf16) = 70,272 B; fp8 35,136 B; the same
    # on every tensor rank (the latent is not split by heads) and with data-parallel attention
    assert rw.kv_bytes_per_token_rank(dsv3, 1, 2.0) == 61 * (512 + 64) * 2 == 70_272
    assert rw.kv_bytes_per_token_rank(dsv3, 8, 1.0) == 35_136
    assert rw.kv_bytes_per_token_rank(dsv3, 8, 1.0, "data") == 35_136
    # against Llama-3-70B's 327,680 B (docs/sources.md#roof-kv-bytes): 4.7x less per token
    assert rw.kv_bytes_per_token_rank(card("llama-3-70b"), 1, 2.0) / 70_272 == pytest.approx(4.663, abs=1e-3)


def test_deepseek_v3_parameters_match_the_report(dsv3):
    # 671 B total, 37 B active (arXiv:2412.19437, without the 14 B MTP module)
    assert rw.params_total(dsv3) / 1e9 == pytest.approx(671.0, rel=0.002)
    assert rw.params_active(dsv3) / 1e9 == pytest.approx(37.0, rel=0.015)
    # MLA attention per layer: 7168 (1536 + 576) + 1536 x 128 x 192 + 512 x 128 x 256 + 128 x 128 x 7168
    assert rw.attention_params(dsv3) == 7168 * (1536 + 576) + 1536 * 128 * 192 + 512 * 128 * 256 + 128 * 128 * 7168 == 187_105_280
    # sharded over 8 ranks the down-projections stay whole
    assert rw.attention_rank(dsv3, 8) == 7168 * (1536 + 576) + (187_105_280 - 7168 * (1536 + 576)) / 8


def test_all_to_all_bytes_of_top8_routing_with_imbalance(dsv3):
    # 1,000 tokens, top-8, d = 7168 bf16 activations, 64 expert-parallel ranks: the mean rank
    # sends 1000 x 8 x 7168 x 2 / 64 = 1,792,000 B per dispatch; the hottest expert's rank at
    # imbalance 1.5 moves 2,688,000 B
    assert float(rc.moe_dispatch_bytes(dsv3, 1000, 64)) == 1_792_000.0
    assert float(rc.moe_dispatch_bytes(dsv3, 1000, 64, 1.5)) == 2_688_000.0
    # and each layer's dispatch + combine all-to-alls take twice all_to_all_s of those bytes
    lay = rm.Layout(64, expert_parallel=True)
    r = replace(RATES, moe_imbalance=np.asarray(1.5))
    comm = rc.forward_comm_s(dsv3, lay, 1000.0, r)
    allreduce = rc.hierarchical_allreduce_s(1000.0 * 7168 * 2, lay, r)
    a2a = rc.all_to_all_s(2_688_000.0, 64, r)
    assert float(comm) == pytest.approx(61 * (float(allreduce) + 2 * float(a2a)), rel=1e-14)


def test_hot_expert_rank_computes_imbalance_times_the_mean(dsv3):
    lay = rm.Layout(64, expert_parallel=True)
    r = replace(RATES, moe_imbalance=np.asarray(1.5))
    # (1.5 - 1) x 10 tokens x 2 x 8 experts x 3 x 7168 x 2048 params x 58 routed layers / 64 ranks
    assert float(rt.hot_expert_flops(dsv3, lay, 10.0, r)) == pytest.approx(0.5 * 10 * 2 * 8 * 3 * 7168 * 2048 * 58 / 64, rel=1e-15)
    assert rt.hot_expert_flops(dsv3, rm.Layout(64), 10.0, r) == 0.0  # tensor-sharded experts: every rank its share


def test_continuous_steps_prefill_chunk_pays_the_imbalance_too(dsv3):
    # a continuous step of B = 64 sequences at S = 2048, O = 256 prefills a chunk of
    # c = 64 x 2048 / 256 = 512 prompt tokens beside its 64 decode tokens; at imbalance 1.5
    # the hottest expert's rank computes 0.5 x (64 + 512) x 2 x 8 x 3 x 7168 x 2048 x 58 / 64
    # FLOPs more than at 1 (F = 1,000 FLOP/s), and a half-cached prompt's chunk 256 of its 512
    from mcengine.analytic import serving as sv

    lay = rm.Layout(64, expert_parallel=True)
    per_token = 2 * 8 * 3 * 7168 * 2048 * 58 / 64
    for hit, chunk in ((0.0, 512), (0.5, 256)):
        base = replace(RATES, prefix_hit=hit)
        even = sv.continuous_step(dsv3, lay, 64, 2048, 256, base)
        hot = sv.continuous_step(dsv3, lay, 64, 2048, 256, replace(base, moe_imbalance=np.asarray(1.5)))
        assert float(hot.compute_s - even.compute_s) == pytest.approx(0.5 * (64 + chunk) * per_token / 1000.0, rel=1e-12)


def test_mla_decode_attends_over_the_latent_and_prefill_over_the_heads(dsv3):
    assert rw.attention_width(dsv3, True) == (2 * 512 + 64) / 2 == 544
    assert rw.attention_width(dsv3, False) == (2 * 128 + 64) / 2 == 160
    assert rw.attention_width(card("llama-3-70b"), True) == 128
