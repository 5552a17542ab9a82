"""Claim 3, blast radius: a failure takes down a much smaller share of the cluster.

The paper's argument, in closed form (:func:`share_lost_per_failure`): a failed package
takes out the compute it carries, ``h100_equivalents / cluster H100-equivalents``, so a
Lite-GPU that is a fraction ``f`` of an H100 has a blast radius ``1/f`` times smaller (4x
for the quarter die; 8x would be an eighth of an H100). That is the paper's assumption,
and its figure here.

mcengine has two failure models (docs/model.md#reshard). Under ``on_failure = "down"``
(shipped) a missing GPU stops its whole instance, so a failure loses the instance's
share, ``instance_gpus x h100_equivalents / cluster``: the same for an 8-H100 and a
32-Lite instance of the same model. Under ``"reshard"`` (the mechanism the paper's
argument needs) an instance that lost ``k`` GPUs serves, after ``reshard_hours``, on the
best layout that fits the rest: a failure loses ``(1 - table[1])`` of its instance
(:func:`per_failure_reshard`, ``table`` from the roofline layout search,
:func:`mcengine.pipeline.reshard_capacity`), which is ``1/n`` only when
``n - 1`` GPUs still carry a layout as fast per GPU as ``n`` do.

Over a lifetime the figure is the capacity-time lost, ``1 - capacity availability``, of
the H100 cluster over that of the Lite cluster (paired trials; > 1 means the Lite
cluster loses less): with ``reshard`` on both designs beside the paper's closed form,
with ``down`` as shipped. The sweep moves the Lite's spare-swap time (optical
reconfiguration makes it short), both designs on ``reshard``.

Under a demand (``shipped.under_load``, :mod:`mcengine.paper.load`): each design, as
shipped, buys the fleet the ``load-diurnal`` study's demand needs with failure headroom,
and the figure is the headroom H100 / Lite in H100-equivalents (paired trials): the
capacity each design buys for the instances its failures keep down.
"""

from __future__ import annotations

import numpy as np

from ..pipeline import reshard_capacity
from . import load as under_load
from ._common import SECONDARY, Settings, boundary, chain, entry, interval, paired_ratio, scenario, variant
from .performance import SWEEP_MODEL, designs_run

PAPER_FIGURE = 8.0
SWEEP_KEY = "reliability.swap_hours"
SWEEP_VALUES = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)
RESHARD = "cluster.on_failure='reshard'"


def share_lost_per_failure(gpus_lost: float, h100_equivalents: float, cluster_h100_equivalents: float) -> float:
    """Share of the cluster's compute a failure takes out: ``gpus_lost x h100_equivalents / cluster``."""
    return gpus_lost * h100_equivalents / cluster_h100_equivalents


def _cluster_h100e(s) -> float:
    return s.active_gpus * s.gpu.h100_equivalents.value


def per_failure_reshard(s, table: np.ndarray) -> float:
    """Share of the cluster one failure takes out under ``reshard``: the instance's
    GPUs' worth of compute times ``1 - table[1]``, the share of its throughput the best
    layout on ``n - 1`` GPUs gives up (``table``: :func:`~mcengine.pipeline.reshard_capacity`)."""
    return share_lost_per_failure(s.cluster.instance_gpus * (1.0 - float(table[1])), s.gpu.h100_equivalents.value, _cluster_h100e(s))


def closed_forms(h100, lite, tables: dict | None = None) -> dict:
    """Blast-radius ratios H100 / Lite per failure: the paper's (the package alone), ``down``
    (the instance) and, given the two designs' capacity ``tables``, ``reshard``."""
    package = share_lost_per_failure(1, h100.gpu.h100_equivalents.value, _cluster_h100e(h100)) / share_lost_per_failure(
        1, lite.gpu.h100_equivalents.value, _cluster_h100e(lite))
    instance = share_lost_per_failure(h100.cluster.instance_gpus, h100.gpu.h100_equivalents.value, _cluster_h100e(h100)) / share_lost_per_failure(
        lite.cluster.instance_gpus, lite.gpu.h100_equivalents.value, _cluster_h100e(lite))
    out = {"package_only": package, "whole_instance": instance}
    if tables is not None:
        out["reshard"] = per_failure_reshard(h100, tables["h100"]) / per_failure_reshard(lite, tables["lite"])
    return out


def lost_ratio(cols: dict, a: str, b: str) -> np.ndarray:
    """Paired ``(1 - capacity_availability_A) / (1 - capacity_availability_B)``: how many
    times less capacity-time B loses (capacity availability is the instance availability
    under ``down``)."""
    ua, ub = 1.0 - cols[a]["capacity_availability"], 1.0 - cols[b]["capacity_availability"]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ub > 0, ua / np.where(ub > 0, ub, 1.0), np.inf)


def _lifetime(cols: dict, names: dict[str, str]) -> dict:
    """The lifetime figure of one failure model: the paired ratio, interruptions and unavailability."""
    ratio = lost_ratio(cols, names["h100"], names["lite-h100"])
    return {
        "figure": interval(ratio),
        "interruptions_per_year": {d: interval(cols[n]["interruptions_per_year"]) for d, n in names.items()},
        "capacity_unavailability": {d: interval(1.0 - cols[n]["capacity_availability"]) for d, n in names.items()},
        "p_holds": float(np.mean(ratio >= PAPER_FIGURE)),
        "p_lite_loses_less": float(np.mean(ratio > 1.0)),
    }


def _lifetime_text(bnd: dict, reshard: dict) -> str:
    """Where the lifetime figure says the Lite cluster loses less, or why it never does in the sweep."""
    cross, values = bnd["crossing_better"], bnd["values"]
    if cross:
        return f"the Lite cluster loses less capacity when its swaps take <= {cross[0]:.2g} h"
    best = max(range(len(values)), key=lambda i: bnd["figure"][i]["median"])
    n = {d: v["median"] for d, v in reshard["interruptions_per_year"].items()}
    return (f"the Lite cluster loses more capacity at every swap time from {values[0]:g} to {values[-1]:g} h "
            f"(at best {bnd['figure'][best]['median']:.2f}x, at {values[best]:g} h): it is interrupted "
            f"{n['lite-h100']:.0f} times a year against {n['h100']:.0f}")


def headroom_under_load(settings: Settings) -> dict:
    """``shipped.under_load`` (module docstring): the fleets h100 and lite-h100 buy for
    the ``load-diurnal`` demand, their failure headroom and its ratio H100 / Lite in
    H100-equivalents, and the fleets' cost per served token."""
    overrides = under_load.demand_overrides()
    runs = {d: variant(scenario(d), f"{d}.load", overrides) for d in ("h100", "lite-h100")}
    cols = chain(list(runs.values()), settings)
    ratio = paired_ratio(*(under_load.headroom_h100e(cols[runs[d].name], runs[d]) for d in ("h100", "lite-h100")))
    designs = under_load.headroom(cols, runs)
    out = {"study": under_load.STUDY, "demand_tokens_per_s": under_load.demand_of(overrides), "designs": designs,
           "headroom_ratio_h100e": interval(ratio), "p_lite_buys_less_headroom": float(np.mean(ratio > 1.0)),
           "cost": under_load.cost_ratio(cols, runs["lite-h100"], runs["h100"])}
    h, lite = designs["h100"], designs["lite-h100"]
    out["text"] = (f"at {out['demand_tokens_per_s']:,.0f} tokens/s ({under_load.STUDY}) h100 buys {h['fleet_instances']['median']:.0f} instances, "
                   f"{h['headroom_instances']['median']:.0f} for failures ({h['headroom_h100_equivalents']['median']:.0f} H100-eq.); "
                   f"lite-h100 {lite['fleet_instances']['median']:.0f}, {lite['headroom_instances']['median']:.0f} "
                   f"({lite['headroom_h100_equivalents']['median']:.0f} H100-eq.): headroom H100 / Lite {out['headroom_ratio_h100e']['median']:.2f}x")
    return out


def compute(settings: Settings) -> dict:
    settings.note("claim 3: blast radius")
    h100, lite = scenario("h100"), scenario("lite-h100")
    h100_r, lite_r = variant(h100, "h100.reshard", [RESHARD]), variant(lite, "lite-h100.reshard", [RESHARD])
    tables = {"h100": reshard_capacity(h100_r), "lite": reshard_capacity(lite_r)}
    forms = closed_forms(h100, lite, tables)
    shipped = _lifetime(designs_run(settings), {d: f"{d}.{SWEEP_MODEL}" for d in ("h100", "lite-h100")})
    shipped.update(scenarios=["h100", "lite-h100"], on_failure="down", share_lost_per_failure_ratio_down=forms["whole_instance"],
                   under_load=headroom_under_load(settings))
    shipped["text"] = (f"{shipped['figure']['median']:.2f}x [{shipped['figure']['p05']:.2f}-{shipped['figure']['p95']:.2f}] capacity-time lost "
                       f"(H100/Lite, 'down'); per failure {forms['whole_instance']:.2f}x")
    values = settings.grid(SWEEP_VALUES)
    runs = [variant(lite_r, f"lite-h100.reshard.swap-{v:g}", [f"{SWEEP_KEY}={v!r}"]) for v in values]
    # the Lite at its own (fixed) swap time: the sweep point that is it, else one more run
    own = next((r for v, r in zip(values, runs) if lite.reliability.swap_hours.to_toml() == v), None)
    swept = chain([h100_r, *runs] + ([] if own else [lite_r]), settings)
    reshard = _lifetime(swept, {"h100": h100_r.name, "lite-h100": (own or lite_r).name})
    reshard.update(per_failure_ratio=forms["reshard"],
                   capacity_kept_after_one_failure={"h100": float(tables["h100"][1]), "lite-h100": float(tables["lite"][1])})
    paper = {"scenarios": ["h100", "lite-h100"], "figure": {"median": forms["package_only"], "p05": forms["package_only"], "p95": forms["package_only"]},
             "closed_form": forms["package_only"], "whole_instance_closed_form": forms["whole_instance"],
             "p_holds": float(forms["package_only"] >= PAPER_FIGURE), "reshard": reshard}
    paper["text"] = (f"{forms['package_only']:.2f}x per failure (package alone); with 'reshard' {forms['reshard']:.2f}x per failure, "
                     f"{reshard['figure']['median']:.2f}x [{reshard['figure']['p05']:.2f}-{reshard['figure']['p95']:.2f}] capacity-time lost")
    figures = [lost_ratio(swept, h100_r.name, r.name) for r in runs]
    bnd = boundary(f"B:{SWEEP_KEY}", values, figures, lambda f: f >= PAPER_FIGURE, lambda f: f > 1.0,
                   "h100 vs lite-h100, both on_failure = 'reshard', the Lite's spare-swap time (hours) at each value; "
                   "figure = capacity-time lost, H100 / Lite",
                   figure=("capacity-time lost over a lifetime, H100 / Lite, both on_failure = 'reshard'", "ratio"))
    holds = (f"per failure only if a failure takes out its package alone: 1/f = {forms['package_only']:g}x for a quarter die; "
             f"{forms['whole_instance']:g}x under 'down'; {forms['reshard']:.2f}x under 'reshard' ({lite.cluster.instance_gpus - 1} of "
             f"{lite.cluster.instance_gpus} Lite-GPUs keep {tables['lite'][1]:.0%} of the instance's throughput); "
             f"over a lifetime with 'reshard' {_lifetime_text(bnd, reshard)}")
    return entry(
        number=3, key="blast_radius", claim="A failure takes down a much smaller share of the cluster",
        metric="blast radius H100 / Lite (paper: share lost per failure; lifetimes: capacity-time lost)",
        paper_figure=PAPER_FIGURE, paper_figure_text="~8x smaller blast radius", source=SECONDARY, confirmed=False,
        unit="ratio", paper_assumptions=paper, shipped=shipped, boundary_=bnd, holds_when=holds,
        model=("per failure: the package alone (paper), the instance ('down', shipped) or the capacity the best smaller "
               "layout gives up ('reshard', from the roofline layout search); over a lifetime: 1 - capacity_availability "
               "of paired trials (docs/model.md#reshard)"),
    )
