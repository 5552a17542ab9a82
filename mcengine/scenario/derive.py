"""A GPU derived from a fraction of a parent die: its die, shoreline, HBM, links and TDP
(``[gpu.derive]``, docs/model.md#derive, defaults in docs/sources.md#derive).

The formulas are plain functions of numbers or numpy arrays. :func:`resolve` applies
them when a scenario is built (the die, units and stack count are structural: the fab
stage lays out one die and bonds whole stacks), filling every key the scenario does not
set explicitly and recording where each value came from; :func:`apply_trials` recomputes
the link bandwidth and TDP of each trial from its drawn rates, so those rates may be
``dist`` tables. Explicit ``[gpu]``, ``[fab]`` and ``reliability.components.hbm.count``
values always win; :func:`drop_inherited` keeps the values a design file inherits through
``extends`` from counting as explicit.

The scale-up links follow one rule in every design, typed in or derived
(docs/model.md#links): the switch port is priced per GB/s of link bandwidth
(``econ.scale_up_port_cost_per_gbps_usd``) and the links' power, pJ/bit x link bandwidth,
is part of the TDP (``gpu.core_tdp_w`` + ``gpu.link_pj_per_bit``; a derived design takes
both from ``[gpu.derive]``). :func:`resolve_links` fills ``econ.scale_up_port_cost_usd``
and ``gpu.tdp_w`` from them (at the inputs' medians) and :func:`apply_trials` recomputes
them per trial; :data:`LINK_RULES` and :func:`replaced_keys` let a file or ``--set`` that
types in the old key replace the rule it inherits.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ..errors import InputError, Problem
from .dists import Dist, Fixed
from .fields import spec_of
from .parts import HbmGeneration, IoTechnology, hbm_generations, io_technologies
from .sections.fab import FabSection
from .sections.gpu import GpuSection, PeakTable
from .sections.reliability import Component

#: Keys the derivation fills unless the scenario sets them, by table.
DERIVED_GPU = ("peak_tflops", "hbm_gb", "hbm_tbps", "link_gbps", "tdp_w", "h100_equivalents")
DERIVED_FAB = ("die_width_mm", "die_height_mm", "units_per_die", "units_required", "hbm_stacks")
#: The reliability component whose count is the package's HBM stacks.
HBM_COMPONENT = "hbm"
HBM_COUNT_KEY = f"reliability.components.{HBM_COMPONENT}.count"
#: The gpu keys that depend on the per-trial rates (``dist`` tables allowed).
PER_TRIAL = ("gpu.link_gbps", "gpu.tdp_w")

#: The rule keys that replace an old key when set, by old key (docs/model.md#links).
LINK_RULES = {"gpu.tdp_w": ("gpu.core_tdp_w", "gpu.link_pj_per_bit"),
              "econ.scale_up_port_cost_usd": ("econ.scale_up_port_cost_per_gbps_usd", "econ.optical_port_cost_per_gbps_usd"),
              "fab.package_cost_usd": ("fab.package_cost_reference_usd", "fab.package_cost_area_exponent"),
              "fab.test_cost_usd": ("fab.test_cost_reference_usd", "fab.test_cost_area_exponent")}
#: The package-cost laws (docs/model.md#package-cost-law): the cost key each fills, by its
#: (reference cost, area exponent) keys in ``[fab]``.
AREA_LAWS = {"package_cost_usd": ("package_cost_reference_usd", "package_cost_area_exponent"),
             "test_cost_usd": ("test_cost_reference_usd", "test_cost_area_exponent")}
#: The gpu keys a derived design replaces by its own ``[gpu.derive]`` figures.
DERIVE_REPLACES = ("core_tdp_w", "link_pj_per_bit")

#: Slack on ``floor(edge / stack edge)`` so that an edge of exactly n stacks holds n
#: despite float rounding (e.g. 3 x 10.4667 mm).
EDGE_TOLERANCE = 1e-9
#: Derived die sides are rounded to this many decimals of a mm (1 nm): a quarter of
#: 25.9 x 31.4 mm is 12.95 x 15.7 mm, not 12.949999999999998.
DIE_DECIMALS = 6
#: Bits per byte and the SI prefixes of GB/s and pJ (one place that converts).
BITS_PER_BYTE = 8.0
GIGA = 1e9
PICO = 1e-12


# ----------------------------------------------------------------------------- formulas


def die_area_mm2(fraction, parent_area_mm2, uncore_mm2):
    """A derived die's area: ``fraction`` of the parent's area without its uncore, plus the
    uncore every die carries (mm²; ``fraction x parent`` with no uncore)."""
    return fraction * (parent_area_mm2 - uncore_mm2) + uncore_mm2


def die_size_mm(area_mm2, aspect):
    """(width, height) of a rectangular die of ``area_mm2`` with height / width = ``aspect``."""
    width = np.sqrt(area_mm2 / aspect)
    return width, width * aspect


def perimeter_mm(width_mm, height_mm):
    """The die's shoreline: its perimeter 2 (w + h)."""
    return 2.0 * (width_mm + height_mm)


def hbm_stack_count(hbm_edge_mm: float, phy_edge_mm: float, stacks_max: int) -> int:
    """Stacks along the HBM edge: ⌊edge ÷ edge per stack⌋, at most ``stacks_max``."""
    return min(int(math.floor(hbm_edge_mm / phy_edge_mm + EDGE_TOLERANCE)), stacks_max)


def link_gbps(io_edge_mm, gbps_per_mm):
    """Link bandwidth per direction: I/O edge × bandwidth per mm of edge (GB/s)."""
    return io_edge_mm * gbps_per_mm


def io_power_w(link_gbps_, pj_per_bit):
    """Power of the links sending ``link_gbps_`` GB/s at ``pj_per_bit`` (W)."""
    return pj_per_bit * PICO * link_gbps_ * GIGA * BITS_PER_BYTE


def tdp_w(area_mm2, w_per_mm2, stacks, w_per_stack, link_gbps_, pj_per_bit):
    """TDP from area: die W/mm² × area + stacks × W per stack + link power (W)."""
    return w_per_mm2 * area_mm2 + stacks * w_per_stack + io_power_w(link_gbps_, pj_per_bit)


# ----------------------------------------------------------------------------- the record


@dataclass(frozen=True)
class Derivation:
    """What ``[gpu.derive]`` produced: the die and its shoreline, the parts used, each
    derived key's value (at the inputs' medians) and where it came from."""

    parent: str
    area_mm2: float
    width_mm: float
    height_mm: float
    perimeter_mm: float
    hbm_edge_mm: float
    io_edge_mm: float
    stacks: int
    hbm: HbmGeneration
    io: IoTechnology
    values: dict
    origins: dict
    explicit: frozenset

    def is_derived(self, key: str) -> bool:
        """Whether ``key`` (dotted) takes its value from the derivation."""
        return key in self.values and key not in self.explicit

    def resolved(self) -> dict[str, str]:
        """Each derivable key → its value and origin, as ``mcengine check`` shows them."""
        out = {"shoreline": (f"die {self.width_mm:.4g} x {self.height_mm:.4g} mm = {self.area_mm2:.4g} mm², perimeter "
                             f"{self.perimeter_mm:.4g} mm: HBM edge {self.hbm_edge_mm:.4g} mm, I/O edge {self.io_edge_mm:.4g} mm")}
        for key, value in self.values.items():
            shown = _shown(value)
            out[key] = (f"explicit (the derivation gives {shown} = {self.origins[key]})" if key in self.explicit
                        else f"{shown} = {self.origins[key]}")
        return out


def _number(value) -> float:
    """A derived value as one number: a peak table's bf16 peak (the one its range is checked at)."""
    return float(value.bf16.value) if isinstance(value, PeakTable) else float(value)


def _shown(value) -> str:
    if isinstance(value, PeakTable) and not value.scalar:
        return "{" + ", ".join(f"{name} = {d.value:.6g}" for name, d in value.peaks) + "}"
    return f"{_number(value):.6g}"


# ----------------------------------------------------------------------------- loading


def _table(raw: dict, path: str) -> dict:
    node = raw
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else {}


def drop_inherited(base: dict, child: dict) -> dict:
    """``base`` without the derivable keys when ``child`` has a ``[gpu.derive]`` table: a
    design file derives what it does not set itself, whatever its ancestors typed in."""
    if not _table(child, "gpu.derive"):
        return base
    out = {**base}
    for table, keys in (("gpu", (*DERIVED_GPU, *DERIVE_REPLACES)), ("fab", DERIVED_FAB)):
        if isinstance(out.get(table), dict):
            out[table] = {k: v for k, v in out[table].items() if k not in keys}
    comps = _table(out, "reliability.components")
    if isinstance(comps.get(HBM_COMPONENT), dict):
        rel = {**out["reliability"], "components": {**comps, HBM_COMPONENT: {k: v for k, v in comps[HBM_COMPONENT].items() if k != "count"}}}
        out["reliability"] = rel
    return out


def _dotted(raw: dict) -> set[str]:
    """The dotted ``table.key`` names of the values in ``raw``'s tables."""
    return {f"{table}.{key}" for table, node in raw.items() if isinstance(node, dict) for key in node}


def replaced_keys(keys: set[str]) -> list[str]:
    """The dotted keys that setting ``keys`` replaces: typing in an old key
    (``gpu.tdp_w``, ``econ.scale_up_port_cost_usd``) drops the rule keys that would
    replace it, and setting a rule key drops the old key."""
    out = []
    for old, rule in LINK_RULES.items():
        if old in keys:
            out += rule
        elif keys & set(rule):
            out.append(old)
    return out


def without(raw: dict, keys: list[str]) -> dict:
    """``raw`` (a copy of its touched tables) without the dotted ``table.key`` ``keys``."""
    out = {**raw}
    for key in keys:
        table, _, name = key.partition(".")
        if isinstance(out.get(table), dict) and name in out[table]:
            out[table] = {k: v for k, v in out[table].items() if k != name}
    return out


def drop_replaced(base: dict, child: dict) -> dict:
    """``base`` without the keys ``child``'s own keys replace (:func:`replaced_keys`): a
    file extending a rule-priced design that types in ``gpu.tdp_w`` gets that TDP."""
    return without(base, replaced_keys(_dotted(child)))


def _explicit(raw: dict) -> set[str]:
    keys = {f"gpu.{k}" for k in DERIVED_GPU if k in _table(raw, "gpu")}
    if any(k in _table(raw, "gpu") for k in DERIVE_REPLACES):  # the link rule's TDP is an explicit one
        keys.add("gpu.tdp_w")
    keys |= {f"fab.{k}" for k in DERIVED_FAB if k in _table(raw, "fab")}
    if "count" in _table(raw, f"reliability.components.{HBM_COMPONENT}"):
        keys.add(HBM_COUNT_KEY)
    return keys


def _parent(ref: str, load_parent, problems: list[Problem]):
    """The parent scenario, loaded by ``load_parent`` (:func:`mcengine.scenario.load.load_parent`)."""
    if load_parent is None:
        problems.append(Problem("gpu.derive.parent", ref, "a derived design is loaded through mcengine.scenario.load "
                                "(load_scenario, scenario_from_dict), which loads its parent"))
        return None
    try:
        return load_parent(ref)
    except InputError as exc:
        if any(p.key == "gpu.derive.parent" and "cycle" in p.allowed for p in exc.problems):
            problems += [p for p in exc.problems if p.key == "gpu.derive.parent"]
            return None
        problems.append(Problem("gpu.derive.parent", ref, "allowed: a shipped scenario name or a scenario file that loads; it fails with: "
                                + "; ".join(f"{p.key}: {p.allowed}" for p in exc.problems[:3])))
        return None


def _median(dist: Dist | None, fallback: float) -> float:
    return fallback if dist is None else float(dist.median())


def _extremes(dist: Dist | None, fallback: float) -> tuple[float, float]:
    if dist is None:
        return fallback, fallback
    lo, hi, _, _ = dist.drawn_range()
    return float(lo), float(hi)


def resolve(parts: dict, raw: dict, problems: list[Problem], load_parent=None) -> tuple[dict, Derivation | None]:
    """``parts`` (parsed sections) with every derivable key the scenario does not set
    filled from ``[gpu.derive]``, and the :class:`Derivation`; problems name the key.
    ``load_parent(ref)`` loads the parent scenario (or raises InputError)."""
    gpu = parts.get("gpu")
    if gpu is None or gpu.derive is None:
        return parts, None
    d = gpu.derive
    parent = _parent(d.parent, load_parent, problems)
    if parent is None:
        return parts, None
    if not parent.gpu.peak_tflops.is_fixed:
        problems.append(Problem("gpu.derive.parent", d.parent, "its gpu.peak_tflops has a dist table; allowed: a parent with fixed peaks, "
                                "or set gpu.peak_tflops here"))
        return parts, None
    pf = parent.fab
    fraction = d.fraction.value
    parent_area_mm2 = pf.die_width_mm.value * pf.die_height_mm.value
    aspect = _median(d.aspect, pf.die_height_mm.value / pf.die_width_mm.value)
    uncore_mm2 = d.uncore_area_mm2.value
    if uncore_mm2 >= parent_area_mm2:
        problems.append(Problem("gpu.derive.uncore_area_mm2", uncore_mm2, f"allowed: below the parent's die area, {parent_area_mm2:.6g} mm2"))
        return parts, None
    area_mm2 = die_area_mm2(fraction, parent_area_mm2, uncore_mm2)
    width_mm, height_mm = (round(float(x), DIE_DECIMALS) for x in die_size_mm(area_mm2, aspect))
    edge_mm = float(perimeter_mm(width_mm, height_mm))
    hbm_edge_mm = d.hbm_edge_share.value * edge_mm
    io_edge_mm = edge_mm - hbm_edge_mm
    stacks = hbm_stack_count(hbm_edge_mm, d.hbm_phy_edge_mm.value, d.hbm_stacks_max)
    hbm, io = hbm_generations()[d.hbm_generation], io_technologies()[d.io]
    rates = {"density": (d.io_gbps_per_mm, io.gbps_per_mm), "pj": (d.io_pj_per_bit, io.pj_per_bit),
             "w_stack": (d.hbm_w_per_stack, hbm.w_per_stack), "w_mm2": (d.tdp_w_per_mm2, 0.0)}
    med = {k: _median(dist, fb) for k, (dist, fb) in rates.items()}
    explicit = _explicit(raw)

    link = float(link_gbps(io_edge_mm, med["density"]))
    link_used = link if "gpu.link_gbps" not in explicit else float(gpu.link_gbps.median())
    values = {
        "fab.die_width_mm": width_mm, "fab.die_height_mm": height_mm,
        "fab.units_per_die": max(1, round(fraction * pf.units_per_die)),
        "fab.units_required": max(1, math.ceil(fraction * pf.units_required - EDGE_TOLERANCE)),
        "fab.hbm_stacks": stacks, HBM_COUNT_KEY: stacks,
        "gpu.peak_tflops": parent.gpu.peak_tflops.scaled(fraction),
        "gpu.hbm_gb": stacks * hbm.gb_per_stack, "gpu.hbm_tbps": stacks * hbm.tbps_per_stack,
        "gpu.link_gbps": link,
        "gpu.tdp_w": float(tdp_w(area_mm2, med["w_mm2"], stacks, med["w_stack"], link_used, med["pj"])),
        "gpu.h100_equivalents": fraction * parent.gpu.h100_equivalents.value,
    }
    def src(key: str, table_name: str) -> str:
        return f"gpu.derive.{key}" if getattr(d, key) is not None else table_name

    origins = {
        "fab.die_width_mm": (f"sqrt(area / aspect {aspect:.4g}); area = fraction {fraction:g} x {d.parent}'s {pf.die_width_mm.value:g} x {pf.die_height_mm.value:g} mm"
                             + (f" less uncore, + uncore {uncore_mm2:g} mm2" if uncore_mm2 else "")),
        "fab.die_height_mm": f"width x aspect {aspect:.4g}",
        "fab.units_per_die": f"round(fraction {fraction:g} x {d.parent}'s {pf.units_per_die})",
        "fab.units_required": f"ceil(fraction {fraction:g} x {d.parent}'s {pf.units_required})",
        "fab.hbm_stacks": (f"min(floor(HBM edge {hbm_edge_mm:.4g} mm / hbm_phy_edge_mm {d.hbm_phy_edge_mm.value:g}), hbm_stacks_max {d.hbm_stacks_max}); "
                           f"HBM edge = hbm_edge_share {d.hbm_edge_share.value:g} x perimeter {edge_mm:.4g} mm"),
        HBM_COUNT_KEY: "fab.hbm_stacks (one component per stack)",
        "gpu.peak_tflops": f"fraction {fraction:g} x {d.parent}'s {_shown(parent.gpu.peak_tflops)} TFLOP/s (every precision's peak)",
        "gpu.hbm_gb": f"{stacks} stacks x {hbm.gb_per_stack:g} GB ({hbm.name})",
        "gpu.hbm_tbps": f"{stacks} stacks x {hbm.tbps_per_stack:g} TB/s ({hbm.name})",
        "gpu.link_gbps": f"I/O edge {io_edge_mm:.4g} mm x {med['density']:g} GB/s/mm ({src('io_gbps_per_mm', io.name)})",
        "gpu.tdp_w": (f"tdp_w_per_mm2 {med['w_mm2']:g} x {area_mm2:.4g} mm² + {stacks} x {med['w_stack']:g} W ({src('hbm_w_per_stack', hbm.name)}) "
                      f"+ {med['pj']:g} pJ/bit ({src('io_pj_per_bit', io.name)}) x {link_used:.4g} GB/s"),
        "gpu.h100_equivalents": f"fraction {fraction:g} x {d.parent}'s {parent.gpu.h100_equivalents.value:g}",
    }
    record = Derivation(d.parent, area_mm2, width_mm, height_mm, edge_mm, hbm_edge_mm, io_edge_mm, stacks, hbm, io,
                        values, origins, frozenset(explicit))
    problems += _range_problems(record, parts, rates, gpu)
    return _filled(parts, record), record


def _spec(key: str):
    """The spec of a derivable key (its range and help)."""
    table, _, name = key.rpartition(".")
    cls = {"gpu": GpuSection, "fab": FabSection}.get(table, Component)
    return spec_of(next(f for f in dataclasses.fields(cls) if f.name == name))


def _range_problems(record: Derivation, parts: dict, rates: dict, gpu) -> list[Problem]:
    """Derived values outside their key's range, at the median and at both extremes of
    the per-trial rates (link and TDP grow with every rate)."""
    if record.stacks < 1 and any(record.is_derived(k) for k in ("gpu.hbm_gb", "gpu.hbm_tbps")):
        d = gpu.derive
        return [Problem("gpu.derive.hbm_edge_share", d.hbm_edge_share.value,
                        f"the HBM edge of {record.hbm_edge_mm:.4g} mm (hbm_edge_share x perimeter {record.perimeter_mm:.4g} mm) holds 0 stacks "
                        f"of hbm_phy_edge_mm = {d.hbm_phy_edge_mm.value:g} mm; allowed: a share of at least "
                        f"{d.hbm_phy_edge_mm.value / record.perimeter_mm:.3g}, a shorter gpu.derive.hbm_phy_edge_mm, "
                        "or gpu.hbm_gb and gpu.hbm_tbps set explicitly")]
    out = []
    for key, value in record.values.items():
        if record.is_derived(key) and not _spec(key).in_range(_number(value), _number(value), False, False):
            out.append(Problem(f"{key} (derived)", round(_number(value), 6), _spec(key).allowed(),
                               f"from [gpu.derive]: {record.origins[key]}; set {key} explicitly or change gpu.derive"))
    if out:
        return out
    for end in (0, 1):
        at = {k: _extremes(dist, fb)[end] for k, (dist, fb) in rates.items()}
        link = float(link_gbps(record.io_edge_mm, at["density"]))
        if record.is_derived("gpu.link_gbps") and not _spec("gpu.link_gbps").in_range(link, link, False, False):
            out.append(Problem("gpu.derive.io_gbps_per_mm", round(at["density"], 6), _spec("gpu.link_gbps").allowed(),
                               f"gives gpu.link_gbps = {link:.6g} over the I/O edge of {record.io_edge_mm:.4g} mm"))
        used = link if record.is_derived("gpu.link_gbps") else _extremes(gpu.link_gbps, 0.0)[end]
        power = float(tdp_w(record.area_mm2, at["w_mm2"], record.stacks, at["w_stack"], used, at["pj"]))
        if record.is_derived("gpu.tdp_w") and not _spec("gpu.tdp_w").in_range(power, power, False, False):
            out.append(Problem("gpu.derive.tdp_w_per_mm2", round(at["w_mm2"], 6), _spec("gpu.tdp_w").allowed(),
                               f"the derived gpu.tdp_w reaches {power:.6g} W at the {'low' if end == 0 else 'high'} end of the derive rates"))
    return out


def _filled(parts: dict, record: Derivation) -> dict:
    """The sections with the derived (not explicit) values in place."""
    out = dict(parts)
    for table in ("gpu", "fab"):
        section = parts.get(table)
        if section is None:
            continue
        changes = {}
        for key, value in record.values.items():
            t, _, name = key.partition(".")
            if t == table and record.is_derived(key):
                changes[name] = value if isinstance(value, (int, PeakTable)) else Fixed(float(value))
        out[table] = dataclasses.replace(section, **changes)
    rel = parts.get("reliability")
    if rel is not None and record.is_derived(HBM_COUNT_KEY):
        comps = tuple((name, dataclasses.replace(c, count=record.stacks) if name == HBM_COMPONENT else c) for name, c in rel.components)
        out["reliability"] = dataclasses.replace(rel, components=comps)
    return out


# ----------------------------------------------------------------------------- link rule


def link_tdp_w(core_tdp_w, pj_per_bit, link_gbps_):
    """TDP of a typed-in design: the board without its links + their power (W)."""
    return core_tdp_w + io_power_w(link_gbps_, pj_per_bit)


def port_cost_usd(usd_per_gbps, link_gbps_):
    """Scale-up switch port of ``link_gbps_`` GB/s per direction at ``usd_per_gbps`` (USD)."""
    return usd_per_gbps * link_gbps_


def area_law_usd(reference_usd, area_ratio, exponent):
    """A cost that scales as a power of die area: ``reference x ratio^k`` (USD), ``ratio``
    the die's area over the reference die's (docs/model.md#package-cost-law)."""
    return reference_usd * area_ratio ** exponent


def port_price_key(econ) -> str | None:
    """The key that prices a scale-up port per GB/s: the optical fabric's own price when
    ``econ.scale_up_fabric = "optical"`` and it is set, else the electrical one (None when
    neither rule key is set: the port is ``econ.scale_up_port_cost_usd`` as typed)."""
    if econ.scale_up_fabric == "optical" and econ.optical_port_cost_per_gbps_usd is not None:
        return "optical_port_cost_per_gbps_usd"
    return None if econ.scale_up_port_cost_per_gbps_usd is None else "scale_up_port_cost_per_gbps_usd"


def _area_ratio(fab) -> float:
    return float(fab.die_width_mm.median() * fab.die_height_mm.median() / fab.cost_reference_area_mm2.median())


def _active_laws(fab, problems: list[Problem] | None = None) -> dict[str, tuple[str, str]]:
    """The area laws ``fab`` sets in full (a problem for each one half set, or set without
    ``fab.cost_reference_area_mm2``)."""
    out = {}
    for key, (ref, k) in AREA_LAWS.items():
        given = [getattr(fab, ref) is not None, getattr(fab, k) is not None]
        if all(given) and fab.cost_reference_area_mm2 is not None:
            out[key] = (ref, k)
        elif any(given) and problems is not None:
            missing = [f"fab.{n}" for n, g in ((ref, given[0]), (k, given[1]), ("cost_reference_area_mm2", fab.cost_reference_area_mm2 is not None)) if not g]
            problems.append(Problem(missing[0], None, f"missing; fab.{ref}, fab.{k} and fab.cost_reference_area_mm2 go together "
                                    f"({key} = reference x (die area / reference area)^k), or set fab.{key} alone"))
    return out


def resolve_links(parts: dict, problems: list[Problem]) -> dict:
    """``parts`` with ``gpu.tdp_w`` and ``econ.scale_up_port_cost_usd`` filled from the link
    rule where its keys are set (at the inputs' medians), and a problem for each rule value
    outside its key's range at the extremes of its inputs. In a derived design the rule's
    TDP is an explicit one: it replaces ``[gpu.derive]``'s (:func:`_explicit`). Also the
    package-cost laws (``fab.package_cost_usd``, ``test_cost_usd``) and, with
    ``gpu.hbm_part``, the HBM capacity and bandwidth of ``fab.hbm_stacks`` catalogue stacks."""
    out = dict(parts)
    gpu, econ, fab = parts.get("gpu"), parts.get("econ"), parts.get("fab")
    if fab is not None:
        filled = {}
        for key, (ref, k) in _active_laws(fab, problems).items():
            inputs = (getattr(fab, ref), Fixed(_area_ratio(fab)), getattr(fab, k))
            cost = _rule_value(area_law_usd, inputs, f"fab.{key}", FabSection, (f"fab.{ref}", "fab.cost_reference_area_mm2", f"fab.{k}"), problems)
            if cost is not None:
                filled[key] = Fixed(cost)
        out["fab"] = dataclasses.replace(fab, **filled)
    if gpu is None:
        return out
    if gpu.hbm_part != "typed" and fab is not None:  # a whole number of catalogue stacks
        part = hbm_generations()[gpu.hbm_part]
        gpu = out["gpu"] = dataclasses.replace(gpu, hbm_gb=Fixed(fab.hbm_stacks * part.gb_per_stack), hbm_tbps=Fixed(fab.hbm_stacks * part.tbps_per_stack))
    link = gpu.link_gbps
    if gpu.core_tdp_w is not None or gpu.link_pj_per_bit is not None:
        if gpu.core_tdp_w is None or gpu.link_pj_per_bit is None:
            missing = "gpu.core_tdp_w" if gpu.core_tdp_w is None else "gpu.link_pj_per_bit"
            problems.append(Problem(missing, None, "missing; gpu.core_tdp_w and gpu.link_pj_per_bit go together (TDP = core_tdp_w + "
                                    "link_pj_per_bit x link_gbps), or set gpu.tdp_w alone"))
        else:
            inputs = (gpu.core_tdp_w, gpu.link_pj_per_bit, link)
            tdp = _rule_value(link_tdp_w, inputs, "gpu.tdp_w", GpuSection, ("gpu.core_tdp_w", "gpu.link_pj_per_bit", "gpu.link_gbps"), problems)
            if tdp is not None:
                out["gpu"] = dataclasses.replace(gpu, tdp_w=Fixed(tdp))
    price = None if econ is None else port_price_key(econ)
    if price is not None:
        from .sections.econ import EconSection

        inputs = (getattr(econ, price), link)
        port = _rule_value(port_cost_usd, inputs, "econ.scale_up_port_cost_usd", EconSection, (f"econ.{price}", "gpu.link_gbps"), problems)
        if port is not None:
            out["econ"] = dataclasses.replace(econ, scale_up_port_cost_usd=Fixed(port))
    return out


def _rule_value(rule, inputs: tuple[Dist, ...], key: str, section, names: tuple[str, ...], problems: list[Problem]) -> float | None:
    """``rule`` at the inputs' medians, or None (and a problem on the rule's first input
    key that names them all) when it leaves ``key``'s range at the low or high end of the
    inputs (the rules grow with each)."""
    spec = spec_of(next(f for f in dataclasses.fields(section) if f.name == key.partition(".")[2]))
    for end in (0, 1):
        value = float(rule(*(_extremes(d, 0.0)[end] for d in inputs)))
        if not spec.in_range(value, value, False, False):
            given = ", ".join(f"{n} = {d.to_toml()}" for n, d in zip(names, inputs))
            problems.append(Problem(names[0], inputs[0].to_toml(), spec.allowed(),
                                    f"the link rule gives {key} = {value:.6g} at the {'low' if end == 0 else 'high'} end of its inputs ({given})"))
            return None
    return float(rule(*(d.median() for d in inputs)))


# ----------------------------------------------------------------------------- per trial


def apply_trials(scenario, values: dict[str, np.ndarray], n: int) -> None:
    """Recompute, in ``values``, the derived link bandwidth and TDP of ``n`` trials from
    their drawn ``gpu.derive`` rates, then the link rule's TDP and port cost
    (:func:`resolve_links`) from their drawn inputs (vectorised)."""
    record = getattr(scenario, "derivation", None)
    if record is not None:
        _apply_derivation(record, values, n)
    gpu, econ, fab = scenario.gpu, scenario.econ, scenario.fab
    if gpu.core_tdp_w is not None:
        values["gpu.tdp_w"] = np.asarray(link_tdp_w(values["gpu.core_tdp_w"], values["gpu.link_pj_per_bit"], values["gpu.link_gbps"]), dtype=float)
    price = port_price_key(econ)
    if price is not None:
        values["econ.scale_up_port_cost_usd"] = np.asarray(port_cost_usd(values[f"econ.{price}"], values["gpu.link_gbps"]), dtype=float)
    for key, (ref, k) in _active_laws(fab).items():
        values[f"fab.{key}"] = np.broadcast_to(np.asarray(area_law_usd(values[f"fab.{ref}"], _area_ratio(fab), values[f"fab.{k}"]), dtype=float), (n,)).copy()


def _apply_derivation(record: Derivation, values: dict[str, np.ndarray], n: int) -> None:
    """The derived link bandwidth and TDP of ``n`` trials from their ``gpu.derive`` rates."""
    hbm, io = record.hbm, record.io

    def rate(key: str, fallback: float) -> np.ndarray:
        return np.broadcast_to(values.get(f"gpu.derive.{key}", fallback), (n,))

    if record.is_derived("gpu.link_gbps"):
        values["gpu.link_gbps"] = np.asarray(link_gbps(record.io_edge_mm, rate("io_gbps_per_mm", io.gbps_per_mm)), dtype=float)
    if record.is_derived("gpu.tdp_w"):
        values["gpu.tdp_w"] = np.asarray(tdp_w(record.area_mm2, rate("tdp_w_per_mm2", 0.0), record.stacks, rate("hbm_w_per_stack", hbm.w_per_stack),
                                               values["gpu.link_gbps"], rate("io_pj_per_bit", io.pj_per_bit)), dtype=float)
