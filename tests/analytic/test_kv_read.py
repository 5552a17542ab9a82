"""The KV-read efficiency (docs/model.md#kv-read): a decode step reads its KV cache at
``kv_efficiency`` of the HBM bandwidth and streams its weights at ``memory_efficiency``."""

from __future__ import annotations

import numpy as np
import pytest

from mcengine.analytic import serving as sv
from mcengine.analytic.roofline import model as rm, steps as rt, weights as rw
from mcengine.scenario.cards import load_model_card


def _card():
    return load_model_card("llama-3-70b", "workload.model", [])


def test_decode_memory_time_is_weights_at_memory_plus_kv_at_kv_efficiency():
    m, layout = _card(), rm.Layout(4)
    r = rm.Rates.from_peaks(989.4, 3.35, 450.0, 0.59, 0.85, kv_efficiency=0.34)
    b, ctx = 64.0, 3072.0
    weights = 2.0 * rw.rank_params_streamed(m, 4, b, "tensor", 1)
    kv = b * ctx * rw.kv_bytes_per_token_rank(m, 4, 2.0, "tensor", 1)
    expected = weights / (3.35e12 * 0.85) + kv / (3.35e12 * 0.34)
    assert float(rt.decode_step(m, layout, b, ctx, r).memory_s) == pytest.approx(expected, rel=1e-12)


def test_unset_kv_efficiency_is_the_memory_one_to_the_bit_in_every_mode():
    m, layout = _card(), rm.Layout(4)
    plain = rm.Rates.from_peaks(989.4, 3.35, 450.0, 0.59, np.array([0.8, 0.85]))
    same = rm.Rates.from_peaks(989.4, 3.35, 450.0, 0.59, np.array([0.8, 0.85]), kv_efficiency=np.array([0.8, 0.85]))
    assert plain.kv_read_factor == 1.0 and np.array_equal(same.kv_read_factor, [1.0, 1.0])
    for r in (plain, same):
        assert np.array_equal(rt.decode_step(m, layout, 64, 3072, r).memory_s, rt.decode_step(m, layout, 64, 3072, plain).memory_s)
        assert np.array_equal(sv.continuous_step(m, layout, 64, 2048, 256, r).memory_s, sv.continuous_step(m, layout, 64, 2048, 256, plain).memory_s)
