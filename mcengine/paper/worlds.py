"""Each claim's declared assumptions and its score, for the nearest-world search
(:mod:`mcengine.paper.nearest`).

A claim's world is a pair of scenarios: the shipped baseline (``A``) and the shipped Lite
design (``B``), each with the moves of the world applied (a key with an ``A:``/``B:``
prefix moves one design, a key without one moves both). A move of an uncertain input
(a ``dist`` table) shifts its median and keeps its spread: every location parameter of
the table is scaled by ``new median / shipped median``. Every point of the search is a
paired run of the same trials (the study's seed), so the search sees the claim's score
move smoothly.

The assumptions and their plausible ranges are declared per claim in :data:`CLAIM_WORLDS`,
each range with its source (docs/sources.md#paper-nearest-world lists them). Claim 6 has
no search: as stated (less capacity lost to rounding) it holds in the shipped world; its
instances are sized by ``fleet.sizing`` (:mod:`mcengine.paper.fleet`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, fields
from typing import Callable

import numpy as np

from functools import lru_cache

from ..errors import InputError, Problem
from ..scenario import Scenario, scenario_from_dict
from ..scenario.derive import replaced_keys, without
from ..scenario.schema import SECTIONS
from ..scenario.fields import AUTO, spec_of
from ..scenario.load import apply_overrides
from ..scenario.sections.econ import PACKAGE_PARTS
from ..scenario.sections.workload import EFFICIENCY_KINDS
from ..scenario.study import load_study
from ._common import Settings, fab_columns, paired_ratio, scenario, variant
from .nearest import Assumption, Budget, nearest_worlds

#: The choice of precision: its level -> what it sets (``gpu.peak_tflops`` is scaled,
#: the dense FP8 peak being twice the BF16 one, docs/sources.md#fab-h100-specs).
PRECISION = {"bf16": {"workload.bytes_per_param": 2.0, "workload.kv_bytes": 2.0, "gpu.peak_tflops": 1.0},
             "fp8": {"workload.bytes_per_param": 1.0, "workload.kv_bytes": 1.0, "gpu.peak_tflops": 2.0}}
PRECISION_KEY = "workload.precision"
#: Keys of a ``dist`` table that move with its median (the spread parameters stay).
LOCATION = ("low", "high", "mode", "median", "value")
#: The markup scope's levels, nested (an ordered choice): the die alone, what the vendor
#: designs and makes (shipped), that and the HBM, every package part (price = fab cost x
#: markup). Each level comes with the markup re-fitted to it (:func:`markup_for_scope`).
MARKUP_KEY = "econ.markup_applies_to"
MARKUP_SCOPES = (("die",), ("die", "packaging", "test"), ("die", "hbm", "packaging", "test"), PACKAGE_PARTS)
#: The workload mix as a whole (a nominal choice): no request classes (the scenario's one
#: request length, shipped) or a shipped study's mix (configs/studies/NAME.toml's ``set``).
MIX_KEY = "workload.mix"
NO_MIX = "none"
MIXES = (NO_MIX, "mix-azure-2023", "mix-reasoning")
#: The mix level of a scenario with request classes of its own (then a level of its own).
OWN_MIX = "own classes"
#: The scale-up domain's key ("auto" = the instance: its shipped level is instance_gpus).
DOMAIN_KEY = "cluster.scale_up_domain_gpus"


#: Efficiency keys whose "auto" is the precision table's value in use.
EFFICIENCY_KEYS = {f"workload.{kind}_efficiency": kind for kind in EFFICIENCY_KINDS}


def _current(s: Scenario, key: str):
    """The scenario's value at a dotted ``key`` (components by name; an efficiency left
    "auto" is its precision table's, the peak the one at the precision in use)."""
    if key in EFFICIENCY_KEYS:
        return s.workload.efficiency_of(EFFICIENCY_KEYS[key])
    if key == "gpu.peak_tflops":
        return s.peak_in_use()
    node = s
    for part in key.split("."):
        node = dict(node)[part] if isinstance(node, tuple) else getattr(node, part)
    return node


def _raw_law(raw: dict, base: Scenario, key: str):
    """The raw value at ``key`` of ``base.to_dict()``; an "auto" efficiency reads the law
    of its precision table, so a moved efficiency keeps that table's spread."""
    parts = key.split(".")
    node = raw
    for part in parts[:-1]:
        node = node.get(part, {})
    old = node.get(parts[-1])
    if key in EFFICIENCY_KEYS and isinstance(old, str):
        return raw["workload"]["efficiency"][base.workload.precision_in_use()][EFFICIENCY_KEYS[key]]
    return old


@lru_cache(maxsize=None)
def markup_for_scope(scope: tuple[str, ...]) -> float:
    """The markup median that keeps the H100's price at its shipped median when the markup
    multiplies the parts in ``scope``: with the H100's cost parts c_p at the median inputs,
    price = m0 x sum(c_p, p in the shipped scope) + the rest at cost = m x sum(c_p, p in
    scope) + the rest at cost (the markup range was fitted to the H100's street price,
    docs/sources.md#econ-gpu-markup; the same re-fit for another scope)."""
    from ..standalone.fab import analytic_at_median

    h100 = scenario("h100")
    parts = analytic_at_median(h100)["cost_parts"]
    shipped = h100.econ.markup_applies_to
    price = h100.econ.gpu_markup.median() * sum(parts[p] for p in shipped) + sum(v for p, v in parts.items() if p not in shipped)
    return (price - sum(v for p, v in parts.items() if p not in scope)) / sum(parts[p] for p in scope)


def _level_moves(base: Scenario, moves: dict) -> tuple[dict, str]:
    """``moves`` with each labelled choice replaced by the keys it sets, and the mix
    level: precision (:data:`PRECISION`), the markup scope with its re-fitted markup
    (:func:`markup_for_scope`), the workload mix (:func:`_with_mix`)."""
    moves = dict(moves)
    if PRECISION_KEY in moves:
        level = PRECISION[moves.pop(PRECISION_KEY)]
        moves.update({k: v for k, v in level.items() if k != "gpu.peak_tflops"})
        moves["gpu.peak_tflops"] = base.gpu.peak_tflops.bf16.median() * level["gpu.peak_tflops"]
    if MARKUP_KEY in moves:
        scope = tuple(moves[MARKUP_KEY])
        moves[MARKUP_KEY] = list(scope)
        moves["econ.gpu_markup"] = markup_for_scope(scope)
    mix = moves.pop(MIX_KEY, OWN_MIX if base.workload.classes else NO_MIX)
    return moves, mix


def _with_mix(raw: dict, mix: str) -> dict:
    """A scenario's raw table at a mix level: its own classes kept (:data:`OWN_MIX`), or
    replaced by none (:data:`NO_MIX`) or by a shipped study's (its ``set``)."""
    if mix == OWN_MIX:
        return raw
    raw = without(raw, ["workload.classes"])
    return raw if mix == NO_MIX else apply_overrides(raw, list(load_study(mix)["set"]))


def moved(base: Scenario, name: str, moves: dict) -> Scenario:
    """``base`` with ``moves`` (``{key: value}``, no design prefix) applied, renamed
    ``name``: a ``dist`` input keeps its spread around the new median; a labelled choice
    sets its keys (:func:`_level_moves`)."""
    moves, mix = _level_moves(base, moves)
    raw = _with_mix(base.to_dict(), mix)
    for key, value in moves.items():
        old = _raw_law(raw, base, key)
        raw = without(raw, replaced_keys({key}))
        parts = key.split(".")
        node = raw
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        if isinstance(old, dict) and "dist" in old and isinstance(value, (int, float)):
            ratio = float(value) / _median(base, key)
            shifted = {k: (v * ratio if k in LOCATION else v) for k, v in old.items()}
            node[parts[-1]] = shifted if _within(key, shifted) else value  # a share's spread cannot leave [0, 1]: the point itself
        else:
            node[parts[-1]] = value
    raw["name"] = name
    return scenario_from_dict(raw, name)


def _within(key: str, table: dict) -> bool:
    """Whether a moved ``dist`` table stays inside its key's range (a plain ``table.key``;
    deeper keys are not checked here and are checked when the scenario is built)."""
    section, _, name = key.partition(".")
    cls = next((c for t, c, _ in SECTIONS if t == section), None)
    f = next((f for f in fields(cls) if f.name == name), None) if cls is not None else None
    spec = spec_of(f) if f is not None else None
    if spec is None or spec.kind != "number":
        return True
    problems: list = []
    return spec.parse(table, key, problems) is not None and not problems


def split(world: dict) -> tuple[dict, dict]:
    """A world's moves of design A and of design B (unprefixed keys move both)."""
    a, b = {}, {}
    for key, value in world.items():
        side, _, bare = key.partition(":") if key[:2] in ("A:", "B:") else ("", "", key)
        if side in ("", "A"):
            a[bare] = value
        if side in ("", "B"):
            b[bare] = value
    return a, b


def _same(v, shipped) -> bool:
    """A value equal to the shipped one (a coordinate's round trip may move a float by an ulp)."""
    if isinstance(v, (int, float)) and isinstance(shipped, (int, float)):
        return math.isclose(v, shipped, rel_tol=1e-9, abs_tol=1e-12)
    return v == shipped


def _pairs(worlds: list[dict], bases: tuple[Scenario, Scenario], shipped: tuple[dict, dict]) -> tuple[list[tuple[Scenario, Scenario]], list[Scenario]]:
    """Per world its (A, B) scenarios, only the moves away from each design's ``shipped``
    values applied, and the distinct scenarios to run (equal moves share one scenario)."""
    made: dict = {}
    pairs = []
    for world in worlds:
        sides = []
        for base, moves, own in zip(bases, split(world), shipped):
            moves = {k: v for k, v in moves.items() if not _same(v, own.get(k))}
            key = (base.name, tuple(sorted((k, repr(v)) for k, v in moves.items())))
            if key not in made:
                made[key] = moved(base, f"{base.name}.nw{len(made)}", moves) if moves else base
            sides.append(made[key])
        pairs.append(tuple(sides))
    return pairs, list(dict.fromkeys(made.values()))


@dataclass(frozen=True)
class ClaimWorld:
    """One claim's search: its ``threshold`` (the claim holds in a trial when the score
    reaches it), the scenarios ``pair`` builds (A, B), how a trial is scored (``score``
    from the two scenarios' columns), whether the fab stage alone gives the columns,
    the declared ``assumptions`` (``assumptions(pair)`` reads the shipped values), the
    paired trials per point (a point of the roofline claims costs little more at 256
    trials than at 64: building its scenarios dominates; claim 3's lifetimes of 4,096
    GPUs cost most per trial), the points per reported world's search (claim 5
    moves nine inputs and the verdict eleven,
    so each gradient costs ten or twelve points, and a world takes ~100-250 points), and
    the paired trials that confirm each reported world (:func:`mcengine.paper.nearest.confirmed`)."""

    threshold: float
    pair: Callable[[], tuple[Scenario, Scenario]]
    score: Callable[[dict, dict, Scenario, Scenario], np.ndarray]
    assumptions: Callable[[tuple[Scenario, Scenario]], list[Assumption]]
    fab_only: bool
    figure: str
    trials: int = 256
    max_points: int = 200
    confirm_trials: int = 1024


def _median(s: Scenario, key: str) -> float:
    """The median of an input (a fixed law's value)."""
    v = _current(s, key)
    v = v.value if not hasattr(v, "median") and hasattr(v, "value") else v
    return float(v.median()) if hasattr(v, "median") else float(v)


def _num(pair, key: str, low: float, high: float, source: str, label: str = "") -> Assumption:
    side, _, bare = key.partition(":") if key[:2] in ("A:", "B:") else ("", "", key)
    s = pair[0] if side == "A" else pair[1]
    integer = isinstance(_current(s, bare), int)
    return Assumption(key, int(_median(s, bare)) if integer else _median(s, bare), low, high, source, label=label, integer=integer)


def _shipped_level(s: Scenario, key: str, levels: tuple):
    """A choice's shipped level: the precision in use, the mix ("none" without request
    classes, :data:`OWN_MIX` with classes of its own), a list of parts as a tuple, an
    "auto" scale-up domain as the instance."""
    if key == PRECISION_KEY:
        return s.workload.precision_in_use()
    if key == MIX_KEY:
        return NO_MIX if not s.workload.classes else OWN_MIX
    v = _current(s, key)
    if isinstance(v, tuple):
        return v
    if key == DOMAIN_KEY and v == AUTO:
        return s.cluster.instance_gpus
    return type(levels[0])(_median(s, key))


def _with_level(key: str, levels: tuple, shipped, ordered: bool) -> tuple:
    """A choice's ``levels`` with its ``shipped`` level among them: a number put in its
    place among numbers (an "auto" scale-up domain of an instance outside 8/16/32), a
    nominal level put first (a scenario's own request classes). An ordered choice of
    other levels has no place to put it: an :class:`~mcengine.errors.InputError` naming
    the key, the shipped level and the levels."""
    if shipped in levels:
        return levels
    if not ordered:
        return (shipped, *levels)
    if all(isinstance(v, (int, float)) for v in (shipped, *levels)):
        return tuple(sorted((shipped, *levels)))
    raise InputError(Problem(key, shipped, f"the nearest-world search's levels of this choice are {list(levels)}; "
                                           "the shipped design's level must be one of them"))


def _choice(pair, key: str, levels: tuple, source: str, label: str = "", ordered: bool = True) -> Assumption:
    side, _, bare = key.partition(":") if key[:2] in ("A:", "B:") else ("", "", key)
    s = pair[0] if side == "A" else pair[1]
    shipped = _shipped_level(s, bare, levels)
    return Assumption(key, shipped, levels=_with_level(key, levels, shipped, ordered), source=source, label=label, ordered=ordered)


SRC = "docs/sources.md#"


def _yield_assumptions(pair) -> list[Assumption]:
    return [
        _num(pair, "fab.defect_density_per_cm2", 0.05, 0.3, SRC + "fab-defect-density", "defect density D0 (median, /cm²)"),
        _num(pair, "fab.defect_clustering", 1.5, 20.0, SRC + "fab-defect-clustering", "defect clustering alpha (median)"),
        _num(pair, "fab.unit_area_fraction", 0.6, 0.9, SRC + "fab-harvesting", "share of the die in SMs"),
        _choice(pair, "A:fab.units_required", (132, 144), SRC + "fab-h100-sms", "H100 SMs required (132 harvested, 144 whole die)"),
        _choice(pair, "B:fab.units_required", (33, 36), SRC + "fab-harvesting", "Lite SMs required (33 harvested, 36 whole die)"),
    ]


def _cost_assumptions(pair) -> list[Assumption]:
    return [
        _num(pair, "B:fab.optics_cost_per_gbps_usd", 0.78, 4.0, SRC + "fab-cpo-cost", "Lite co-packaged optics (median, USD per GB/s)"),
        _num(pair, "B:fab.package_cost_area_exponent", 0.66, 2.0, SRC + "fab-package-law", "Lite package's area exponent (median; $300 .. 750 x 0.25^2)"),
        _num(pair, "B:fab.test_cost_area_exponent", 0.5, 1.5, SRC + "fab-package-law", "Lite test's area exponent (median; $450 .. 900 x 0.25^1.5)"),
        _num(pair, "B:fab.assembly_yield", 0.96, 0.995, SRC + "fab-assembly-yield", "Lite assembly yield"),
        _num(pair, "fab.defect_density_per_cm2", 0.05, 0.3, SRC + "fab-defect-density", "defect density D0 (median, /cm²)"),
    ]


def _blast_assumptions(pair) -> list[Assumption]:
    return [
        _num(pair, "B:reliability.swap_hours", 0.05, 4.0, SRC + "rel-hot-spare-swap", "Lite spare swap (hours)"),
        _num(pair, "A:reliability.swap_hours", 2.0, 4.0, SRC + "rel-technician-swap", "H100 technician swap (hours)"),
        _num(pair, "cluster.reshard_hours", 0.02, 1.0, SRC + "rel-reshard-time", "re-layout after losing GPUs (hours)"),
        _num(pair, "B:reliability.components.optics.afr", 0.001, 0.0068, SRC + "rel-cpo-mtbf", "Lite optical engine failures (per unit-year)"),
        _num(pair, "B:reliability.components.laser.afr", 0.00044, 0.0088, SRC + "rel-laser-els",
             "Lite external laser failures (per laser-year; 50-1,000 FIT)"),
        _lite_domain(pair),
    ]


def _lite_efficiencies(pair) -> list[Assumption]:
    """The Lite's own memory and compute efficiency medians, from the fp8 table's low end
    to the bf16 table's kernel ceiling."""
    return [
        _num(pair, "B:workload.memory_efficiency", 0.52, 0.88, SRC + "roof-calibration", "Lite memory efficiency (median)"),
        _num(pair, "B:workload.compute_efficiency", 0.33, 0.71, SRC + "roof-calibration", "Lite compute efficiency (median)"),
    ]


def _lite_domain(pair) -> Assumption:
    """The Lite's scale-up domain: the instance (shipped "auto", the paper's premise) down
    to 8 GPUs, the H100's copper NVLink domain by package count (an ordered choice)."""
    return _choice(pair, "B:" + DOMAIN_KEY, (8, 16, 32), SRC + "roof-scale-up-domain", "Lite scale-up domain (GPUs; 32 = the instance)")


def _mix(pair) -> Assumption:
    """The workload mix as a whole: no request classes (shipped) or a shipped study's mix
    (a nominal choice: any switch moves 1)."""
    return _choice(pair, MIX_KEY, MIXES, SRC + "paper-nearest-world", "workload mix (none = one request length; a shipped study's classes)",
                   ordered=False)


def _request_lengths(pair) -> list[Assumption]:
    """Output and prompt tokens per request, over the Azure 2023 trace's span of class means
    and the long-context and long-answer cases beside it."""
    return [
        _num(pair, "workload.output_tokens", 128.0, 2048.0, SRC + "mix-azure-2023", "output tokens per request"),
        _num(pair, "workload.prompt_tokens", 512.0, 8192.0, SRC + "mix-azure-2023", "prompt tokens per request"),
    ]


def _overlap(pair) -> Assumption:
    """The share of communication overlapped with compute, none to all."""
    return _num(pair, "workload.comm_overlap", 0.0, 1.0, SRC + "roof-overlap", "communication overlapped with compute")


def _tpot_slo(pair) -> Assumption:
    """The TPOT SLO, from an interactive 20 ms to a batch-like 200 ms."""
    return _num(pair, "workload.tpot_slo_ms", 20.0, 200.0, SRC + "roof-slo", "TPOT SLO (ms)")


def _precision(pair) -> Assumption:
    """bf16 (shipped) or fp8 weights and KV with twice the peak FLOP/s."""
    return _choice(pair, PRECISION_KEY, ("bf16", "fp8"), SRC + "paper-nearest-world", "precision (fp8: 1 byte, 2x peak)")


def _power_assumptions(pair) -> list[Assumption]:
    return [
        _num(pair, "B:gpu.dvfs_scale", 0.6, 1.0, SRC + "power-dvfs", "Lite operating point s (FLOP/s x s, dynamic power x s^3)"),
        _num(pair, "B:gpu.link_pj_per_bit", 2.0, 10.0, SRC + "power-link-energy", "Lite link energy (pJ/bit)"),
        _num(pair, "B:econ.pue", 1.05, 1.3, SRC + "econ-power-pue", "Lite facility PUE (lighter cooling)"),
        _num(pair, "B:gpu.idle_w", 10.0, 25.0, SRC + "power-idle", "Lite idle power (median, W)"),
        *_lite_efficiencies(pair),
        _mix(pair),
    ]


def _performance_assumptions(pair) -> list[Assumption]:
    return [
        _num(pair, "B:gpu.hbm_tbps", 0.84, 1.68, SRC + "derive-hbm3", "Lite HBM bandwidth (TB/s; 1-2 HBM3 stacks)"),
        _num(pair, "B:gpu.hbm_gb", 20.0, 40.0, SRC + "derive-hbm3", "Lite HBM capacity (GB; 1-2 stacks)"),
        *_lite_efficiencies(pair),
        _tpot_slo(pair),
        *_request_lengths(pair),
        _overlap(pair),
        _precision(pair),
        _lite_domain(pair),
        _mix(pair),
    ]


def _verdict_assumptions(pair) -> list[Assumption]:
    return [
        _num(pair, "B:fab.optics_cost_per_gbps_usd", 0.78, 4.0, SRC + "fab-cpo-cost", "Lite co-packaged optics (median, USD per GB/s)"),
        _num(pair, "B:econ.optical_port_cost_per_gbps_usd", 0.0, 23.4375, SRC + "econ-scale-up-fabric",
             "Lite optical scale-up switch port (USD per GB/s; $0 passive fabric .. an 800G Ethernet switch port)"),
        _num(pair, "B:econ.host_cost_usd", 8000.0, 16000.0, SRC + "econ-host-cost", "Lite host of 16 (USD)"),
        _num(pair, "B:fab.test_cost_area_exponent", 0.5, 1.5, SRC + "fab-package-law", "Lite test's area exponent (median; $450 .. 900 x 0.25^1.5)"),
        *_lite_efficiencies(pair),
        _overlap(pair),
        *_request_lengths(pair),
        _tpot_slo(pair),
        _num(pair, "workload.ttft_slo_ms", 450.0, 6000.0, SRC + "paper-nearest-world", "TTFT SLO (ms)"),
        _precision(pair),
        _choice(pair, MARKUP_KEY, MARKUP_SCOPES, SRC + "econ-markup-scope", "parts the markup multiplies (the markup re-fitted to the H100's price)"),
        _lite_domain(pair),
        _mix(pair),
    ]


def _on_70b(a: str, b: str) -> Callable[[], tuple[Scenario, Scenario]]:
    from .performance import SWEEP_MODEL, on_model

    return lambda: (on_model(scenario(a), SWEEP_MODEL), on_model(scenario(b), SWEEP_MODEL))


def _reshard_pair() -> tuple[Scenario, Scenario]:
    from .blast_radius import RESHARD

    a, b = _on_70b("h100", "lite-h100")()
    return variant(a, f"{a.name}.reshard", [RESHARD]), variant(b, f"{b.name}.reshard", [RESHARD])


def _yield_score(ca, cb, a, b):
    return cb["die_yield"] / ca["die_yield"] - 1.0


def _cost_score(ca, cb, a, b):
    return 1.0 - (cb["gpu_cost_usd"] / b.gpu.h100_equivalents.value) / (ca["gpu_cost_usd"] / a.gpu.h100_equivalents.value)


def _blast_score(ca, cb, a, b):
    from .blast_radius import lost_ratio

    return lost_ratio({"a": ca, "b": cb}, "a", "b")


def facility_joules(cols: dict, s: Scenario) -> np.ndarray:
    """Energy per output token at the wall: the GPUs' ``energy_j_per_token`` x the site's PUE."""
    return cols["energy_j_per_token"] * _median(s, "econ.pue")


def _power_score(ca, cb, a, b):
    return paired_ratio(facility_joules(ca, a), facility_joules(cb, b)) - 1.0


def _performance_score(ca, cb, a, b):
    return paired_ratio(cb["tokens_per_s_per_h100_equivalent"], ca["tokens_per_s_per_h100_equivalent"])


def _verdict_score(ca, cb, a, b):
    return paired_ratio(ca["cost_per_mtok_usd"], cb["cost_per_mtok_usd"])


#: Claim key -> its search. The figures: claim 4's is the perf-per-watt gain at the wall
#: (PUE per design, equal as shipped), the others the claim's own figure. Points per
#: world: the fab-only claims' points cost milliseconds, so theirs is large; claim 3's 150
#: covers its three scale-up domain levels (108 points when none holds); the others keep
#: the whole study within 10 minutes on two cores.
CLAIM_WORLDS = {
    "yield": ClaimWorld(0.41, lambda: (scenario("h100"), scenario("lite-h100")), _yield_score, _yield_assumptions, True,
                        "wafer-yield gain Y_lite / Y_h100 - 1", max_points=1000),
    "cost": ClaimWorld(0.32, lambda: (scenario("h100"), scenario("lite-h100")), _cost_score, _cost_assumptions, True,
                       "1 - fab cost per H100-equivalent (Lite / H100)", max_points=1000),
    "blast_radius": ClaimWorld(8.0, _reshard_pair, _blast_score, _blast_assumptions, False,
                               "capacity-time lost H100 / Lite, both on 'reshard'", trials=16, max_points=150),
    "power": ClaimWorld(0.19, _on_70b("h100", "lite-h100-2x"), _power_score, _power_assumptions, False,
                        "perf-per-watt gain at the wall (J x PUE), h100 / lite-h100-2x - 1"),
    "performance": ClaimWorld(1.0, _on_70b("h100", "lite-h100-2x"), _performance_score, _performance_assumptions, False,
                              "tokens/s per H100-equivalent, lite-h100-2x / h100", max_points=300),
    # not a claim of the paper: the case study's question, whether the 2x-link Lite serves
    # a token for less (mcengine.paper.VERDICT)
    "verdict": ClaimWorld(1.0, lambda: (scenario("h100"), scenario("lite-h100-2x")), _verdict_score, _verdict_assumptions, False,
                          "cost per M output tokens, h100 / lite-h100-2x (>= 1: the Lite no dearer)", max_points=300),
}

def budget(settings: Settings, trials: int = 256, max_points: int = 200) -> Budget:
    """The search's budget for this run of the study (``quick``: a smoke test): at most
    ``trials`` paired trials per point (fewer when the study runs fewer), a 16-point
    screen, 5 SLSQP iterations per start, at most ``max_points`` points per reported world."""
    if settings.quick:
        return Budget(trials=min(settings.trials, 16), seed=settings.seed, screen=4, maxiter=2, ray_points=3, max_points=10)
    return Budget(trials=min(settings.trials, trials), seed=settings.seed, screen=16, maxiter=5, ray_points=6, max_points=max_points)


def confirm_trials(settings: Settings, world: ClaimWorld) -> int:
    """The number of paired trials that confirm each reported world: the claim's
    ``confirm_trials`` (fewer when the study runs fewer; twice the search's with
    ``quick``). They are the trials that follow the search's (:func:`search`), so none
    of them chose the world."""
    return min(settings.trials, 2 * budget(settings).trials if settings.quick else world.confirm_trials)


def columns(runs: list[Scenario], settings: Settings, memo: dict, fab_only: bool, trial_start: int = 0) -> dict[str, dict[str, np.ndarray]]:
    """Per-trial columns of ``runs`` (trials ``trial_start .. trial_start +
    settings.trials - 1``), the chain's or the fab stage's alone, with ``memo`` kept
    across the calls of one search: a stage whose inputs did not move
    (:func:`mcengine.pipeline.fab_key`,
    :func:`~mcengine.pipeline.reliability_key`, :func:`~mcengine.pipeline.roofline_key`)
    is computed once per search, as one chunk of the chain shares it between scenarios;
    the plan evaluations of a roofline key this call does not read are dropped (a
    search's moved worlds seldom recur, the shipped pair's do), so the memo stays about
    one call's size over hundreds of points. The numbers are the chain's: the same seed,
    trials and drawn inputs."""
    from ..pipeline import fab_key, reliability_key, roofline_key, run_block, share_lifetimes
    from ..scenario.sampling import draw_inputs, run_sampler

    if fab_only:
        out = {}
        for s in runs:
            key = ("fab columns", fab_key(s), s.gpu)
            if key not in memo:
                memo[key] = fab_columns(s, settings, trial_start)
            out[s.name] = memo[key]
        return out
    sampler, shared = run_sampler(runs), {}
    inputs = {s.name: draw_inputs(s, settings.seed, trial_start, settings.trials, sampler, shared) for s in runs}
    fresh = [s for s in runs if reliability_key(s) not in memo]
    if fresh:
        share_lifetimes(tuple(fresh), inputs, settings.seed, memo)
    used = {roofline_key(s, inputs[s.name]) for s in runs}
    for key in [k for k in memo if k[0] == "roofline" and k not in used]:
        del memo[key]
    return {s.name: run_block(s, settings.seed, trial_start, settings.trials, inputs=inputs[s.name], memo=memo) for s in runs}


def scorer(world: ClaimWorld, pair: tuple[Scenario, Scenario], shipped: tuple[dict, dict], settings: Settings,
           trial_start: int = 0) -> Callable[[list[dict]], list[np.ndarray]]:
    """``score(worlds)``: every world's per-trial score from one paired run of all of them
    on ``settings.trials`` trials from ``trial_start``."""
    memo: dict = {}

    def score(worlds: list[dict]) -> list[np.ndarray]:
        pairs, runs = _pairs(worlds, pair, shipped)
        cols = columns(runs, settings, memo, world.fab_only, trial_start)
        return [world.score(cols[a.name], cols[b.name], a, b) for a, b in pairs]

    return score


#: A search says how far it has got every this many points evaluated.
NOTE_EVERY_POINTS = 25


def _noting(score, key: str, settings: Settings):
    """``score`` that also notes (``settings.note``) the points evaluated so far, every
    :data:`NOTE_EVERY_POINTS`, with the seconds since the search began."""
    start, done = time.perf_counter(), [0]

    def noted(worlds: list[dict]) -> list[np.ndarray]:
        before = done[0]
        done[0] += len(worlds)
        if done[0] // NOTE_EVERY_POINTS > before // NOTE_EVERY_POINTS:
            settings.note(f"nearest world: {key}: {done[0]} points evaluated ({time.perf_counter() - start:.0f} s)")
        return score(worlds)

    return noted


def search(key: str, settings: Settings) -> dict:
    """The nearest worlds of claim ``key`` (:func:`mcengine.paper.nearest.nearest_worlds`)
    with the claim's declared assumptions, searched on trials ``0 .. b.trials - 1`` and
    confirmed on the :func:`confirm_trials` trials that follow them (disjoint, so the
    confirmation is free of the search's winner's curse; ``confirm_trial_start`` says
    where they start); ``{}`` for a claim without a search."""
    if key not in CLAIM_WORLDS:
        return {}
    world = CLAIM_WORLDS[key]
    settings.note(f"nearest world: {key}")
    pair = world.pair()
    assumptions = world.assumptions(pair)
    b = budget(settings, world.trials, world.max_points)
    small = Settings(trials=b.trials, seed=settings.seed, quick=settings.quick)
    large = Settings(trials=confirm_trials(settings, world), seed=settings.seed, quick=settings.quick)
    shipped = split({a.key: a.shipped for a in assumptions})
    out = nearest_worlds(assumptions, _noting(scorer(world, pair, shipped, small), key, settings), world.threshold, b,
                         confirm=scorer(world, pair, shipped, large, trial_start=b.trials))
    out["confirm_trial_start"] = b.trials if out["worlds"] else None
    out["figure"] = world.figure
    out["scenarios"] = [s.name for s in pair]
    return out

