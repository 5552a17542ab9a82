"""Summaries: the docs/interface.md shape, exact moments, sketch accuracy, chunk invariance."""

from __future__ import annotations

import collections
import json
import math

import numpy as np
import pytest

from mcengine.errors import NumericalError
from mcengine.summaries import BLOCK_TRIALS, SKETCH_RELATIVE_ACCURACY, SUMMARY_KEYS, QuantileSketch, Summary, summarize


def _sample(n=50_000, seed=3):
    return np.random.default_rng(seed).lognormal(0.0, 1.0, n)


def test_summarize_is_exact():
    x = _sample(10_001)
    d = summarize(x)
    assert tuple(d) == SUMMARY_KEYS
    assert d["mean"] == pytest.approx(x.mean(), rel=1e-15)
    assert d["std"] == pytest.approx(x.std(ddof=1), rel=1e-12)
    assert d["sem"] == pytest.approx(d["std"] / np.sqrt(x.size))
    assert d["p50"] == np.median(x)
    assert (d["min"], d["max"]) == (x.min(), x.max())


def test_streaming_summary_matches_exact_within_sketch_accuracy():
    x = np.concatenate([_sample(), -_sample(1000, 4), np.zeros(500)])
    exact = summarize(x)
    streamed = Summary().add(x).to_dict()
    assert streamed["mean"] == pytest.approx(exact["mean"], rel=1e-12)
    assert streamed["std"] == pytest.approx(exact["std"], rel=1e-12)
    order = np.sort(x)
    for key, q in (("p01", 0.01), ("p05", 0.05), ("p50", 0.5), ("p95", 0.95), ("p99", 0.99)):
        ranked = order[int(round(q * (x.size - 1)))]
        assert abs(streamed[key] - ranked) <= SKETCH_RELATIVE_ACCURACY * abs(ranked) + 1e-300, key
    assert (streamed["min"], streamed["max"]) == (exact["min"], exact["max"])


@pytest.mark.parametrize("chunk_blocks", [1, 3, 7])
def test_streaming_summary_is_identical_for_any_chunking(chunk_blocks):
    x = _sample(20 * BLOCK_TRIALS + 123)
    straight = Summary().add(x).to_dict()
    step = chunk_blocks * BLOCK_TRIALS
    chunked = Summary()
    for start in range(0, x.size, step):
        chunked.add(x[start : start + step])
    assert json.dumps(chunked.to_dict()) == json.dumps(straight)


def test_state_round_trip_is_exact():
    x = _sample(5 * BLOCK_TRIALS)
    s = Summary().add(x[: 3 * BLOCK_TRIALS])
    restored = Summary.from_state(json.loads(json.dumps(s.state())))
    restored.add(x[3 * BLOCK_TRIALS :])
    assert restored.to_dict() == Summary().add(x).to_dict()


def test_non_finite_values_are_an_error_not_a_nan():
    with pytest.raises(NumericalError, match="cost.*non-finite"):
        Summary().add(np.array([1.0, np.nan]), "cost")
    with pytest.raises(NumericalError, match="cost.*non-finite"):
        Summary().add(np.array([1.0, -np.inf]), "cost")
    with pytest.raises(NumericalError, match="non-finite"):
        summarize(np.array([np.nan]))


def test_infinite_values_are_a_share_beside_a_summary_of_the_finite_ones():
    """A trial that delivers no tokens costs +inf per token: counted apart as
    ``infinite_share``; moments and quantiles describe the trials that serve (1..7: mean
    4, sample std sqrt(28/6), p50 the middle value 4), ``max`` stays inf."""
    values = np.array([1.0, 2.0, np.inf, 3.0, 4.0, np.inf, 5.0, 6.0, np.inf, 7.0])
    d = Summary().add(values).to_dict()
    assert d["mean"] == pytest.approx(4.0, rel=1e-15) and d["std"] == pytest.approx((28 / 6) ** 0.5, rel=1e-15)
    assert d["sem"] == pytest.approx(d["std"] / 7 ** 0.5, rel=1e-15)
    assert d["infinite_share"] == 0.3 and d["max"] == np.inf and d["min"] == 1.0
    assert d["p50"] == pytest.approx(4.0, rel=SKETCH_RELATIVE_ACCURACY)  # rank round(0.5 x 6) = 3 (0-based) of 1..7
    assert d["p99"] == pytest.approx(7.0, rel=SKETCH_RELATIVE_ACCURACY)
    assert "infinite_share" not in Summary().add(values[np.isfinite(values)]).to_dict()
    everything = Summary().add(np.full(3, np.inf)).to_dict()
    assert everything["p01"] == everything["mean"] == np.inf and everything["infinite_share"] == 1.0


def test_keep_leaves_trials_out_without_changing_the_blocks():
    x = _sample(3 * BLOCK_TRIALS)
    keep = np.arange(x.size) % 5 != 0
    whole = Summary().add(x, keep=keep)
    parts = Summary().add(x[:BLOCK_TRIALS], keep=keep[:BLOCK_TRIALS]).add(x[BLOCK_TRIALS:], keep=keep[BLOCK_TRIALS:])
    assert whole.state() == parts.state() and whole.count == int(keep.sum())
    assert whole.to_dict()["mean"] == pytest.approx(x[keep].mean(), rel=1e-12)
    assert whole.min == x[keep].min() and whole.max == x[keep].max()


def test_infinite_values_keep_the_moments_independent_of_chunking():
    x = _sample(3 * BLOCK_TRIALS)
    x[::7] = np.inf
    whole = Summary().add(x)
    parts = Summary().add(x[:BLOCK_TRIALS]).add(x[BLOCK_TRIALS:])
    assert whole.state() == parts.state() and whole.infinite == len(x[::7])
    finite = Summary().add(x[np.isfinite(x)])
    assert whole.count == finite.count


def test_offset_resolves_values_crowded_near_one():
    rng = np.random.default_rng(8)
    availability = 1.0 - rng.lognormal(np.log(2e-4), 0.5, 20_000)
    streamed = Summary(offset=1.0).add(availability).to_dict()
    order = np.sort(availability)
    for key, q in (("p05", 0.05), ("p50", 0.5), ("p95", 0.95)):
        ranked = order[int(round(q * (availability.size - 1)))]
        assert abs(streamed[key] - ranked) <= SKETCH_RELATIVE_ACCURACY * (1.0 - ranked), key
    assert streamed["p05"] < streamed["p95"]


@pytest.mark.parametrize("values, alpha", [
    (np.random.default_rng(3).normal(0.0, 1.0, 4096), SKETCH_RELATIVE_ACCURACY),  # counted by bincount
    (np.array([-1e300, -2.0, 1e-300, 0.5, 0.5, 1e300, 0.0]), SKETCH_RELATIVE_ACCURACY),  # 0.7M buckets: bincount
    (np.array([-1e300, -2.0, 1e-300, 0.5, 0.5, 1e300, 0.0]), 1e-4),  # 6.9M buckets apart: sorted
])
def test_sketch_counts_every_value_in_its_log_bucket(values, alpha):
    sketch = QuantileSketch(alpha)
    sketch.add(values)
    for side, magnitudes in ((sketch.positive, values[values > 0]), (sketch.negative, -values[values < 0])):
        keys = np.ceil(np.log(magnitudes) / sketch._log_gamma).astype(np.int64)
        assert side == dict(collections.Counter(keys.tolist()))
    assert sketch.zeros == int(np.count_nonzero(values == 0))


@pytest.mark.parametrize("magnitude", [1e-300, 1e-200, 1.0, 1e200, 1e300])
def test_moments_stay_finite_and_exact_at_any_magnitude(magnitude):
    """The streamed and in-memory moments of ``magnitude * x`` are ``magnitude`` times those
    of x (to rounding), with no overflow of squares nor underflow to a zero spread."""
    x = np.random.default_rng(5).uniform(0.5, 1.5, 5000)
    ref = summarize(x)
    for got in (Summary().add(x * magnitude).to_dict(), summarize(x * magnitude)):
        for key in ("mean", "std", "sem"):
            assert math.isfinite(got[key]) and got[key] == pytest.approx(ref[key] * magnitude, rel=1e-12)
        assert got["std"] > 0


def test_moments_of_ordinary_values_are_bit_for_bit_the_plain_formulas():
    x = np.random.default_rng(6).normal(3.0, 2.0, 3000)
    s = Summary().add(x)
    blocks = [x[i:i + BLOCK_TRIALS] for i in range(0, x.size, BLOCK_TRIALS)]
    count, mean, m2 = 0, 0.0, 0.0
    for b in blocks:  # Chan et al.'s merge on the raw values
        mb, m2b = float(b.mean()), float(((b - b.mean()) ** 2).sum())
        n = count + b.size
        delta = mb - mean
        mean += delta * b.size / n
        m2 += m2b + delta * delta * count * b.size / n
        count = n
    assert s.to_dict()["mean"] == mean
    assert s.to_dict()["std"] == math.sqrt(m2 / (count - 1))


def test_blocks_folded_at_once_give_the_bits_of_blocks_folded_one_by_one():
    """Finite values fold all their blocks in one NumPy call; a +inf among them sends every
    block through one at a time. With magnitudes that raise the scale block after block,
    the moments of the finite values are the same bits either way."""
    rng = np.random.default_rng(8)
    x = rng.normal(1.0, 0.5, 5 * BLOCK_TRIALS + 100) * 3.0 ** np.repeat(np.arange(6), BLOCK_TRIALS)[: 5 * BLOCK_TRIALS + 100]
    at_once, by_block = Summary().add(x), Summary().add(np.append(x, np.inf))
    assert by_block.infinite == 1 and by_block.scale == at_once.scale == 1024.0
    assert (at_once.count, at_once.mean, at_once.m2) == (by_block.count, by_block.mean, by_block.m2)


def test_near_zero_values_of_a_near_one_metric_keep_relative_accuracy():
    """Availabilities are sketched on their distance from 1; those far from 1 (a cluster
    that is mostly down) keep 0.1% relative accuracy on the value itself, and a sample
    spread over both regions ranks correctly across them."""
    rng = np.random.default_rng(8)
    for x in (rng.uniform(0.009, 0.016, 3000), np.concatenate([rng.uniform(0.001, 0.01, 1500), 1 - rng.uniform(1e-6, 1e-4, 1500)])):
        got = Summary(offset=1.0).add(x).to_dict()
        exact = np.sort(x)
        for key, q in (("p01", 0.01), ("p05", 0.05), ("p50", 0.5), ("p95", 0.95), ("p99", 0.99)):
            at_rank = exact[int(round(q * (x.size - 1)))]
            tolerance = SKETCH_RELATIVE_ACCURACY * (at_rank if at_rank < 0.5 else 1 - at_rank)
            assert abs(got[key] - at_rank) <= tolerance * (1 + 1e-9), (key, got[key], at_rank)


def test_a_state_round_trip_keeps_both_regions():
    x = np.array([0.002, 0.003, 0.999, 0.9999] * 300)
    s = Summary(offset=1.0).add(x)
    assert Summary.from_state(json.loads(json.dumps(s.state()))).to_dict() == s.to_dict()


def test_cdf_points_cover_both_regions_in_order():
    x = np.array([0.002] * 100 + [0.9999] * 300)
    values, share = Summary(offset=1.0).add(x).cdf_points()
    assert np.all(np.diff(values) >= 0) and share[-1] == 1.0
    assert values[0] == pytest.approx(0.002, rel=SKETCH_RELATIVE_ACCURACY) and share[0] == 0.25


def test_with_replicates_the_sem_is_the_spread_of_their_means():
    """Trial i of R scramblings belongs to scrambling i % R; values i % R + noise give
    scramblings of known means, and the sem is the standard error of R estimates."""
    reps = 5
    trials = 4 * BLOCK_TRIALS + 7  # unequal scramblings: the first seven have one more trial
    x = (np.arange(trials) % reps).astype(float) + 1e-3 * _sample(trials)
    def replicate_sem(finite: np.ndarray) -> float:
        rep = (np.arange(trials) % reps)[finite]
        counts = np.bincount(rep)
        means = np.bincount(rep, weights=x[finite]) / counts
        w = counts / counts.sum()
        return math.sqrt(reps / (reps - 1) * np.sum(w**2 * (means - x[finite].mean()) ** 2))

    x[11] = math.inf  # an infinite value (scrambling 1): the summary describes the finite ones
    streamed = Summary(replicates=reps)
    for start in range(0, trials, 3 * BLOCK_TRIALS):
        streamed.add(x[start : start + 3 * BLOCK_TRIALS])
    with_inf = streamed.to_dict()
    assert with_inf["infinite_share"] == 1 / trials
    assert with_inf["sem"] == pytest.approx(replicate_sem(np.isfinite(x)), rel=1e-12)
    x[11] = 1.0
    s = Summary(replicates=reps).add(x)
    expected = replicate_sem(np.ones(trials, bool))
    d = s.to_dict()
    assert d["sem"] == pytest.approx(expected, rel=1e-12)
    assert d["mean"] == pytest.approx(x.mean(), rel=1e-14)
    assert d["std"] == pytest.approx(x.std(ddof=1), rel=1e-12)  # the trials' spread, as without replicates
    half = Summary(replicates=reps).add(x[: 2 * BLOCK_TRIALS])
    restored = Summary.from_state(json.loads(json.dumps(half.state())))
    restored.add(x[2 * BLOCK_TRIALS :])
    assert json.dumps(restored.to_dict()) == json.dumps(d)


def test_left_out_trials_are_counted_and_survive_the_state():
    """``keep`` leaves trials out of a summary; each is counted in ``skipped`` (so a
    checkpoint's summary still accounts for every trial done), across a saved state too,
    and the replicate of a later trial does not shift."""
    x = np.arange(2 * BLOCK_TRIALS, dtype=float) + 1.0
    keep = x % 3 != 0
    half = Summary(offset=1.0, replicates=4).add(x[:BLOCK_TRIALS], keep=keep[:BLOCK_TRIALS])
    restored = Summary.from_state(json.loads(json.dumps(half.state())))
    restored.add(x[BLOCK_TRIALS:], keep=keep[BLOCK_TRIALS:])
    whole = Summary(offset=1.0, replicates=4).add(x, keep=keep)
    assert restored.skipped == whole.skipped == int(np.count_nonzero(~keep))
    assert whole.count + whole.infinite + whole.skipped == x.size
    assert json.dumps(restored.to_dict()) == json.dumps(whole.to_dict())
    assert whole.to_dict()["mean"] == pytest.approx(x[keep].mean(), rel=1e-14)
    reps = np.arange(x.size) % 4
    assert whole.rep_count == np.bincount(reps[keep], minlength=4).tolist()
