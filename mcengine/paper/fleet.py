"""Claim 6, flexible allocation: small GPUs let a fleet serving several models of
different sizes waste less capacity to rounding.

The fleet (``[fleet]`` in configs/paper/fleet.toml): models with demand shares (of
output tokens) and the designs compared. For each model and design:

* ``need`` = the model's weights over one package's usable HBM, in packages (a real
  number: what a perfectly divisible machine would allocate), :func:`packages_needed`;
* the paper's allocation rounds it up to whole packages, ``ceil(need)``; mcengine's is
  the smallest instance that fits weights and KV cache and meets the TPOT SLO at the
  median inputs (:func:`smallest_instance`, the roofline's layout search);
* the capacity lost to rounding is ``1 - need / allocated`` (:func:`rounding_loss`),
  and a fleet's is the demand-weighted mean over its models.

Cost: each model runs on a cluster of its instances (the shipped cluster's silicon),
its cost per Mtok from the full chain; the fleet's cost per Mtok is the demand-weighted
sum (tokens add). Per-model clusters, the baseline, round every instance up to whole
hosts (``cluster.gpus_per_host``), as a cluster built host by host does. The sweep moves
the demand share of the smallest model (the others keep their proportions): P(the Lite
fleet is cheaper per token than the H100 fleet) along it, no re-run needed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InputError, Problem
from ..scenario.files import read_toml
from ._common import Settings, boundary, chain, paired_ratio, entry, interval, paper_dir, scenario, variant

FLEET_FILE = "fleet.toml"
SHARE_TOLERANCE = 1e-6
SWEEP_VALUES = (0.0, 0.2, 0.4, 0.5, 0.6, 0.8, 0.95)


@dataclass(frozen=True)
class Fleet:
    designs: tuple[str, ...]
    models: tuple[str, ...]
    shares: tuple[float, ...]
    largest_instance_gpus: int
    sizing: str = "smallest_fit"


def load_fleet(path=None) -> Fleet:
    """The ``[fleet]`` table, every problem reported at once (InputError naming the key)."""
    from ..scenario.cards import model_names

    path = path or paper_dir() / FLEET_FILE
    raw = read_toml(path, "fleet").get("fleet")
    problems = []
    if not isinstance(raw, dict):
        raise InputError(Problem("fleet", raw, "allowed: a [fleet] table with designs and [[fleet.models]]"), str(path))
    designs = raw.get("designs")
    if not (isinstance(designs, list) and len(designs) >= 2 and all(isinstance(d, str) for d in designs)):
        problems.append(Problem("fleet.designs", designs, "allowed: a list of at least two scenario names, the baseline first"))
    largest = raw.get("largest_instance_gpus", 128)
    if isinstance(largest, bool) or not isinstance(largest, int) or not 1 <= largest <= 4096:
        problems.append(Problem("fleet.largest_instance_gpus", largest, "allowed: an integer in [1, 4096] (the search is linear in it)"))
    sizing = raw.get("sizing", "smallest_fit")
    if sizing not in SIZING_POLICIES:
        problems.append(Problem("fleet.sizing", sizing, "allowed: " + ", ".join(SIZING_POLICIES)))
    models, shares = [], []
    for i, m in enumerate(raw.get("models") or []):
        name, share = (m.get("model"), m.get("share")) if isinstance(m, dict) else (None, None)
        if name not in model_names():
            problems.append(Problem(f"fleet.models[{i}].model", name, "allowed: a shipped model card: " + ", ".join(model_names())))
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
            problems.append(Problem(f"fleet.models[{i}].share", share, "allowed: a number in (0, 1] (share of output tokens)"))
        models.append(name)
        shares.append(share)
    if not models:
        problems.append(Problem("fleet.models", None, "allowed: at least one [[fleet.models]] with model and share"))
    elif not problems and abs(sum(shares) - 1.0) > SHARE_TOLERANCE:
        problems.append(Problem("fleet.models[].share", sum(shares), "allowed: shares summing to 1"))
    if problems:
        raise InputError(problems, str(path))
    return Fleet(tuple(designs), tuple(models), tuple(float(s) for s in shares), int(largest), sizing)


def packages_needed(weights_bytes: float, hbm_gb: float, usable_fraction: float) -> float:
    """Packages a perfectly divisible machine needs for the weights: ``weights / (HBM x usable)``."""
    return weights_bytes / (hbm_gb * 1e9 * usable_fraction)


def rounding_loss(need: float, allocated: int) -> float:
    """Share of an allocation left idle: ``1 - need / allocated``."""
    return 1.0 - need / allocated


def need_of(base, model: str) -> float:
    """:func:`packages_needed` of ``model`` on ``base``'s package at its median HBM."""
    from ..analytic.roofline import params_total

    s = variant(base, f"{base.name}.{model}", [f'workload.model="{model}"'])
    w = s.workload
    return packages_needed(params_total(w.model) * w.bytes_per_param.value, s.gpu.hbm_gb.median(), w.hbm_usable_fraction.median())


def smallest_instance(base, model: str, largest: int) -> tuple[int, bool]:
    """(GPUs, SLO met): the fewest GPUs whose best layout fits ``model`` and meets the
    TPOT SLO at the median inputs; when no size up to ``largest`` meets it, the fewest
    that fit (the roofline then serves one sequence at a time, and says so)."""
    from ..stages._roofline_layout import choose_layout

    first_fit = None
    for n in range(max(1, math.ceil(need_of(base, model))), largest + 1):
        s = variant(base, f"{base.name}.{model}.n{n}", [f'workload.model="{model}"', f"cluster.instance_gpus={n}", "cluster.instances=1"])
        try:
            best, _ = choose_layout(s)
        except InputError:
            continue
        if best.slo_met[0]:
            return n, True
        first_fit = first_fit or n
    if first_fit is None:
        raise InputError(Problem("fleet.largest_instance_gpus", largest, f"{model} fits no instance of {base.name} up to this size; allowed: a larger bound"))
    return first_fit, False


#: Instance sizing policies by name, each ``(base, model, largest) -> (GPUs, SLO met)``;
#: ``[fleet] sizing`` picks one (default ``"smallest_fit"``). The readings of claim 6 name
#: a ``"cost_optimal"`` policy when one is registered here.
SIZING_POLICIES = {"smallest_fit": smallest_instance}


def on_cluster(base, model: str, gpus: int, label: str):
    """``base`` serving ``model`` on instances of ``gpus``, about the shipped cluster's silicon."""
    silicon = base.active_gpus * base.gpu.h100_equivalents.value
    instances = max(1, round(silicon / (gpus * base.gpu.h100_equivalents.value)))
    return variant(base, f"{base.name}.{model}.{label}", [f'workload.model="{model}"', f"cluster.instance_gpus={gpus}", f"cluster.instances={instances}"])


def allocations(fleet: Fleet) -> dict:
    """Per design and model: need, the paper's and mcengine's instance, host-rounded instance, losses."""
    out = {}
    for d in fleet.designs:
        base = scenario(d)
        host = base.cluster.gpus_per_host
        rows = {}
        for m in fleet.models:
            need = need_of(base, m)
            n, met = SIZING_POLICIES[fleet.sizing](base, m, fleet.largest_instance_gpus)
            rows[m] = {"packages_needed": need, "paper_instance_gpus": math.ceil(need), "instance_gpus": n, "slo_met": met,
                       "host_instance_gpus": -(-n // host) * host,
                       "paper_rounding_loss": rounding_loss(need, math.ceil(need)), "rounding_loss": rounding_loss(need, n)}
        out[d] = rows
    return out


def weighted(fleet: Fleet, per_model: dict, field: str) -> float:
    return float(sum(s * per_model[m][field] for m, s in zip(fleet.models, fleet.shares)))


def fleet_cost(fleet: Fleet, cols: dict, design: str, label: str, shares=None) -> np.ndarray:
    """Per-trial fleet cost per Mtok: the demand-weighted sum of the models' costs."""
    shares = fleet.shares if shares is None else shares
    return sum(s * cols[f"{design}.{m}.{label}"]["cost_per_mtok_usd"] for m, s in zip(fleet.models, shares) if s > 0)  # a model with no demand adds nothing, even at +inf


def defined_ratio(ratio: np.ndarray) -> np.ndarray:
    """Trials whose paired cost ratio is a number: 0 or +inf mean one fleet served no
    tokens (a model on it met no SLO), which a band of ratios cannot show."""
    return np.isfinite(ratio) & (ratio > 0)


def swept_shares(fleet: Fleet, first: float) -> tuple[float, ...]:
    """Shares with the first model at ``first``, the others in their proportions."""
    rest = sum(fleet.shares[1:])
    return (first, *(s * (1.0 - first) / rest for s in fleet.shares[1:])) if rest > 0 else (1.0,)


def compute(settings: Settings) -> dict:
    settings.note("claim 6: flexible allocation (fleet)")
    fleet = load_fleet()
    alloc = allocations(fleet)
    runs = {}
    for d in fleet.designs:
        base = scenario(d)
        for m in fleet.models:
            a = alloc[d][m]
            runs[f"{d}.{m}.fleet"] = on_cluster(base, m, a["instance_gpus"], "fleet")
            runs[f"{d}.{m}.hosts"] = on_cluster(base, m, a["host_instance_gpus"], "hosts")
    cols = chain(list(runs.values()), settings)
    base_d, lite_d = fleet.designs[0], fleet.designs[1]
    loss = {d: {"paper": weighted(fleet, alloc[d], "paper_rounding_loss"), "mcengine": weighted(fleet, alloc[d], "rounding_loss")} for d in fleet.designs}
    costs = {d: {"fleet": fleet_cost(fleet, cols, d, "fleet"), "per_model_clusters": fleet_cost(fleet, cols, d, "hosts")} for d in fleet.designs}
    ratio = paired_ratio(costs[lite_d]["fleet"], costs[base_d]["fleet"])
    paper_gap = loss[base_d]["paper"] - loss[lite_d]["paper"]
    paper = {"scenarios": list(fleet.designs), "figure": {"median": paper_gap, "p05": paper_gap, "p95": paper_gap},
             "rounding_loss": {d: loss[d]["paper"] for d in fleet.designs}, "p_holds": float(paper_gap > 0)}
    gap = loss[base_d]["mcengine"] - loss[lite_d]["mcengine"]
    shipped = {
        "scenarios": list(fleet.designs), "figure": {"median": gap, "p05": gap, "p95": gap},
        "rounding_loss": {d: loss[d]["mcengine"] for d in fleet.designs}, "p_holds": float(gap > 0),
        "fleet_cost_per_mtok_usd": {d: {k: interval(v) for k, v in c.items()} for d, c in costs.items()},
        "fleet_saving_vs_per_model_clusters": {d: interval(1.0 - paired_ratio(c["fleet"], c["per_model_clusters"])) for d, c in costs.items()},
        "fleet_paired_ratio": interval(ratio), "p_lite_fleet_cheaper": float(np.mean(ratio < 1.0)),
        "model_paired_ratio": {m: interval(paired_ratio(cols[f"{lite_d}.{m}.fleet"]["cost_per_mtok_usd"], cols[f"{base_d}.{m}.fleet"]["cost_per_mtok_usd"]))
                             for m in fleet.models},
        "batch": {d: {m: interval(cols[f"{d}.{m}.fleet"]["batch"]) for m in fleet.models} for d in fleet.designs},
    }
    unmet = [f"{m} on {d}" for d in fleet.designs for m in fleet.models if not alloc[d][m]["slo_met"]]
    shipped["text"] = (f"{100 * gap:+.1f} pts (rounding loss {base_d} {100 * loss[base_d]['mcengine']:.1f} %, {lite_d} "
                       f"{100 * loss[lite_d]['mcengine']:.1f} %); fleet cost {lite_d}/{base_d} {shipped['fleet_paired_ratio']['median']:.2f}x"
                       + (f" ({', '.join(unmet)}: TPOT SLO met on no instance)" if unmet else ""))
    values = settings.grid(SWEEP_VALUES)
    figures = [paired_ratio(fleet_cost(fleet, cols, lite_d, "fleet", swept_shares(fleet, v)), fleet_cost(fleet, cols, base_d, "fleet", swept_shares(fleet, v)))
               for v in values]
    bnd = boundary(f"fleet.models[0].share ({fleet.models[0]})", values, figures, lambda f: f < 1.0, lambda f: f < 1.0,
                   f"demand share of {fleet.models[0]}, the others in proportion; figure = fleet cost per Mtok {lite_d} / {base_d}",
                   figure=(f"fleet cost per Mtok, {lite_d} / {base_d}, paired over trials", "ratio"),
                   key_axis=f"demand share of {fleet.models[0]}, the other models in proportion\nfleet.models[0].share (share of output tokens, 0-1)",
                   defined=("both fleets serve tokens", defined_ratio))
    cross = bnd["crossing_holds"]
    holds = (f"rounding: Lite loses {100 * loss[lite_d]['mcengine']:.1f} % vs {100 * loss[base_d]['mcengine']:.1f} %; "
             + (f"the Lite fleet is cheaper per token when {fleet.models[0]} has >= {cross[0]:.2f} of the demand" if cross and bnd["p_holds"][-1] > 0.5
                else f"the Lite fleet is cheaper per token when {fleet.models[0]} has <= {cross[0]:.2f} of the demand" if cross
                else "the Lite fleet is never cheaper per token over this mix" if bnd["p_holds"][0] < 0.5 else "the Lite fleet is cheaper per token over every mix"))
    return entry(
        number=6, key="fleet", claim="Small GPUs let a fleet of models of different sizes waste less capacity to rounding",
        metric="capacity lost to rounding, H100 fleet minus Lite fleet (share of allocated packages, demand-weighted)",
        paper_figure=None, paper_figure_text="less capacity lost (qualitative)",
        source="the paper's abstract: resource management opportunities (docs/sources.md#paper-lite-gpu)", confirmed=True,
        unit="points", paper_assumptions=paper, shipped=shipped, boundary_=bnd, holds_when=holds,
        model=("paper: weights over usable HBM rounded up to whole packages; mcengine: the smallest instance that fits and meets "
               "the TPOT SLO (roofline layout search at the median inputs); costs from the full chain, per-model clusters in whole hosts"),
        extra={"fleet": {"designs": list(fleet.designs), "models": dict(zip(fleet.models, fleet.shares)), "allocations": alloc}},
    )
