"""The compiled continuous-batching searches (mcengine/kernels/continuous.py) against the
NumPy path on random inputs: the same step time at every batch, and the same ``B_SLO``
and ``B_TTFT``, bit for bit, for every layout the kernel covers; None (NumPy) for the
layouts it does not."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import given, settings, strategies as st

from mcengine.analytic import serving as sv
from mcengine.analytic.roofline import limits as rl, model as rm
from mcengine.kernels import continuous as kc
from tests.analytic.roofline_cases import card

N = 48
DENSE = ("llama-3-70b", "llama-3-8b", "llama-3.1-405b", "gpt-3-175b", "llama-2-70b")


def _layout(rng) -> rm.Layout:
    """A layout the kernel covers: dense, "auto", one scale-up domain, any attention mode."""
    t, p = int(2 ** rng.integers(0, 6)), int(2 ** rng.integers(0, 5))
    mode = ("tensor", "data", "grouped")[rng.integers(0, 3) if t > 2 else rng.integers(0, 2)]
    groups = int(2 ** rng.integers(1, int(np.log2(t)))) if mode == "grouped" else 0
    domain = (0, t * p, 2 * t * p)[rng.integers(0, 3)]
    return rm.Layout(t, p, allreduce="auto", attention=mode, attention_groups=groups, domain=domain)


def _rates(rng, n: int) -> rm.Rates:
    """Per-trial rates over wide ranges (log-uniform), some fields common to every trial."""
    def draw(lo, hi, log=True):
        x = np.exp(rng.uniform(np.log(lo), np.log(hi), n)) if log else rng.uniform(lo, hi, n)
        return x if rng.random() < 0.7 else np.asarray(x[0])

    return rm.Rates(flops_per_s=draw(1e12, 1e16), hbm_bytes_per_s=draw(1e11, 1e14), link_bytes_per_s=draw(1e9, 1e12),
                    collective_start_s=draw(1e-7, 1e-4), hop_latency_s=draw(1e-8, 1e-5), step_overhead_s=draw(1e-5, 1e-2),
                    layer_overhead_s=draw(1e-7, 1e-4), bytes_per_param=float(rng.choice([0.5, 1.0, 2.0])), kv_bytes=float(rng.choice([1.0, 2.0])),
                    comm_overlap=draw(0.0, 1.0, log=False), prefix_hit=draw(0.0, 0.95, log=False), kv_read_factor=draw(0.5, 2.0),
                    allreduce_start_s=None if rng.random() < 0.5 else draw(1e-7, 1e-4))


def _case(seed: int):
    rng = np.random.default_rng(seed)
    m = card(str(rng.choice(DENSE)))
    layout = _layout(rng)
    s, o = int(rng.integers(1, 32768)), int(rng.integers(1, 8192))
    context = float(s + o / 2.0) if rng.random() < 0.5 else rng.uniform(1, s + o, N)
    r = _rates(rng, N)
    tpot = np.where(rng.random(N) < 0.1, np.inf, np.exp(rng.uniform(np.log(1e-3), np.log(1.0), N)))
    ttft = np.where(rng.random(N) < 0.1, np.inf, np.exp(rng.uniform(np.log(1e-2), np.log(100.0), N)))
    return rng, m, layout, s, o, context, r, tpot, ttft


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_step_times_and_searches_match_numpy(seed):
    rng, m, layout, s, o, context, r, tpot, ttft = _case(seed)
    x, lay, o_steps = sv.continuous_search_tables(m, layout, s, o, context, r, tpot, ttft, N)
    batch = rng.integers(1, 2**20, N)
    numpy_s = sv.continuous_step(m, layout, batch, s, o, r, context).total_s
    kernel_s = [kc._step_s(int(batch[i]), x, i, lay) for i in range(N)]
    np.testing.assert_array_equal(kernel_s, np.broadcast_to(numpy_s, (N,)))

    cap = np.where(rng.random(N) < 0.5, rm.SLO_SEARCH_CAP, rng.integers(0, 5000, N))
    b_mem, b_chunk = rng.integers(0, 3000, N), rng.integers(0, 3000, N)
    timing = rl.Timing(r, (s, o, context))

    def step_s(b, t):
        return sv.continuous_step(m, layout, b, t.lengths[0], t.lengths[1], t.rates, t.lengths[2]).total_s

    b_slo = rl.largest_batch(step_s, tpot, (N,), cap, rates=timing)
    b_ttft = sv.largest_batch_within_ttft(step_s, ttft, np.minimum(np.minimum(b_mem, b_slo), b_chunk), layout.pipeline, o, rates=timing)
    compiled = sv.compiled_batch_limits(m, layout, s, o, context, r, tpot, ttft, cap, b_mem, b_chunk, N)
    np.testing.assert_array_equal(compiled[0], b_slo)
    np.testing.assert_array_equal(compiled[1], b_ttft)


def test_layouts_not_covered_search_with_numpy():
    _, m, layout, s, o, context, r, tpot, ttft = _case(7)
    covered = rm.Layout(8, 2, allreduce="auto")
    assert sv.continuous_search_tables(m, covered, s, o, context, r, tpot, ttft, N) is not None
    for lay in (replace(covered, allreduce="ring"), replace(covered, domain=4), rm.Layout(2, 4, allreduce="auto", domain=4)):
        assert sv.continuous_search_tables(m, lay, s, o, context, r, tpot, ttft, N) is None
    assert sv.continuous_search_tables(card("mixtral-8x7b"), covered, s, o, context, r, tpot, ttft, N) is None
    assert sv.continuous_search_tables(m, covered, s, o, context, replace(r, draft_tokens=2, acceptance=0.7), tpot, ttft, N) is None
    assert sv.continuous_search_tables(m, covered, s, np.full(N, 100.5), context, r, tpot, ttft, N) is None
