"""`mcengine validate` checks of the fab stage: wafer geometry, the harvesting integral and
Monte Carlo die yields against their closed forms (:mod:`mcengine.analytic.fab`)."""

from __future__ import annotations

import math

import numpy as np

from ..analytic import fab as analytic
from ..stages.fab import die_yields
from ..stages.fab.geometry import wafer_map
from .check import Check, mc_check


def _mc(name: str, sample: np.ndarray, expected: float, detail: str) -> Check:
    return mc_check("fab", name, sample, expected, detail, "wafers")


def checks() -> list[Check]:
    """Geometry against docs/sources.md#fab-dies-per-wafer and a brute-force grid count; the harvesting
    integral against docs/sources.md#fab-harvesting; Monte Carlo die yields (per-die kernel and the spatial twin)
    against the closed forms, each within 4 SEM."""
    h100 = wafer_map(300, 3, 25.9, 31.4, 0.1)
    lite = wafer_map(300, 3, 12.95, 15.7, 0.1)
    big0 = wafer_map(300, 3, 25.9, 31.4, 0.0)
    checks = [
        Check("fab", "dies per wafer, 25.9x31.4 mm, 3 mm edge, no scribe", 68, big0.dies, 0,
              "exact grid; docs/sources.md#fab-dies-per-wafer"),
        Check("fab", "dies per wafer, 12.95x15.7 mm, 3 mm edge, 0.1 mm scribe", 294, lite.dies, 1,
              "exact grid; docs/sources.md#fab-dies-per-wafer reports 294 (±1 allowed)"),
        Check("fab", "exact grid vs brute-force offset scan, 25.9x31.4 mm", analytic.grid_count_brute(147, 25.9, 31.4, 0.1),
              h100.dies, 1, "brute force: 4-corner test on a 96x96 offset grid"),
        Check("fab", "harvest integral, GH100 132/144 at D0=0.1, alpha=3", 0.853,
              analytic.harvest_yield(8.14, 0.1, 3.0, 144, 132, 0.8), 0.0005, "docs/sources.md#fab-harvesting"),
    ]
    m = h100.die_area_cm2 * 0.1
    checks.append(_mc("die yield, Poisson (alpha=inf), no harvesting", die_yields(h100, 0.1, math.inf, 144, 144, 0.8),
                            analytic.poisson_yield(m), "per-die kernel vs exp(-m)"))
    checks.append(_mc("die yield, negative binomial alpha=3, no harvesting", die_yields(h100, 0.1, 3.0, 144, 144, 0.8),
                            analytic.negative_binomial_yield(m, 3.0), "per-die kernel vs (1+m/alpha)^-alpha"))
    checks.append(_mc("die yield, H100 harvesting 132/144, alpha=3", die_yields(h100, 0.1, 3.0, 144, 132, 0.8),
                            analytic.harvest_yield(h100.die_area_cm2, 0.1, 3.0, 144, 132, 0.8), "per-die kernel vs harvest integral"))
    checks.append(_mc("die yield, Lite harvesting 33/36, alpha=3", die_yields(lite, 0.1, 3.0, 36, 33, 0.8),
                            analytic.harvest_yield(lite.die_area_cm2, 0.1, 3.0, 36, 33, 0.8), "per-die kernel vs harvest integral"))
    checks.append(_mc("die yield, Lite harvesting 33/36, D0=0.04 (skip-ahead)", die_yields(lite, 0.04, math.inf, 36, 33, 0.8),
                            analytic.harvest_yield(lite.die_area_cm2, 0.04, math.inf, 36, 33, 0.8), "per-die kernel vs harvest integral"))
    checks.append(_mc("die yield, spatial twin, H100 harvesting, alpha=3",
                            die_yields(h100, 0.1, 3.0, 144, 132, 0.8, wafers=10_000, spatial=True),
                            analytic.harvest_yield(h100.die_area_cm2, 0.1, 3.0, 144, 132, 0.8), "defects placed on the disc"))
    checks.append(_mc("die yield, radial profile rho=3, harvesting", die_yields(h100, 0.1, 3.0, 144, 132, 0.8, edge_ratio=3.0),
                            analytic.harvest_yield(h100.die_area_cm2, 0.1, 3.0, 144, 132, 0.8, h100.weights(3.0)),
                            "per-die kernel vs harvest integral averaged over the dies' exact densities"))
    return checks
