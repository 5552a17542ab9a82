"""Decode, prefill and pipeline step times of :mod:`mcengine.analytic.roofline.steps` against
hand-computed values and docs/sources.md#roof-llama3-70b-tp8."""

from __future__ import annotations

import numpy as np
import pytest

from mcengine.analytic.roofline import model as rm, weights as rw, collectives as rc, steps as rt

from .roofline_cases import TINY, RATES


def test_decode_tensor_parallel_1_by_hand():
    d = rt.decode_step(TINY, rm.Layout(1), 3, 5.0, RATES)
    # compute 3 (2*344 + 4*2*2*2*5) / 1000; memory (2*344 + 3*5*8) / 100; no collective at t = 1
    assert float(d.compute_s) == pytest.approx(2.544)
    assert float(d.memory_s) == pytest.approx(8.08)
    assert float(d.comm_s) == 0.0
    assert float(d.overhead_s) == pytest.approx(2.5)
    assert float(d.total_s) == pytest.approx(10.58)
    assert d.bound.item() == "memory"


def test_decode_tensor_parallel_above_kv_heads_by_hand():
    d = rt.decode_step(TINY, rm.Layout(2), 3, 5.0, RATES)
    # t = 2 > n_kv = 1: rank weights = 2 (2*4*2*2/2 + 2*4*2*1 + (96 + 8)/2) + 40/2 = 188
    assert rw.rank_params_active(TINY, 2) == 188
    assert float(d.compute_s) == pytest.approx(3 * (2 * 188 + 4 * 2 * 1 * 2 * 5) / 1000)
    assert float(d.memory_s) == pytest.approx((2 * 188 + 3 * 5 * 8) / 100)  # KV per rank still 8 B/token
    # 2L = 4 all-reduces of 3*4*2 = 24 B: 1 + 2(1)(0.5) + 2(1/2)(24/10) = 4.4 s each
    assert float(d.comm_s) == pytest.approx(4 * 4.4)
    assert float(d.total_s) == pytest.approx(4.96 + 17.6 + 2.5)
    assert d.bound.item() == "network"


def test_prefill_by_hand():
    p = rt.prefill(TINY, rm.Layout(1), 2, 3, RATES)
    # 2 (2 L P_layer S + 2 L n_h d_h S^2 + 2 d V) = 2 (1824 + 144 + 80) FLOPs
    assert float(p.compute_s) == pytest.approx(4.096)
    assert float(p.memory_s) == pytest.approx((2 * 344 + 2 * 3 * 8) / 100)
    assert float(p.total_s) == pytest.approx(7.36 + 2.5)
    ttft = rt.time_to_first_token(TINY, rm.Layout(1), 3, RATES)
    assert float(ttft.total_s) == pytest.approx(float(rt.prefill(TINY, rm.Layout(1), 1, 3, RATES).total_s))


def test_reference_decode_table(llama70):
    """Llama-3-70B bf16 TP8, T = 2,048, eta = 1, flat alpha 10 us, 450 GB/s."""
    r = rm.Rates.from_peaks(989.4, 3.35, 450.0, collective_start_us=10.0)
    table = {1: (5.21, 0.02, 1.61, 6.82), 8: (5.39, 0.15, 1.68, 7.07), 32: (5.99, 0.58, 1.93, 7.91), 64: (6.79, 1.17, 2.25, 9.04),
             128: (8.39, 2.33, 2.90, 11.30), 256: (11.60, 4.67, 4.21, 15.81), 512: (18.01, 9.34, 6.82, 24.83)}
    for batch, (mem, comp, comm, tpot) in table.items():
        d = rt.decode_step(llama70, rm.Layout(8), batch, 2048, r)
        got = [float(x) * 1e3 for x in (d.memory_s, d.compute_s, d.comm_s, d.total_s)]
        assert got == pytest.approx([mem, comp, comm, tpot], abs=0.006), batch
    derated = rm.Rates.from_peaks(989.4, 3.35, 450.0, 0.7, 0.8, 370 / 450, collective_start_us=10.0)
    tpots = [float(rt.decode_step(llama70, rm.Layout(8), b, 2048, derated).total_s) * 1e3 for b in (1, 64, 256, 512)]
    assert tpots == pytest.approx([8.13, 10.88, 19.27, 30.46], abs=0.006)


def test_reference_prefill_table(llama70):
    r450 = rm.Rates.from_peaks(989.4, 3.35, 450.0, collective_start_us=10.0)
    r370 = rm.Rates.from_peaks(989.4, 3.35, 370.0, collective_start_us=10.0)
    for s, tflop, comp, ar450, ar370 in ((128, 17.5, 2.22, 2.90, 3.19), (512, 70.4, 8.90, 6.82, 7.95), (2048, 285.9, 36.1, 22.5, 27.0), (8192, 1209.5, 152.8, 85.1, 103.2)):
        p = rt.prefill(llama70, rm.Layout(8), 1, s, r450)
        assert float(p.compute_s) * 989.4 * 8 == pytest.approx(tflop, abs=0.06)
        assert float(p.compute_s) * 1e3 == pytest.approx(comp, rel=0.003)
        assert float(p.comm_s) * 1e3 == pytest.approx(ar450, rel=0.003)
        assert float(rt.prefill(llama70, rm.Layout(8), 1, s, r370).comm_s) * 1e3 == pytest.approx(ar370, rel=0.003)


def test_pipeline_decode_is_the_tp_group_at_the_micro_batch_plus_hops(llama70):
    r = rm.Rates.from_peaks(247.35, 0.84, 225.0, 0.45, 0.62, 0.82, 5.0, 1.0, 0.5, 0.0)
    for batch in (1, 3, 64, 256):
        pp = rt.decode_step(llama70, rm.Layout(8, 4), batch, 2048, r)
        b = batch / min(batch, 4)
        tp = rt.decode_step(llama70, rm.Layout(8), b, 2048, r)
        hops = 3 * rc.p2p_s(b * 8192 * 2.0, r)
        assert float(pp.total_s) == pytest.approx(float(tp.total_s + hops))
        # the weight term equals one TP8 group's: PP adds capacity, not decode bandwidth
        assert float(pp.memory_s) >= 2 * rw.params_streamed(llama70) / 8 / (0.84e12 * 0.62)


def test_pipeline_prefill_keeps_the_pipe_full(llama70):
    r = rm.Rates.from_peaks(247.35, 0.84, 225.0, 0.45, 0.62, 0.82, 5.0, 1.0, 0.5, 0.0)
    pp = rt.prefill(llama70, rm.Layout(8, 4), 64, 2048, r)
    tp = rt.prefill(llama70, rm.Layout(8), 16, 2048, r)
    assert float(pp.compute_s) == pytest.approx(float(tp.compute_s))  # 4 micro-batches of 16, 4 stages
    ttft = rt.time_to_first_token(llama70, rm.Layout(8, 4), 2048, r)
    one = rt.time_to_first_token(llama70, rm.Layout(8), 2048, r)
    assert float(ttft.total_s) == pytest.approx(float(one.total_s + 3 * rc.p2p_s(2048 * 8192 * 2.0, r)))


def test_terms_broadcast_over_trials(llama70):
    eff = np.array([0.4, 0.5, 0.6])
    r = rm.Rates.from_peaks(989.4, 3.35, 450.0, memory_efficiency=eff)
    d = rt.decode_step(llama70, rm.Layout(8), np.array([1, 1, 1]), 2048, r)
    assert d.total_s.shape == (3,)
    np.testing.assert_allclose(d.memory_s * eff, d.memory_s[0] * eff[0])
    assert list(d.bound) == ["memory"] * 3
