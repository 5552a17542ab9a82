"""The study's helpers on trials that deliver no tokens (cost +inf per token)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mcengine.paper._common import paired_ratio, interval


def test_interval_keeps_an_infinite_cost_infinite_and_refuses_nan():
    v = np.array([1.0, 2.0] * 9 + [math.inf] * 3)  # 21 trials, three without tokens: ranks 0, 10, 19
    assert interval(v) == {"median": 2.0, "p05": 1.0, "p95": math.inf}
    with pytest.raises(ValueError):
        interval(np.array([1.0, math.nan]))


def test_paired_ratio_of_two_trials_without_tokens_is_one_never_nan():
    np.testing.assert_array_equal(paired_ratio([2.0, math.inf, math.inf, 1.0], [1.0, math.inf, 2.0, math.inf]), [2.0, 1.0, math.inf, 0.0])
    np.testing.assert_array_equal(paired_ratio([0.0, 3.0, 0.0], [0.0, 0.0, 3.0]), [1.0, math.inf, 0.0])  # tokens/s
