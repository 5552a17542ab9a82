"""The serving simulator's event count (mcengine/kernels/serve): it grows with the requests
simulated and their preemptions only, never with a parameter's value
(:func:`mcengine.standalone.serve.event_bound`; docs/serve.md#events)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcengine.standalone.serve import ServingSystem, event_bound, simulate_requests

REQUESTS = 40


def _toy(kv_capacity_tokens):
    """One continuous instance of 4 slots, 8-token prompts prefilled a token a step (0.15 s),
    decode steps of 0.1 s: about 0.57 requests/s of capacity."""
    mixed = np.c_[np.r_[0.0, np.full(4, 0.1)], np.full(5, 0.15)]
    return ServingSystem("continuous", 1, 8, 8, 4, decode_s=np.r_[0.0, np.full(4, 0.1)], prefill_s=np.zeros(5), mixed_s=mixed,
                         chunk_tokens=1.0, kv_capacity_tokens=kv_capacity_tokens)


def test_an_unbounded_kv_cache_is_one_that_never_fills():
    """With an infinite KV cache the steps to the cache's filling are "never" (a plain
    ``floor(inf)`` is int64's most negative value, which read as a change due now and
    stopped the instance's clock: the loop then ran forever); the run equals one with a
    cache too large to fill, and its events are at most an arrival, a prefill end and a
    finish per request (3 each: the prompt's last chunk is a whole one; one boundary may
    settle a prefill end and a finish at once)."""
    runs = [simulate_requests(_toy(kv), 0.5, 400, seed=2)[0] for kv in (math.inf, 1e15)]
    assert runs[0].equals(runs[1])
    assert runs[0].attrs["events"] == runs[1].attrs["events"]
    assert 2 * 400 < runs[0].attrs["events"] <= 3 * 400


def test_steps_below_the_clocks_resolution_still_reach_their_change():
    """A lone request arriving about 10^9 s in (rate 1e-9/s), whose 4 prefill steps (one
    token each) and 2 decode steps take 1e-8 s each: below half a float's spacing there
    (1.2e-7 s), so its instance's timer rings at the boundary it left. The instance still
    goes to the change it was armed for (counting boundaries from the clock, it never
    moved, and the loop ran forever): arrival, prefill end and finish, 3 events, its first
    and last tokens at its arrival time to the clock's resolution."""
    tau = 1e-8
    system = ServingSystem("continuous", 1, 4, 3, 2, decode_s=np.array([0.0, tau, tau]), prefill_s=np.zeros(3), mixed_s=np.full((3, 2), tau),
                           chunk_tokens=1.0)
    df, _ = simulate_requests(system, 1e-9, 1, seed=0)
    assert df.arrival_s[0] > 1e7 and df.attrs["events"] == 3
    assert df.first_token_s[0] == pytest.approx(df.arrival_s[0] + 4 * tau, abs=2e-7)
    assert df.finish_s[0] == pytest.approx(df.arrival_s[0] + 6 * tau, abs=2e-7)


def _tables(draw, top, width):
    """Positive step times over a wide range (1 us .. 10 s), each row of ``width`` columns."""
    return np.asarray(draw(st.lists(st.floats(1e-6, 10.0), min_size=top * width, max_size=top * width))).reshape(top, width)


@st.composite
def systems(draw):
    """A serving system with its keys drawn over their legal ranges (prompt and output
    tokens, the chunk, the KV cache from below one prompt to infinite, the length spread),
    small batches and instance counts (the tables' size grows with them, not the events)."""
    mode = draw(st.sampled_from(["static", "continuous", "disaggregated"]))
    batch = draw(st.integers(1, 16))
    prefill_batch = draw(st.integers(1, 8))
    instances = draw(st.integers(2 if mode == "disaggregated" else 1, 6))
    prompt = draw(st.integers(1, 10**7))
    output = draw(st.integers(1, 10**6))
    chunk = draw(st.one_of(st.floats(0.01, 1e7), st.integers(1, 10**7).map(float)))
    kv = draw(st.one_of(st.just(math.inf), st.floats(1.0, 1e12)))
    width = max(batch, prefill_batch) + 1
    decode = np.r_[0.0, _tables(draw, batch, 1)[:, 0]]
    mixed = np.r_[np.zeros((1, 3)), _tables(draw, batch, 3)]
    passes = np.r_[np.zeros((1, 3)), _tables(draw, width - 1, 3)]
    return ServingSystem(mode, instances, prompt, output, batch, decode_s=decode, prefill_s=passes[:, 0], mixed_s=mixed,
                         prefill_busy_s=passes[:, 1], transfer_s=passes[:, 2], prefill_instances=draw(st.integers(1, instances - 1)) if mode == "disaggregated" else 0,
                         prefill_batch_max=prefill_batch, chunk_tokens=chunk, kv_capacity_tokens=kv, length_cv=draw(st.sampled_from([0.0, 0.5, 3.0])))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(system=systems(), rate=st.floats(1e-4, 1e4), arrival=st.sampled_from(["poisson", "gamma"]), cv=st.floats(0.05, 20.0),
       lengths=st.sampled_from(["fixed", "geometric"]), seed=st.integers(0, 2**32 - 1))
def test_events_are_bounded_by_the_requests_and_their_preemptions(system, rate, arrival, cv, lengths, seed):
    df, _ = simulate_requests(system, rate, REQUESTS, seed=seed, arrival=arrival, arrival_cv=cv if arrival == "gamma" else 1.0, lengths=lengths)
    assert REQUESTS <= df.attrs["events"] <= event_bound(REQUESTS, int(df.preemptions.sum()))
    assert np.all(df.finish_s >= df.first_token_s) and np.all(df.first_token_s >= df.arrival_s)
