"""Speculative decoding (docs/generation.md#speculative) against hand computations."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from mcengine.analytic import serving as sv
from mcengine.analytic.roofline import model as rm, steps as rt

from .roofline_cases import RATES, TINY

#: Ideal H100 rates (as tests/analytic/test_serving.py).
IDEAL = rm.Rates.from_peaks(989.4, 3.35, 450.0, collective_start_us=10.0)


def test_expected_tokens_per_step_by_hand():
    # k = 3, alpha = 0.8: 1 + 0.8 + 0.64 + 0.512 = 2.952 = (1 - 0.8^4) / (1 - 0.8)
    assert float(rt.tokens_per_step(3, 0.8)) == pytest.approx(2.952, rel=1e-15)
    assert float(rt.tokens_per_step(3, 0.8)) == pytest.approx((1 - 0.8**4) / 0.2, rel=1e-14)
    # k = 1, alpha = 0.9 (DeepSeek-V3's MTP head accepting 90 %): 1.9 tokens per step
    assert float(rt.tokens_per_step(1, 0.9)) == pytest.approx(1.9, rel=1e-15)
    # alpha = 1: every draft accepted, k + 1; alpha = 0: the target's own token only; k = 0: 1
    np.testing.assert_array_equal(rt.tokens_per_step(4, np.array([1.0, 0.0])), [5.0, 1.0])
    assert float(rt.tokens_per_step(0, 0.7)) == 1.0


def test_expected_tokens_per_step_matches_simulated_acceptance():
    # the closed form against acceptance simulated token by token (fixed seed, within 4 SEM)
    rng = np.random.default_rng(7)
    k, alpha, n = 4, 0.6, 200_000
    accepted = rng.random((n, k)) < alpha
    emitted = 1 + np.cumprod(accepted, axis=1).sum(axis=1)  # drafts accepted until the first rejection, + the target's token
    sem = emitted.std(ddof=1) / np.sqrt(n)
    assert abs(emitted.mean() - float(rt.tokens_per_step(k, alpha))) < 4 * sem


def test_verification_step_reads_weights_once_for_k_plus_one_tokens():
    # TINY (P_stream = 344 params, 2 bytes each), B = 3 sequences at context 5, k = 2, alpha = 0.5,
    # draft_cost 0.1: the verification step computes 3 query tokens per sequence, streams the
    # weights once and reads each sequence's KV once.
    spec = replace(RATES, draft_tokens=2, acceptance=0.5, draft_cost=0.1)
    plain = rt.decode_step(TINY, rm.Layout(1), 3, 5.0, RATES)
    step = rt.decode_step(TINY, rm.Layout(1), 3, 5.0, spec)
    tau = 1 + 0.5 + 0.25
    flops = 3 * (2 * 344 + 4 * 2 * 2 * 2 * 5.0)  # b (2 P_active + 4 L n_h d_h T), P_active = P_stream for a dense model
    kv = 2 * 2 * 1 * 2 * 1.0  # 2 L n_kv d_h b_kv
    assert float(plain.compute_s) == pytest.approx(flops / 1000.0, rel=1e-15)
    assert float(step.compute_s) == pytest.approx(3 * flops / 1000.0 / tau, rel=1e-15)
    assert float(step.memory_s) == pytest.approx((2 * 344 + 3 * 5.0 * kv) / 100.0 / tau, rel=1e-15)
    assert float(plain.memory_s) == pytest.approx((2 * 344 + 3 * 5.0 * kv) / 100.0, rel=1e-15)
    # the draft: k x draft_cost x a plain step, in series, over the tokens emitted
    overhead = 2.0 + 2 * 0.25
    assert float(step.overhead_s) == pytest.approx((overhead + 2 * 0.1 * float(plain.total_s)) / tau, rel=1e-15)


def test_memory_bound_decode_gains_tokens_per_step_less_the_draft():
    # Llama-3-70B-shaped TP8 decode at batch 1 is weight-bound: the verification step costs
    # about one plain step, so TPOT falls by ~tau, less the draft's share.
    from .roofline_cases import card
    m = card("llama-3-70b")
    spec = replace(IDEAL, draft_tokens=3, acceptance=0.8, draft_cost=0.05)
    plain = float(rt.decode_step(m, rm.Layout(8), 1, 2048, IDEAL).total_s)
    fast = float(rt.decode_step(m, rm.Layout(8), 1, 2048, spec).total_s)
    assert plain / fast == pytest.approx(2.952 / (1 + 3 * 0.05), rel=0.02)


def test_continuous_step_admits_tau_times_the_chunk():
    # with tau tokens per step a request decodes for O / tau steps, so the chunk is B S tau / O
    spec = replace(IDEAL, draft_tokens=1, acceptance=1.0, draft_cost=0.0)
    assert float(sv.decode_steps(256, spec)) == 128.0
    assert sv.decode_steps(256, IDEAL) == 256
    from .roofline_cases import card
    m = card("llama-3-70b")
    step = sv.continuous_step(m, rm.Layout(8), 64, 2048, 256, spec, 2176.0)
    # alpha = 1, no draft cost: the step equals a plain continuous step with 2 query tokens per sequence
    # and O/2 output steps, halved; its compute is the plain step's with twice the decode FLOPs
    plain = sv.continuous_step(m, rm.Layout(8), 64, 2048, 128, IDEAL, 2176.0)
    dflops, _ = rt.decode_work(m, rm.Layout(8), 64.0, 2176.0, IDEAL)
    assert float(step.compute_s) == pytest.approx((float(plain.compute_s) + dflops / IDEAL.flops_per_s) / 2, rel=1e-12)
