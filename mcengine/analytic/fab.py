"""Closed forms of the fab stage: die-yield models, harvesting, dies per wafer, cost.

The twins that tests and ``mcengine validate`` compare the Monte Carlo with. With
``m = A * D0`` (die area in cm² times mean defect density in defects/cm²), each formula
is named explicitly because the labels "Seeds" and "Moore" are used for different
formulas by different sources (``docs/sources.md#fab-yield-models``).

Sources: docs/sources.md#fab-dies-per-wafer, docs/sources.md#fab-yield-models, docs/sources.md#fab-h100-cost.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import scipy  # scipy loads scipy.stats and scipy.integrate on first use: a first `mcengine run` imports neither

#: Names of the whole-die yield formulas reported by ``mcengine yield`` (docs/interface.md).
YIELD_MODELS = ("poisson", "murphy", "negative_binomial", "seeds", "moore")

#: Expected defects per die below which clustering cannot move the yield (see
#: :func:`harvest_yield`): the Poisson yield at the mean density is exact to 1e-24.
NEGLIGIBLE_DEFECTS_PER_DIE = 1e-12


def poisson_yield(m: float) -> float:
    """Poisson yield ``exp(-m)`` (uniform defects, no clustering)."""
    return math.exp(-m)


def murphy_yield(m: float) -> float:
    """Murphy's yield ``((1 - exp(-m)) / m)^2`` (triangular density distribution);
    1 at ``m = 0``."""
    if m == 0.0:
        return 1.0
    return (-math.expm1(-m) / m) ** 2


def negative_binomial_yield(m: float, clustering: float) -> float:
    """Negative-binomial (Stapper) yield ``(1 + m / alpha)^(-alpha)``.

    The yield of a Poisson count whose mean is gamma-distributed with shape ``alpha``
    and mean ``m``; ``alpha = inf`` is the Poisson yield.
    """
    if math.isinf(clustering):
        return poisson_yield(m)
    return math.exp(-clustering * math.log1p(m / clustering))


def seeds_yield(m: float) -> float:
    """Seeds' yield ``1 / (1 + m)`` as used by SemiAnalysis-style calculators (the
    negative binomial at ``alpha = 1``)."""
    return 1.0 / (1.0 + m)


def moore_yield(m: float) -> float:
    """Moore's yield ``exp(-sqrt(m))`` (called "Seeds" by some sources)."""
    return math.exp(-math.sqrt(m))


def closed_form_yields(m: float, clustering: float) -> dict[str, float]:
    """The five whole-die yields of :data:`YIELD_MODELS` at ``m = A * D0``."""
    return {
        "poisson": poisson_yield(m),
        "murphy": murphy_yield(m),
        "negative_binomial": negative_binomial_yield(m, clustering),
        "seeds": seeds_yield(m),
        "moore": moore_yield(m),
    }


def _conditional_yield(lam, die_area_cm2, units, required, unit_fraction, weights):
    """Die yield at a known density ``lam``, averaged over dies of relative density
    ``weights``: ``exp(-lam A w (1 - f)) * P[Binomial(U, exp(-lam A w f / U)) >= K]``."""
    m = lam * die_area_cm2 * weights
    clean_unit = np.exp(-m * unit_fraction / units)
    tail = scipy.stats.binom.sf(required - 1, units, clean_unit)
    return float(np.mean(np.exp(-m * (1.0 - unit_fraction)) * tail))


def harvest_yield(die_area_cm2: float, defect_density_per_cm2: float, clustering: float, units: int,
                  required: int, unit_area_fraction: float, weights: np.ndarray | None = None) -> float:
    """Die yield with harvesting under gamma-mixed Poisson defects.

    ``Y = ∫ Gamma(lam; alpha, D0/alpha) * exp(-lam A (1 - f))
    * P[Binomial(U, exp(-lam A f / U)) >= K] dlam``: given the density, the remainder is
    clean with probability ``exp(-lam A (1 - f))`` and each of the ``U`` units
    independently with ``exp(-lam A f / U)`` (Poisson splitting); the die needs
    ``K = required`` clean units. Integrated with ``scipy.integrate.quad`` over the
    gamma density (``alpha = inf``: no integral). ``K = U`` gives the negative-binomial
    yield.

    Parameters
    ----------
    die_area_cm2, defect_density_per_cm2, clustering : float
        ``A``, ``D0``, ``alpha``.
    units, required : int
        ``U`` and ``K``.
    unit_area_fraction : float
        ``f``.
    weights : float64[n_dies], optional
        Relative defect density of each die (radial profile); the result is then the
        mean die yield over those dies. Default: one die of weight 1.

    Returns
    -------
    float
    """
    w = np.ones(1) if weights is None else np.asarray(weights, dtype=float)

    def conditional(lam):
        return _conditional_yield(lam, die_area_cm2, units, required, unit_area_fraction, w)

    if defect_density_per_cm2 == 0.0:
        return 1.0
    if math.isinf(clustering) or defect_density_per_cm2 * die_area_cm2 < NEGLIGIBLE_DEFECTS_PER_DIE:
        # the gamma mixture differs from the Poisson yield at its mean by f''(D0) Var / 2,
        # (D0 A)^2 / alpha relative: below 1e-24 here (and a denormal D0 breaks the gamma law)
        return conditional(defect_density_per_cm2)
    law = scipy.stats.gamma(clustering, scale=defect_density_per_cm2 / clustering)
    high = law.isf(1e-15)
    with warnings.catch_warnings():
        warnings.simplefilter("error", scipy.integrate.IntegrationWarning)
        try:
            value, _err = scipy.integrate.quad(lambda lam: law.pdf(lam) * conditional(lam), 0.0, high,
                                               points=[defect_density_per_cm2], limit=200, epsabs=1e-12, epsrel=1e-10)
            return value
        except scipy.integrate.IntegrationWarning:
            pass
        # Strong clustering (small alpha) piles the density's mass at 0 with a thin tail:
        # integrate over the quantile u = F(lam) instead, a bounded integrand on (0, 1).
        try:
            value, _err = scipy.integrate.quad(lambda u: conditional(law.ppf(u)), 0.0, 1.0, limit=500, epsabs=1e-10)
            return value
        except scipy.integrate.IntegrationWarning:
            return math.nan  # callers report a closed form they could not evaluate as out of range


def dies_per_wafer_formula(wafer_diameter_mm: float, edge_exclusion_mm: float, die_width_mm: float,
                           die_height_mm: float, scribe_mm: float) -> float:
    """The classic approximate dies-per-wafer count, for reference only.

    ``DPW = pi (d/2)^2 / S - pi d / sqrt(2 S)`` with the usable diameter
    ``d = D - 2 E`` and the die pitch area ``S = (W + s)(H + s)`` (Hennessy & Patterson;
    docs/sources.md#fab-dies-per-wafer). It undercounts large dies against the exact grid count.
    """
    d = wafer_diameter_mm - 2.0 * edge_exclusion_mm
    s = (die_width_mm + scribe_mm) * (die_height_mm + scribe_mm)
    return math.pi * (d / 2.0) ** 2 / s - math.pi * d / math.sqrt(2.0 * s)


def grid_count_brute(radius_mm: float, die_width_mm: float, die_height_mm: float, scribe_mm: float,
                     steps: int = 96) -> int:
    """Independent twin of the exact dies-per-wafer search, by brute force.

    For every grid offset of a ``steps x steps`` scan of one pitch cell, counts the dies
    whose farthest corner lies strictly inside the usable circle: the farthest corner of
    ``[x, x + W] x [y, y + H]`` is at ``max(x^2, (x+W)^2) + max(y^2, (y+H)^2)`` squared
    distance. Returns the best count; a scan can only miss a narrow optimum, so it is a
    lower bound of the exact maximum (tests allow one die).
    """
    w, h = die_width_mm, die_height_mm
    px, py = w + scribe_mm, h + scribe_mm
    i = np.arange(-math.ceil(radius_mm / px) - 1, math.ceil(radius_mm / px) + 2)
    j = np.arange(-math.ceil(radius_mm / py) - 1, math.ceil(radius_mm / py) + 2)
    offsets = np.arange(steps) / steps
    y = offsets[:, None] * py + j[None, :] * py
    y_far = np.maximum(y**2, (y + h) ** 2)  # (steps, n_rows)
    r2 = radius_mm**2
    best = 0
    for ox in offsets * px:
        x = ox + i * px
        x_far = np.sort(np.maximum(x**2, (x + w) ** 2))
        per_row = np.searchsorted(x_far, r2 - y_far, side="left")  # columns with x_far < r2 - y_far
        best = max(best, int(per_row.sum(axis=1).max()))
    return best


def cost_per_good_package(wafer_cost_usd, good_dies_per_wafer, hbm_stacks, hbm_stack_cost_usd,
                          hbm_stack_yield, package_cost_usd, test_cost_usd, assembly_yield,
                          optics_cost_usd):
    """Expected cost of one good GPU package (USD); works on scalars or arrays.

    ``cost = (wafer_cost / good_dies_per_wafer + hbm_stacks * stack_cost / stack_yield
    + package + test) / assembly_yield + optics``: every assembly attempt consumes one
    good die, its known-good stacks (bought at ``stack_cost / stack_yield`` each after
    incoming test), the package and the test; a failed assembly scraps all of them, so
    attempt costs are divided by the assembly yield. Optics are attached to good
    packages only (Chiplet Actuary's wasted-KGD structure, docs/sources.md#fab-h100-cost).
    """
    attempt = (wafer_cost_usd / good_dies_per_wafer + hbm_stacks * hbm_stack_cost_usd / hbm_stack_yield
               + package_cost_usd + test_cost_usd)
    return attempt / assembly_yield + optics_cost_usd


def cost_parts_per_good_package(wafer_cost_usd, good_dies_per_wafer, hbm_stacks, hbm_stack_cost_usd,
                                hbm_stack_yield, package_cost_usd, test_cost_usd, assembly_yield,
                                optics_cost_usd) -> dict:
    """The terms of :func:`cost_per_good_package` by part (USD per good package):
    ``die = wafer_cost / good_dies_per_wafer / assembly_yield``, ``hbm = hbm_stacks *
    stack_cost / stack_yield / assembly_yield``, ``packaging = package / assembly_yield``,
    ``test = test / assembly_yield``, ``optics``; they add up to the package cost."""
    return {
        "die": wafer_cost_usd / good_dies_per_wafer / assembly_yield,
        "hbm": hbm_stacks * hbm_stack_cost_usd / hbm_stack_yield / assembly_yield,
        "packaging": package_cost_usd / assembly_yield,
        "test": test_cost_usd / assembly_yield,
        "optics": optics_cost_usd,
    }
