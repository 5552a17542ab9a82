"""Claim 2, manufacturing cost: a Lite-GPU costs less to make per unit of compute.

Figure: the reduction in fab cost per H100-equivalent of compute,
``1 - (gpu_cost_lite / h100_equivalents_lite) / gpu_cost_h100``, paired trial by trial
(fab stage production runs: wafers, yield, HBM, packaging, test, assembly, optics). The
paper's argument scales every package part with the die fraction and keeps only the
yield gain (configs/paper/paper-lite-h100.toml); the shipped Lite-H100 pays for its HBM
stack, package, test and co-packaged optics (priced per GB/s of its links) per package.
The sweep moves the Lite's optics price per GB/s, the per-package part that decides it.
"""

from __future__ import annotations

import numpy as np

from ._common import SECONDARY, Settings, boundary, entry, fab_columns, interval, scenario, variant

PAPER_FIGURE = 0.32
PAPER = ("paper-h100", "paper-lite-h100")
SHIPPED = ("h100", "lite-h100")
SWEEP_KEY = "fab.optics_cost_per_gbps_usd"
SWEEP_VALUES = (0.0, 0.5, 1.0, 1.78, 2.5, 3.5)  # USD per GB/s; 1.78 is the shipped median


def reduction(pair, settings: Settings) -> dict[str, np.ndarray]:
    """Per-trial ``1 - cost per H100-equivalent of B / that of A``, and both costs."""
    a, b = (fab_columns(s, settings)["gpu_cost_usd"] for s in pair)
    per_a = a / pair[0].gpu.h100_equivalents.value
    per_b = b / pair[1].gpu.h100_equivalents.value
    return {"reduction": 1.0 - per_b / per_a, "cost_a": per_a, "cost_b": per_b}


def _side(pair, settings: Settings) -> dict:
    r = reduction(pair, settings)
    return {"scenarios": [s.name for s in pair], "figure": interval(r["reduction"]),
            "cost_per_h100_equivalent_usd": {pair[0].name: interval(r["cost_a"]), pair[1].name: interval(r["cost_b"])},
            "p_holds": float(np.mean(r["reduction"] >= PAPER_FIGURE))}


def compute(settings: Settings) -> dict:
    settings.note("claim 2: manufacturing cost")
    paper = tuple(scenario(r) for r in PAPER)
    shipped = tuple(scenario(r) for r in SHIPPED)
    p, s = _side(paper, settings), _side(shipped, settings)
    values = settings.grid(SWEEP_VALUES)
    figures = [reduction((shipped[0], variant(shipped[1], f"{shipped[1].name}.optics-{v:g}", [f"{SWEEP_KEY}={v!r}"])), settings)["reduction"]
               for v in values]
    b = boundary(f"B:{SWEEP_KEY}", values, figures, lambda f: f >= PAPER_FIGURE, lambda f: f > 0.0,
                 "shipped h100 vs lite-h100 with the Lite's co-packaged optics at each price (USD per GB/s of link bandwidth)")
    better = b["crossing_better"]
    holds = (f"never reaches 32 % over optics ${values[0]:g}-{values[-1]:g} per GB/s with per-package HBM, package and test; "
             + (f"Lite cheaper at all when optics <= ${better[0]:.2f} per GB/s" if better else "Lite never cheaper over this range"))
    return entry(
        number=2, key="cost", claim="Lower manufacturing cost per unit of compute",
        metric="1 - fab cost per H100-equivalent (Lite / H100)",
        paper_figure=PAPER_FIGURE, paper_figure_text="~32 % lower cost per unit compute", source=SECONDARY, confirmed=False,
        paper_assumptions=p, shipped=s, boundary_=b, holds_when=holds,
        model="fab stage production runs (cost per good package incl. HBM, package, test, assembly, optics), no markup",
    )
