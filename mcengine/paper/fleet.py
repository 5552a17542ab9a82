"""Claim 6, flexible allocation: small GPUs let a fleet serving several models of
different sizes waste less capacity to rounding.

The fleet (``[fleet]`` in configs/paper/fleet.toml): models with demand shares (of
output tokens) and the designs compared. For each model and design:

* ``need`` = the model's weights over one package's usable HBM, in packages (a real
  number: what a perfectly divisible machine would allocate), :func:`packages_needed`;
* the paper's allocation rounds it up to whole packages, ``ceil(need)``; the smallest
  instance that fits weights and KV cache and meets the TPOT SLO at the median inputs
  is :func:`smallest_instance` (the roofline's layout search);
* the capacity lost to rounding is ``1 - need / allocated`` (:func:`rounding_loss`) at
  the smallest instance, and a fleet's is the demand-weighted mean over its models.

Sizing (``fleet.sizing``): each model's instance size on each design, the one its
clusters are built of. ``"cost_optimal"`` (the default): among the candidate sizes
(:func:`candidate_sizes`: the smallest instance, every power of two and every power of
two times the host above it up to ``fleet.largest_instance_gpus``, and each of those
rounded up to whole hosts), the size whose cluster has the lowest median cost per Mtok
over the paired trials (the full chain: batch and KV room, availability, power), ties
to the smaller size; an operator buys one size per model and design, so the size is
fixed across trials (:func:`cost_optimal_size`). ``"smallest"``: the smallest instance
(the study's reading before cost-optimal sizing, kept reproducible).

Cost: each model runs on a cluster of its instances (the shipped cluster's silicon),
its cost per Mtok from the full chain; the fleet's cost per Mtok is the demand-weighted
sum (tokens add). Per-model clusters, the baseline, round every instance up to whole
hosts (``cluster.gpus_per_host``), as a cluster built host by host does. The sweep moves
the demand share of the smallest model (the others keep their proportions): P(the Lite
fleet is cheaper per token than the H100 fleet) along it, no re-run needed (the sizes
are per model, so the mix does not move them).

Under a demand (``shipped.under_load``, :mod:`mcengine.paper.load`): the ``load-diurnal``
study's demand split over the models by their shares, each model's instances (at the
size in use) bought per trial for its share with failure headroom
(``cluster.instances = "auto"``, the reliability stage simulating the per-model cluster
above): the headroom each design's fleet buys for its failures (H100-equivalents, summed
over the models) and the fleet's cost per served token (the demand-weighted sum).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InputError, Problem
from ..scenario.files import read_toml
from . import load as under_load
from ._common import Settings, boundary, chain, paired_ratio, entry, interval, paper_dir, scenario, variant

FLEET_FILE = "fleet.toml"
SHARE_TOLERANCE = 1e-6
SWEEP_VALUES = (0.0, 0.2, 0.4, 0.5, 0.6, 0.8, 0.95)
#: ``fleet.sizing``: how each model's instance is sized on each design (module docstring).
SIZINGS = ("cost_optimal", "smallest")


@dataclass(frozen=True)
class Fleet:
    designs: tuple[str, ...]
    models: tuple[str, ...]
    shares: tuple[float, ...]
    largest_instance_gpus: int
    sizing: str = "cost_optimal"


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
    sizing = raw.get("sizing", SIZINGS[0])
    if sizing not in SIZINGS:
        problems.append(Problem("fleet.sizing", sizing, "allowed: " + " | ".join(f'"{k}"' for k in SIZINGS)
                                + " (the cheapest instance per model and design, or the smallest that fits and meets the SLOs)"))
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
    from ..analytic.roofline.weights import params_total

    s = variant(base, f"{base.name}.{model}", [f'workload.model="{model}"'])
    w = s.workload
    return packages_needed(params_total(w.model) * w.bytes_per_param.value, s.gpu.hbm_gb.median(), w.hbm_usable_fraction.median())


def fits(base, model: str, gpus: int):
    """The best layout of ``model`` on instances of ``gpus`` at the median inputs, or None
    when its weights and KV cache fit no layout there."""
    from ..stages.roofline.median_plan import choose_layout

    s = variant(base, f"{base.name}.{model}.n{gpus}", [f'workload.model="{model}"', f"cluster.instance_gpus={gpus}", "cluster.instances=1"])
    try:
        return choose_layout(s)[0]
    except InputError:
        return None


def smallest_instance(base, model: str, largest: int) -> tuple[int, bool]:
    """(GPUs, SLO met): the fewest GPUs whose best layout fits ``model`` and meets the
    TPOT SLO at the median inputs; when no size up to ``largest`` meets it, the fewest
    that fit (the roofline then serves one sequence at a time, and says so)."""
    first_fit = None
    for n in range(max(1, math.ceil(need_of(base, model))), largest + 1):
        best = fits(base, model, n)
        if best is None:
            continue
        if best.slo_met[0]:
            return n, True
        first_fit = first_fit or n
    if first_fit is None:
        raise InputError(Problem("fleet.largest_instance_gpus", largest, f"{model} fits no instance of {base.name} up to this size; allowed: a larger bound"))
    return first_fit, False


def host_rounded(gpus: int, host: int) -> int:
    """``gpus`` rounded up to whole hosts of ``host`` GPUs."""
    return -(-gpus // host) * host


def candidate_sizes(smallest: int, largest: int, host: int) -> tuple[int, ...]:
    """The instance sizes cost-optimal sizing compares, ascending: ``smallest``, every
    power of two and every ``host`` x power of two in ``(smallest, largest]``, and each of
    those rounded up to whole hosts (so the host-rounded twin of any candidate is one)."""
    sizes = {smallest}
    for unit in (1, host):
        n = unit
        while n <= largest:
            sizes.update({n} if n > smallest else set())
            n *= 2
    return tuple(sorted(sizes | {host_rounded(n, host) for n in sizes}))


def cost_optimal_size(costs: dict[int, np.ndarray]) -> int:
    """The size (key of ``costs``: per-trial cost per Mtok of a cluster of instances of
    that size) with the lowest median cost per Mtok (nearest rank, as the study's
    intervals take it: a size that meets its SLOs in under half the trials has an
    infinite median), ties to the smaller size."""
    return min(costs, key=lambda n: (interval(costs[n])["median"], n))


def on_cluster(base, model: str, gpus: int, label: str):
    """``base`` serving ``model`` on instances of ``gpus``, about the shipped cluster's silicon."""
    silicon = base.active_gpus * base.gpu.h100_equivalents.value
    instances = max(1, round(silicon / (gpus * base.gpu.h100_equivalents.value)))
    return variant(base, f"{base.name}.{model}.{label}", [f'workload.model="{model}"', f"cluster.instance_gpus={gpus}", f"cluster.instances={instances}"])


def allocations(fleet: Fleet) -> dict:
    """Per design and model: need, the paper's and the smallest instance, the sizes
    :attr:`Fleet.sizing` compares (``candidate_instance_gpus``), losses."""
    out = {}
    for d in fleet.designs:
        base = scenario(d)
        host = base.cluster.gpus_per_host
        rows = {}
        for m in fleet.models:
            need = need_of(base, m)
            n, met = smallest_instance(base, m, fleet.largest_instance_gpus)
            compared = (n, host_rounded(n, host)) if fleet.sizing == "smallest" else candidate_sizes(n, fleet.largest_instance_gpus, host)
            rows[m] = {"packages_needed": need, "paper_instance_gpus": math.ceil(need), "instance_gpus": n, "slo_met": met,
                       "candidate_instance_gpus": [k for k in sorted(set(compared)) if k == n or fits(base, m, k) is not None],
                       "paper_rounding_loss": rounding_loss(need, math.ceil(need)), "rounding_loss": rounding_loss(need, n)}
        out[d] = rows
    return out


def size_fleet(fleet: Fleet, alloc: dict, cols: dict) -> None:
    """Fill each allocation row with the sizes in use (``sized_instance_gpus``: the
    smallest, or the cost-optimal one; ``host_instance_gpus``: the fewest whole hosts
    that hold it, among the sizes compared), the median cost per Mtok of every size
    compared, the weights' share of the HBM at the size in use and ``sized_at_largest``
    (the cheapest size is the largest compared, so a larger bound might find a cheaper
    one); alias the runs of those sizes ``DESIGN.MODEL.fleet`` / ``.hosts`` (and of the
    smallest instance ``.smallest``)."""
    for d in fleet.designs:
        host = scenario(d).cluster.gpus_per_host
        for m in fleet.models:
            a = alloc[d][m]
            costs = {k: cols[f"{d}.{m}.n{k}"]["cost_per_mtok_usd"] for k in a["candidate_instance_gpus"]}
            n = a["instance_gpus"] if fleet.sizing == "smallest" else cost_optimal_size(costs)
            hosts = min((k for k in costs if k >= n and k % host == 0), default=None)
            if hosts is None:
                raise InputError(Problem("fleet.largest_instance_gpus", fleet.largest_instance_gpus,
                                         f"{m} on {d}: no whole-host instance of at least {n} GPUs fits up to this size; allowed: a larger bound"))
            a.update({"sized_instance_gpus": n, "host_instance_gpus": hosts,
                      "sized_at_largest": fleet.sizing != "smallest" and n == max(costs) and n > a["instance_gpus"],
                      "weights_share_of_hbm": a["packages_needed"] / n,
                      "median_cost_per_mtok_usd": {str(k): interval(c)["median"] for k, c in costs.items()}})
            cols[f"{d}.{m}.fleet"] = cols[f"{d}.{m}.n{n}"]
            cols[f"{d}.{m}.smallest"] = cols[f"{d}.{m}.n{a['instance_gpus']}"]
            cols[f"{d}.{m}.hosts"] = cols[f"{d}.{m}.n{a['host_instance_gpus']}"]


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


def headroom_under_load(fleet: Fleet, alloc: dict, settings: Settings) -> dict:
    """``shipped.under_load`` (module docstring): per design, each model's fleet for its
    share of the ``load-diurnal`` demand on instances of the size in use, the failure
    headroom summed over the models, and the fleet's cost per served token, paired."""
    overrides = under_load.demand_overrides()
    total = under_load.demand_of(overrides)
    runs = {}
    for d in fleet.designs:
        for m, share in zip(fleet.models, fleet.shares):
            if share > 0:
                k = alloc[d][m]["sized_instance_gpus"]
                cluster = on_cluster(scenario(d), m, k, f"n{k}")
                runs[(d, m)] = variant(cluster, f"{d}.{m}.load", [*overrides, f"workload.load.demand={share * total!r}",
                                                                   f"cluster.simulated_instances={cluster.cluster.instances}"])
    cols = chain(list(runs.values()), settings)
    served = [(m, s) for m, s in zip(fleet.models, fleet.shares) if s > 0]
    room = {d: sum(under_load.headroom_h100e(cols[runs[(d, m)].name], runs[(d, m)]) for m, _ in served) for d in fleet.designs}
    cost = {d: sum(s * cols[runs[(d, m)].name]["cost_per_mtok_usd"] for m, s in served) for d in fleet.designs}
    base_d, lite_d = fleet.designs[0], fleet.designs[1]
    ratio = paired_ratio(cost[lite_d], cost[base_d])
    out = {"study": under_load.STUDY, "demand_tokens_per_s": total,
           "models": {d: under_load.headroom(cols, {m: runs[(d, m)] for m, _ in served}) for d in fleet.designs},
           "headroom_h100_equivalents": {d: interval(v) for d, v in room.items()},
           "fleet_cost_per_mtok_usd": {d: interval(v) for d, v in cost.items()},
           "fleet_paired_ratio": interval(ratio), "p_lite_fleet_cheaper": float(np.mean(ratio < 1.0))}
    out["text"] = (f"at {total:,.0f} tokens/s ({under_load.STUDY}, split by the shares) failure headroom "
                   + ", ".join(f"{d} {out['headroom_h100_equivalents'][d]['median']:.0f}" for d in fleet.designs)
                   + f" H100-eq.; fleet cost per served token {lite_d}/{base_d} {out['fleet_paired_ratio']['median']:.2f}x")
    return out


def compute(settings: Settings) -> dict:
    settings.note("claim 6: flexible allocation (fleet)")
    fleet = load_fleet()
    alloc = allocations(fleet)
    runs = [on_cluster(scenario(d), m, k, f"n{k}") for d in fleet.designs for m in fleet.models for k in alloc[d][m]["candidate_instance_gpus"]]
    cols = chain(runs, settings)
    size_fleet(fleet, alloc, cols)
    base_d, lite_d = fleet.designs[0], fleet.designs[1]
    loss = {d: {"paper": weighted(fleet, alloc[d], "paper_rounding_loss"), "mcengine": weighted(fleet, alloc[d], "rounding_loss")} for d in fleet.designs}
    costs = {d: {"fleet": fleet_cost(fleet, cols, d, "fleet"), "per_model_clusters": fleet_cost(fleet, cols, d, "hosts"),
                 "smallest_instances": fleet_cost(fleet, cols, d, "smallest")} for d in fleet.designs}
    ratio = paired_ratio(costs[lite_d]["fleet"], costs[base_d]["fleet"])
    paper_gap = loss[base_d]["paper"] - loss[lite_d]["paper"]
    paper = {"scenarios": list(fleet.designs), "figure": {"median": paper_gap, "p05": paper_gap, "p95": paper_gap},
             "rounding_loss": {d: loss[d]["paper"] for d in fleet.designs}, "p_holds": float(paper_gap > 0)}
    gap = loss[base_d]["mcengine"] - loss[lite_d]["mcengine"]
    shipped = {
        "scenarios": list(fleet.designs), "figure": {"median": gap, "p05": gap, "p95": gap}, "sizing": fleet.sizing,
        "instance_gpus": {d: {m: alloc[d][m]["sized_instance_gpus"] for m in fleet.models} for d in fleet.designs},
        "rounding_loss": {d: loss[d]["mcengine"] for d in fleet.designs}, "p_holds": float(gap > 0),
        "sized_rounding_loss": {d: float(sum(s * rounding_loss(alloc[d][m]["packages_needed"], alloc[d][m]["sized_instance_gpus"])
                                             for m, s in zip(fleet.models, fleet.shares))) for d in fleet.designs},
        "fleet_cost_per_mtok_usd": {d: {k: interval(v) for k, v in c.items()} for d, c in costs.items()},
        "fleet_saving_vs_per_model_clusters": {d: interval(1.0 - paired_ratio(c["fleet"], c["per_model_clusters"])) for d, c in costs.items()},
        "fleet_paired_ratio": interval(ratio), "p_lite_fleet_cheaper": float(np.mean(ratio < 1.0)),
        "model_paired_ratio": {m: interval(paired_ratio(cols[f"{lite_d}.{m}.fleet"]["cost_per_mtok_usd"], cols[f"{base_d}.{m}.fleet"]["cost_per_mtok_usd"]))
                             for m in fleet.models},
        "batch": {d: {m: interval(cols[f"{d}.{m}.fleet"]["batch"]) for m in fleet.models} for d in fleet.designs},
        "under_load": headroom_under_load(fleet, alloc, settings),
    }
    unmet = [f"{m} on {d}" for d in fleet.designs for m in fleet.models if not alloc[d][m]["slo_met"]]
    sizes = "; ".join(f"{d} " + "/".join(str(alloc[d][m]["sized_instance_gpus"]) for m in fleet.models) for d in fleet.designs)
    bound = [f"{m} on {d}" for d in fleet.designs for m in fleet.models if alloc[d][m]["sized_at_largest"]]
    shipped["text"] = (f"{100 * gap:+.1f} pts (rounding loss {base_d} {100 * loss[base_d]['mcengine']:.1f} %, {lite_d} "
                       f"{100 * loss[lite_d]['mcengine']:.1f} %); fleet cost {lite_d}/{base_d} {shipped['fleet_paired_ratio']['median']:.2f}x"
                       f" on {fleet.sizing.replace('_', '-')} instances ({sizes} GPUs)"
                       + (f" ({', '.join(unmet)}: TPOT SLO met on no instance)" if unmet else "")
                       + (f" ({', '.join(bound)}: the largest size compared, fleet.largest_instance_gpus may bind)" if bound else ""))
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
               "the TPOT SLO (roofline layout search at the median inputs); costs from the full chain on instances sized by fleet.sizing "
               f"(here {fleet.sizing}: " + ("the smallest instance" if fleet.sizing == "smallest" else
                                             "the size with the lowest median cost per Mtok per model and design") + "), per-model clusters in whole hosts"),
        extra={"fleet": {"designs": list(fleet.designs), "models": dict(zip(fleet.models, fleet.shares)), "allocations": alloc}},
    )
