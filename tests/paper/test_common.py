"""The study's helpers on trials that deliver no tokens (cost +inf per token)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mcengine.paper._common import paired_ratio, interval, variant


def test_interval_keeps_an_infinite_cost_infinite_and_refuses_nan():
    v = np.array([1.0, 2.0] * 9 + [math.inf] * 3)  # 21 trials, three without tokens: ranks 0, 10, 19
    assert interval(v) == {"median": 2.0, "p05": 1.0, "p95": math.inf}
    with pytest.raises(ValueError):
        interval(np.array([1.0, math.nan]))


def test_paired_ratio_of_two_trials_without_tokens_is_one_never_nan():
    np.testing.assert_array_equal(paired_ratio([2.0, math.inf, math.inf, 1.0], [1.0, math.inf, 2.0, math.inf]), [2.0, 1.0, math.inf, 0.0])
    np.testing.assert_array_equal(paired_ratio([0.0, 3.0, 0.0], [0.0, 0.0, 3.0]), [1.0, math.inf, 0.0])  # tokens/s


def test_batches_keep_what_shares_a_stage_together_and_bound_the_rest():
    """No run holds more than the bound; within it lite-h100 and lite-h100-2x (the same
    lifetimes) run together, then the fast-swap variant (the same plans as lite-h100-2x);
    the Sobol' sampler spans every scenario's keys, so its scenarios are one run."""
    from mcengine.paper._common import batches, scenario

    case = [scenario(n) for n in ("h100", "lite-h100", "lite-h100-2x", "lite-h100-2x-fastswap")]
    names = lambda size: [[s.name for s in b] for b in batches(case, size=size)]  # noqa: E731
    assert names(1) == [["h100"], ["lite-h100"], ["lite-h100-2x"], ["lite-h100-2x-fastswap"]]
    assert names(2) == [["h100"], ["lite-h100", "lite-h100-2x"], ["lite-h100-2x-fastswap"]]
    assert names(3) == [["h100"], ["lite-h100", "lite-h100-2x", "lite-h100-2x-fastswap"]]
    assert names(4) == [["h100", "lite-h100", "lite-h100-2x", "lite-h100-2x-fastswap"]]
    sobol = [variant(s, s.name, ['run.sampler="sobol"']) for s in case]
    assert [len(b) for b in batches(sobol, size=1)] == [4]


def test_a_chain_run_in_batches_is_the_chain_run_at_once(monkeypatch):
    """Same seed, same trials: each scenario's columns to the bit, however the scenarios
    are split into runs."""
    from mcengine.paper import _common

    settings = _common.Settings(trials=32, seed=3)
    case = [_common.scenario(n) for n in ("h100", "lite-h100", "lite-h100-2x")]
    together = _common.chain(case, settings)
    monkeypatch.setattr(_common, "batches", lambda scenarios: [[s] for s in scenarios])
    apart = _common.chain(case, settings)
    for name, cols in together.items():
        assert list(cols) == list(apart[name])  # every scenario has every column (NaN where it has none)
        for c, v in cols.items():
            assert v.dtype == apart[name][c].dtype, (name, c)
            np.testing.assert_array_equal(v, apart[name][c], err_msg=f"{name} {c}")
