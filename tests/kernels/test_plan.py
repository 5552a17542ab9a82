"""mcengine/kernels/plan.py: the planner's choice in one pass equals the NumPy rule it
replaces (every row's :func:`~mcengine.stages.roofline.planner.objective`, ``np.argmax`` per block,
a later block only when strictly better or NaN), bit for bit, on tables built to hit its
edges: exact ties within and across blocks, NaN objectives, rows that serve no trial
(``-inf``), blocks that serve none (``busy`` None) and broadcast, read-only rows."""

from __future__ import annotations

import numpy as np
import pytest

from mcengine.stages.roofline import planner


def _numpy_rule(blocks, power_weight, n):
    trials, offset = np.arange(n), 0
    best, value, served = np.zeros(n, np.int64), np.full(n, -np.inf), np.full(n, -np.inf)
    for block in blocks:
        rows = block[0].shape[0]
        if block[1] is not None:
            v = planner.objective(block[0], block[1], power_weight)
            k = np.argmax(v, axis=0)
            bv, bs = v[k, trials], np.broadcast_to(block[0], v.shape)[k, trials]
            better = (bv > value) | (np.isnan(bv) & ~np.isnan(value))
            best, value, served = np.where(better, k + offset, best), np.where(better, bv, value), np.where(better, bs, served)
        offset += rows
    return best, served


def _table(seed: int, n: int):
    rng = np.random.default_rng(seed)
    blocks = []
    for rows in (1, 3, 1, 5, 2, 4):
        served = rng.choice([1.0, 2.0, 3.0, -np.inf], size=(rows, n), p=[0.3, 0.3, 0.2, 0.2])  # few values: many exact ties
        busy = rng.choice([0.25, 0.5, 1.0], size=(rows, n))
        served[rng.random((rows, n)) < 0.02] = np.nan
        busy[rng.random((rows, n)) < 0.02] = np.nan
        blocks.append((served, busy, None, None))
    blocks.append((np.broadcast_to(-np.inf, (3, n)), None, None, None))  # serves no trial
    blocks.append((np.broadcast_to(np.float64(2.5), (n,))[None], np.broadcast_to(0.5, (n,))[None], None, None))  # read-only views
    return blocks


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("weight", ["throughput", "per trial", "one number"])
def test_choice_equals_the_numpy_rule(seed, weight):
    n = 400
    blocks = _table(seed, n)
    power_weight = {"throughput": None, "per trial": np.random.default_rng(seed + 100).choice([0.0, 0.5, 1.0], n),
                    "one number": np.array([0.5])}[weight]
    table = planner.CandidateTable((), blocks, [], [])
    best, served = planner._best_rows(table, power_weight, n)
    want_best, want_served = _numpy_rule(blocks, power_weight, n)
    np.testing.assert_array_equal(best, want_best)
    assert served.tobytes() == want_served.tobytes()
    # the table reaches every edge: NaN and -inf chosen somewhere, ties present
    assert np.isnan(want_served).any() and (best > 0).any()


def test_a_trial_no_row_serves_keeps_row_zero():
    n = 5
    blocks = [(np.full((2, n), -np.inf), np.ones((2, n)), None, None), (np.full((1, n), -np.inf), np.ones((1, n)), None, None)]
    best, served = planner._best_rows(planner.CandidateTable((), blocks, [], []), np.ones(n), n)
    assert best.tolist() == [0] * n and np.isneginf(served).all()


@pytest.mark.parametrize("seed", range(4))
def test_disaggregated_rows_equal_the_serving_formulas(seed):
    """The pairs' served tokens/s and busy fraction: mcengine.analytic.serving's share and
    tokens formulas and the busy-fraction expression in NumPy, bit for bit, with NaN and
    infinite rates, zeros, and masks that leave rows and trials unserved."""
    from mcengine.analytic import serving as sv
    from mcengine.kernels.plan import disaggregated_rows

    rng = np.random.default_rng(seed)
    rows, n = 5, 300
    r_p = rng.choice([0.0, 0.7, 3.0, 11.0, np.inf, np.nan], size=(rows, n), p=[0.05, 0.3, 0.3, 0.25, 0.05, 0.05])
    r_d = rng.choice([0.0, 0.4, 5.0, np.nan], size=n, p=[0.05, 0.45, 0.45, 0.05])
    o = rng.choice([1.0, 128.0, 1000.5], size=n)
    pre_ok, serves = rng.random((rows, n)) < 0.8, rng.random(n) < 0.8
    pre_busy, pre_total = rng.random((rows, n)), rng.random((rows, n)) + 0.5
    decode_busy, decode_total = rng.random(n), rng.random(n) + 0.5
    served, busy = np.empty((rows, n)), np.empty((rows, n))
    disaggregated_rows(r_p, r_d, o, pre_ok, serves, pre_busy, pre_total, decode_busy, decode_total, served, busy)
    with np.errstate(all="ignore"):
        f = sv.prefill_share(r_p, r_d)
        want = np.where(serves & pre_ok, sv.disaggregated_tokens_per_s(f, r_p, r_d * o, o), -np.inf)
        want_busy = f * pre_busy / pre_total + (1.0 - f) * decode_busy / decode_total
    assert served.tobytes() == want.tobytes()
    assert busy.tobytes() == want_busy.tobytes()
    assert np.isnan(want).any() and np.isneginf(want).any()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("weight", ["throughput", "per trial"])
def test_pairs_folded_from_their_terms_equal_the_stored_rows(seed, weight):
    """A block of disaggregated pairs kept as its terms (planner.PairRows, made by the
    choice into its reused buffers, never kept) gives the choice of its stored rows
    (disaggregated_rows, then the NumPy rule), bit for bit, beside ordinary blocks."""
    rng = np.random.default_rng(seed)
    rows, n = 4, 300
    prefill = (rng.choice([0.0, 0.7, 3.0, 11.0, np.inf, np.nan], size=(rows, n), p=[0.05, 0.3, 0.3, 0.25, 0.05, 0.05]),
               rng.random((rows, n)) < 0.8, rng.random((rows, n)), rng.random((rows, n)) + 0.5)
    decode = (rng.choice([0.0, 0.4, 5.0, np.nan], size=n, p=[0.05, 0.45, 0.45, 0.05]), rng.choice([1.0, 128.0, 1000.5], size=n),
              rng.random(n) < 0.8, rng.random(n), rng.random(n) + 0.5)
    pairs = planner.PairRows(prefill, decode, (None, None))
    stored = (pairs[0].copy(), pairs[1].copy(), None, None)
    assert stored[0].shape == (rows, n) and planner.block_rows(pairs) == rows
    others = _table(seed, n)[:2]
    power_weight = None if weight == "throughput" else np.random.default_rng(seed + 7).choice([0.0, 0.5, 1.0], n)
    fresh = planner.PairRows(prefill, decode, (None, None))  # never read as rows: folded from its terms
    best, served = planner._best_rows(planner.CandidateTable((), [others[0], fresh, others[1]], [], []), power_weight, n)
    want_best, want_served = _numpy_rule([others[0], stored, others[1]], power_weight, n)
    np.testing.assert_array_equal(best, want_best)
    assert served.tobytes() == want_served.tobytes()
    assert fresh._made is None and ((best >= 1) & (best < 1 + rows)).any()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("weight", ["throughput", "per trial"])
def test_fleet_bounds_equal_the_numpy_rule(seed, weight):
    """The fleet's screen's bounds (mcengine.kernels.plan.fleet_bounds) are the NumPy
    expression ``where(mask, max(ceil(rate / (T / O)), 1) + w busy / T, inf)`` and each
    trial's first row ``np.argmin`` of them, bit for bit: with exact ties (few values),
    zero rates (bound 1), NaN and infinite busy fractions, and trials no row serves."""
    from mcengine.kernels.plan import fleet_bounds

    rng = np.random.default_rng(seed)
    rows, n = 6, 400
    served = rng.choice([0.5, 2.0, 3.0, 7.5], size=(rows, n))
    busy = rng.choice([0.25, 0.5, 1.0, np.nan, np.inf], size=(rows, n), p=[0.3, 0.3, 0.3, 0.05, 0.05])
    mask = rng.random((rows, n)) < 0.7
    mask[:, :20] = False  # served by no row
    w = None if weight == "throughput" else rng.choice([0.0, 0.5, 2.0], n)
    rate, o = rng.choice([0.0, 1.0, 4.0, 9.0], size=n), rng.choice([1.0, 3.0, 128.0], size=n)
    bound, first = np.empty((rows, n)), np.empty(n, np.int64)
    fleet_bounds(served, busy, mask, np.zeros(n) if w is None else w, w is not None, rate, o, bound, first)
    with np.errstate(all="ignore"):
        energy = np.zeros((rows, n)) if w is None else w * busy / served
        want = np.where(mask, np.maximum(np.ceil(rate / (served / o)), 1.0) + energy, np.inf)
    assert bound.tobytes() == want.tobytes()
    np.testing.assert_array_equal(first, np.argmin(want, axis=0))
    assert (want == 1.0).any() and np.isinf(want[:, 20:]).any()
    if w is not None:
        assert np.isnan(want).any()
