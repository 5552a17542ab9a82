"""The continuous-batching batch search under a TTFT SLO
(:func:`mcengine.analytic.serving.largest_batch_within_ttft`) against hand computations
and a scan over every integer batch."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcengine.analytic.roofline import model as rm
from mcengine.analytic import serving as sv
from mcengine.scenario.cards import load_model_card


def _affine(a: float, c: float, p: int):
    """``tau(B) = a + c b`` with ``b = B / min(B, p)`` sequences per micro-batch."""
    def tau(batch):
        b = np.asarray(batch, float)
        return a + c * b / np.minimum(b, p)
    return tau


def _search(tau, slo, batch_max, p, o) -> int:
    return int(sv.largest_batch_within_ttft(tau, np.array([slo], float), np.array([batch_max], np.int64), p, o)[0])


def _scan(tau, slo, batch_max, p, o) -> int:
    """The largest ``B`` in ``[1, batch_max]`` with ``ceil(O m/B) tau(B) <= slo`` by trying every one."""
    batches = np.arange(1, batch_max + 1, dtype=np.int64)
    if batches.size == 0:
        return 0
    ttft = sv.continuous_ttft_s(tau(batches), batches, p, o)
    met = batches[ttft <= slo]
    return int(met[-1]) if met.size else 0


def test_sawtooth_by_hand():
    # O = 10, p = 1, tau(B) = 1 + B/8: TTFT = ceil(10/B)(1 + B/8) =
    # B:    1      2     3    4    5     6    7     8  9     10    ... 18    19
    #       11.25  6.25  5.5  4.5  3.25  3.5  3.75  4  4.25  2.25  ... 3.25  3.375
    tau = _affine(1.0, 0.125, 1)
    assert _search(tau, 3.25, 30, 1, 10) == 18  # the 1-step piece B >= 10: 1 + B/8 <= 3.25
    assert _search(tau, 3.25, 9, 1, 10) == 5  # B = 9 misses (4.25), 6..8 miss, 5 meets: not a bisection
    assert _search(tau, 3.5, 9, 1, 10) == 6
    assert _search(tau, 3.25, 4, 1, 10) == 0  # 4.5, 5.5, 6.25, 11.25: none
    assert _search(tau, 2.25, 9, 1, 10) == 0
    assert _search(tau, 2.25, 10, 1, 10) == 10
    assert _search(tau, np.inf, 7, 1, 10) == 7  # no SLO: the other limits' batch


def test_pipeline_by_hand():
    # O = 4, p = 2, N = O p = 8, tau = 1 + b/8 with b = B/min(B, 2):
    # B:  1    2    3       4    5      6     7      8    9
    # k:  4    4    3       2    2      2     2      1    1
    #     4.5  4.5  3.5625  2.5  2.625  2.75  2.875  1.5  1.5625
    tau = _affine(1.0, 0.125, 2)
    assert _search(tau, 2.6, 7, 2, 4) == 4
    assert _search(tau, 4.5, 2, 2, 4) == 2  # B <= p: every micro-batch one sequence, TTFT = O tau(1)
    assert _search(tau, 4.4, 2, 2, 4) == 0
    assert _search(tau, 1.5, 100, 2, 4) == 8
    assert _search(tau, 3.6, 3, 2, 4) == 3


def test_vectorised_over_trials_and_no_batch_below_one():
    tau = _affine(1.0, 0.125, 1)
    got = sv.largest_batch_within_ttft(tau, np.array([3.25, 3.25, np.inf, 3.5]), np.array([30, 9, 0, 9]), 1, 10)
    np.testing.assert_array_equal(got, [18, 5, 0, 6])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    a=st.floats(1e-4, 1.0),
    c=st.floats(0.0, 1.0),
    p=st.integers(1, 8),
    o=st.integers(1, 300),
    batch_max=st.integers(0, 400),
    slo_factor=st.floats(0.01, 2.0),
)
def test_equals_the_scan_for_affine_steps(a, c, p, o, batch_max, slo_factor):
    tau = _affine(a, c, p)
    top = max(batch_max, 1)
    slo = slo_factor * float(sv.continuous_ttft_s(tau(np.array([top])), top, p, o)[0])
    assert _search(tau, slo, batch_max, p, o) == _scan(tau, slo, batch_max, p, o)


_LLAMA = load_model_card("llama-3-70b", "workload.model", [])
_MODELS = {name: load_model_card(name, "workload.model", []) for name in ("llama-3-70b", "mixtral-8x7b")}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    model=st.sampled_from(sorted(_MODELS)),
    tensor=st.sampled_from([1, 2, 4, 8]),
    p=st.integers(1, 4),
    prompt=st.integers(16, 8192),
    o=st.integers(1, 2000),
    batch_max=st.integers(1, 300),
    eta=st.floats(0.2, 1.0),
    overhead_ms=st.floats(0.0, 5.0),
    algorithm=st.sampled_from(["ring", "auto"]),
    slo_factor=st.floats(0.05, 1.5),
)
def test_equals_the_scan_for_the_continuous_step(model, tensor, p, prompt, o, batch_max, eta, overhead_ms, algorithm, slo_factor):
    # the real step (heads sharded, where tau and B/tau are non-decreasing in B; dense and
    # MoE) at random rates
    r = rm.Rates.from_peaks(989.4, 3.35, 450.0, eta, eta, 0.8, 5.0, 1.0, overhead_ms, 0.0)
    layout = rm.Layout(tensor, p, allreduce=algorithm)

    def tau(batch):
        return sv.continuous_step(_MODELS[model], layout, batch, prompt, o, r).total_s

    slo = slo_factor * float(sv.continuous_ttft_s(tau(np.array([batch_max])), batch_max, p, o)[0])
    assert _search(tau, slo, batch_max, p, o) == _scan(tau, slo, batch_max, p, o)


@pytest.mark.parametrize("o, batch_max", [(256, 255), (10**6, 10**6 - 1)])
def test_cost_does_not_grow_with_output_tokens_or_the_batch(o, batch_max):
    # Counting step evaluations at a TTFT SLO that binds: B_max = O - 1 takes 2 steps to
    # prefill a prompt, so an SLO below its TTFT pushes the batch into the 2- or 3-step
    # pieces; a few pieces plus one bisection of at most ~log2(B_max) steps, the same for
    # O = 256 and O = 10^6.
    layout, r = rm.Layout(8), rm.Rates.from_peaks(989.4 * 0.5, 3.35 * 0.7, 450.0, link_efficiency=0.8, collective_start_us=5.0, hop_latency_us=1.0)
    calls = []

    def tau(batch):
        calls.append(1)
        return sv.continuous_step(_LLAMA, layout, batch, 2048, o, r).total_s

    top = float(sv.continuous_ttft_s(tau(np.array([batch_max])), batch_max, 1, o)[0])
    for factor in (0.9, 0.7, 0.6):
        calls.clear()
        batch = _search(tau, factor * top, batch_max, 1, o)
        assert len(calls) <= 2 * 3 + 64
        assert 0 < batch < batch_max and batch == _scan(tau, factor * top, batch_max, 1, o)


def test_worst_case_divisor_search_stays_exact_and_under_two_sqrt_n_pieces():
    # tau = B (no constant part), O = 9,973 (a prime), p = 1, SLO N + 0.5: ceil(N/B) B <= N + 0.5
    # only where B divides N, i.e. B = 1 below B_max = N - 1. Every piece is scanned: fewer than
    # 2 sqrt(N) + 1 of them (the distinct values of ceil(N/B)), two evaluations each.
    o = 9_973
    calls = []

    def tau(batch):
        calls.append(1)
        return 1e-12 + np.asarray(batch, float)

    assert _search(tau, o + 0.5, o - 1, 1, o) == 1 == _scan(tau, o + 0.5, o - 1, 1, o)
    calls.clear()
    _search(tau, o + 0.5, o - 1, 1, o)
    assert len(calls) <= 2 * (2 * np.sqrt(o) + 1) + 64


def test_a_search_that_times_only_its_open_trials_equals_one_that_times_every_trial():
    """With ``rates`` each step times the open trials only (``rates.take``): the batches of
    the search that times every trial, to the bit, on a real model's continuous steps."""
    m = _LLAMA
    rng = np.random.default_rng(11)
    n = 1024
    r = rm.Rates.from_peaks(989.0, 3.35, 450.0, rng.uniform(0.35, 0.65, n), rng.uniform(0.55, 0.85, n), 0.8, 5.0, 1.0,
                            rng.uniform(0.5, 3.0, n), 2.0)
    layout = rm.Layout(4, 2)
    slo = rng.uniform(50.0, 5000.0, n) / 1e3
    top = rng.integers(0, 400, n)
    every = sv.largest_batch_within_ttft(lambda b: sv.continuous_step(m, layout, b, 2048, 256, r).total_s, slo, top, 2, 256)
    open_only = sv.largest_batch_within_ttft(lambda b, rr: sv.continuous_step(m, layout, b, 2048, 256, rr).total_s, slo, top, 2, 256, rates=r)
    assert open_only.tolist() == every.tolist()
    assert 0 < np.count_nonzero((every > 0) & (every < top)) < n  # the SLO binds in some trials, not all
