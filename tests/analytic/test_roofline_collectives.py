"""All-reduce algorithms, overlap, data-parallel attention and the TTFT batch limit of
:mod:`mcengine.analytic.roofline` against values computed by hand from the formulas
(docs/sources.md#roof-allreduce-algorithms, #roof-overlap, #roof-attention-dp, #roof-slo)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mcengine.analytic.roofline import model as rm, weights as rw, collectives as rc, steps as rt, limits as rl

from .roofline_cases import RATES, TINY

#: t = 4 ranks, M = 40 B, W_link = 4 B/s, alpha = 1 s, h = 0.5 s.
T, M, W, ALPHA, HOP = 4, 40.0, 4.0, 1.0, 0.5


@pytest.mark.parametrize(
    "algorithm, expected",
    [
        ("ring", 1 + 2 * 3 * 0.5 + 2 * 3 / 4 * 40 / 4),  # 19
        ("two_shot", 1 + 2 * 0.5 + 2 * 3 / 4 * 40 / 4),  # 17
        ("one_shot", 1 + 0.5 + 3 * 40 / 4),  # 31.5
        ("tree", 1 + 2 * 2 * 0.5 + 2 * 3 / 4 * 40 / 4),  # 18: ceil(log2 4) = 2
    ],
)
def test_each_algorithm_by_hand(algorithm, expected):
    assert float(rc.allreduce_seconds(algorithm, T, M, W, ALPHA, HOP)) == pytest.approx(expected, rel=1e-12)
    assert float(rc.allreduce_seconds(algorithm, 1, M, W, ALPHA, HOP)) == 0.0


def test_tree_rounds_the_depth_up():
    # t = 5: ceil(log2 5) = 3 -> 1 + 2*3*0.5 + 2*4/5*40/4 = 20
    assert float(rc.allreduce_seconds("tree", 5, M, W, ALPHA, HOP)) == pytest.approx(20.0, rel=1e-12)


def test_auto_takes_the_fastest_per_message_and_says_which():
    r = rm.Rates(1.0, 1.0, W, ALPHA, HOP)
    small, large = np.array([0.4]), np.array([40.0])
    # small: one_shot 1 + 0.5 + 3*0.1 = 1.8 < two_shot 1 + 1 + 0.15 = 2.15
    assert float(rc.allreduce_s(small, T, r, "auto")[0]) == pytest.approx(1.8, rel=1e-12)
    assert rc.allreduce_used(small, T, r, "auto") == "one_shot"
    # large: two_shot 17 < tree 18 < ring 19 < one_shot 31.5
    assert float(rc.allreduce_s(large, T, r, "auto")[0]) == pytest.approx(17.0, rel=1e-12)
    assert rc.allreduce_used(large, T, r, "auto") == "two_shot"
    both = rc.allreduce_s(np.array([0.4, 40.0]), T, r, "auto")
    assert np.allclose(both, [1.8, 17.0], rtol=1e-12)
    assert rc.allreduce_used(large, 1, r, "auto") == "none"
    assert rc.allreduce_used(large, T, r, "ring") == "ring"


def test_ring_default_is_todays_formula_bit_for_bit():
    m = np.array([40.0, 7.0])
    today = RATES.collective_start_s + 2 * (T - 1) * RATES.hop_latency_s + 2.0 * (T - 1) / T * m / RATES.link_bytes_per_s
    assert np.array_equal(rc.allreduce_s(m, T, RATES), today)
    assert np.array_equal(rc.allreduce_s(m, T, RATES, "ring"), today)


@pytest.mark.parametrize(
    "compute, memory, comm, overlap, expected",
    [
        (3.0, 5.0, 4.0, 0.0, 5 + 4 + 1),  # today's form
        (3.0, 5.0, 4.0, 0.5, max(5, 2) + 2 + 1),  # 8: half hidden under memory
        (3.0, 5.0, 4.0, 1.0, max(5, 4) + 0 + 1),  # 6: all hidden
        (3.0, 5.0, 12.0, 0.5, max(5, 6) + 6 + 1),  # 13: the overlapped half outlasts memory
    ],
)
def test_overlap_by_hand(compute, memory, comm, overlap, expected):
    p = rm.PhaseTimes(np.array(compute), np.array(memory), np.array(comm), np.array(1.0), overlap)
    assert float(p.total_s) == pytest.approx(expected, rel=1e-12)


def test_overlap_reaches_every_phase():
    r = rm.Rates(1000.0, 100.0, 10.0, 1.0, 0.5, 2.0, 0.25, bytes_per_param=2.0, kv_bytes=1.0, comm_overlap=0.25)
    for phase in (rt.decode_step(TINY, rm.Layout(2), 3, 5.0, r), rt.prefill(TINY, rm.Layout(2), 2, 3, r),
                  rt.time_to_first_token(TINY, rm.Layout(2), 3, r)):
        c, m, k, o = (float(x) for x in (phase.compute_s, phase.memory_s, phase.comm_s, phase.overhead_s))
        assert k > 0 and float(phase.total_s) == pytest.approx(max(max(c, m), 0.25 * k) + 0.75 * k + o, rel=1e-12)


# --------------------------------------------------------------------------- attention DP


#: Llama-3-70B by hand: P_attn = 8192*64*128*2 + 2*8192*8*128 = 150,994,944 per layer;
#: P_mlp = 3*8192*28672 = 704,643,072; norms 2*8192 = 16,384; V d = 128256*8192.
P_ATTN, P_MLP, NORMS, VD = 150_994_944, 704_643_072, 16_384, 128_256 * 8192


def test_data_attention_holds_every_kv_head_of_its_own_sequences_at_t16(llama70):
    # t = 16 > n_kv = 8: heads sharded replicate one KV head per rank (2*80*1*128*2 = 40,960 B
    # per token of every sequence); data-parallel: all 8 heads (327,680 B) of B/16 sequences.
    assert rw.kv_bytes_per_token_rank(llama70, 16, 2.0) == 40_960
    assert rw.kv_bytes_per_token_rank(llama70, 16, 2.0, "data") == 327_680
    assert rw.kv_bytes_per_token_per_gpu(llama70, rm.Layout(16, attention="data"), 2.0) == 327_680 / 16  # 20,480: no replication
    # weights: attention replicated, the rest sharded over 16
    held = 80 * (P_ATTN + (P_MLP + NORMS) / 16) + 2 * VD / 16
    assert rw.rank_params_held(llama70, 16, "data") == pytest.approx(held, rel=1e-15)
    tensor_held = 80 * (2 * 8192 * 64 * 128 / 16 + 2 * 8192 * 128 * 1 + (P_MLP + NORMS) / 16) + 2 * VD / 16
    assert rw.rank_params_held(llama70, 16) == pytest.approx(tensor_held, rel=1e-15)


def test_data_attention_batch_limit_at_t16(llama70):
    # 80 GB x 0.9 = 72e9 B; data: weights 2 x held; each rank fits floor(free / (2048 x 327,680)) sequences
    weights = 2 * (80 * (P_ATTN + (P_MLP + NORMS) / 16) + 2 * VD / 16)  # 31,468,453,888 B
    per_rank = math.floor((72e9 - weights) / (2048 * 327_680))  # 60
    assert per_rank == 60
    assert int(rl.batch_limit_memory(llama70, rm.Layout(16, attention="data"), 80.0, 0.9, 2048, 2.0, 2.0)) == 16 * 60
    tensor_weights = 2 * (80 * (8_388_608 + 2_097_152 + (P_MLP + NORMS) / 16) + 2 * VD / 16)
    assert int(rl.batch_limit_memory(llama70, rm.Layout(16), 80.0, 0.9, 2048, 2.0, 2.0)) == math.floor((72e9 - tensor_weights) / (2048 * 40_960))  # 751


def test_data_attention_decode_step_by_hand(llama70):
    r = rm.Rates.from_peaks(989.4, 3.35, 450.0, collective_start_us=5.0, hop_latency_us=1.0)
    t, b, ctx = 16, 32, 2048
    d = rt.decode_step(llama70, rm.Layout(t, attention="data"), b, ctx, r)
    s = math.ceil(b / t)  # 2 sequences' attention on the busiest rank
    sharded = 80 * (P_MLP + NORMS) / t + VD / t
    flops = s * (2 * 80 * P_ATTN + 4 * 80 * 64 * 128 * ctx) + b * 2 * sharded
    assert float(d.compute_s) == pytest.approx(flops / (989.4e12), rel=1e-12)
    nbytes = 2 * (80 * (P_ATTN + (P_MLP + NORMS) / t) + VD / t) + s * ctx * 327_680
    assert float(d.memory_s) == pytest.approx(nbytes / 3.35e12, rel=1e-12)
    # no attention all-reduce; the MLP's reduce-scatter + all-gather of b d 2 bytes, ring: 2 (a + (t-1) h + (t-1)/t M/W) per layer;
    # then one all-gather of the b hidden states before the vocab-sharded LM head: 20 us + 15/16 x 524,288 B / 450 GB/s = 21.09 us
    message = b * 8192 * 2
    head = 5e-6 + 15 * 1e-6 + 15 / 16 * message / 450e9
    assert head * 1e6 == pytest.approx(21.092, abs=5e-4)
    comm = 80 * 2 * (5e-6 + 15 * 1e-6 + 15 / 16 * message / 450e9) + head
    assert float(d.comm_s) == pytest.approx(comm, rel=1e-12)
    # the volume per layer is one all-reduce's (2 (t-1)/t M/W), half of the two all-reduces of heads sharded
    tensor = rt.decode_step(llama70, rm.Layout(t), b, ctx, r)
    assert float(tensor.comm_s) == pytest.approx(2 * 80 * (5e-6 + 2 * 15 * 1e-6 + 2 * 15 / 16 * message / 450e9), rel=1e-12)


def test_data_attention_ttft_runs_one_prompt_on_one_rank(llama70):
    r = rm.Rates.from_peaks(989.4, 3.35, 450.0)
    s, t = 2048, 8
    ttft = rt.time_to_first_token(llama70, rm.Layout(t, attention="data"), s, r)
    head = VD / t
    flops = 2 * 80 * P_ATTN * s + 2 * 80 * 64 * 128 * s * s + 2 * (80 * (P_MLP + NORMS) / t + head - head) * s + 2 * head
    assert float(ttft.compute_s) == pytest.approx(flops / 989.4e12, rel=1e-12)
    # collectives (no latency here): the MLP's 80 reduce-scatter + all-gather pairs of S d 2 bytes, and the
    # LM head's all-gather of the one prompt's last hidden state (d 2 bytes, not S d 2: the head scores one token)
    comm = 80 * 2 * 7 / 8 * s * 8192 * 2 / 450e9 + 7 / 8 * 8192 * 2 / 450e9
    assert float(ttft.comm_s) == pytest.approx(comm, rel=1e-12)


# --------------------------------------------------------------------------- TTFT SLO


def test_ttft_batch_limit_brackets_the_slo():
    for slo in (9.7, 20.0, 55.0):
        b = int(rl.batch_limit_ttft(TINY, rm.Layout(1), 3, slo, RATES))
        assert b >= 1
        assert float(rt.batch_time_to_first_token(TINY, rm.Layout(1), b, 3, RATES).total_s) <= slo
        assert float(rt.batch_time_to_first_token(TINY, rm.Layout(1), b + 1, 3, RATES).total_s) > slo
    one = float(rt.time_to_first_token(TINY, rm.Layout(1), 3, RATES).total_s)
    assert int(rl.batch_limit_ttft(TINY, rm.Layout(1), 3, one * 0.99, RATES)) == 0
    assert int(rl.batch_limit_ttft(TINY, rm.Layout(1), 3, math.inf, RATES)) == rm.SLO_SEARCH_CAP


def test_static_ttft_is_the_whole_batch_prefill_plus_the_pipeline_fill():
    assert np.array_equal(rt.batch_time_to_first_token(TINY, rm.Layout(1), 4, 3, RATES).total_s, rt.prefill(TINY, rm.Layout(1), 4, 3, RATES).total_s)
    pre = rt.prefill(TINY, rm.Layout(1, 2), 4, 3, RATES)  # m = 2 micro-batches, p = 2: fill factor (2 + 1)/2
    got = rt.batch_time_to_first_token(TINY, rm.Layout(1, 2), 4, 3, RATES)
    assert float(got.compute_s) == pytest.approx(1.5 * float(pre.compute_s))
    assert float(got.overhead_s) == pytest.approx(2.0 + 2 * 0.25)


@pytest.mark.parametrize("formula", [rc.allreduce_seconds, rc.all_gather_seconds, rc.gather_scatter_seconds])
@pytest.mark.parametrize("t", [2, 3, 4, 5, 8, 16, 64])
def test_auto_times_only_the_algorithms_that_can_be_fastest_to_the_bit(formula, t):
    """"auto" times the candidates of ``UNDOMINATED`` only: the same floats as the running
    minimum over every switched algorithm, at random messages, bandwidths and latencies
    (hop latency 0 included, where the hop terms tie)."""
    rng = np.random.default_rng(t)
    n = 4096
    r = rm.Rates(1.0, 1.0, rng.uniform(1e9, 1e12, n), collective_start_s=rng.uniform(0, 1e-4, n),
                 hop_latency_s=np.where(rng.random(n) < 0.1, 0.0, rng.uniform(0, 1e-5, n)))
    nbytes = rng.uniform(1.0, 1e9, n)
    every = [formula(name, t, nbytes, r.link_bytes_per_s, r.collective_start_s, r.hop_latency_s) for name in rm.SWITCHED_ALGORITHMS]
    assert rc.fastest_s(formula, "auto", t, nbytes, r).tolist() == np.minimum.reduce(every).tolist()


def test_a_search_that_times_only_its_open_trials_equals_one_that_times_every_trial():
    """:func:`mcengine.analytic.roofline.limits.largest_batch` with ``rates`` (each step on the
    trials still open) gives the batches of the search over every trial, to the bit."""
    rng = np.random.default_rng(3)
    n = 2048
    r = rm.Rates(rng.uniform(1e3, 1e4, n), rng.uniform(50, 200, n), rng.uniform(5, 20, n), 1.0, 0.5, rng.uniform(0, 4, n), 0.25,
                 bytes_per_param=2.0, kv_bytes=1.0)
    slo = rng.uniform(2.0, 400.0, n)
    cap = rng.integers(0, 5000, n)
    every = rl.largest_batch(lambda b: rt.decode_step(TINY, rm.Layout(2, 2), b, 6.0, r).total_s, slo, (n,), cap)
    open_only = rl.largest_batch(lambda b, rr: rt.decode_step(TINY, rm.Layout(2, 2), b, 6.0, rr).total_s, slo, (n,), cap, rates=r)
    assert open_only.tolist() == every.tolist()
    assert 0 < np.count_nonzero((every > 0) & (every < cap)) < n  # the searches open and settle inside the bracket


def test_collectives():
    assert float(rc.allreduce_s(1e6, 1, RATES)) == 0.0
    assert float(rc.all_to_all_s(1e6, 1, RATES)) == 0.0
    assert float(rc.allreduce_s(40.0, 4, RATES)) == pytest.approx(1 + 6 * 0.5 + 1.5 * 4.0)
    assert float(rc.all_to_all_s(40.0, 4, RATES)) == pytest.approx(1 + 3 * 0.5 + 0.75 * 4.0)
    assert float(rc.p2p_s(40.0, RATES)) == pytest.approx(1 + 0.5 + 4.0)
