"""Batch limits of :mod:`mcengine.analytic.roofline.limits` (HBM and the TPOT SLO) against
hand-computed values and docs/sources.md#roof-llama3-70b-tp8."""

from __future__ import annotations

import numpy as np

from mcengine.analytic.roofline import model as rm, steps as rt, limits as rl

from .roofline_cases import TINY, RATES


def test_memory_limited_batch_by_hand():
    # weights 2 * 384 = 768 B; 0.9 x 1000 B - 768 = 132 B free; 5 tokens x 8 B = 40 B per sequence
    assert rl.batch_limit_memory(TINY, rm.Layout(1), 1e-6, 0.9, 5, 2.0, 1.0) == 3
    assert rl.batch_limit_memory(TINY, rm.Layout(1), 1e-6, 0.7, 5, 2.0, 1.0) == 0  # weights do not fit
    limits = rl.batch_limit_memory(TINY, rm.Layout(1), np.array([1e-6, 2e-6]), 0.9, 5, 2.0, 1.0)
    np.testing.assert_array_equal(limits, [3, 25])  # (1800 - 768) / 40 = 25.8


def test_slo_batch_is_the_largest_meeting_the_slo():
    # TPOT(B) = max(0.848 B, 6.88 + 0.4 B) + 2.5: 9.78 at B=1, 10.98 at B=4, 0.848 B + 2.5 past B=15
    context, slo = 5.0, np.array([5.0, 10.0, 11.0, 50.0])
    b = rl.batch_limit_slo(TINY, rm.Layout(1), context, slo, RATES)
    np.testing.assert_array_equal(b, [0, 1, 4, 56])
    for limit, s in zip(b[1:], slo[1:]):
        assert float(rt.decode_step(TINY, rm.Layout(1), limit, context, RATES).total_s) <= s
        assert float(rt.decode_step(TINY, rm.Layout(1), limit + 1, context, RATES).total_s) > s


def test_reference_capacity_limits(llama70):
    assert rl.batch_limit_memory(llama70, rm.Layout(8), 80.0, 0.9, 2048, 2.0, 2.0) == 648
    assert rl.batch_limit_memory(llama70, rm.Layout(8), 80.0, 0.9, 4096, 2.0, 2.0) == 324
    assert rl.batch_limit_memory(llama70, rm.Layout(8, 4), 20.0, 0.9, 2048, 2.0, 2.0) == 648
    # TP32 on 20 GB Lite-GPUs: docs/sources.md#roof-batch-limit gives 162 without the replicated K/V projections;
    # with them (0.25 GB more per GPU) 159
    assert rl.batch_limit_memory(llama70, rm.Layout(32), 20.0, 0.9, 2048, 2.0, 2.0) == 159
