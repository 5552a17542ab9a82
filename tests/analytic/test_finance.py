"""Capital recovery and the levelised charge over a horizon (mcengine/analytic/finance.py)."""

import numpy as np
import pytest

from mcengine.analytic import finance


def test_capital_recovery_factor_at_8_percent_over_5_years():
    """0.08 x 1.08^5 / (1.08^5 - 1) = 0.117546 / 0.469328 = 0.250456."""
    assert finance.capital_recovery_factor(0.08, 5) == pytest.approx(0.2504564545668364, rel=1e-15)
    assert round(finance.capital_recovery_factor(0.08, 5), 5) == 0.25046
    assert finance.capital_recovery_factor(0.0, 5) == 0.2


def test_horizon_factor_hand_values():
    """``L = H``, ``r = 0``: exactly 1 (the capex as spent); ``r = 8 %``: ``H x CRF``;
    a 15-year hall over 5 years at ``r = 0``: a third; without a decline the factor is
    ``H x CRF(r, L)``; a 3-year part at 20 % decline over 5 years by the year-by-year sum."""
    assert finance.horizon_factor(0.0, 5.0, 5.0) == 1.0
    assert finance.horizon_factor(0.08, 5.0, 5.0) == pytest.approx(5 * 0.2504564545668364, rel=1e-14)
    assert finance.horizon_factor(0.0, 15.0, 5.0) == 1.0 / 3.0
    assert finance.horizon_factor(0.08, 15.0, 5.0) == pytest.approx(5 * finance.capital_recovery_factor(0.08, 15), rel=1e-12)
    # r = 0, d = 0.2, L = 3: A = C d / (1 - 0.8^3) = 0.2 / 0.488; the horizon's charges sum to
    # A (1 - 0.8^5) / 0.2 (undiscounted at r = 0), = (1 - 0.8^5) / (1 - 0.8^3).
    assert finance.horizon_factor(0.0, 3.0, 5.0, 0.2) == pytest.approx((1 - 0.8 ** 5) / (1 - 0.8 ** 3), rel=1e-14)


def test_residual_value_comes_back_discounted():
    assert finance.net_of_residual(0.0, 5.0, 0.0) == 1.0
    assert finance.net_of_residual(0.0, 5.0, 0.1) == pytest.approx(0.9)
    assert finance.net_of_residual(0.08, 5.0, 0.1) == pytest.approx(1 - 0.1 / 1.08 ** 5)


def test_higher_cost_of_capital_never_lowers_the_charge():
    """Property over a fixed-seed grid of lives, horizons, declines and residuals: the
    charge per dollar, ``horizon_factor x net_of_residual``, rises with the rate."""
    rng = np.random.default_rng(46)
    life, horizon = rng.uniform(1, 25, 2000), rng.uniform(1, 10, 2000)
    decline, residual = rng.uniform(0, 0.5, 2000), rng.uniform(0, 0.5, 2000)
    rates = np.linspace(0.0, 0.3, 31)
    charge = np.array([finance.horizon_factor(r, life, horizon, decline) * finance.net_of_residual(r, life, residual) for r in rates])
    assert np.all(np.diff(charge, axis=0) >= -1e-12 * charge[1:])
