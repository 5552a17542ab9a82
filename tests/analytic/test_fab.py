"""Closed forms of the fab stage against docs/sources.md#fab-dies-per-wafer, #fab-yield-models and hand arithmetic."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from mcengine.analytic import fab as a

GH100_CM2 = 8.14
QUARTER_CM2 = 2.035


# docs/sources.md#fab-yield-models (derived yields): die, D0, Poisson, Murphy, NB alpha=2, 3, 10
TABLE = [
    (GH100_CM2, 0.05, 0.666, 0.675, None, 0.683, None),
    (GH100_CM2, 0.07, 0.566, 0.581, 0.606, 0.594, 0.575),
    (GH100_CM2, 0.10, 0.443, 0.468, 0.505, 0.487, 0.457),
    (GH100_CM2, 0.20, 0.196, 0.244, 0.304, 0.272, 0.221),
    (QUARTER_CM2, 0.10, 0.816, 0.819, 0.824, 0.821, 0.818),
    (QUARTER_CM2, 0.20, 0.666, 0.675, 0.690, 0.683, 0.671),
]


@pytest.mark.parametrize("area, d0, poisson, murphy, nb2, nb3, nb10", TABLE)
def test_yield_models_reproduce_the_derived_table(area, d0, poisson, murphy, nb2, nb3, nb10):
    m = area * d0
    assert a.poisson_yield(m) == pytest.approx(poisson, abs=6e-4)
    assert a.murphy_yield(m) == pytest.approx(murphy, abs=6e-4)
    for alpha, value in ((2.0, nb2), (3.0, nb3), (10.0, nb10)):
        if value is not None:
            assert a.negative_binomial_yield(m, alpha) == pytest.approx(value, abs=6e-4)


def test_yield_model_identities():
    m = 0.8
    assert a.seeds_yield(m) == pytest.approx(a.negative_binomial_yield(m, 1.0), rel=1e-15)  # Seeds = NB alpha 1
    assert a.negative_binomial_yield(m, math.inf) == a.poisson_yield(m)
    assert a.negative_binomial_yield(m, 1e9) == pytest.approx(a.poisson_yield(m), rel=1e-8)
    assert a.moore_yield(m) == pytest.approx(math.exp(-math.sqrt(0.8)), rel=1e-15)
    assert a.murphy_yield(0.0) == 1.0 and a.murphy_yield(1e-12) == pytest.approx(1.0)
    # Murphy equals the Poisson yield averaged over a triangular density on [0, 2 D0]
    tri = integrate.quad(lambda x: (x if x < 1 else 2 - x) * math.exp(-m * x), 0, 2, points=[1])[0]
    assert a.murphy_yield(m) == pytest.approx(tri, rel=1e-10)
    ys = a.closed_form_yields(m, 3.0)
    assert tuple(ys) == a.YIELD_MODELS
    # ordering for a large die: Poisson < NB(3) < Seeds (more clustering, higher yield)
    assert ys["poisson"] < ys["negative_binomial"] < ys["seeds"]


@pytest.mark.parametrize(
    "area, d0, units, required, expected",
    [
        (GH100_CM2, 0.10, 144, 132, 0.853),  # docs/sources.md#fab-harvesting
        (GH100_CM2, 0.20, 144, 132, 0.734),
        (GH100_CM2, 0.05, 144, 132, 0.923),
        (QUARTER_CM2, 0.10, 36, 33, 0.960),
    ],
)
def test_harvest_integral_reproduces_the_note(area, d0, units, required, expected):
    assert a.harvest_yield(area, d0, 3.0, units, required, 0.8) == pytest.approx(expected, abs=5e-4)


def test_harvest_integral_limits_and_an_independent_quadrature():
    # no redundancy: the negative binomial, whatever f
    for f in (0.0, 0.5, 0.8, 1.0):
        assert a.harvest_yield(GH100_CM2, 0.1, 3.0, 144, 144, f) == pytest.approx(a.negative_binomial_yield(0.814, 3.0), rel=1e-9)
    # Poisson (alpha = inf): the conditional yield itself
    q = math.exp(-0.814 * 0.8 / 144)
    direct = math.exp(-0.814 * 0.2) * stats.binom.sf(131, 144, q)
    assert a.harvest_yield(GH100_CM2, 0.1, math.inf, 144, 132, 0.8) == pytest.approx(direct, rel=1e-12)
    # an independent integral: over the gamma quantiles (u in (0, 1)), alpha < 1 included
    for alpha in (0.5, 3.0, 20.0):
        law = stats.gamma(alpha, scale=0.1 / alpha)

        def cond(u):
            lam = law.ppf(u)
            return math.exp(-lam * GH100_CM2 * 0.2) * stats.binom.sf(131, 144, math.exp(-lam * GH100_CM2 * 0.8 / 144))

        ref = integrate.quad(cond, 0, 1, limit=400, epsabs=1e-11)[0]
        assert a.harvest_yield(GH100_CM2, 0.1, alpha, 144, 132, 0.8) == pytest.approx(ref, abs=1e-7)
    # weights: all ones = no weights; a mean over dies otherwise
    assert a.harvest_yield(2.0, 0.1, 3.0, 36, 33, 0.8, np.ones(7)) == pytest.approx(a.harvest_yield(2.0, 0.1, 3.0, 36, 33, 0.8))
    two = a.harvest_yield(2.0, 0.1, 3.0, 36, 36, 0.8, np.array([0.5, 1.5]))
    assert two == pytest.approx(0.5 * (a.negative_binomial_yield(0.1, 3.0) + a.negative_binomial_yield(0.3, 3.0)), rel=1e-9)
    assert a.harvest_yield(2.0, 0.0, 3.0, 36, 33, 0.8) == 1.0


@pytest.mark.parametrize(
    "edge, w, h, scribe, expected",
    [  # docs/sources.md#fab-dies-per-wafer, formula column
        (3, 25.9, 31.4, 0.0, 60.6), (3, 25.9, 31.4, 0.1, 60.1), (5, 25.9, 31.4, 0.2, 57.7),
        (3, 12.95, 15.7, 0.0, 288.1), (3, 12.95, 15.7, 0.1, 283.8), (5, 12.95, 15.7, 0.2, 271.4),
    ],
)
def test_dies_per_wafer_formula(edge, w, h, scribe, expected):
    assert a.dies_per_wafer_formula(300, edge, w, h, scribe) == pytest.approx(expected, abs=0.06)


def test_brute_force_grid_count_small_case():
    # 10 x 10 mm dies on a disc of radius 15: three dies in a row or a column span 30 mm,
    # more than the diameter, so at most 2 x 2; the 2 x 2 block centred on the origin
    # fits (farthest corner 14.14 mm).
    assert a.grid_count_brute(15.0, 10.0, 10.0, 0.0, steps=64) == 4
    assert a.grid_count_brute(7.08, 10.0, 10.0, 0.0, steps=256) == 1  # half-diagonal 7.07
    assert a.grid_count_brute(7.0, 10.0, 10.0, 0.0, steps=256) == 0


def test_cost_per_good_package_formula():
    # (17000/57 + 5*280/1.0 + 750 + 900) / 0.96 + 0
    expected = (17000 / 57 + 1400 + 750 + 900) / 0.96
    got = a.cost_per_good_package(17000, 57, 5, 280, 1.0, 750, 900, 0.96, 0)
    assert got == pytest.approx(expected, rel=1e-15)
    # stack yield raises the price of a good stack; optics are added once per good package
    assert a.cost_per_good_package(17000, 57, 5, 280, 0.5, 750, 900, 0.96, 200) == pytest.approx(
        (17000 / 57 + 2800 + 750 + 900) / 0.96 + 200)
    arr = a.cost_per_good_package(np.array([17000.0, 20000.0]), np.array([57, 50]), 1, 280, 1.0, 190, 250, 0.986, 200)
    assert arr.shape == (2,) and arr[1] > arr[0]
