"""Prefix caching (docs/generation.md#prefix-caching) against hand computations."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from mcengine.analytic import serving as sv
from mcengine.analytic.roofline import limits as rl, model as rm, steps as rt

from .roofline_cases import RATES, TINY


def test_half_the_prompt_cached_halves_the_prefill_weight_flops_by_hand():
    # TINY at t = 1: P_active = P_stream = 344, head V d = 40; b = 2 prompts of S = 8 tokens.
    # no cache: 2 (2 (344 - 40) 8 + 2 L n_h d_h 64 + 2 40) = 2 (4864 + 1024 + 80) = 11,936
    # h = 0.5: 2 (4864/2 + 1024 (1 - 0.25) + 80) = 2 (2432 + 768 + 80) = 6,560
    assert float(rt.prefill_flops(TINY, rm.Layout(1), 2.0, 8)) == 11_936.0
    assert float(rt.prefill_flops(TINY, rm.Layout(1), 2.0, 8, 0.5)) == 6_560.0
    # the weight FLOPs (all but attention and the LM head) exactly halve
    weights = lambda h: float(rt.prefill_flops(TINY, rm.Layout(1), 2.0, 8, h)) - 2 * (2 * 2 * 2 * 2 * 64 * (1 - h * h) + 80)
    assert weights(0.5) == 0.5 * weights(0.0)


def test_a_long_dense_prompt_class_at_hit_rate_half_runs_half_the_prefill_flops():
    # Llama-3-70B at S = 512: the weight FLOPs dominate (attention ~1 %), so h = 0.5 takes
    # the prefill's FLOPs to ~0.5 (0.5 x weights + 0.75 x attention + the LM head)
    from .roofline_cases import card
    m, lay = card("llama-3-70b"), rm.Layout(8)
    full, half = float(rt.prefill_flops(m, lay, 1.0, 512)), float(rt.prefill_flops(m, lay, 1.0, 512, 0.5))
    assert half / full == pytest.approx(0.5, abs=0.005)


def test_cached_prompt_cuts_ttft_compute_and_moves_fewer_activations():
    spec = replace(RATES, prefix_hit=np.asarray(0.5))
    plain = rt.time_to_first_token(TINY, rm.Layout(1, 2), 8, RATES)
    cached = rt.time_to_first_token(TINY, rm.Layout(1, 2), 8, spec)
    assert float(cached.compute_s) == pytest.approx(float(rt.prefill_flops(TINY, rm.Layout(1, 2), 1.0, 8, 0.5)) / 1000.0, rel=1e-15)
    # one stage hop of (1 - h) S d 2 bytes: 1 s start + 0.5 s hop + 4 x 4 x 2 / 10 B/s
    assert float(cached.comm_s) == pytest.approx(1.0 + 0.5 + 4 * 4 * 2 / 10.0, rel=1e-15)
    assert float(plain.comm_s) == pytest.approx(1.0 + 0.5 + 8 * 4 * 2 / 10.0, rel=1e-15)
    # the chunk budget bounds the tokens computed: (1 - h) S
    assert float(sv.computed_prompt_tokens(2048, spec)) == 1024.0


def test_the_cache_takes_its_share_of_the_kv_memory():
    from .roofline_cases import card
    m, lay = card("llama-3-70b"), rm.Layout(8)
    # docs/sources.md#roof-batch-limit: 648 sequences of 2,048 tokens fit next to the weights of 8 H100s;
    # a cache keeping 10 % of the free HBM leaves floor(0.9 x free / per-sequence)
    free = float(rl.free_kv_bytes_per_gpu(m, lay, 80.0, 0.9, 2.0))
    per_sequence = 2048 * 2 * 80 * 1 * 128 * 2.0
    assert int(rl.batch_limit_memory(m, lay, 80.0, 0.9, 2048, 2.0, 2.0)) == 648 == int(free // per_sequence)
    assert int(rl.batch_limit_memory(m, lay, 80.0, 0.9, 2048, 2.0, 2.0, 0.1)) == int(np.floor(0.9 * free / per_sequence))
