"""Claim 1, yield: a single small die yields much better than a reticle-sized one.

Figure: the wafer-yield gain ``Y_lite / Y_h100 - 1``, with ``Y`` the share of a wafer's
dies that are sellable (``die_yield`` of the fab stage's production runs), paired trial
by trial. Under the paper's assumptions (whole dies, Poisson defects at a fixed
``D0``) it has the closed form :func:`closed_form_gain` (docs/model.md#paper-study).
The input that decides it is the defect density (with harvesting on both dies, the
shipped case, a large die loses far less); the sweep runs the shipped pair over it.
"""

from __future__ import annotations

import math

import numpy as np

from ._common import SECONDARY, Settings, boundary, entry, fab_columns, interval, scenario, variant

PAPER_FIGURE = 0.41
PAPER = ("paper-h100", "paper-lite-h100")
SHIPPED = ("h100", "lite-h100")
SWEEP_KEY = "fab.defect_density_per_cm2"
SWEEP_VALUES = (0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5)


def closed_form_gain(defect_density_per_cm2: float, big_die_area_cm2: float, small_die_area_cm2: float) -> float:
    """Poisson die yields ``exp(-D0 A)``: ``Y_small / Y_big - 1 = exp(D0 (A_big - A_small)) - 1``."""
    return math.exp(defect_density_per_cm2 * (big_die_area_cm2 - small_die_area_cm2)) - 1.0


def gain(pair, settings: Settings) -> dict[str, np.ndarray]:
    """Per-trial die-yield gain and good-silicon gain (H100-equivalents per wafer) of B over A."""
    a, b = (fab_columns(s, settings) for s in pair)
    silicon = (b["good_dies_per_wafer"] * pair[1].gpu.h100_equivalents.value) / (a["good_dies_per_wafer"] * pair[0].gpu.h100_equivalents.value)
    return {"die_yield": b["die_yield"] / a["die_yield"] - 1.0, "good_silicon": silicon - 1.0,
            "yield_a": a["die_yield"], "yield_b": b["die_yield"]}


def _side(pair, settings: Settings) -> dict:
    g = gain(pair, settings)
    return {"scenarios": [s.name for s in pair], "figure": interval(g["die_yield"]),
            "good_silicon_gain": interval(g["good_silicon"]),
            "die_yield": {pair[0].name: interval(g["yield_a"]), pair[1].name: interval(g["yield_b"])},
            "p_holds": float(np.mean(g["die_yield"] >= PAPER_FIGURE))}


def compute(settings: Settings) -> dict:
    settings.note("claim 1: yield")
    paper = tuple(scenario(r) for r in PAPER)
    shipped = tuple(scenario(r) for r in SHIPPED)
    p, s = _side(paper, settings), _side(shipped, settings)
    d0 = paper[0].fab.defect_density_per_cm2.median()
    from ..stages.fab import fab_model

    areas = [fab_model(x).wafer.die_area_cm2 for x in paper]
    p["closed_form"] = closed_form_gain(d0, *areas)
    values = settings.grid(SWEEP_VALUES)
    figures = [gain(tuple(variant(x, f"{x.name}.d0-{v:g}", [f"{SWEEP_KEY}={v!r}"]) for x in shipped), settings)["die_yield"] for v in values]
    b = boundary(SWEEP_KEY, values, figures, lambda f: f >= PAPER_FIGURE, lambda f: f > 0.0,
                 "shipped h100 vs lite-h100 (SM harvesting on both), D0 fixed at each value")
    paper_d0 = math.log1p(PAPER_FIGURE) / (areas[0] - areas[1])
    cross = b["crossing_holds"]
    holds = (f"D0 >= {cross[0]:.2g} /cm² with harvesting on both dies" if cross else
             f"never over D0 {values[0]:g}-{values[-1]:g} /cm² with harvesting on both dies") + f"; D0 >= {paper_d0:.3f} /cm² without harvesting (Poisson)"
    return entry(
        number=1, key="yield", claim="A single small die yields much better than a reticle-sized one",
        metric="wafer-yield gain Y_lite / Y_h100 - 1 (share of dies sellable)",
        paper_figure=PAPER_FIGURE, paper_figure_text="~41 % higher wafer yield", source=SECONDARY, confirmed=False,
        paper_assumptions=p, shipped=s, boundary_=b, holds_when=holds,
        model="fab stage production runs; paper: whole dies, Poisson, D0 = 0.1 /cm²; shipped: SM harvesting (132/144, 33/36), negative-binomial D0 ~ lognormal(0.1)",
        extra={"paper_d0_for_figure_per_cm2": paper_d0},
    )
