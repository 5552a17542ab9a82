"""Checks that span several keys (impossible geometry, layouts, pools).

Each returns :class:`~mcengine.errors.Problem` entries naming the keys involved, so the
user sees them together with the per-key problems.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..errors import Problem
from .limits import MAX_EVENTS_PER_LIFETIME, MAX_TOTAL_GPUS
from .fields import AUTO
from .dists import Fixed
from .lengths import LengthLaw
from .sections.workload import SATURATE
from ..analytic.reliability import renewals_bound, series_renewals_bound, weibull_rate_per_hour
from ..units import HOURS_PER_YEAR

#: The quantile of an uncertain rate used to bound a lifetime's events: the run time is
#: that of its busiest trials, not of the median one.
_RATE_QUANTILE = 0.999


def fab_problems(f) -> list[Problem]:
    out = []
    if f.units_required > f.units_per_die:
        out.append(Problem("fab.units_required", f.units_required, f"allowed: at most fab.units_per_die = {f.units_per_die}"))
    usable_radius_mm = f.wafer_diameter_mm.value / 2 - f.edge_exclusion_mm.value
    if usable_radius_mm <= 0:
        out.append(Problem("fab.edge_exclusion_mm", f.edge_exclusion_mm.value, f"allowed: less than half fab.wafer_diameter_mm ({f.wafer_diameter_mm.value / 2:g} mm)"))
        return out
    half_diag_mm = math.hypot(f.die_width_mm.value, f.die_height_mm.value) / 2
    if half_diag_mm > usable_radius_mm:
        out.append(
            Problem(
                "fab.die_width_mm",
                f"{f.die_width_mm.value:g} x {f.die_height_mm.value:g} mm",
                f"impossible geometry: the die (fab.die_width_mm x fab.die_height_mm) does not fit on the usable disc of radius {usable_radius_mm:g} mm "
                "(fab.wafer_diameter_mm / 2 - fab.edge_exclusion_mm)",
            )
        )
    return out


def _high(dist) -> float:
    return float(dist.value) if dist.is_fixed else dist.quantile(_RATE_QUANTILE)


def _shapes(shape) -> np.ndarray:
    """Shapes spanning a (possibly uncertain) Weibull shape between its extreme quantiles."""
    if shape.is_fixed:
        return np.array([float(shape.value)])
    low, high, *_ = shape.support()  # (a quantile of an extreme table can round outside it)
    ends = np.clip([shape.quantile(1.0 - _RATE_QUANTILE), shape.quantile(_RATE_QUANTILE)], low, high)
    return np.geomspace(ends[0], ends[1], 17)


def _high_renewals(law_key: str, dist, shape, horizon_hours: float) -> float:
    """A high expected count of permanent failures of one unit over the horizon (replace
    on failure): its law key at the quantile that fails most, the shape anywhere between
    its extreme quantiles, through :func:`renewals_bound` (which counts the renewals an
    infant-mortality law adds beyond T/MTTF)."""
    if dist.is_fixed:
        value = float(dist.value)
    else:
        value = dist.quantile(_RATE_QUANTILE if law_key in ("afr", "first_year_fraction") else 1.0 - _RATE_QUANTILE)
    return max(renewals_bound(float(weibull_rate_per_hour(law_key, value, k)), float(k), horizon_hours)
               for k in _shapes(shape))


def _series_renewals(r, modules: bool, horizon_hours: float, gpus_per_unit: int = 1) -> tuple[str | None, float]:
    """With an infant-mortality law (a shape below 1 at either extreme quantile), the
    renewals of one unit's series life by
    :func:`~mcengine.analytic.reliability.series_renewals_bound`: a GPU's
    classes with ``replace_unit = "module"`` when ``modules`` (its module), else its
    other classes, ``gpus_per_unit`` times over, and with more than one GPU per unit
    (``replace_unit = "host"``: the unit is a host and its GPUs, renewed whole) the
    host's law too. Each law at its high quantile and every combination of its extreme
    shapes; also the law key that fails most by the horizon (the one to name).
    ``(None, 0)`` when every shape is at least 1: the laws' own T/MTTF add up."""
    laws = []  # (key, law key, value at its high quantile, count, extreme shapes)
    for name, comp in r.components:
        law_key = comp.law_key()
        if law_key is None or (comp.replace_unit == "module") != modules:
            continue
        dist = getattr(comp, law_key)
        q = _RATE_QUANTILE if law_key in ("afr", "first_year_fraction") else 1.0 - _RATE_QUANTILE
        value = float(dist.value) if dist.is_fixed else dist.quantile(q)
        shapes = _shapes(comp.weibull_shape)
        laws.append((f"reliability.components.{name}.{law_key}", law_key, value, comp.count * gpus_per_unit, [shapes[0], shapes[-1]]))
    if gpus_per_unit > 1:
        shapes = _shapes(r.host_weibull_shape)
        laws.append(("reliability.host_afr", "afr", _high(r.host_afr), 1, [shapes[0], shapes[-1]]))
    if not any(min(shapes) < 1.0 for *_, shapes in laws):
        return None, 0.0
    best, top, top_hazard = 0.0, None, -1.0
    for combo in itertools.product(*(shapes for *_, shapes in laws)):
        terms = [(k, count * float(weibull_rate_per_hour(law_key, value, k)) ** k)
                 for (_, law_key, value, count, _), k in zip(laws, combo)]
        best = max(best, series_renewals_bound(terms, horizon_hours))
        for (key, *_), (k, c) in zip(laws, terms):
            if c * horizon_hours ** k > top_hazard:
                top, top_hazard = key, c * horizon_hours ** k
    return top, best


def _instances_per_host(c) -> int:
    """Most instances one host's GPUs span (a host fault restarts each of them)."""
    if c.instance_gpus % c.gpus_per_host == 0:  # hosts never straddle instances
        return 1
    return min(c.simulated(), (c.gpus_per_host + c.instance_gpus - 2) // c.instance_gpus + 1)


def _shape_of(r, key: str):
    """``(shape key, shape)`` of the permanent-failure law ``key`` belongs to when that shape is
    not exactly 1 (it then decides the count as much as the rate does), else None."""
    if key == "reliability.host_afr":
        shape_key, shape = "reliability.host_weibull_shape", r.host_weibull_shape
    elif key.startswith("reliability.components.") and not key.endswith(".transient_afr"):
        name = key.split(".")[2]
        shape_key, shape = f"reliability.components.{name}.weibull_shape", dict(r.components)[name].weibull_shape
    else:
        return None
    return None if shape.is_fixed and float(shape.value) == 1.0 else (shape_key, shape)


def size_problems(c, r, run) -> list[Problem]:
    """The cluster's size and its expected events per lifetime: the reliability kernel's
    memory grows with the GPUs and its time with the events, so both are bounded.

    The events are those the kernel handles: each unit's permanent failures over the
    horizon under replace on failure (the renewal bound of
    :func:`~mcengine.analytic.reliability.renewals_bound`: T/MTTF, more for an
    infant-mortality shape), a host failure counting its GPUs (each is swapped and
    repaired), and transient faults, a host fault counting the instances it restarts."""
    total = c.simulated() * c.instance_gpus + c.spare_gpus
    if total > MAX_TOTAL_GPUS:
        return [Problem("cluster.instances", f"{c.simulated()} x cluster.instance_gpus {c.instance_gpus} + cluster.spare_gpus {c.spare_gpus} = {total:,} GPUs",
                        f"allowed: at most {MAX_TOTAL_GPUS:,} GPUs in all (reliability memory and time grow with the GPUs)")]
    active = c.simulated() * c.instance_gpus
    hosts = -(-active // c.gpus_per_host)
    years = run.horizon_years.value
    horizon_hours = years * HOURS_PER_YEAR
    shares = {"reliability.host_afr": hosts * c.gpus_per_host * _high_renewals("afr", r.host_afr, r.host_weibull_shape, horizon_hours),
              "reliability.host_transient_afr": years * hosts * _instances_per_host(c) * _high(r.host_transient_afr)}
    for name, comp in r.components:
        law_key = comp.law_key()
        if law_key is not None:
            shares[f"reliability.components.{name}.{law_key}"] = active * comp.count * _high_renewals(
                law_key, getattr(comp, law_key), comp.weibull_shape, horizon_hours)
        shares[f"reliability.components.{name}.transient_afr"] = years * active * comp.count * _high(comp.transient_afr)
    key, renewals = _series_renewals(r, True, horizon_hours)  # a GPU's field-replaceable module
    if key is not None:
        shares[key] = max(shares[key], active * renewals)
    gph = c.gpus_per_host if r.replace_unit == "host" else 1  # a unit's GPUs, renewed whole
    key, renewals = _series_renewals(r, False, horizon_hours, gph)
    if key is not None:  # (a unit's failure counts its GPUs)
        shares[key] = max(shares[key], (active if gph == 1 else hosts * gph) * renewals)
    events = sum(shares.values())
    if events > MAX_EVENTS_PER_LIFETIME:
        top = max(shares, key=shares.get)  # name the rate that contributes most (and its law's shape)
        shape = _shape_of(r, top)
        with_shape = "" if shape is None else f" with {shape[0]} = {shape[1].to_toml()}"
        return [Problem(top, f"~{events:.3g} failures and faults per lifetime ({shares[top]:.3g} from this rate{with_shape})",
                        f"allowed: at most {MAX_EVENTS_PER_LIFETIME:.0e}: the failures over run.horizon_years (per GPU x the components' "
                        "count and per host x its GPUs: horizon / MTTF, more for a weibull_shape below 1, whose early failures "
                        "renew at once, so counted on a unit's laws in series: a GPU, or a host and its GPUs) plus the faults (GPUs x count x transient_afr + hosts x the instances each spans x "
                        f"host_transient_afr, per year), rates at their {_RATE_QUANTILE:g} quantile; "
                        "the reliability kernel's time grows with it",
                        "lower the rates, raise the shape, or shrink the cluster or the horizon")]
    return []


def cluster_problems(c, r) -> list[Problem]:
    out = []
    for name, comp in r.components:
        if comp.replace_unit in ("gpu", "host") and comp.replace_unit != r.replace_unit:
            out.append(Problem(f"reliability.components.{name}.replace_unit", comp.replace_unit,
                               f"allowed: \"unit\", reliability.replace_unit = {r.replace_unit!r}, or \"module\""))
    if c.gpus_per_host % c.gpus_per_nic:  # NIC k serves GPUs k x gpus_per_nic onwards: each NIC within one host
        out.append(Problem("cluster.gpus_per_nic", c.gpus_per_nic, f"allowed: a divisor of cluster.gpus_per_host = {c.gpus_per_host} "
                           "(a NIC serves GPUs of one host)"))
    if r.replace_unit == "host" and c.spare_gpus % c.gpus_per_host:
        out.append(Problem("cluster.spare_gpus", c.spare_gpus, f"allowed: a multiple of cluster.gpus_per_host = {c.gpus_per_host} when reliability.replace_unit = 'host'"))
    for name, comp in r.components:
        key = f"reliability.components.{name}"
        if comp.per != "gpu" and not (comp.weibull_shape.is_fixed and float(comp.weibull_shape.value) == 1.0):
            out.append(Problem(f"{key}.weibull_shape", comp.weibull_shape.to_toml(),
                               f"allowed: 1 when per = {comp.per!r} (a class counted per host or NIC is exponential)"))
        if comp.per != "gpu" and comp.replace_unit == "module":
            out.append(Problem(f"{key}.per", comp.per, "allowed: \"gpu\" for a field-replaceable module (replace_unit = \"module\")"))
    names = [name for name, _ in r.components]
    if len(set(names)) != len(names):
        out.append(Problem("reliability.components", names, "allowed: each component name once"))
    return out


def model_problems(m, key: str) -> list[Problem]:
    """Problems across the keys of the model card at ``key`` (``workload.model``, or a
    request class's ``workload.classes.NAME.model``)."""
    out = []
    if m.heads % m.kv_heads:
        out.append(Problem(f"{key}.kv_heads", m.kv_heads, f"allowed: a divisor of {key}.heads = {m.heads}"))
    if m.experts:
        if not 1 <= m.experts_per_token <= m.experts:
            out.append(Problem(f"{key}.experts_per_token", m.experts_per_token, f"allowed: 1 to {key}.experts = {m.experts}"))
        if m.expert_ffn < 1:
            out.append(Problem(f"{key}.expert_ffn", m.expert_ffn, "allowed: a positive integer when experts > 0"))
    return out


def workload_problems(w, c) -> list[Problem]:
    m, n = w.model, c.instance_gpus
    out = model_problems(m, "workload.model")
    for name, cls in w.classes:
        if cls.model is not None:
            out += model_problems(cls.model, f"workload.classes.{name}.model")
    t, p = w.tensor_parallel, w.pipeline_parallel
    if isinstance(t, int) and isinstance(p, int) and t * p != n:
        out.append(Problem("workload.tensor_parallel", f"{t} x pipeline {p}", f"allowed: tensor_parallel x pipeline_parallel = cluster.instance_gpus = {n}"))
    for key, deg in (("workload.tensor_parallel", t), ("workload.pipeline_parallel", p)):
        if isinstance(deg, int) and n % deg:
            out.append(Problem(key, deg, f"allowed: a divisor of cluster.instance_gpus = {n}"))
    if isinstance(p, int) and p > m.layers:
        out.append(Problem("workload.pipeline_parallel", p, f"allowed: at most workload.model.layers = {m.layers}"))
    if c.instances == AUTO and w.load.demand == SATURATE:
        out.append(Problem("cluster.instances", AUTO, 'allowed: a whole number of instances (1 to 1,048,576); "auto" only with a demand to size the '
                           'fleet for (workload.load.demand a number of output tokens/s, not "saturate")'))
    if w.classes and w.class_instances == "whole" and c.simulated() < len(w.classes):
        key = "cluster.simulated_instances" if c.instances == AUTO else "cluster.instances"
        out.append(Problem(key, c.simulated(), f'allowed: at least one instance per request class ({len(w.classes)}) with '
                           'workload.class_instances = "whole"'))
    out += mix_load_problems(w, c)
    out += length_spread_problems(w)
    return out


def length_spread_problems(w) -> list[Problem]:
    """``workload.load.length_cv`` (the gamma spread of lengths the chain's load model and the
    simulator read) with a length law (a spread of its own) on a prompt or output length: one
    spread or the other, never both (docs/load.md#length-spread)."""
    cv = w.load.length_cv
    cv = cv.value if isinstance(cv, Fixed) else cv
    if isinstance(cv, (int, float)) and cv == 0:
        return []
    lengths = [(f"workload.{k}", getattr(w, k)) for k in ("prompt_tokens", "output_tokens")]
    lengths += [(f"workload.classes.{name}.{k}", getattr(cls, k)) for name, cls in w.classes for k in ("prompt_tokens", "output_tokens")]
    laws = [key for key, value in lengths if isinstance(value, LengthLaw)]
    if not laws:
        return []
    return [Problem("workload.load.length_cv", cv, f"allowed: 0 where a length law spreads the lengths ({', '.join(laws)}): the law is "
                    "that spread (its quantile sizes the KV cache) and length_cv another; give one (docs/load.md#length-spread)")]


def mix_load_problems(w, c) -> list[Problem]:
    """A mix of request classes under a demand on a fixed cluster: the cluster's instances
    are split once among the classes, at least one each (docs/load.md#chain,
    :func:`mcengine.stages.roofline.class_split`), so ``cluster.instances`` must be at
    least the classes. With the fleet bought (``cluster.instances = "auto"``) the rule
    cannot bind: each class buys its own fleet, at least its plan's least cluster (1
    instance, 2 when disaggregated), and ``cluster.simulated_instances`` is only the
    cluster a trial no fleet serves falls back to, which serves nothing whatever its split.
    With ``workload.class_instances = "whole"`` the rule is that split's own check (every
    demand), which names the key once."""
    if (not w.classes or w.class_instances == "whole" or w.load.demand == SATURATE or c.instances == AUTO
            or c.instances >= len(w.classes)):
        return []
    return [Problem("cluster.instances", c.instances, f"allowed: at least {len(w.classes)}, one instance for each request class of the mix "
                    "under a demand (workload.load.demand a number): "
                    'a fixed cluster is split among the classes; or cluster.instances = "auto" (each class buys its own fleet)')]


def power_problems(g) -> list[Problem]:
    """``gpu.idle_w`` at most ``gpu.tdp_w`` in every trial: the highest idle power a
    trial can draw must not exceed the lowest TDP (docs/model.md#power)."""
    if g.idle_w is None:
        return []
    idle_high = g.idle_w.drawn_range()[1]
    tdp_low = g.tdp_w.drawn_range()[0]
    if idle_high > tdp_low:
        rule = " = gpu.core_tdp_w + gpu.link_pj_per_bit x gpu.link_gbps" if g.core_tdp_w is not None else ""
        return [Problem("gpu.idle_w", g.idle_w.to_toml(), f"allowed: at most gpu.tdp_w{rule} in every trial (idle can reach {idle_high:g} W, "
                        f"the TDP can be as low as {tdp_low:g} W)")]
    return []


def package_problems(f, g) -> list[Problem]:
    """``fab.units_per_die`` and ``fab.units_required`` split evenly over the
    ``gpu.dies_per_package`` dies of a package (docs/sources.md#gen-b200-dies)."""
    n = g.dies_per_package
    return [Problem(key, value, f"allowed: a multiple of gpu.dies_per_package = {n} (each die carries an equal share)")
            for key, value in (("fab.units_per_die", f.units_per_die), ("fab.units_required", f.units_required)) if value % n]


def cross_checks(parts: dict) -> list[Problem]:
    """Problems across keys, for every group of sections that parsed cleanly."""
    groups = ((fab_problems, ("fab",)), (package_problems, ("fab", "gpu")), (power_problems, ("gpu",)), (cluster_problems, ("cluster", "reliability")), (size_problems, ("cluster", "reliability", "run")),
              (workload_problems, ("workload", "cluster")))
    out = []
    for check, names in groups:
        sections = [parts.get(n) for n in names]
        if all(x is not None for x in sections):
            out += check(*sections)
    return out
