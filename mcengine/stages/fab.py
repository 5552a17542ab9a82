"""Fab stage: wafers, defects, harvesting and packaging → cost per good GPU package.

Two entry points (ARCHITECTURE.md "Fab"; INTERFACE.md ``mcengine yield``):

* :func:`yield_study` (``mcengine yield --wafers N``): N independent wafers, wafer ``w``
  with the scenario's uncertain inputs drawn as trial ``w`` (``draw_inputs``), summarised
  over wafers and set beside the closed forms at the median inputs;
* :func:`production_runs` (the chained run): trial ``t`` is one production run that makes
  wafers until ``scenario.total_gpus`` good packages have passed assembly, with trial
  ``t``'s inputs; its cost per good package is the run's spend over its good packages.

Cost of a good package (run ``t`` or the long-run expectation, docs/sources.md#fab-h100-cost)::

    gpu_cost = (wafers * wafer_cost + attempts * (hbm_stacks * stack_cost / stack_yield
                + package + test)) / good_packages + optics

with ``attempts`` = good dies (every good die is assembled; a failed assembly scraps the
die and its bonded stacks). Per wafer this is
:func:`mcengine.analytic.fab.cost_per_good_package`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..analytic import fab as analytic
from ..errors import InputError, NumericalError, Problem
from ..results import BLOCK_TRIALS, Summary
from ..scenario.sampling import TrialInputs, draw_inputs, quantile_inputs
from ..validation import Check
from .fab_geometry import WaferMap, scenario_wafer_map, wafer_map

#: Wafers per kernel call in a yield study (bounds the per-call arrays).
CHUNK_WAFERS = 1 << 16
#: A production run that has not reached its target after this many wafers is reported
#: as infeasible (NumericalError) instead of running on.
MAX_WAFERS_PER_RUN = 100_000

#: Per-wafer (or per-trial) inputs read from TrialInputs, by kernel argument name.
_KERNEL_INPUTS = {
    "density": "fab.defect_density_per_cm2",
    "clustering": "fab.defect_clustering",
    "edge_ratio": "fab.defect_edge_ratio",
    "unit_fraction": "fab.unit_area_fraction",
}
_COST_INPUTS = ("wafer_cost_usd", "hbm_stack_cost_usd", "hbm_stack_yield", "assembly_yield",
                "package_cost_usd", "test_cost_usd", "optics_cost_usd")


@dataclass(frozen=True, eq=False)
class FabModel:
    """The structural (per-scenario, not per-trial) part of the fab stage."""

    wafer: WaferMap
    units: int
    spares: int
    table: np.ndarray
    hbm_stacks: int
    h100_equivalents: float
    target_packages: int


@lru_cache(maxsize=64)
def _table(units: int, spares: int) -> np.ndarray:
    from ..kernels.fab import TABLE_MAX_DEFECTS, harvest_table

    return harvest_table(units, spares, TABLE_MAX_DEFECTS)


def fab_model(scenario) -> FabModel:
    """Wafer map, harvesting table and package structure of a scenario."""
    f = scenario.fab
    spares = f.units_per_die - f.units_required
    if spares < 0:
        raise InputError(Problem("fab.units_required", f.units_required, f"allowed: at most fab.units_per_die = {f.units_per_die}"))
    return FabModel(
        wafer=scenario_wafer_map(scenario), units=f.units_per_die, spares=spares,
        table=_table(f.units_per_die, spares), hbm_stacks=f.hbm_stacks,
        h100_equivalents=float(scenario.gpu.h100_equivalents.value), target_packages=scenario.total_gpus,
    )


class _BlockFeeder:
    """Feeds a :class:`~mcengine.results.Summary` whole blocks of ``BLOCK_TRIALS``
    values whatever the chunks it is given (e.g. the wafers with a good die of each
    chunk), so the summary's bits do not depend on the chunk size."""

    def __init__(self, name: str):
        self.name = name
        self.summary = Summary()
        self.pending = np.empty(0)

    def add(self, values: np.ndarray) -> None:
        values = np.concatenate([self.pending, np.asarray(values, dtype=float)])
        whole = values.size - values.size % BLOCK_TRIALS
        self.summary.add(values[:whole], self.name)
        self.pending = values[whole:]

    def to_dict(self) -> dict:
        self.summary.add(self.pending, self.name)
        self.pending = np.empty(0)
        return self.summary.to_dict()


def _check_seed(seed) -> np.uint64:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) < 2**64:
        raise InputError(Problem("--seed", seed, "allowed: an integer in [0, 2**64)"))
    return np.uint64(seed)


def _kernel_arrays(inputs: TrialInputs) -> dict[str, np.ndarray]:
    return {arg: np.ascontiguousarray(inputs[key], dtype=np.float64) for arg, key in _KERNEL_INPUTS.items()}


def _costs(inputs: TrialInputs) -> dict[str, np.ndarray]:
    return {name: np.asarray(inputs[f"fab.{name}"], dtype=np.float64) for name in _COST_INPUTS}


def _attempt_cost_usd(model: FabModel, c: dict[str, np.ndarray]) -> np.ndarray:
    """Spend per assembly attempt besides the die: stacks, package, test (USD)."""
    return model.hbm_stacks * c["hbm_stack_cost_usd"] / c["hbm_stack_yield"] + c["package_cost_usd"] + c["test_cost_usd"]


def simulate_wafer_block(model: FabModel, inputs: TrialInputs, seed: int, spatial: bool = False):
    """Wafers ``inputs.trial_start ..`` with per-wafer inputs (one wafer per trial row).

    Parameters
    ----------
    spatial : bool
        Use the reference twin that places every defect on the disc
        (:func:`mcengine.kernels.fab.simulate_wafers_spatial`) instead of the per-die
        kernel.

    Returns
    -------
    good, harvested : int64[n]
        Good dies per wafer and how many of them carry defects (harvested).
    """
    from ..kernels.fab import simulate_wafers, simulate_wafers_spatial

    a = _kernel_arrays(inputs)
    w = model.wafer
    key = _check_seed(seed)
    if spatial:
        return simulate_wafers_spatial(
            key, inputs.trial_start, a["density"], a["clustering"], a["edge_ratio"], a["unit_fraction"],
            w.radius_mm, w.die_w_mm, w.die_h_mm, w.pitch_x_mm, w.pitch_y_mm, w.x0_mm, w.y0_mm, w.j_first,
            w.rows, w.dies, model.units, model.spares)
    good, harvested, _uniforms = simulate_wafers(
        key, inputs.trial_start, a["density"], a["clustering"], a["edge_ratio"], a["unit_fraction"],
        w.die_area_cm2, w.r2_fraction, model.units, model.spares, model.table)
    return good, harvested


def _median_inputs(scenario) -> dict[str, float]:
    q = quantile_inputs(scenario, 0.5)
    return {key.removeprefix("fab."): float(q[key][0]) for key in q.values if key.startswith("fab.")}


def analytic_at_median(scenario, model: FabModel | None = None) -> dict:
    """Closed forms at the median inputs: the five whole-die yields, the harvesting
    yield of the scenario's die model, and the expected costs built on the latter."""
    model = model or fab_model(scenario)
    med = _median_inputs(scenario)
    area = model.wafer.die_area_cm2
    m = area * med["defect_density_per_cm2"]
    yields = analytic.closed_form_yields(m, med["defect_clustering"])
    harvest = analytic.harvest_yield(area, med["defect_density_per_cm2"], med["defect_clustering"], model.units,
                                     model.units - model.spares, med["unit_area_fraction"],
                                     model.wafer.weights(med["defect_edge_ratio"]))
    good = model.wafer.dies * harvest
    gpu = analytic.cost_per_good_package(med["wafer_cost_usd"], good, model.hbm_stacks, med["hbm_stack_cost_usd"],
                                         med["hbm_stack_yield"], med["package_cost_usd"], med["test_cost_usd"],
                                         med["assembly_yield"], med["optics_cost_usd"])
    return {
        "yields": {**yields, "harvesting": harvest},
        "cost": {"good_dies_per_wafer": good, "cost_per_good_die_usd": med["wafer_cost_usd"] / good, "gpu_cost_usd": gpu},
        "median_inputs": {"defect_density_per_cm2": med["defect_density_per_cm2"],
                          "defect_clustering": med["defect_clustering"], "die_defects_mean": m},
    }


def yield_study(scenario, wafers: int, seed: int) -> dict:
    """Body of ``mcengine yield``: ``wafers`` wafers at the scenario's inputs.

    Wafer ``w`` draws the scenario's uncertain inputs as trial ``w`` of
    :func:`~mcengine.scenario.sampling.draw_inputs` and its defects from stream
    ``(seed, STAGE_FAB, STREAM_WAFER, w)``; wafers run in chunks of
    :data:`CHUNK_WAFERS` (same numbers whatever the chunking or thread count).

    Returns
    -------
    dict
        ``dies_per_wafer`` (exact grid count), ``dies_per_wafer_formula`` (classic
        approximation, reference only), summaries over wafers of ``die_yield``,
        ``good_dies_per_wafer``, ``good_h100_equivalents_per_wafer``, and over wafers
        with at least one good die of ``cost_per_good_die_usd`` and ``gpu_cost_usd``;
        ``wafers_without_good_dies``; ``harvested_share`` (good dies that carry
        defects); ``pooled`` long-run ratios (total spend / total good output);
        ``analytic`` (the five named whole-die yields and ``harvesting`` at the median
        inputs), ``analytic_cost`` and ``median_inputs``.
    """
    if isinstance(wafers, bool) or not isinstance(wafers, (int, np.integer)) or wafers < 1:
        raise InputError(Problem("--wafers", wafers, "allowed: a positive integer"))
    _check_seed(seed)
    model = fab_model(scenario)
    dies = model.wafer.dies
    names = ("die_yield", "good_dies_per_wafer", "good_h100_equivalents_per_wafer", "cost_per_good_die_usd", "gpu_cost_usd")
    sums = {name: _BlockFeeder(f"fab {name}") for name in names}
    total = {"good": 0, "harvested": 0, "empty": 0}
    # per-wafer means of the pooled ratios (block-merged, so chunk-independent)
    money = {name: _BlockFeeder(f"fab {name}") for name in ("wafer_usd", "spend_usd", "packages", "optics_usd")}
    for start in range(0, int(wafers), CHUNK_WAFERS):
        inputs = draw_inputs(scenario, seed, start, min(CHUNK_WAFERS, int(wafers) - start))
        good, harvested = simulate_wafer_block(model, inputs, seed)
        c = _costs(inputs)
        ok = good > 0
        sums["die_yield"].add(good / dies)
        sums["good_dies_per_wafer"].add(good)
        sums["good_h100_equivalents_per_wafer"].add(good * model.h100_equivalents)
        sums["cost_per_good_die_usd"].add(c["wafer_cost_usd"][ok] / good[ok])
        sums["gpu_cost_usd"].add(analytic.cost_per_good_package(
            c["wafer_cost_usd"][ok], good[ok], model.hbm_stacks, c["hbm_stack_cost_usd"][ok], c["hbm_stack_yield"][ok],
            c["package_cost_usd"][ok], c["test_cost_usd"][ok], c["assembly_yield"][ok], c["optics_cost_usd"][ok]))
        total["good"] += int(good.sum())
        total["harvested"] += int(harvested.sum())
        total["empty"] += int((~ok).sum())
        money["wafer_usd"].add(c["wafer_cost_usd"])
        money["spend_usd"].add(c["wafer_cost_usd"] + good * _attempt_cost_usd(model, c))
        money["packages"].add(good * c["assembly_yield"])
        money["optics_usd"].add(c["optics_cost_usd"])
    if total["good"] == 0:
        raise NumericalError(f"fab stage: none of the {wafers} wafers yielded a good die; cost per good die is infinite")
    mean = {name: feeder.to_dict()["mean"] for name, feeder in money.items()}
    at = analytic_at_median(scenario, model)
    w = model.wafer
    f = scenario.fab
    return {
        "dies_per_wafer": dies,
        "dies_per_wafer_formula": analytic.dies_per_wafer_formula(
            f.wafer_diameter_mm.value, f.edge_exclusion_mm.value, w.die_w_mm, w.die_h_mm, f.scribe_mm.value),
        "die_area_mm2": w.die_w_mm * w.die_h_mm,
        **{name: s.to_dict() for name, s in sums.items()},
        "wafers_without_good_dies": total["empty"],
        "harvested_share": total["harvested"] / total["good"],
        "harvesting": {"units_per_die": model.units, "units_required": model.units - model.spares,
                       "enabled": model.spares > 0},
        "pooled": {
            "die_yield": total["good"] / (dies * int(wafers)),
            "cost_per_good_die_usd": mean["wafer_usd"] * int(wafers) / total["good"],
            "gpu_cost_usd": mean["spend_usd"] / mean["packages"] + mean["optics_usd"],
        },
        "analytic": at["yields"],
        "analytic_cost": at["cost"],
        "median_inputs": at["median_inputs"],
    }


def production_runs(scenario, inputs: TrialInputs, seed: int) -> dict[str, np.ndarray]:
    """Per-trial fab columns of the chained run (trial ``t = inputs.trial_start + i``).

    Trial ``t`` simulates, wafer by wafer with its own stream
    ``(seed, STAGE_FAB, STREAM_RUN, t)``, the production run that builds
    ``scenario.total_gpus`` good packages: each wafer draws its density (gamma mixing
    around the trial's ``D0``), its dies are simulated by the per-die kernel, and its
    good dies are assembled (binomial with the trial's assembly yield) until the target
    is reached.

    Returns
    -------
    dict[str, ndarray]
        ``gpu_cost_usd`` (cost per good package of the run, formula in the module
        text), ``cost_per_good_die_usd`` (wafer spend / good dies), ``die_yield``,
        ``good_dies_per_wafer``, ``wafers`` (started), ``good_dies`` (= assembly
        attempts), ``packages`` (good packages, >= the target).

    Raises
    ------
    NumericalError
        When a trial needs more than :data:`MAX_WAFERS_PER_RUN` wafers, naming the
        trial and its drawn fab inputs.
    """
    from ..kernels.fab import simulate_runs

    model = fab_model(scenario)
    a = _kernel_arrays(inputs)
    c = _costs(inputs)
    w = model.wafer
    wafers, good, packages = simulate_runs(
        _check_seed(seed), inputs.trial_start, a["density"], a["clustering"], a["edge_ratio"], a["unit_fraction"],
        np.ascontiguousarray(c["assembly_yield"]), w.die_area_cm2, w.r2_fraction, model.units, model.spares,
        model.table, model.target_packages, MAX_WAFERS_PER_RUN)
    short = np.flatnonzero(packages < model.target_packages)
    if short.size:
        i = int(short[0])
        drawn = {key: float(inputs[key][i]) for key in _KERNEL_INPUTS.values()}
        raise NumericalError(
            f"fab stage, trial {inputs.trial_start + i}: {packages[i]} of {model.target_packages} good packages after "
            f"{MAX_WAFERS_PER_RUN} wafers; the run is infeasible at inputs {drawn}")
    spend = wafers * c["wafer_cost_usd"] + good * _attempt_cost_usd(model, c)
    columns = {
        "gpu_cost_usd": spend / packages + c["optics_cost_usd"],
        "cost_per_good_die_usd": wafers * c["wafer_cost_usd"] / good,
        "die_yield": good / (wafers * w.dies),
        "good_dies_per_wafer": good / wafers,
        "wafers": wafers,
        "good_dies": good,
        "packages": packages,
    }
    for name, values in columns.items():
        bad = ~np.isfinite(values)
        if bad.any():
            i = int(np.argmax(bad))
            drawn = {key: float(inputs[key][i]) for key in (*_KERNEL_INPUTS.values(), *(f"fab.{n}" for n in _COST_INPUTS))}
            raise NumericalError(f"fab stage, trial {inputs.trial_start + i}: {name} is {values[i]} at inputs {drawn}")
    return columns


def render(body: dict):
    """A rich Table of ``mcengine yield``: Monte Carlo beside the closed forms."""
    from rich.table import Table

    def dist(s: dict, fmt: str) -> tuple[str, str]:
        return f"{s['mean']:{fmt}} ± {s['sem']:.2g}", f"{s['p05']:{fmt}} – {s['p95']:{fmt}}"

    an, cost, pooled = body["analytic"], body["analytic_cost"], body["pooled"]
    harvest = body.get("harvesting", {})
    name = body.get("scenario")
    table = Table(title=f"fab stage{f': {name}' if name else ''}, {body.get('wafers', '?')} wafers",
                  caption="MC integrates over the uncertain inputs; closed forms are at the medians; "
                          "the named formulas are whole-die yields without harvesting")
    for col in ("quantity", "MC mean ± sem", "MC p05 – p95", "closed form"):
        table.add_column(col, justify="left" if col == "quantity" else "right")
    table.add_row("dies per wafer (exact)", str(body["dies_per_wafer"]), "",
                  f"{body['dies_per_wafer_formula']:.1f} formula")
    model = (f"{harvest.get('units_required')}/{harvest.get('units_per_die')} units"
             if harvest.get("enabled") else "no harvesting")
    table.add_row(f"die yield, {model}", *dist(body["die_yield"], ".4f"), f"{an['harvesting']:.4f}")
    for formula in analytic.YIELD_MODELS:
        table.add_row(f"  {formula.replace('_', ' ')}", "", "", f"{an[formula]:.4f}")
    table.add_row("good dies / wafer", *dist(body["good_dies_per_wafer"], ".2f"), f"{cost['good_dies_per_wafer']:.2f}")
    table.add_row("good H100-eq / wafer", *dist(body["good_h100_equivalents_per_wafer"], ".2f"), "")
    table.add_row("cost / good die (USD)", *dist(body["cost_per_good_die_usd"], ",.1f"), f"{cost['cost_per_good_die_usd']:,.1f}")
    table.add_row("  pooled spend / good die", f"{pooled['cost_per_good_die_usd']:,.1f}", "", "")
    table.add_row("GPU package (USD)", *dist(body["gpu_cost_usd"], ",.0f"), f"{cost['gpu_cost_usd']:,.0f}")
    table.add_row("  pooled spend / package", f"{pooled['gpu_cost_usd']:,.0f}", "", "")
    table.add_row("good dies with defects", f"{body['harvested_share']:.3f}", "", "")
    return table


def die_yields(wafer: WaferMap, defect_density_per_cm2: float, clustering: float, units: int, required: int,
               unit_fraction: float, edge_ratio: float = 1.0, wafers: int = 20_000, seed: int = 0,
               spatial: bool = False, wafer_start: int = 0) -> np.ndarray:
    """Per-wafer die yields at fixed inputs (validation and tests): float64[wafers]."""
    model = FabModel(wafer=wafer, units=units, spares=units - required, table=_table(units, units - required),
                     hbm_stacks=0, h100_equivalents=1.0, target_packages=1)
    values = {key: np.full(wafers, v) for key, v in zip(
        _KERNEL_INPUTS.values(), (defect_density_per_cm2, clustering, edge_ratio, unit_fraction))}
    good, _ = simulate_wafer_block(model, TrialInputs(wafer_start, wafers, values), seed, spatial)
    return good / wafer.dies


def _mc_check(name: str, sample: np.ndarray, expected: float, detail: str) -> Check:
    sem = float(sample.std(ddof=1) / math.sqrt(sample.size))
    return Check("fab", name, expected, float(sample.mean()), 4.0 * sem, detail + f"; {sample.size} wafers, tolerance 4 SEM")


def validation_checks() -> list[Check]:
    """Geometry against docs/sources.md#fab-dies-per-wafer and a brute-force grid count; the harvesting
    integral against docs/sources.md#fab-harvesting; Monte Carlo die yields (per-die kernel and the spatial twin)
    against the closed forms, each within 4 SEM."""
    h100 = wafer_map(300, 3, 25.9, 31.4, 0.1)
    lite = wafer_map(300, 3, 12.95, 15.7, 0.1)
    big0 = wafer_map(300, 3, 25.9, 31.4, 0.0)
    checks = [
        Check("fab", "dies per wafer, 25.9x31.4 mm, 3 mm edge, no scribe", 68, big0.dies, 0,
              "exact grid; docs/sources.md#fab-dies-per-wafer"),
        Check("fab", "dies per wafer, 12.95x15.7 mm, 3 mm edge, 0.1 mm scribe", 294, lite.dies, 1,
              "exact grid; docs/sources.md#fab-dies-per-wafer reports 294 (±1 allowed)"),
        Check("fab", "exact grid vs brute-force offset scan, 25.9x31.4 mm", analytic.grid_count_brute(147, 25.9, 31.4, 0.1),
              h100.dies, 1, "brute force: 4-corner test on a 96x96 offset grid"),
        Check("fab", "harvest integral, GH100 132/144 at D0=0.1, alpha=3", 0.853,
              analytic.harvest_yield(8.14, 0.1, 3.0, 144, 132, 0.8), 0.0005, "docs/sources.md#fab-harvesting"),
    ]
    m = h100.die_area_cm2 * 0.1
    checks.append(_mc_check("die yield, Poisson (alpha=inf), no harvesting", die_yields(h100, 0.1, math.inf, 144, 144, 0.8),
                            analytic.poisson_yield(m), "per-die kernel vs exp(-m)"))
    checks.append(_mc_check("die yield, negative binomial alpha=3, no harvesting", die_yields(h100, 0.1, 3.0, 144, 144, 0.8),
                            analytic.negative_binomial_yield(m, 3.0), "per-die kernel vs (1+m/alpha)^-alpha"))
    checks.append(_mc_check("die yield, H100 harvesting 132/144, alpha=3", die_yields(h100, 0.1, 3.0, 144, 132, 0.8),
                            analytic.harvest_yield(h100.die_area_cm2, 0.1, 3.0, 144, 132, 0.8), "per-die kernel vs harvest integral"))
    checks.append(_mc_check("die yield, Lite harvesting 33/36, alpha=3", die_yields(lite, 0.1, 3.0, 36, 33, 0.8),
                            analytic.harvest_yield(lite.die_area_cm2, 0.1, 3.0, 36, 33, 0.8), "per-die kernel vs harvest integral"))
    checks.append(_mc_check("die yield, Lite harvesting 33/36, D0=0.04 (skip-ahead)", die_yields(lite, 0.04, math.inf, 36, 33, 0.8),
                            analytic.harvest_yield(lite.die_area_cm2, 0.04, math.inf, 36, 33, 0.8), "per-die kernel vs harvest integral"))
    checks.append(_mc_check("die yield, spatial twin, H100 harvesting, alpha=3",
                            die_yields(h100, 0.1, 3.0, 144, 132, 0.8, wafers=10_000, spatial=True),
                            analytic.harvest_yield(h100.die_area_cm2, 0.1, 3.0, 144, 132, 0.8), "defects placed on the disc"))
    checks.append(_mc_check("die yield, radial profile rho=3, harvesting", die_yields(h100, 0.1, 3.0, 144, 132, 0.8, edge_ratio=3.0),
                            analytic.harvest_yield(h100.die_area_cm2, 0.1, 3.0, 144, 132, 0.8, h100.weights(3.0)),
                            "per-die kernel vs harvest integral averaged over the dies' exact densities"))
    return checks
