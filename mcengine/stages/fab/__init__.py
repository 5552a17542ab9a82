"""Fab stage: wafers, defects, harvesting and packaging → cost per good GPU package.

Two entry points (docs/model.md#fab; docs/interface.md#json-summaries):

* :func:`yield_summary` (``mcengine yield --wafers N``): N independent wafers, wafer ``w``
  with the scenario's uncertain inputs drawn as trial ``w`` (``draw_inputs``), summarised
  over wafers and set beside the closed forms at the median inputs;
* :func:`production_runs` (the chained run): trial ``t`` is one production run that makes
  wafers until ``scenario.total_gpus`` good packages have passed assembly, with trial
  ``t``'s inputs; its cost per good package is the run's spend over its good packages.

Cost of a good package (run ``t`` or the long-run expectation, docs/sources.md#fab-h100-cost)::

    gpu_cost = (wafers * wafer_cost + attempts * (hbm_stacks * stack_cost / stack_yield
                + package + test)) / good_packages + optics

with ``attempts`` = good dies / ``gpu.dies_per_package`` (every good die is assembled,
``dies_per_package`` to a package; a failed assembly scraps the dies and their bonded
stacks). A package of ``n = gpu.dies_per_package`` dies is laid out as ``n`` dies of the
``[fab]`` die's width / n, each with units / n of which required / n
(docs/sources.md#gen-b200-dies), so its die cost is n good small dies' rather than one
large die's. Per wafer this is
:func:`mcengine.analytic.fab.cost_per_good_package`. The stack price is
``fab.hbm_stack_cost_usd``, or with ``fab.hbm_cost_per_gb_usd`` set
``gpu.hbm_gb / hbm_stacks * hbm_cost_per_gb_usd + hbm_stack_assembly_usd``; the optics are
``optics_cost_usd + optics_cost_per_gbps_usd * gpu.link_gbps`` (docs/model.md#cost).
The five terms of the sum are the package's cost parts (:func:`package_cost_parts`):
``die`` (wafer spend), ``hbm``, ``packaging``, ``test`` and ``optics``, each per good package.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ...analytic import fab as analytic
from ...columns import PACKAGE_PART_COLUMN as PART_COLUMN
from ...errors import InputError, NumericalError, Problem
from ...options import check_seed
from ...scenario.sampling import TrialInputs
from .geometry import WaferMap, scenario_wafer_map

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
#: Inputs outside ``[fab]`` that the package cost reads (per-GB HBM, per-bandwidth optics).
_PRICE_INPUTS = ("gpu.hbm_gb", "gpu.link_gbps", "fab.hbm_cost_per_gb_usd", "fab.hbm_stack_assembly_usd",
                 "fab.optics_cost_per_gbps_usd")


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
    dies_per_package: int = 1


@lru_cache(maxsize=64)
def _table(units: int, spares: int) -> np.ndarray:
    """The harvest table of ``units`` units with ``spares`` spares, cached and so read-only
    (the kernels take a writeable copy: :func:`kernel_table`)."""
    from ...kernels.fab import TABLE_MAX_DEFECTS, harvest_table

    table = harvest_table(units, spares, TABLE_MAX_DEFECTS)
    table.setflags(write=False)
    return table


def kernel_table(model: FabModel) -> np.ndarray:
    """``model.table`` as the fab kernels are compiled for it: a writeable copy of the
    read-only cached table (a read-only array would compile them again)."""
    return np.require(model.table, requirements=["W"])


def fab_model(scenario) -> FabModel:
    """Wafer map, harvesting table and package structure of a scenario: one die of
    ``gpu.dies_per_package``, with that share of the ``[fab]`` units and required units."""
    f = scenario.fab
    n = scenario.gpu.dies_per_package
    units, spares = f.units_per_die // n, (f.units_per_die - f.units_required) // n
    if spares < 0:
        raise InputError(Problem("fab.units_required", f.units_required, f"allowed: at most fab.units_per_die = {f.units_per_die}"))
    return FabModel(
        wafer=scenario_wafer_map(scenario), units=units, spares=spares,
        table=_table(units, spares), hbm_stacks=f.hbm_stacks,
        h100_equivalents=float(scenario.gpu.h100_equivalents.value), target_packages=scenario.total_gpus,
        dies_per_package=n,
    )


def _kernel_arrays(inputs: TrialInputs) -> dict[str, np.ndarray]:
    return {arg: np.ascontiguousarray(inputs[key], dtype=np.float64) for arg, key in _KERNEL_INPUTS.items()}


def hbm_stack_price_usd(scenario, inputs: TrialInputs) -> np.ndarray:
    """Price of one known-good HBM stack per trial (USD, docs/sources.md#fab-hbm-per-gb).

    ``fab.hbm_stack_cost_usd`` when ``fab.hbm_cost_per_gb_usd`` is unset; else the stack's
    capacity (``gpu.hbm_gb / fab.hbm_stacks`` GB) at the per-GB price plus
    ``fab.hbm_stack_assembly_usd``, so a 20 GB stack costs more than a 16 GB one.
    """
    f = scenario.fab
    if f.hbm_cost_per_gb_usd is None or f.hbm_stacks == 0:
        return np.asarray(inputs["fab.hbm_stack_cost_usd"], dtype=np.float64)
    gb_per_stack = np.asarray(inputs["gpu.hbm_gb"], dtype=np.float64) / f.hbm_stacks
    return gb_per_stack * inputs["fab.hbm_cost_per_gb_usd"] + inputs["fab.hbm_stack_assembly_usd"]


def optics_price_usd(inputs: TrialInputs) -> np.ndarray:
    """Co-packaged optics per good package per trial (USD, docs/sources.md#fab-cpo-cost):
    ``fab.optics_cost_usd + fab.optics_cost_per_gbps_usd * gpu.link_gbps``."""
    return np.asarray(inputs["fab.optics_cost_usd"] + inputs["fab.optics_cost_per_gbps_usd"] * inputs["gpu.link_gbps"], dtype=np.float64)


def cost_inputs(scenario, inputs: TrialInputs) -> dict[str, np.ndarray]:
    """The per-trial prices of the package cost, by ``[fab]`` key name; ``hbm_stack_cost_usd``
    and ``optics_cost_usd`` are the effective stack and optics prices
    (:func:`hbm_stack_price_usd`, :func:`optics_price_usd`)."""
    c = {name: np.asarray(inputs[f"fab.{name}"], dtype=np.float64) for name in _COST_INPUTS}
    c["hbm_stack_cost_usd"] = np.broadcast_to(hbm_stack_price_usd(scenario, inputs), (inputs.n,))
    c["optics_cost_usd"] = np.broadcast_to(optics_price_usd(inputs), (inputs.n,))
    return c


def package_cost_parts(model: FabModel, c: dict[str, np.ndarray], wafers, attempts, packages) -> dict[str, np.ndarray]:
    """The cost parts of one good package (USD), in the order of
    :data:`mcengine.scenario.sections.econ.PACKAGE_PARTS`: ``die`` (wafer spend),
    ``hbm`` (stacks bought for every attempt), ``packaging``, ``test`` (per attempt) and
    ``optics`` (per good package), each divided over the good packages. Their sum is
    the module text's ``gpu_cost`` up to rounding."""
    return {
        "die": wafers * c["wafer_cost_usd"] / packages,
        "hbm": attempts * (model.hbm_stacks * c["hbm_stack_cost_usd"] / c["hbm_stack_yield"]) / packages,
        "packaging": attempts * c["package_cost_usd"] / packages,
        "test": attempts * c["test_cost_usd"] / packages,
        "optics": np.array(c["optics_cost_usd"], dtype=np.float64),
    }


def attempt_cost_usd(model: FabModel, c: dict[str, np.ndarray]) -> np.ndarray:
    """Spend per assembly attempt (one package) besides the dies: stacks, package, test (USD)."""
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
    from ...kernels.fab import simulate_wafers, simulate_wafers_spatial

    a = _kernel_arrays(inputs)
    w = model.wafer
    key = np.uint64(check_seed(seed))
    if spatial:
        return simulate_wafers_spatial(
            key, inputs.trial_start, a["density"], a["clustering"], a["edge_ratio"], a["unit_fraction"],
            w.radius_mm, w.die_w_mm, w.die_h_mm, w.pitch_x_mm, w.pitch_y_mm, w.x0_mm, w.y0_mm, w.j_first,
            w.rows, w.dies, model.units, model.spares)
    good, harvested, _uniforms = simulate_wafers(
        key, inputs.trial_start, a["density"], a["clustering"], a["edge_ratio"], a["unit_fraction"],
        w.die_area_cm2, w.r2_fraction, model.units, model.spares, kernel_table(model))
    return good, harvested


def packages_per_wafer_bound(model: FabModel, a: dict[str, np.ndarray], assembly_yield: np.ndarray) -> np.ndarray:
    """An upper bound on the expected good packages per wafer of each trial.

    A die can only be good if its area outside the repairable units is clean; with
    gamma-mixed Poisson defects that has probability ``(1 + D0 A (1 - f) w / alpha)^-alpha``
    (``alpha = inf``: ``exp(-D0 A (1 - f) w)``), largest at the die of least relative
    density ``w`` (the radial profile's minimum). The good packages per wafer are at most
    ``dies x that x assembly yield / dies_per_package``: cheap to evaluate for every trial before a wafer is
    simulated.
    """
    r2 = model.wafer.r2_fraction
    rho = a["edge_ratio"]
    r2_least = np.where(rho >= 1.0, r2.min(), r2.max())
    w_least = (1.0 + (rho - 1.0) * r2_least) / (1.0 + 0.5 * (rho - 1.0))
    m = a["density"] * model.wafer.die_area_cm2 * (1.0 - a["unit_fraction"]) * w_least
    alpha = a["clustering"]
    with np.errstate(over="ignore", divide="ignore"):
        clean = np.where(np.isinf(alpha), np.exp(-m), (1.0 + m / np.where(np.isinf(alpha), 1.0, alpha)) ** -alpha)
    return model.wafer.dies * clean * assembly_yield / model.dies_per_package


def _refuse_infeasible_runs(model: FabModel, inputs: TrialInputs, a: dict[str, np.ndarray], c: dict[str, np.ndarray]) -> None:
    """InputError, before any wafer is simulated, when even the bound of
    :func:`packages_per_wafer_bound` needs more than :data:`MAX_WAFERS_PER_RUN` wafers
    for a trial's run (its fab inputs cannot build the cluster)."""
    bound = packages_per_wafer_bound(model, a, c["assembly_yield"])
    short = np.flatnonzero(bound * MAX_WAFERS_PER_RUN < model.target_packages)
    if short.size:
        i = int(short[0])
        drawn = ", ".join(f"{key} = {float(inputs[key][i]):g}" for key in _KERNEL_INPUTS.values())
        raise InputError(Problem(
            "fab.defect_density_per_cm2", float(inputs["fab.defect_density_per_cm2"][i]),
            f"in trial {inputs.trial_start + i} ({drawn}) at most {bound[i]:.3g} good packages per wafer can be "
            f"expected, so {model.target_packages:,} packages need over {MAX_WAFERS_PER_RUN:,} wafers; allowed: "
            "fab inputs that can build the cluster"))


def check_buildable(scenario, inputs: TrialInputs) -> None:
    """InputError where a trial's fab inputs cannot build the cluster, as the production
    runs would refuse them (:func:`_refuse_infeasible_runs`), for a use of the expected
    package cost in their stead (:func:`mcengine.stages.econ.planning_power_weight`)."""
    _refuse_infeasible_runs(fab_model(scenario), inputs, _kernel_arrays(inputs), cost_inputs(scenario, inputs))


def production_runs(scenario, inputs: TrialInputs, seed: int) -> dict[str, np.ndarray]:
    """Per-trial fab columns of the chained run: :func:`simulate_production` and its
    :func:`package_costs` (trial ``t = inputs.trial_start + i``)."""
    runs = simulate_production(scenario, inputs, seed)
    return {**package_costs(scenario, inputs, runs), **runs}


def simulate_production(scenario, inputs: TrialInputs, seed: int) -> dict[str, np.ndarray]:
    """The production runs of a block of trials, without prices.

    Trial ``t`` simulates, wafer by wafer with its own stream
    ``(seed, STAGE_FAB, STREAM_RUN, t)``, the production run that builds
    ``scenario.total_gpus`` good packages: each wafer draws its density (gamma mixing
    around the trial's ``D0``), its dies are simulated by the per-die kernel, and its
    good dies are assembled (binomial with the trial's assembly yield) until the target
    is reached. It reads ``[fab]`` and the package count only (the memo key of
    :func:`mcengine.pipeline.fab_key`).

    Returns
    -------
    dict[str, ndarray]
        ``cost_per_good_die_usd`` (wafer spend / good dies), ``die_yield``,
        ``good_dies_per_wafer``, ``wafers`` (started), ``good_dies`` (``dies_per_package``
        per assembly attempt), ``packages`` (good packages, >= the target).

    Raises
    ------
    NumericalError
        When a trial needs more than :data:`MAX_WAFERS_PER_RUN` wafers, naming the
        trial and its drawn fab inputs.
    """
    from ...kernels.fab import simulate_runs

    model = fab_model(scenario)
    a = _kernel_arrays(inputs)
    c = {name: np.asarray(inputs[f"fab.{name}"], dtype=np.float64) for name in ("wafer_cost_usd", "assembly_yield")}
    w = model.wafer
    _refuse_infeasible_runs(model, inputs, a, c)
    wafers, good, packages = simulate_runs(
        np.uint64(check_seed(seed)), inputs.trial_start, a["density"], a["clustering"], a["edge_ratio"], a["unit_fraction"],
        np.ascontiguousarray(c["assembly_yield"]), w.die_area_cm2, w.r2_fraction, model.units, model.spares,
        kernel_table(model), model.target_packages, MAX_WAFERS_PER_RUN, model.dies_per_package)
    short = np.flatnonzero(packages < model.target_packages)
    if short.size:
        i = int(short[0])
        drawn = {key: float(inputs[key][i]) for key in _KERNEL_INPUTS.values()}
        raise NumericalError(
            f"fab stage, trial {inputs.trial_start + i}: {packages[i]} of {model.target_packages} good packages after "
            f"{MAX_WAFERS_PER_RUN} wafers; the run is infeasible at inputs {drawn}")
    columns = {
        "cost_per_good_die_usd": wafers * c["wafer_cost_usd"] / good,
        "die_yield": good / (wafers * w.dies),
        "good_dies_per_wafer": good / wafers,
        "wafers": wafers,
        "good_dies": good,
        "packages": packages,
    }
    _check_fab_columns(columns, inputs)
    return columns




def package_costs(scenario, inputs: TrialInputs, runs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The prices of the production runs ``runs`` (:func:`simulate_production`).

    Returns ``gpu_cost_usd`` (cost per good package, formula in the module text) and its
    parts ``gpu_cost_die_usd``, ``gpu_cost_hbm_usd``, ``gpu_cost_packaging_usd``,
    ``gpu_cost_test_usd``, ``gpu_cost_optics_usd`` (:func:`package_cost_parts`).
    """
    model = fab_model(scenario)
    c = cost_inputs(scenario, inputs)
    wafers, packages = runs["wafers"], runs["packages"]
    attempts = runs["good_dies"] // model.dies_per_package
    spend = wafers * c["wafer_cost_usd"] + attempts * attempt_cost_usd(model, c)
    columns = {"gpu_cost_usd": spend / packages + c["optics_cost_usd"]}
    for part, values in package_cost_parts(model, c, wafers, attempts, packages).items():
        columns[PART_COLUMN.format(part)] = values
    _check_fab_columns(columns, inputs)
    return columns


def expected_harvest_yield(model: FabModel, inputs: TrialInputs) -> np.ndarray:
    """Per trial, the expected share of a wafer's dies that are good after harvesting at the
    trial's inputs: the closed form :func:`mcengine.analytic.fab.harvest_yield`
    (docs/sources.md#fab-harvesting) over the wafer map's dies. A loop over trials (an
    integral each): meant for the few trials of a closed-form reference or an advance plan."""

    def one(i: int) -> float:
        at = {key: float(np.broadcast_to(inputs[key], (inputs.n,))[i]) for key in _KERNEL_INPUTS.values()}
        return analytic.harvest_yield(model.wafer.die_area_cm2, at["fab.defect_density_per_cm2"], at["fab.defect_clustering"], model.units,
                                      model.units - model.spares, at["fab.unit_area_fraction"], model.wafer.weights(at["fab.defect_edge_ratio"]))

    return np.array([one(i) for i in range(inputs.n)])


def expected_package_costs(scenario, inputs: TrialInputs, model: FabModel | None = None) -> dict[str, np.ndarray]:
    """The columns of :func:`package_costs` in expectation at each trial's inputs, with no
    production run: :func:`mcengine.analytic.fab.cost_per_good_package` and its parts
    (:func:`~mcengine.analytic.fab.cost_parts_per_good_package`) at
    :func:`expected_harvest_yield`'s good dies per wafer. ``mcengine yield`` sets them
    beside the simulated wafers; a plan chosen before any trial runs weighs them
    (:func:`mcengine.stages.econ.planning_power_weight`). A package of ``n`` dies counts
    ``n`` good dies as one good die of the closed form."""
    model = fab_model(scenario) if model is None else model
    c = cost_inputs(scenario, inputs)
    good = model.wafer.dies * expected_harvest_yield(model, inputs) / model.dies_per_package
    args = (c["wafer_cost_usd"], good, model.hbm_stacks, c["hbm_stack_cost_usd"], c["hbm_stack_yield"], c["package_cost_usd"],
            c["test_cost_usd"], c["assembly_yield"], c["optics_cost_usd"])
    parts = analytic.cost_parts_per_good_package(*args)
    return {"gpu_cost_usd": analytic.cost_per_good_package(*args), **{PART_COLUMN.format(p): v for p, v in parts.items()}}


def _check_fab_columns(columns: dict[str, np.ndarray], inputs: TrialInputs) -> None:
    """NumericalError naming the first non-finite fab column, its trial and drawn inputs."""
    for name, values in columns.items():
        bad = ~np.isfinite(values)
        if bad.any():
            i = int(np.argmax(bad))
            keys = (*_KERNEL_INPUTS.values(), *(f"fab.{n}" for n in _COST_INPUTS), *_PRICE_INPUTS)
            drawn = {key: float(inputs[key][i]) for key in keys if key in inputs.values}
            raise NumericalError(f"fab stage, trial {inputs.trial_start + i}: {name} is {values[i]} at inputs {drawn}")


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


