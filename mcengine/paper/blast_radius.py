"""Claim 3, blast radius: a failure takes down a much smaller share of the cluster.

The paper's argument, in closed form (:func:`share_lost_per_failure`): a failed package
takes out the compute it carries, ``h100_equivalents / cluster H100-equivalents``, so a
Lite-GPU that is a fraction ``f`` of an H100 has a blast radius ``1/f`` times smaller (4x
for the quarter die; 8x would be an eighth of an H100). Under today's failure model
(``on_failure = "down"``: a missing GPU stops its whole instance) the share lost is the
instance's, ``instance_gpus x h100_equivalents / cluster``: the same for an 8-H100 and a
32-Lite instance of the same model. mcengine's shipped figure is what that does over a
lifetime: the capacity-time lost, ``1 - instance availability``, of the H100 cluster
over that of the Lite cluster (paired trials; > 1 means the Lite cluster loses less).
The sweep moves the Lite's spare-swap time (optical reconfiguration makes it short).
"""

from __future__ import annotations

import numpy as np

from ._common import SECONDARY, Settings, boundary, chain, entry, interval, scenario, variant
from .performance import SWEEP_MODEL, designs_run

PAPER_FIGURE = 8.0
SWEEP_KEY = "reliability.swap_hours"
SWEEP_VALUES = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)


def share_lost_per_failure(gpus_lost: int, h100_equivalents: float, cluster_h100_equivalents: float) -> float:
    """Share of the cluster's compute a failure takes out: ``gpus_lost x h100_equivalents / cluster``."""
    return gpus_lost * h100_equivalents / cluster_h100_equivalents


def _cluster_h100e(s) -> float:
    return s.active_gpus * s.gpu.h100_equivalents.value


def closed_forms(h100, lite) -> dict:
    """Blast-radius ratios H100 / Lite per failure: the paper's (the package alone) and ``down`` (the instance)."""
    package = share_lost_per_failure(1, h100.gpu.h100_equivalents.value, _cluster_h100e(h100)) / share_lost_per_failure(
        1, lite.gpu.h100_equivalents.value, _cluster_h100e(lite))
    instance = share_lost_per_failure(h100.cluster.instance_gpus, h100.gpu.h100_equivalents.value, _cluster_h100e(h100)) / share_lost_per_failure(
        lite.cluster.instance_gpus, lite.gpu.h100_equivalents.value, _cluster_h100e(lite))
    return {"package_only": package, "whole_instance": instance}


def lost_ratio(cols: dict, a: str, b: str) -> np.ndarray:
    """Paired ``(1 - availability_A) / (1 - availability_B)``: how many times less capacity-time B loses."""
    ua, ub = 1.0 - cols[a]["availability"], 1.0 - cols[b]["availability"]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ub > 0, ua / np.where(ub > 0, ub, 1.0), np.inf)


def compute(settings: Settings) -> dict:
    settings.note("claim 3: blast radius")
    h100, lite = scenario("h100"), scenario("lite-h100")
    forms = closed_forms(h100, lite)
    cols = designs_run(settings)
    a, b = f"h100.{SWEEP_MODEL}", f"lite-h100.{SWEEP_MODEL}"
    ratio = lost_ratio(cols, a, b)
    shipped = {
        "scenarios": ["h100", "lite-h100"],
        "figure": interval(ratio),
        "share_lost_per_failure_ratio_down": forms["whole_instance"],
        "interruptions_per_year": {n: interval(cols[f"{n}.{SWEEP_MODEL}"]["interruptions_per_year"]) for n in ("h100", "lite-h100")},
        "unavailability": {n: interval(1.0 - cols[f"{n}.{SWEEP_MODEL}"]["availability"]) for n in ("h100", "lite-h100")},
        "p_holds": float(np.mean(ratio >= PAPER_FIGURE)),
    }
    shipped["text"] = (f"{shipped['figure']['median']:.2f}x [{shipped['figure']['p05']:.2f}-{shipped['figure']['p95']:.2f}] capacity-time lost "
                       f"(H100/Lite); per failure {forms['whole_instance']:.2f}x under 'down'")
    paper = {"scenarios": ["h100", "lite-h100"], "figure": {"median": forms["package_only"], "p05": forms["package_only"], "p95": forms["package_only"]},
             "closed_form": forms["package_only"], "whole_instance_closed_form": forms["whole_instance"],
             "p_holds": float(forms["package_only"] >= PAPER_FIGURE)}
    values = settings.grid(SWEEP_VALUES)
    runs = [variant(lite, f"lite-h100.swap-{v:g}", [f"{SWEEP_KEY}={v!r}"]) for v in values]
    swept = chain([h100, *runs], settings)
    figures = [lost_ratio(swept, "h100", r.name) for r in runs]
    bnd = boundary(f"B:{SWEEP_KEY}", values, figures, lambda f: f >= PAPER_FIGURE, lambda f: f > 1.0,
                   "shipped h100 vs lite-h100, the Lite's spare-swap time (hours) at each value; figure = capacity-time lost, H100 / Lite")
    cross = bnd["crossing_better"]
    holds = (f"per failure: only if a failure takes out its package alone (reshard), 1/f = {forms['package_only']:g}x for a quarter die, "
             f"{forms['whole_instance']:g}x under 'down'; over a lifetime the Lite cluster loses less capacity when its swaps take <= "
             + (f"{cross[0]:.2g} h" if cross else "(no crossing in range)"))
    return entry(
        number=3, key="blast_radius", claim="A failure takes down a much smaller share of the cluster",
        metric="blast radius H100 / Lite (paper: share lost per failure; shipped: capacity-time lost per lifetime)",
        paper_figure=PAPER_FIGURE, paper_figure_text="~8x smaller blast radius", source=SECONDARY, confirmed=False,
        unit="ratio", paper_assumptions=paper, shipped=shipped, boundary_=bnd, holds_when=holds,
        model=("today's reliability model: on_failure = 'down' (a missing GPU stops its instance), figure from instance "
               "availability; when cluster.on_failure = 'reshard' and capacity_availability land, the integrator re-runs "
               "this claim with reshard as the paper's assumption and capacity availability as the shipped figure"),
    )
