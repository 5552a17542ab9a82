"""The verdict map: the verdict in each cell of the grid of structural readings
(docs/verdict-map.md).

A *reading* is a modelling choice nobody has measured for both designs (how the vendor
prices a GPU, what an optical scale-up port costs), named with its options; each option
is a list of ``--set`` overrides applied to every scenario of the run, the first option
(no overrides) the shipped reading. A new reading is one :func:`register` call.

The grid is the product of the registered readings' options. Each cell runs the same
scenarios with the same seed and trials under its overrides, so the cells share their
trials' uniforms (common random numbers across cells as across designs), and reports per
pair ``B / A`` the median paired ratio of cost per output token and P(B cheaper). Its run
time is cells x trials per cell x scenarios (:func:`cell_count`).

Weights, given per option (``reading.option=w``; an option not given weighs 1, a cell the
product of its options' weights, normalised over the grid), give a total: the mixture of
the cells, P(B cheaper) = sum of w x P(cell) and the median of the pooled per-trial ratios,
each trial weighted by its cell's weight over the cell's trials.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from ..errors import InputError, Problem

#: The cost metric of the map (the verdict's).
COST = "cost_per_mtok_usd"


@dataclass(frozen=True)
class Option:
    """One option of a reading: its name, its ``--set`` overrides and what it means."""

    name: str
    overrides: tuple[str, ...]
    meaning: str


@dataclass(frozen=True)
class Reading:
    """A structural choice and its options (the first, with no overrides, is shipped)."""

    name: str
    meaning: str
    options: tuple[Option, ...]


#: The registered readings, by name, in the map's order.
READINGS: dict[str, Reading] = {}


def register(reading: Reading) -> Reading:
    """Add ``reading`` to the map's grid (its first option must be the shipped one)."""
    if reading.options[0].overrides:
        raise ValueError(f"reading {reading.name}: the first option is the shipped reading (no overrides)")
    READINGS[reading.name] = reading
    return reading


register(Reading("markup", "How the vendor prices a GPU (econ.markup_scope, docs/model.md#markup-scope)", (
    Option("per_part", (), "econ.gpu_markup on the parts in econ.markup_applies_to (die, packaging, test)"),
    Option("package", ('econ.markup_scope="package"',), "a gross margin on the whole package, econ.package_markup"),
    Option("value", ('econ.markup_scope="value"',), "value pricing per FLOP: the H100's street price per H100-equivalent"),
)))
register(Reading("port", "What the Lite's optical scale-up port costs per GB/s (econ.scale_up_fabric, docs/model.md#port-kind)", (
    Option("optical_own", (), "the optical fabric's own range, econ.optical_port_cost_per_gbps_usd"),
    Option("electrical_equal", ('econ.scale_up_fabric="electrical"',), "the H100's electrical NVSwitch price per GB/s"),
)))

register(Reading("die_faults", "Whether the die's fault rates shrink with its area (docs/sources.md#rel-die-area-scaling)", (
    Option("per_area", (), "the die class scales with die area (the Lite's a quarter of the H100's)"),
    # the H100's die rates (configs/h100.toml, reliability.components.die) for every package
    Option("per_package", ("reliability.components.die.afr=0.025", "reliability.components.die.transient_afr=0.044"),
           "every package's die faults at the H100's rates: NVLink, driver, GSP faults per package"),
)))

register(Reading("memory", "Each design's HBM: as typed, or a whole number of real stacks (gpu.hbm_part, docs/model.md#hbm-part)", (
    Option("typed", (), "gpu.hbm_gb and gpu.hbm_tbps as given (the Lite's 20 GB at 0.84 TB/s, a quarter of the H100's)"),
    Option("hbm3_stacks", ('gpu.hbm_part="hbm3-h100"',), "fab.hbm_stacks HBM3 stacks as the H100 runs them, 16 GB at 0.67 TB/s each"),
)))


def cell_count(readings: dict[str, Reading] | None = None) -> int:
    """Cells of the grid: the product of the readings' option counts."""
    return math.prod(len(r.options) for r in (readings or READINGS).values())


def cells(readings: dict[str, Reading] | None = None) -> list[dict]:
    """The grid: per cell ``{"readings": {reading: option}, "overrides": [...]}``, the
    shipped cell first."""
    readings = readings or READINGS
    out = []
    for combo in itertools.product(*(r.options for r in readings.values())):
        out.append({"readings": {r: o.name for r, o in zip(readings, combo)}, "overrides": [s for o in combo for s in o.overrides]})
    return out


def parse_weights(texts, readings: dict[str, Reading] | None = None) -> dict[tuple[str, str], float]:
    """``{(reading, option): weight}`` from ``reading.option=w`` texts; a problem (exit 2)
    names each text that is not one, an unknown reading or option, or a weight that is
    not a finite number >= 0."""
    readings = readings or READINGS
    out, problems = {}, []
    for text in texts:
        name, eq, value = str(text).partition("=")
        reading, _, option = name.partition(".")
        known = {o.name for o in readings[reading].options} if reading in readings else set()
        try:
            w = float(value)
        except ValueError:
            w = float("nan")
        if not eq or option not in known:
            allowed = ", ".join(f"{r}.{o.name}" for r in readings.values() for o in r.options)
            problems.append(Problem("--map-weight", text, f"allowed: READING.OPTION=W with READING.OPTION one of {allowed}"))
        elif not (math.isfinite(w) and w >= 0.0):
            problems.append(Problem("--map-weight", text, "allowed: a weight that is a finite number >= 0"))
        else:
            out[(reading, option)] = w
    if problems:
        raise InputError(problems)
    return out


def cell_weights(grid: list[dict], weights: dict[tuple[str, str], float]) -> np.ndarray:
    """Each cell's weight: the product of its options' weights (1 when not given),
    normalised to sum to 1; a problem when every cell weighs 0."""
    w = np.array([math.prod(weights.get((r, o), 1.0) for r, o in c["readings"].items()) for c in grid])
    if w.sum() <= 0.0:
        raise InputError(Problem("--map-weight", sorted(f"{r}.{o}={v:g}" for (r, o), v in weights.items()), "allowed: weights that leave a cell above 0"))
    return w / w.sum()


def cell_verdict(doc: dict) -> dict:
    """``{pair: {"cost_ratio": median, "p_cheaper": P}}`` of one cell's run document."""
    return {pair: {"cost_ratio": m[COST]["ratio"]["p50"], "p_cheaper": m[COST]["p_b_below_a"]}
            for pair, m in doc.get("paired_all", {}).items() if COST in m}


def paired_ratios(table, doc: dict) -> dict[str, np.ndarray]:
    """``{pair: B / A per trial}`` of one cell's per-trial table, over the trials in which
    both sides serve tokens (a finite, positive cost), as the run's ratios."""
    base = doc["baseline"]
    costs = table.pivot(index="trial", columns="scenario", values=COST)
    out = {}
    for pair in cell_verdict(doc):
        a, b = costs[base].to_numpy(float), costs[pair.split(" / ")[0]].to_numpy(float)
        ok = np.isfinite(a) & np.isfinite(b) & (a > 0) & (b > 0)
        out[pair] = b[ok] / a[ok]
    return out


def weighted_median(values: list[np.ndarray], weights: np.ndarray) -> float:
    """Median of the pooled ``values``, each array's entries sharing its weight equally:
    the smallest value whose cumulative weight reaches one half."""
    x = np.concatenate(values)
    w = np.concatenate([np.full(len(v), wt / len(v)) if len(v) else np.zeros(0) for v, wt in zip(values, weights)])
    order = np.argsort(x, kind="stable")
    cum = np.cumsum(w[order])
    return float(x[order][np.searchsorted(cum, 0.5 * cum[-1])])


def document(grid: list[dict], verdicts: list[dict], ratios: list[dict], weights: np.ndarray | None, trials: int) -> dict:
    """The ``verdict_map`` JSON: the readings, the trials per cell, each cell's readings
    and verdict per pair, and with ``weights`` the weighted total per pair."""
    doc = {"readings": {r.name: {"meaning": r.meaning, "options": {o.name: {"meaning": o.meaning, "set": list(o.overrides)} for o in r.options}}
                        for r in READINGS.values()},
           "trials_per_cell": trials,
           "cells": [{"readings": c["readings"], "verdict": v} for c, v in zip(grid, verdicts)]}
    if weights is not None:
        pairs = verdicts[0].keys()
        doc["weights"] = [float(w) for w in weights]
        doc["total"] = {pair: {"cost_ratio": weighted_median([r[pair] for r in ratios], weights),
                               "p_cheaper": float(sum(w * v[pair]["p_cheaper"] for w, v in zip(weights, verdicts)))} for pair in pairs}
    return doc
