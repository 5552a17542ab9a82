"""Grouped data-parallel attention (``Layout.attention = "grouped"``) on Llama-3-70B at
t = 16 and 32 with g = 2 and 4, against values worked by hand from the card (L = 80,
d = 8192, n_h = 64, n_kv = 8, d_h = 128, d_ff = 28672 gated, V = 128256 untied;
docs/sources.md#roof-attention-dp): weights and KV per rank, the batch that fits HBM,
and the collectives of a decode step."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mcengine.analytic.roofline import model as rm, weights as rw, steps as rt, limits as rl

L, D, NH, NKV, DH, FF, V = 80, 8192, 64, 8, 128, 28672, 128256


def _hand_weights(t, g):
    """Params one rank holds: Q, O over u = t/g ranks, K, V at max(1, n_kv/u) heads; MLP, norms over t; embedding + LM head over t."""
    u = t // g
    attention = 2 * D * NH * DH / u + 2 * D * DH * max(1.0, NKV / u)
    return L * (attention + (3 * D * FF + 2 * D) / t) + 2 * V * D / t


@pytest.mark.parametrize("t, g, params, kv_token", [
    # u = 8: Q,O 16,777,216 + K,V 2,097,152 per layer; MLP 44,041,216 per layer; embeddings 131,334,144
    (16, 2, 5_164_580_864, 40_960),
    # u = 4: Q,O 33,554,432 + K,V (2 heads) 4,194,304 per layer
    (16, 4, 6_674_530_304, 81_920),
    # u = 16: Q,O 8,388,608 + K,V (1 head, replicated 2x in the group) 2,097,152; MLP /32 22,020,608; embeddings 65,667,072
    (32, 2, 2_666_176_512, 40_960),
    # u = 8: as t = 16, g = 2 for attention; MLP /32
    (32, 4, 3_337_265_152, 40_960),
])
def test_weights_and_kv_per_rank_by_hand(llama70, t, g, params, kv_token):
    assert _hand_weights(t, g) == params
    assert rw.rank_params_held(llama70, t, "grouped", g) == pytest.approx(params, rel=1e-15)
    layout = rm.Layout(t, 1, attention="grouped", attention_groups=g)
    assert rw.weights_bytes_per_gpu(llama70, layout, 2.0) == pytest.approx(2.0 * params, rel=1e-15)
    # 2 L max(1, n_kv/u) d_h x 2 bytes, for the sequences of its own group only
    assert rw.kv_bytes_per_token_rank(llama70, t, 2.0, "grouped", g) == kv_token
    assert float(rw.attention_sequences_per_rank(9, t, "grouped", g)) == math.ceil(9 / g)


@pytest.mark.parametrize("t, g", [(16, 2), (16, 4), (32, 2), (32, 4)])
def test_batch_that_fits_is_g_groups_of_whole_sequences(llama70, t, g):
    """Lite-H100 (20 GB, 90 % usable), 2,304 tokens of context: each group's ranks hold its
    sequences' KV at max(1, n_kv/u) heads; the instance fits g times one group's count."""
    layout = rm.Layout(t, 1, attention="grouped", attention_groups=g)
    free = 0.9 * 20e9 - 2.0 * _hand_weights(t, g)
    per_sequence = 2304 * 2 * L * max(1.0, NKV / (t // g)) * DH * 2
    expected = g * math.floor(free / per_sequence)
    assert expected > 0
    assert int(rl.batch_limit_memory(llama70, layout, 20.0, 0.9, 2304, 2.0, 2.0)) == expected


def test_data_parallel_attention_does_not_fit_a_lite_where_groups_do(llama70):
    """All attention weights on every rank (g = t) need 24 GB on a Lite; 4 groups of 8 ranks 6.7 GB."""
    assert int(rl.batch_limit_memory(llama70, rm.Layout(32, 1, attention="data"), 20.0, 0.9, 2304, 2.0, 2.0)) == 0
    assert int(rl.batch_limit_memory(llama70, rm.Layout(32, 1, attention="grouped", attention_groups=4), 20.0, 0.9, 2304, 2.0, 2.0)) > 0


@pytest.mark.parametrize("t, g", [(16, 2), (16, 4), (32, 2), (32, 4)])
def test_decode_collectives_by_hand(llama70, t, g):
    """Ring, W = 100 GB/s, alpha = 10 us, h = 1 us, a batch of 10: per layer the MLP's
    reduce-scatter + all-gather over t of 10 d 2 bytes and the attention all-reduce inside
    the busiest group (u = t/g ranks, ceil(10/g) sequences); once, the LM head's all-gather
    over t of the 10 hidden states."""
    w, alpha, h = 100e9, 10e-6, 1e-6
    r = rm.Rates(1.0, 1.0, w, alpha, h)
    u, m = t // g, 10 * D * 2
    gather = alpha + (t - 1) * h + (t - 1) / t * m / w
    group = alpha + 2 * (u - 1) * h + 2 * (u - 1) / u * math.ceil(10 / g) * D * 2 / w
    layout = rm.Layout(t, 1, allreduce="ring", attention="grouped", attention_groups=g)
    got = rt.decode_step(llama70, layout, 10, 2304.0, r).comm_s
    assert float(got) == pytest.approx(L * 2 * gather + gather + L * group, rel=1e-12)


def test_decode_work_of_the_busiest_group_by_hand(llama70):
    """t = 16, g = 4 (u = 4), b = 10: the busiest group's 3 sequences run attention with 1/4 of
    the heads and weights; the MLP and LM head stay sharded over all 10 across 16 ranks."""
    t, g, u, b, ctx = 16, 4, 4, 10, 2304.0
    r = rm.Rates(1.0, 1.0, 1.0)
    attention = 2 * D * NH * DH / u + 2 * D * DH * 2
    sharded = L * (3 * D * FF + 2 * D) / t + V * D / t
    flops = 3 * (2 * L * attention + 4 * L * (NH / u) * DH * ctx) + b * 2 * sharded
    weights = 2.0 * (L * (attention + (3 * D * FF + 2 * D) / t) + V * D / t)
    kv = 3 * ctx * 2 * L * 2 * DH * 2
    step = rt.decode_step(llama70, rm.Layout(t, 1, attention="grouped", attention_groups=g), b, ctx, r)
    assert float(step.compute_s) == pytest.approx(flops, rel=1e-12)
    assert float(step.memory_s) == pytest.approx(weights + kv, rel=1e-12)
    assert np.isfinite(step.total_s)
