"""Closed forms of the cost of capital: the capital recovery factor and the levelised
charge of a part over a horizon (docs/model.md#finance, docs/sources.md#finance-crf).

A part bought for ``C`` and kept ``L`` years, at a cost of capital ``r`` a year, costs the
annuity ``C x CRF(r, L)`` a year, ``CRF(r, L) = r (1 + r)^L / ((1 + r)^L - 1)`` (``1 / L``
at ``r = 0``). When the price of new parts falls ``d`` a year, the charge that recovers
``C`` falls with it (the tilted annuity of regulatory cost models): ``A (1 - d)^(j-1)`` in
year ``j`` with ``A = C (r + d) / (1 - q^L)``, ``q = (1 - d) / (1 + r)``. A cost per token
is levelised over the horizon of ``H`` years, present cost over present tokens; with
tokens and opex the same every year, the part's charge against the horizon's tokens is
``C x (1 - q^H) / (1 - q^L) x H x CRF(r, H)`` (:func:`horizon_factor` is the factor),
which is ``H x CRF(r, L) x C`` without a decline, ``C`` when ``L = H`` and ``r = 0``,
and ``C H / L`` at ``r = d = 0``. A residual value ``s C`` at the end of the part's life
comes back, discounted: the charge is on ``C (1 - s (1 + r)^-L)``.
"""

from __future__ import annotations

import numpy as np


def capital_recovery_factor(rate, years):
    """``CRF(r, n) = r (1 + r)^n / ((1 + r)^n - 1)``, ``1 / n`` at ``r = 0`` (the level annual
    payment that repays 1 over ``n`` years at ``r`` a year)."""
    rate, years = np.broadcast_arrays(np.asarray(rate, float), np.asarray(years, float))
    grow = np.power(1.0 + rate, years)
    out = np.array(1.0 / years)
    np.divide(rate * grow, grow - 1.0, out=out, where=rate > 0.0)
    return out[()] if out.ndim == 0 else out


def horizon_factor(rate, life_years, horizon_years, decline=0.0):
    """The levelised charge of a part over the horizon per dollar of its price (module
    docstring): ``(1 - q^H) / (1 - q^L) x H x CRF(r, H)`` with ``q = (1 - d) / (1 + r)``;
    ``H / L`` when ``r = d = 0`` (exactly 1 when ``L = H``)."""
    rate, life, horizon, decline = np.broadcast_arrays(*(np.asarray(v, float) for v in (rate, life_years, horizon_years, decline)))
    out = np.array(horizon / life)
    tilted = (rate > 0.0) | (decline > 0.0)
    if np.any(tilted):
        r, n, h, d = (v[tilted] for v in (rate, life, horizon, decline))
        q = (1.0 - d) / (1.0 + r)
        out[tilted] = (1.0 - q ** h) / (1.0 - q ** n) * h * capital_recovery_factor(r, h)
    return out[()] if out.ndim == 0 else out


def net_of_residual(rate, life_years, residual_fraction):
    """Share of a part's price not returned by its resale at the end of its life,
    ``1 - s (1 + r)^-L`` (exactly 1 when ``s = 0``)."""
    rate, life, s = (np.asarray(v, float) for v in (rate, life_years, residual_fraction))
    return 1.0 - s * np.power(1.0 + rate, -life)
