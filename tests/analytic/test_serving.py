"""The serving-mode closed forms (docs/model.md#serving) against hand computations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mcengine.analytic.roofline import model as rm, weights as rw, collectives as rc
from mcengine.analytic import serving as sv
from mcengine.scenario.cards import load_model_card

#: Ideal H100 rates of docs/sources.md#roof-llama3-70b-tp8: eta = 1, flat 10 us per
#: collective, 450 GB/s, no overhead.
IDEAL = rm.Rates.from_peaks(989.4, 3.35, 450.0, collective_start_us=10.0)


@pytest.fixture(scope="module")
def llama70():
    return load_model_card("llama-3-70b", "workload.model", [])


def test_continuous_step_by_hand(llama70):
    # Llama-3-70B bf16, TP8, B = 64, S = 2048, O = 256: c = 64 x 2048 / 256 = 512 chunk tokens,
    # T = 2048 + 128 = 2176.
    L, d, nh, dh, V = 80, 8192, 64, 128, 128256
    p_layer = 4 * d * nh * dh / 2 + 2 * d * 8 * dh + 3 * d * 28672 + 2 * d  # Q, O + K, V + gated MLP + norms (docs/sources.md#roof-params)
    p_stream = L * p_layer + V * d
    B, S, O, t = 64, 2048, 256, 8
    T, c = S + O / 2, B * S / O
    assert c == 512
    flops = (B * (2 * p_stream + 4 * L * nh * dh * T) + c * (2 * L * p_layer + 2 * L * nh * dh * S) + c / S * 2 * V * d) / t
    kv_rank = 2 * L * 1 * dh * 2  # one KV head per rank at t = 8
    nbytes = 2 * p_stream / t + B * T * kv_rank + max(c, S) / 2 * kv_rank
    comm = 2 * L * (10e-6 + 2 * 7 / 8 * (B + c) * d * 2 / 450e9)
    step = sv.continuous_step(llama70, rm.Layout(8), B, S, O, IDEAL)
    assert float(step.compute_s) == pytest.approx(flops / 989.4e12, rel=1e-12)
    assert float(step.memory_s) == pytest.approx(nbytes / 3.35e12, rel=1e-12)
    assert float(step.comm_s) == pytest.approx(comm, rel=1e-12)
    # the numbers: 10.09 TFLOP per rank -> 10.20 ms; 23.12 GB -> 6.90 ms; 7.47 ms of all-reduces
    # (160 x (10 us + 1.75 x 576 x 16 KiB / 450 GB/s)); tau = 10.20 + 7.47 = 17.67 ms
    assert float(step.compute_s) * 1e3 == pytest.approx(10.20, abs=0.005)
    assert float(step.memory_s) * 1e3 == pytest.approx(6.90, abs=0.005)
    assert float(step.comm_s) * 1e3 == pytest.approx(7.472, abs=0.0005)
    assert float(step.total_s) * 1e3 == pytest.approx(17.67, abs=0.005)
    assert float(step.total_s) == pytest.approx(flops / 989.4e12 + comm, rel=1e-12)
    # TTFT = ceil(S/c) tau = 4 tau; output tokens/s = B / tau
    assert float(sv.continuous_ttft_s(step.total_s, B, 1, O)) == pytest.approx(4 * float(step.total_s), rel=1e-15)
    assert float(sv.continuous_tokens_per_s(step.total_s, B)) == pytest.approx(B / float(step.total_s))


def test_continuous_ttft_rounds_the_chunk_count_up():
    # O = 100, B = 64: S/c = O/B = 1.5625 -> 2 steps; B = 100 -> exactly 1; B = 1 -> O steps
    assert sv.continuous_ttft_s(2.0, 64, 1, 100) == 4.0
    assert sv.continuous_ttft_s(2.0, 100, 1, 100) == 2.0
    assert sv.continuous_ttft_s(2.0, 1, 1, 100) == 200.0
    # p = 4: a prompt rides on one micro-batch of b = 16: ceil(256 / 16) = 16 steps
    assert sv.continuous_ttft_s(1.0, 64, 4, 256) == 16.0
    np.testing.assert_array_equal(sv.continuous_ttft_s(np.array([1.0, 1.0]), np.array([3, 7]), 1, 10), [4.0, 2.0])


def test_continuous_pipeline_is_the_micro_batch_step_plus_the_hops(llama70):
    # p stages, m = min(B, p) micro-batches of b = B/m: the whole-model step at b (and its
    # chunk b S/O) plus (p-1) point-to-points of (b + c_b) d 2 bytes, as the static decode.
    S, O = 2048, 256
    piped = sv.continuous_step(llama70, rm.Layout(8, 4), 64, S, O, IDEAL)
    flat = sv.continuous_step(llama70, rm.Layout(8, 1), 16, S, O, IDEAL)
    hops = 3 * rc.p2p_s((16 + 128) * 8192 * 2, IDEAL)
    assert float(piped.compute_s) == pytest.approx(float(flat.compute_s), rel=1e-12)
    assert float(piped.memory_s) == pytest.approx(float(flat.memory_s), rel=1e-12)
    assert float(piped.comm_s) == pytest.approx(float(flat.comm_s + hops), rel=1e-12)


def test_chunk_limit_and_kv_read():
    # B S/O <= budget: 8192 x 256 / 2048 = 1024; 100 -> 12; below S/O -> 0 (infeasible)
    assert int(sv.batch_limit_chunk(2048, 256, 8192)) == 1024
    assert int(sv.batch_limit_chunk(2048, 256, 100)) == 12
    assert int(sv.batch_limit_chunk(2048, 256, 7)) == 0
    assert sv.chunk_tokens(1024, 2048, 256) == 8192.0
    # a chunk smaller than its prompt reads half the prompt; bigger chunks half themselves
    np.testing.assert_array_equal(sv.chunk_kv_read_tokens(np.array([10.0, 2048.0, 5000.0]), 2048), [1024.0, 1024.0, 2500.0])


def test_disaggregated_split_balances_prompt_supply_and_decode_demand():
    # r_p = 10 prompts/s per prefill instance, r_d = 30 requests/s per decode instance:
    # f = 30/40 = 0.75; supply 0.75 x 10 = 7.5 = demand 0.25 x 30
    f = float(sv.prefill_share(10.0, 30.0))
    assert f == 0.75
    assert f * 10.0 == (1 - f) * 30.0
    # O = 100 tokens per request: (1 - f) x 3000 tokens/s = f x 10 x 100 = 750
    assert float(sv.disaggregated_tokens_per_s(f, 10.0, 3000.0, 100)) == 750.0
    # off balance the bottleneck binds: too few prefill instances -> prompt supply
    assert float(sv.disaggregated_tokens_per_s(0.5, 10.0, 3000.0, 100)) == 500.0
    assert float(sv.disaggregated_tokens_per_s(0.9, 10.0, 3000.0, 100)) == pytest.approx(300.0)


def test_kv_transfer_by_hand(llama70):
    # 2048 tokens x 327,680 B (bf16, whole model) = 671 MB, 1/8 per GPU over 450 x 0.82 GB/s,
    # plus 5 us start + 1 us hop: 0.2274 ms + 6 us
    r = rm.Rates.from_peaks(989.4, 3.35, 450.0, link_efficiency=0.82, collective_start_us=5.0, hop_latency_us=1.0)
    expected = 6e-6 + 2048 * 327_680 / 8 / (450e9 * 0.82)
    assert float(sv.kv_transfer_s(llama70, 2048, 8, r)) == pytest.approx(expected, rel=1e-12)
    assert expected * 1e3 == pytest.approx(0.2334, abs=1e-4)
    assert math.isclose(float(sv.kv_transfer_s(llama70, 2048, 32, r)) - 6e-6, (expected - 6e-6) / 4, rel_tol=1e-12)


def test_continuous_step_hides_its_collectives_under_overlap(llama70):
    # The same step as above: compute 10.20 ms, memory 6.90 ms, comm 7.47 ms. With o = 1
    # the collectives hide under compute: tau = max(10.20, 7.47); with o = 0.5:
    # max(10.20, 3.74) + 3.74 ms.
    B, S, O = 64, 2048, 256
    base = sv.continuous_step(llama70, rm.Layout(8), B, S, O, IDEAL)
    compute, comm = float(base.compute_s), float(base.comm_s)
    for o in (1.0, 0.5):
        rates = rm.Rates.from_peaks(989.4, 3.35, 450.0, collective_start_us=10.0, comm_overlap=o)
        step = sv.continuous_step(llama70, rm.Layout(8), B, S, O, rates)
        assert float(step.total_s) == pytest.approx(max(compute, o * comm) + (1 - o) * comm, rel=1e-12)


def test_continuous_step_with_data_parallel_attention_reads_one_ranks_share_of_the_kv(llama70):
    # t = 16 > n_kv = 8: heads sharded, every rank keeps a whole KV head (2 L d_h b_kv bytes
    # per token); attention data-parallel, the busiest rank holds ceil(64/16) = 4 of the
    # 64 sequences with all 8 KV heads. The KV bytes read per step, by hand:
    B, S, O, L, dh = 64, 2048, 256, 80, 128
    T, c = S + O / 2, B * S / O
    tensor = sv.continuous_step(llama70, rm.Layout(16), B, S, O, IDEAL)
    data = sv.continuous_step(llama70, rm.Layout(16, attention="data"), B, S, O, IDEAL)
    weights_t = 2 * rw.rank_params_streamed(llama70, 16, B + c)
    weights_d = 2 * rw.rank_params_streamed(llama70, 16, B + c, "data")
    kv_t = (B * T + max(c, S) / 2) * 2 * L * 1 * dh * 2
    kv_d = 4 / 64 * (B * T + max(c, S) / 2) * 2 * L * 8 * dh * 2
    assert float(tensor.memory_s) == pytest.approx((weights_t + kv_t) / 3.35e12, rel=1e-12)
    assert float(data.memory_s) == pytest.approx((weights_d + kv_d) / 3.35e12, rel=1e-12)


def test_batch_limit_chunk_of_an_all_but_cached_prompt_is_capped_not_overflowed():
    """A prompt all but wholly served from the prefix cache (hit rate 1 - 2^-52 leaves
    ~10^-13 tokens to compute) with a 10^7-token budget: ``budget O / S`` is ~10^23, past
    int64; the limit is :data:`BATCH_LIMIT_CAP` (2^53), with no invalid cast, and an
    ordinary prompt's limit is unchanged."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = sv.batch_limit_chunk(np.array([2048.0 * 2.0**-52, 2048.0]), 256, 1e7)
    assert got.tolist() == [2**53, 1_250_000]
