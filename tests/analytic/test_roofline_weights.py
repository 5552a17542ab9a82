"""Parameter counts and the weights and KV bytes per rank of :mod:`mcengine.analytic.roofline.weights`
against hand-computed values, published model sizes and docs/sources.md#roof-llama3-70b-tp8."""

from __future__ import annotations

import pytest

from mcengine.analytic.roofline import model as rm, weights as rw, collectives as rc
from mcengine.scenario.cards import ModelCard

from .roofline_cases import TINY, RATES, card


def test_tiny_parameter_counts():
    assert rw.attention_params(TINY) == 48
    assert rw.mlp_params(TINY) == 96
    assert rw.params_per_layer(TINY) == 152
    assert rw.params_streamed(TINY) == 344
    assert rw.params_total(TINY) == 384
    tied = ModelCard(**{**TINY.__dict__, "tied_embeddings": True, "gated_mlp": False})
    assert rw.mlp_params(tied) == 64
    assert rw.params_total(tied) == rw.params_streamed(tied) == 2 * (48 + 64 + 8) + 40


def test_shipped_cards_match_their_published_sizes():
    # docs/sources.md#roof-params: Llama-3-70B P_layers 68.45 B, 70.55 B total (141.1 GB bf16)
    m = card("llama-3-70b")
    assert m.layers * rw.params_per_layer(m) / 1e9 == pytest.approx(68.452, abs=1e-3)
    assert rw.params_total(m) * 2 / 1e9 == pytest.approx(141.107, abs=1e-3)
    assert rw.params_total(card("llama-2-70b")) / 1e9 == pytest.approx(68.98, abs=0.01)  # Llama 2 paper: 70B class, V = 32k
    assert rw.params_total(card("llama-3-8b")) / 1e9 == pytest.approx(8.03, abs=0.01)  # Meta: 8.03 B
    assert rw.params_total(card("llama-3.1-405b")) / 1e9 == pytest.approx(405.85, abs=0.01)  # Meta: 405 B
    assert rw.params_total(card("gpt-3-175b")) / 1e9 == pytest.approx(174.6, abs=0.1)  # Brown et al.: 175.0 B
    mix = card("mixtral-8x7b")  # Jiang et al.: 46.7 B total, 12.9 B active (embedding included)
    assert rw.params_total(mix) / 1e9 == pytest.approx(46.70, abs=0.01)
    assert (rw.params_active(mix) + mix.vocab * mix.hidden) / 1e9 == pytest.approx(12.88, abs=0.01)


def test_kv_bytes_per_token_and_replication(llama70):
    assert rw.kv_bytes_per_token_rank(llama70, 1, 2.0) == 327_680  # 320 KiB (docs/sources.md#roof-kv-bytes)
    assert rw.kv_bytes_per_token_rank(llama70, 8, 2.0) == 40_960
    # t = 32 > n_kv = 8: each rank keeps one KV head, so the per-rank KV does not shrink
    assert rw.kv_bytes_per_token_rank(llama70, 32, 2.0) == 40_960
    assert rw.kv_bytes_per_token_per_gpu(llama70, rm.Layout(8, 4), 2.0) == 10_240
    # ... and the K/V projections are replicated too: 2 d d_h per layer per rank
    extra = rw.rank_params_held(llama70, 32) - rw.params_total(llama70) / 32
    assert extra == pytest.approx(80 * 2 * 8192 * 128 * (1 - 8 / 32))


def test_moe_experts_touched_and_expert_parallel():
    moe = ModelCard(name="moe", layers=1, hidden=4, heads=2, kv_heads=1, head_dim=2, ffn=1, vocab=10, experts=4, experts_per_token=2, expert_ffn=8)
    assert rw.expert_params(moe) == 96
    assert rw.mlp_params(moe) == 4 * 96 + 4 * 4
    assert float(rw.experts_touched(moe, 1)) == pytest.approx(2.0)  # one token: its k experts
    assert float(rw.experts_touched(moe, 2)) == pytest.approx(4 * (1 - 0.25))
    assert float(rw.experts_touched(moe, 1000)) == pytest.approx(4.0)
    # streamed per rank at t=1, one token: attention 48 + norms 8 + router 16 + 2 experts, + LM head 40
    assert float(rw.rank_params_streamed(moe, 1, 1)) == pytest.approx(48 + 8 + 16 + 2 * 96 + 40)
    tp = rc.forward_comm_s(moe, rm.Layout(2), 3, RATES)
    ep = rc.forward_comm_s(moe, rm.Layout(2, 1, True), 3, RATES)
    message = 3 * 4 * 2.0
    assert float(tp) == pytest.approx(2 * float(rc.allreduce_s(message, 2, RATES)))
    assert float(ep) == pytest.approx(float(rc.allreduce_s(message, 2, RATES) + 2 * rc.all_to_all_s(message * 2 / 2, 2, RATES)))
