"""The roofline closed forms against hand-computed values and docs/sources.md#roof-llama3-70b-tp8."""

from __future__ import annotations

import numpy as np
import pytest

from mcengine.analytic import roofline as ra
from mcengine.scenario.cards import ModelCard, load_model_card

#: A model small enough to do by hand: P_attn = 16 + 16 + 16 = 48, P_mlp = 3*4*8 = 96,
#: P_layer = 48 + 96 + 2*4 = 152, P_stream = 2*152 + 10*4 = 344, P_total = 384.
TINY = ModelCard(name="tiny", layers=2, hidden=4, heads=2, kv_heads=1, head_dim=2, ffn=8, vocab=10)
#: Round unit-less rates: F = 1000 FLOP/s, W = 100 B/s, W_link = 10 B/s, alpha = 1 s + 0.5 s/hop,
#: overhead 2 s/step + 0.25 s/layer, bf16 weights, 1-byte KV.
RATES = ra.Rates(1000.0, 100.0, 10.0, 1.0, 0.5, 2.0, 0.25, bytes_per_param=2.0, kv_bytes=1.0)


def card(name: str) -> ModelCard:
    return load_model_card(name, "workload.model", [])


@pytest.fixture(scope="module")
def llama70():
    return card("llama-3-70b")


def test_tiny_parameter_counts():
    assert ra.attention_params(TINY) == 48
    assert ra.mlp_params(TINY) == 96
    assert ra.params_per_layer(TINY) == 152
    assert ra.params_streamed(TINY) == 344
    assert ra.params_total(TINY) == 384
    tied = ModelCard(**{**TINY.__dict__, "tied_embeddings": True, "gated_mlp": False})
    assert ra.mlp_params(tied) == 64
    assert ra.params_total(tied) == ra.params_streamed(tied) == 2 * (48 + 64 + 8) + 40


def test_shipped_cards_match_their_published_sizes():
    # docs/sources.md#roof-params: Llama-3-70B P_layers 68.45 B, 70.55 B total (141.1 GB bf16)
    m = card("llama-3-70b")
    assert m.layers * ra.params_per_layer(m) / 1e9 == pytest.approx(68.452, abs=1e-3)
    assert ra.params_total(m) * 2 / 1e9 == pytest.approx(141.107, abs=1e-3)
    assert ra.params_total(card("llama-2-70b")) / 1e9 == pytest.approx(68.98, abs=0.01)  # Llama 2 paper: 70B class, V = 32k
    assert ra.params_total(card("llama-3-8b")) / 1e9 == pytest.approx(8.03, abs=0.01)  # Meta: 8.03 B
    assert ra.params_total(card("llama-3.1-405b")) / 1e9 == pytest.approx(405.85, abs=0.01)  # Meta: 405 B
    assert ra.params_total(card("gpt-3-175b")) / 1e9 == pytest.approx(174.6, abs=0.1)  # Brown et al.: 175.0 B
    mix = card("mixtral-8x7b")  # Jiang et al.: 46.7 B total, 12.9 B active (embedding included)
    assert ra.params_total(mix) / 1e9 == pytest.approx(46.70, abs=0.01)
    assert (ra.params_active(mix) + mix.vocab * mix.hidden) / 1e9 == pytest.approx(12.88, abs=0.01)


def test_kv_bytes_per_token_and_replication(llama70):
    assert ra.kv_bytes_per_token_rank(llama70, 1, 2.0) == 327_680  # 320 KiB (docs/sources.md#roof-kv-bytes)
    assert ra.kv_bytes_per_token_rank(llama70, 8, 2.0) == 40_960
    # t = 32 > n_kv = 8: each rank keeps one KV head, so the per-rank KV does not shrink
    assert ra.kv_bytes_per_token_rank(llama70, 32, 2.0) == 40_960
    assert ra.kv_bytes_per_token_per_gpu(llama70, ra.Layout(8, 4), 2.0) == 10_240
    # ... and the K/V projections are replicated too: 2 d d_h per layer per rank
    extra = ra.rank_params_held(llama70, 32) - ra.params_total(llama70) / 32
    assert extra == pytest.approx(80 * 2 * 8192 * 128 * (1 - 8 / 32))


def test_decode_tensor_parallel_1_by_hand():
    d = ra.decode_step(TINY, ra.Layout(1), 3, 5.0, RATES)
    # compute 3 (2*344 + 4*2*2*2*5) / 1000; memory (2*344 + 3*5*8) / 100; no collective at t = 1
    assert float(d.compute_s) == pytest.approx(2.544)
    assert float(d.memory_s) == pytest.approx(8.08)
    assert float(d.comm_s) == 0.0
    assert float(d.overhead_s) == pytest.approx(2.5)
    assert float(d.total_s) == pytest.approx(10.58)
    assert d.bound.item() == "memory"


def test_decode_tensor_parallel_above_kv_heads_by_hand():
    d = ra.decode_step(TINY, ra.Layout(2), 3, 5.0, RATES)
    # t = 2 > n_kv = 1: rank weights = 2 (2*4*2*2/2 + 2*4*2*1 + (96 + 8)/2) + 40/2 = 188
    assert ra.rank_params_active(TINY, 2) == 188
    assert float(d.compute_s) == pytest.approx(3 * (2 * 188 + 4 * 2 * 1 * 2 * 5) / 1000)
    assert float(d.memory_s) == pytest.approx((2 * 188 + 3 * 5 * 8) / 100)  # KV per rank still 8 B/token
    # 2L = 4 all-reduces of 3*4*2 = 24 B: 1 + 2(1)(0.5) + 2(1/2)(24/10) = 4.4 s each
    assert float(d.comm_s) == pytest.approx(4 * 4.4)
    assert float(d.total_s) == pytest.approx(4.96 + 17.6 + 2.5)
    assert d.bound.item() == "network"


def test_prefill_by_hand():
    p = ra.prefill(TINY, ra.Layout(1), 2, 3, RATES)
    # 2 (2 L P_layer S + 2 L n_h d_h S^2 + 2 d V) = 2 (1824 + 144 + 80) FLOPs
    assert float(p.compute_s) == pytest.approx(4.096)
    assert float(p.memory_s) == pytest.approx((2 * 344 + 2 * 3 * 8) / 100)
    assert float(p.total_s) == pytest.approx(7.36 + 2.5)
    ttft = ra.time_to_first_token(TINY, ra.Layout(1), 3, RATES)
    assert float(ttft.total_s) == pytest.approx(float(ra.prefill(TINY, ra.Layout(1), 1, 3, RATES).total_s))


def test_memory_limited_batch_by_hand():
    # weights 2 * 384 = 768 B; 0.9 x 1000 B - 768 = 132 B free; 5 tokens x 8 B = 40 B per sequence
    assert ra.batch_limit_memory(TINY, ra.Layout(1), 1e-6, 0.9, 5, 2.0, 1.0) == 3
    assert ra.batch_limit_memory(TINY, ra.Layout(1), 1e-6, 0.7, 5, 2.0, 1.0) == 0  # weights do not fit
    limits = ra.batch_limit_memory(TINY, ra.Layout(1), np.array([1e-6, 2e-6]), 0.9, 5, 2.0, 1.0)
    np.testing.assert_array_equal(limits, [3, 25])  # (1800 - 768) / 40 = 25.8


def test_slo_batch_is_the_largest_meeting_the_slo():
    # TPOT(B) = max(0.848 B, 6.88 + 0.4 B) + 2.5: 9.78 at B=1, 10.98 at B=4, 0.848 B + 2.5 past B=15
    context, slo = 5.0, np.array([5.0, 10.0, 11.0, 50.0])
    b = ra.batch_limit_slo(TINY, ra.Layout(1), context, slo, RATES)
    np.testing.assert_array_equal(b, [0, 1, 4, 56])
    for limit, s in zip(b[1:], slo[1:]):
        assert float(ra.decode_step(TINY, ra.Layout(1), limit, context, RATES).total_s) <= s
        assert float(ra.decode_step(TINY, ra.Layout(1), limit + 1, context, RATES).total_s) > s


def test_collectives():
    assert float(ra.allreduce_s(1e6, 1, RATES)) == 0.0
    assert float(ra.all_to_all_s(1e6, 1, RATES)) == 0.0
    assert float(ra.allreduce_s(40.0, 4, RATES)) == pytest.approx(1 + 6 * 0.5 + 1.5 * 4.0)
    assert float(ra.all_to_all_s(40.0, 4, RATES)) == pytest.approx(1 + 3 * 0.5 + 0.75 * 4.0)
    assert float(ra.p2p_s(40.0, RATES)) == pytest.approx(1 + 0.5 + 4.0)


def test_reference_decode_table(llama70):
    """Llama-3-70B bf16 TP8, T = 2,048, eta = 1, flat alpha 10 us, 450 GB/s."""
    r = ra.Rates.from_peaks(989.4, 3.35, 450.0, collective_start_us=10.0)
    table = {1: (5.21, 0.02, 1.61, 6.82), 8: (5.39, 0.15, 1.68, 7.07), 32: (5.99, 0.58, 1.93, 7.91), 64: (6.79, 1.17, 2.25, 9.04),
             128: (8.39, 2.33, 2.90, 11.30), 256: (11.60, 4.67, 4.21, 15.81), 512: (18.01, 9.34, 6.82, 24.83)}
    for batch, (mem, comp, comm, tpot) in table.items():
        d = ra.decode_step(llama70, ra.Layout(8), batch, 2048, r)
        got = [float(x) * 1e3 for x in (d.memory_s, d.compute_s, d.comm_s, d.total_s)]
        assert got == pytest.approx([mem, comp, comm, tpot], abs=0.006), batch
    derated = ra.Rates.from_peaks(989.4, 3.35, 450.0, 0.7, 0.8, 370 / 450, collective_start_us=10.0)
    tpots = [float(ra.decode_step(llama70, ra.Layout(8), b, 2048, derated).total_s) * 1e3 for b in (1, 64, 256, 512)]
    assert tpots == pytest.approx([8.13, 10.88, 19.27, 30.46], abs=0.006)


def test_reference_prefill_table(llama70):
    r450 = ra.Rates.from_peaks(989.4, 3.35, 450.0, collective_start_us=10.0)
    r370 = ra.Rates.from_peaks(989.4, 3.35, 370.0, collective_start_us=10.0)
    for s, tflop, comp, ar450, ar370 in ((128, 17.5, 2.22, 2.90, 3.19), (512, 70.4, 8.90, 6.82, 7.95), (2048, 285.9, 36.1, 22.5, 27.0), (8192, 1209.5, 152.8, 85.1, 103.2)):
        p = ra.prefill(llama70, ra.Layout(8), 1, s, r450)
        assert float(p.compute_s) * 989.4 * 8 == pytest.approx(tflop, abs=0.06)
        assert float(p.compute_s) * 1e3 == pytest.approx(comp, rel=0.003)
        assert float(p.comm_s) * 1e3 == pytest.approx(ar450, rel=0.003)
        assert float(ra.prefill(llama70, ra.Layout(8), 1, s, r370).comm_s) * 1e3 == pytest.approx(ar370, rel=0.003)


def test_reference_capacity_limits(llama70):
    assert ra.batch_limit_memory(llama70, ra.Layout(8), 80.0, 0.9, 2048, 2.0, 2.0) == 648
    assert ra.batch_limit_memory(llama70, ra.Layout(8), 80.0, 0.9, 4096, 2.0, 2.0) == 324
    assert ra.batch_limit_memory(llama70, ra.Layout(8, 4), 20.0, 0.9, 2048, 2.0, 2.0) == 648
    # TP32 on 20 GB Lite-GPUs: docs/sources.md#roof-batch-limit gives 162 without the replicated K/V projections;
    # with them (0.25 GB more per GPU) 159
    assert ra.batch_limit_memory(llama70, ra.Layout(32), 20.0, 0.9, 2048, 2.0, 2.0) == 159


def test_pipeline_decode_is_the_tp_group_at_the_micro_batch_plus_hops(llama70):
    r = ra.Rates.from_peaks(247.35, 0.84, 225.0, 0.45, 0.62, 0.82, 5.0, 1.0, 0.5, 0.0)
    for batch in (1, 3, 64, 256):
        pp = ra.decode_step(llama70, ra.Layout(8, 4), batch, 2048, r)
        b = batch / min(batch, 4)
        tp = ra.decode_step(llama70, ra.Layout(8), b, 2048, r)
        hops = 3 * ra.p2p_s(b * 8192 * 2.0, r)
        assert float(pp.total_s) == pytest.approx(float(tp.total_s + hops))
        # the weight term equals one TP8 group's: PP adds capacity, not decode bandwidth
        assert float(pp.memory_s) >= 2 * ra.params_streamed(llama70) / 8 / (0.84e12 * 0.62)


def test_pipeline_prefill_keeps_the_pipe_full(llama70):
    r = ra.Rates.from_peaks(247.35, 0.84, 225.0, 0.45, 0.62, 0.82, 5.0, 1.0, 0.5, 0.0)
    pp = ra.prefill(llama70, ra.Layout(8, 4), 64, 2048, r)
    tp = ra.prefill(llama70, ra.Layout(8), 16, 2048, r)
    assert float(pp.compute_s) == pytest.approx(float(tp.compute_s))  # 4 micro-batches of 16, 4 stages
    ttft = ra.time_to_first_token(llama70, ra.Layout(8, 4), 2048, r)
    one = ra.time_to_first_token(llama70, ra.Layout(8), 2048, r)
    assert float(ttft.total_s) == pytest.approx(float(one.total_s + 3 * ra.p2p_s(2048 * 8192 * 2.0, r)))


def test_moe_experts_touched_and_expert_parallel():
    moe = ModelCard(name="moe", layers=1, hidden=4, heads=2, kv_heads=1, head_dim=2, ffn=1, vocab=10, experts=4, experts_per_token=2, expert_ffn=8)
    assert ra.expert_params(moe) == 96
    assert ra.mlp_params(moe) == 4 * 96 + 4 * 4
    assert float(ra.experts_touched(moe, 1)) == pytest.approx(2.0)  # one token: its k experts
    assert float(ra.experts_touched(moe, 2)) == pytest.approx(4 * (1 - 0.25))
    assert float(ra.experts_touched(moe, 1000)) == pytest.approx(4.0)
    # streamed per rank at t=1, one token: attention 48 + norms 8 + router 16 + 2 experts, + LM head 40
    assert float(ra.rank_params_streamed(moe, 1, 1)) == pytest.approx(48 + 8 + 16 + 2 * 96 + 40)
    tp = ra.forward_comm_s(moe, ra.Layout(2), 3, RATES)
    ep = ra.forward_comm_s(moe, ra.Layout(2, 1, True), 3, RATES)
    message = 3 * 4 * 2.0
    assert float(tp) == pytest.approx(2 * float(ra.allreduce_s(message, 2, RATES)))
    assert float(ep) == pytest.approx(float(ra.allreduce_s(message, 2, RATES) + 2 * ra.all_to_all_s(message * 2 / 2, 2, RATES)))


def test_terms_broadcast_over_trials(llama70):
    eff = np.array([0.4, 0.5, 0.6])
    r = ra.Rates.from_peaks(989.4, 3.35, 450.0, memory_efficiency=eff)
    d = ra.decode_step(llama70, ra.Layout(8), np.array([1, 1, 1]), 2048, r)
    assert d.total_s.shape == (3,)
    np.testing.assert_allclose(d.memory_s * eff, d.memory_s[0] * eff[0])
    assert list(d.bound) == ["memory"] * 3
