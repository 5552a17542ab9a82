"""Fab kernels: wafer geometry, the occupancy table, the per-die and spatial defect
kernels against closed forms, reproducibility across threads and chunks."""

from __future__ import annotations

import math
from fractions import Fraction
from math import comb

import numpy as np
import pytest

from mcengine import rng
from mcengine.analytic import fab as analytic
from mcengine.errors import InputError
from mcengine.kernels import fab as k
from mcengine.kernels.geometry import count_dies, die_at
from mcengine.stages.fab import die_yields
from mcengine.stages.fab.geometry import wafer_map

from tests.conftest import with_threads

H100 = (25.9, 31.4)
QUARTER = (12.95, 15.7)


# --------------------------------------------------------------------------- geometry
@pytest.mark.parametrize(
    "die, edge, scribe, expected",
    [
        # docs/sources.md#fab-dies-per-wafer (exact grid search): 68 / 66 / 64 and 298 / 294 / 283.
        # Our search finds 67 and 295 where the table has 66 and 294: configurations with
        # a narrow offset window (a 96- or 200-step brute-force scan misses the 67th).
        (H100, 3, 0.0, 68), (H100, 3, 0.1, 67), (H100, 5, 0.2, 64),
        (QUARTER, 3, 0.0, 298), (QUARTER, 3, 0.1, 295), (QUARTER, 5, 0.2, 283),
    ],
)
def test_dies_per_wafer_reference_counts(die, edge, scribe, expected):
    wm = wafer_map(300, edge, *die, scribe)
    assert wm.dies == expected
    note = {(H100, 3, 0.1): 66, (QUARTER, 3, 0.1): 294}.get((die, edge, scribe), expected)
    assert abs(wm.dies - note) <= 1  # the published table, ±1


@pytest.mark.parametrize(
    "diameter, edge, w, h, scribe",
    [
        (300, 3, 25.9, 31.4, 0.1), (300, 5, 12.95, 15.7, 0.2), (300, 3, 7.07, 7.07, 0.1),
        (300, 2, 29.15, 29.15, 0.08), (200, 3, 10.0, 14.0, 0.1), (300, 3, 3.0, 2.0, 0.05),
        (150, 4, 20.0, 20.0, 0.2), (300, 0, 26.0, 33.0, 0.0),
    ],
)
def test_exact_count_matches_independent_brute_force(diameter, edge, w, h, scribe):
    wm = wafer_map(diameter, edge, w, h, scribe)
    brute = analytic.grid_count_brute(diameter / 2 - edge, w, h, scribe, steps=128)
    assert brute <= wm.dies <= brute + 1
    # every listed die is whole (inside the disc, with clearance) and on the grid
    assert wm.clearance_mm() > 0
    i = (wm.corners[:, 0] - wm.x0_mm) / wm.pitch_x_mm
    j = (wm.corners[:, 1] - wm.y0_mm) / wm.pitch_y_mm
    assert np.allclose(i, np.round(i)) and np.allclose(j, np.round(j))
    assert len({(a, b) for a, b in zip(np.round(i), np.round(j))}) == wm.dies
    assert count_dies(wm.radius_mm, w, h, wm.pitch_x_mm, wm.pitch_y_mm, wm.x0_mm, wm.y0_mm) == wm.dies


def test_die_too_large_is_a_clear_input_error():
    with pytest.raises(InputError) as err:
        wafer_map(300, 3, 200.0, 220.0, 0.1)  # half-diagonal 148.7 mm > 147 mm
    assert err.value.problems[0].key == "fab.die_width_mm"
    assert "no whole die fits" in str(err.value)
    assert wafer_map(300, 3, 207.0, 207.0, 0.0).dies == 1  # half-diagonal 146.4 mm: exactly one fits


@pytest.mark.parametrize("args", [(300, 150, 10, 10, 0.1), (300, 3, 0, 10, 0.1), (300, 3, 10, 10, -0.1), (-1, 3, 10, 10, 0.1)])
def test_bad_geometry_is_an_input_error(args):
    with pytest.raises(InputError):
        wafer_map(*args)


def test_point_to_die_mapping():
    wm = wafer_map(300, 3, *H100, 0.1)
    args = (wm.die_w_mm, wm.die_h_mm, wm.pitch_x_mm, wm.pitch_y_mm, wm.x0_mm, wm.y0_mm, wm.j_first, wm.rows)
    for d, (x, y) in enumerate(wm.centres):
        assert die_at(x, y, *args) == d
    x, y = wm.corners[0]
    assert die_at(x + wm.die_w_mm + 0.05, y + 1.0, *args) == -1  # vertical street
    assert die_at(x + 1.0, y + wm.die_h_mm + 0.05, *args) == -1  # horizontal street
    assert die_at(0.0, wm.radius_mm - 0.01, *args) == -1  # edge ring: partial dies only
    assert die_at(500.0, 0.0, *args) == -1


def test_mean_r2_fraction_is_the_area_average():
    wm = wafer_map(300, 3, *QUARTER, 0.1)
    u = (np.arange(64) + 0.5) / 64  # midpoint rule, exact to ~1e-4 relative here
    for d in (0, wm.dies // 2, wm.dies - 1):
        x = wm.corners[d, 0] + u * wm.die_w_mm
        y = wm.corners[d, 1] + u * wm.die_h_mm
        mean = ((x[:, None] ** 2 + y[None, :] ** 2) / wm.radius_mm**2).mean()
        assert wm.r2_fraction[d] == pytest.approx(mean, rel=1e-4)
    assert np.allclose(wm.weights(3.0), (1 + 2 * wm.r2_fraction) / 2)
    assert np.all(wm.weights(1.0) == 1.0)
    # small dies tile the disc: their mean relative density is the disc's, 1
    fine = wafer_map(300, 3, 1.0, 1.0, 0.0)
    assert fine.weights(3.0).mean() == pytest.approx(1.0, abs=0.01)


# --------------------------------------------------------------------------- occupancy table
def _occupancy_exact(units, spares, n):
    """P(at most `spares` distinct of `units` bins after n balls), by inclusion-exclusion."""
    total = Fraction(0)
    for j in range(0, min(spares, n) + 1):
        surj = sum((-1) ** i * comb(j, i) * (j - i) ** n for i in range(j + 1))
        total += Fraction(comb(units, j) * surj, units**n)
    return total


@pytest.mark.parametrize("units, spares", [(6, 2), (36, 3), (144, 12), (5, 0), (3, 3)])
def test_harvest_table_against_inclusion_exclusion(units, spares):
    table = k.harvest_table(units, spares, 24)
    for n in range(25):
        assert table[n] == pytest.approx(float(_occupancy_exact(units, spares, n)), rel=1e-12, abs=1e-300)
    assert np.all(table[: spares + 1] == 1.0)


def test_place_defects_probability():
    # 3 defects, all in units (f = 1), 4 units, 1 spare: good iff all 3 hit one unit: 4/64.
    st = rng.new_stream(np.uint64(11), rng.STAGE_FAB, 99, 0)
    n = 40_000
    good = np.array([k.place_defects(st, 3, 4, 1, 0.0) for _ in range(n)], dtype=float)
    p = 4 / 64
    assert abs(good.mean() - p) <= 4 * math.sqrt(p * (1 - p) / n)
    # remainder 30%, 2 defects, plenty of spares: good iff both in units: 0.49
    good = np.array([k.place_defects(st, 2, 100, 50, 0.3) for _ in range(n)], dtype=float)
    assert abs(good.mean() - 0.49) <= 4 * math.sqrt(0.49 * 0.51 / n)


def test_disc_point_radial_profile():
    # s = (r/R)^2 has density (1 + (rho - 1) s) / c: mean (1/2 + (rho - 1)/3) / ((1 + rho)/2)
    st = rng.new_stream(np.uint64(5), rng.STAGE_FAB, 98, 0)
    for rho in (1.0, 3.0, 0.25):
        pts = np.array([k.disc_point(st, 147.0, rho) for _ in range(20_000)])
        s = (pts**2).sum(axis=1) / 147.0**2
        expected = (0.5 + (rho - 1) / 3) / ((1 + rho) / 2)
        assert abs(s.mean() - expected) <= 4 * s.std(ddof=1) / math.sqrt(s.size)
        assert s.max() < 1.0
        angle = np.arctan2(pts[:, 1], pts[:, 0])
        assert abs(angle.mean()) <= 4 * angle.std() / math.sqrt(angle.size)


# --------------------------------------------------------------------------- defect kernel vs closed forms
def _within_4_sem(sample, expected):
    sem = sample.std(ddof=1) / math.sqrt(sample.size)
    assert abs(sample.mean() - expected) <= 4 * sem + 1e-12, (sample.mean(), expected, sem)


DIES = {"50mm2": (7.07, 7.07), "203mm2": QUARTER, "400mm2": (20.0, 20.0), "814mm2": H100, "850mm2": (29.15, 29.15)}


@pytest.mark.parametrize("die", list(DIES))
@pytest.mark.parametrize("clustering", [0.5, 1.0, 3.0, 20.0, math.inf])
@pytest.mark.parametrize("harvest", [True, False])
def test_die_yield_matches_closed_form(die, clustering, harvest):
    wm = wafer_map(300, 3, *DIES[die], 0.1)
    units, required = (144, 132) if harvest else (144, 144)
    d0 = 0.1
    y = die_yields(wm, d0, clustering, units, required, 0.8, wafers=3000, seed=17)
    m = wm.die_area_cm2 * d0
    expected = analytic.harvest_yield(wm.die_area_cm2, d0, clustering, units, required, 0.8)
    if not harvest:
        assert expected == pytest.approx(analytic.negative_binomial_yield(m, clustering), rel=1e-9)
    _within_4_sem(y, expected)


@pytest.mark.parametrize(
    "d0, clustering, units, required, fraction",
    [
        (0.01, 3.0, 36, 33, 0.8),  # skip-ahead (die mean 0.08 <= 0.1)
        (0.6, 2.0, 144, 100, 0.95),  # counts past the eight branch-free bins
        (1.5, math.inf, 144, 100, 0.98),  # die mean >= 10: fresh Poisson draws
        (36.0, math.inf, 400, 185, 1.0),  # ~300 defects per die: explicit placement
        (0.3, 1.0, 36, 36, 0.8),  # no harvesting, per-die path
        (0.1, 3.0, 144, 132, 0.0),  # no units: every defect is fatal
        (1.0, 3.0, 144, 132, 1.0),  # no remainder (8 defects per die on average)
    ],
)
def test_die_yield_edge_regimes(d0, clustering, units, required, fraction):
    wm = wafer_map(300, 3, *H100, 0.1)
    wafers = 3000 if d0 < 10 else 300  # explicit placement of ~300 defects per die is slow
    y = die_yields(wm, d0, clustering, units, required, fraction, wafers=wafers, seed=23)
    _within_4_sem(y, analytic.harvest_yield(wm.die_area_cm2, d0, clustering, units, required, fraction))


@pytest.mark.parametrize("rho", [0.3, 3.0])
@pytest.mark.parametrize("harvest", [True, False])
def test_radial_profile_matches_per_die_closed_form(rho, harvest):
    wm = wafer_map(300, 3, *H100, 0.1)
    required = 132 if harvest else 144
    y = die_yields(wm, 0.1, 3.0, 144, required, 0.8, edge_ratio=rho, wafers=3000, seed=29)
    _within_4_sem(y, analytic.harvest_yield(wm.die_area_cm2, 0.1, 3.0, 144, required, 0.8, wm.weights(rho)))


@pytest.mark.parametrize(
    "die, clustering, rho, required",
    [(H100, 3.0, 1.0, 132), (H100, math.inf, 1.0, 144), (QUARTER, 0.5, 1.0, 33), (H100, 3.0, 2.5, 132), (QUARTER, 3.0, 0.4, 36)],
)
def test_spatial_twin_matches_closed_form(die, clustering, rho, required):
    wm = wafer_map(300, 3, *die, 0.1)
    units = 144 if die == H100 else 36
    y = die_yields(wm, 0.1, clustering, units, required, 0.8, edge_ratio=rho, wafers=2000, seed=31, spatial=True)
    _within_4_sem(y, analytic.harvest_yield(wm.die_area_cm2, 0.1, clustering, units, required, 0.8, wm.weights(rho)))


@pytest.mark.parametrize("required, most", [(132, 0.15), (144, 0.12)])
def test_recycling_draws_far_fewer_uniforms_than_dies(required, most):
    # GH100 die at D0 = 0.1 (mean 0.81 defects per die > 0.1): recycled uniforms, about
    # 1.2-1.7 bits per die of the 33 spent before a fresh draw
    wm = wafer_map(300, 3, *H100, 0.1)
    table = k.harvest_table(144, 144 - required, k.TABLE_MAX_DEFECTS)
    n = 2000
    _good, _h, uniforms = k.simulate_wafers(np.uint64(2), 0, np.full(n, 0.1), np.full(n, math.inf), np.ones(n),
                                            np.full(n, 0.8), wm.die_area_cm2, wm.r2_fraction, 144, 144 - required, table)
    assert uniforms.sum() / (n * wm.dies) < most


def test_zero_density_gives_every_die():
    wm = wafer_map(300, 3, *QUARTER, 0.1)
    assert np.all(die_yields(wm, 0.0, 3.0, 36, 33, 0.8, wafers=10) == 1.0)


# --------------------------------------------------------------------------- reproducibility
def _wafers(start, n, threads, seed=3):
    wm = wafer_map(300, 3, *H100, 0.1)
    table = k.harvest_table(144, 12, k.TABLE_MAX_DEFECTS)
    d0 = np.linspace(0.02, 0.4, 4000)[start:start + n]  # spans skip-ahead and per-die wafers
    return with_threads(threads, k.simulate_wafers, np.uint64(seed), start, d0, np.full(n, 2.0), np.ones(n), np.full(n, 0.8),
                        wm.die_area_cm2, wm.r2_fraction, 144, 12, table)


def test_wafers_identical_at_1_and_2_threads_and_across_chunks():
    one = _wafers(0, 4000, 1)
    two = _wafers(0, 4000, 2)
    halves = [np.concatenate(parts) for parts in zip(_wafers(0, 2000, 2), _wafers(2000, 2000, 1))]
    for a, b, c in zip(one, two, halves):
        assert np.array_equal(a, b) and np.array_equal(a, c)
    assert not np.array_equal(one[0], _wafers(0, 4000, 1, seed=4)[0])


def _spatial(start, n, threads):
    wm = wafer_map(300, 3, *QUARTER, 0.1)
    d0 = np.linspace(0.05, 0.6, 400)[start:start + n]
    rho = np.where(np.arange(start, start + n) % 2 == 0, 1.0, 2.5)
    return with_threads(threads, k.simulate_wafers_spatial, np.uint64(5), start, d0, np.full(n, 3.0), rho, np.full(n, 0.8), wm.radius_mm,
                        wm.die_w_mm, wm.die_h_mm, wm.pitch_x_mm, wm.pitch_y_mm, wm.x0_mm, wm.y0_mm, wm.j_first, wm.rows, wm.dies, 36, 3)


def test_spatial_twin_identical_at_1_and_2_threads_and_across_chunks():
    one = _spatial(0, 400, 1)
    halves = [np.concatenate(parts) for parts in zip(_spatial(0, 150, 2), _spatial(150, 250, 1))]
    for a, b, c in zip(one, _spatial(0, 400, 2), halves):
        assert np.array_equal(a, b) and np.array_equal(a, c)
    good, harvested = one
    assert np.all(harvested <= good) and harvested.sum() > 0 and np.any(good < wafer_map(300, 3, *QUARTER, 0.1).dies)


def _runs(start, n, threads, dies_per_package=1):
    wm = wafer_map(300, 3, *QUARTER, 0.1)
    table = k.harvest_table(36, 3, k.TABLE_MAX_DEFECTS)
    return with_threads(threads, k.simulate_runs, np.uint64(9), start, np.full(n, 0.1), np.full(n, 3.0), np.ones(n), np.full(n, 0.8),
                        np.full(n, 0.98), wm.die_area_cm2, wm.r2_fraction, 36, 3, table, 500, 1000, dies_per_package)


@pytest.mark.parametrize("dies", [1, 2])
def test_runs_identical_at_1_and_2_threads_and_across_chunks(dies):
    one = _runs(0, 200, 1, dies)
    halves = [np.concatenate(parts) for parts in zip(_runs(0, 100, 2, dies), _runs(100, 100, 2, dies))]
    for a, b, c in zip(one, _runs(0, 200, 2, dies), halves):
        assert np.array_equal(a, b) and np.array_equal(a, c)
    wafers, good, packages = one
    # every package takes `dies` good dies: at most floor(good / dies) assembled
    assert np.all(packages >= 500) and np.all(good // dies >= packages)
    assert np.all(good <= wafers * 295)


@pytest.mark.parametrize("mean, units, spares, fraction", [
    (0.2, 36, 3, 0.8), (0.01, 36, 3, 0.8), (2.5, 144, 12, 0.95), (9.0, 144, 44, 1.0), (0.8, 36, 0, 0.8), (0.5, 36, 3, 0.0)])
def test_die_good_probability_is_the_closed_form_at_a_known_density(mean, units, spares, fraction):
    table = k.harvest_table(units, spares, k.TABLE_MAX_DEFECTS)
    scratch = k.new_scratch(table)
    p = k.die_good_probability(mean, fraction, table, scratch[0], scratch[1])
    # a die of unit area at density `mean`
    assert p == pytest.approx(analytic._conditional_yield(mean, 1.0, units, units - spares, fraction, np.ones(1)),
                              rel=1e-13, abs=1e-15)


@pytest.mark.parametrize("rho", [1.0, 3.0])
def test_production_runs_yield_matches_closed_form_by_count_and_by_walk(rho):
    """Flat wafers draw their good dies as one binomial count, a radial profile walks the
    dies: both give the harvesting yield (Wald's identity: E[good dies of a run] = yield x
    dies x E[wafers], whatever the stopping rule; ratio of means, delta-method SEM)."""
    wm = wafer_map(300, 3, *QUARTER, 0.1)
    n = 400
    table = k.harvest_table(36, 3, k.TABLE_MAX_DEFECTS)
    wafers, good, _ = k.simulate_runs(np.uint64(31), 0, np.full(n, 0.3), np.full(n, 3.0), np.full(n, rho),
                                      np.full(n, 0.8), np.full(n, 0.98), wm.die_area_cm2, wm.r2_fraction, 36, 3, table,
                                      700, 1000)
    made = wafers * float(wm.dies)
    ratio = good.sum() / made.sum()
    sem = np.sqrt(((good - ratio * made) ** 2).sum() / (n * (n - 1))) / made.mean()
    expected = analytic.harvest_yield(wm.die_area_cm2, 0.3, 3.0, 36, 33, 0.8, None if rho == 1.0 else wm.weights(rho))
    assert abs(ratio - expected) <= 4 * sem, (ratio, expected, sem)
