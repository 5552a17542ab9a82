"""Reliability stage: scenario + per-trial inputs -> lifetime metrics per trial.

Orchestration only (ARCHITECTURE "Reliability"): validate, turn the scenario's
component classes, host law and duration laws into the kernel's per-trial tables,
run :func:`mcengine.kernels.life.simulate_lifetimes`, check the outputs and build
columns and summaries. The model and the algorithm are documented in
:mod:`mcengine.kernels.life`; the closed forms in :mod:`mcengine.analytic.reliability`.

Conversions: ``afr`` is a rate per unit-year (1/MTTF) with a year of
:data:`~mcengine.units.HOURS_PER_YEAR` hours; a Weibull class keeps its MTTF, so its
scale is ``MTTF / Γ(1 + 1/shape)`` (docs/sources.md#rel-unit-conversions).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from scipy import special

from ..errors import InputError, NumericalError, Problem
from ..kernels import life
from ..kernels.laws import CUM_WEIGHT, KIND, LAW_COLUMNS, P1, P2
from ..analytic import reliability as analytic
from ..results import BLOCK_TRIALS, Summary
from ..scenario.dists import LAW_WEIBULL, MAX_LAW_PARTS, Law, MixtureLaw
from ..scenario.sampling import TrialInputs, draw_inputs, quantile_inputs
from ..scenario.schema import Scenario
from ..units import HOURS_PER_YEAR

__all__ = ["lifetimes", "lifetimes_of", "lifetime_study", "analytic_reference", "render", "validation_checks", "law_table", "COLUMNS"]

#: Per-trial columns of :func:`lifetimes`, in order.
COLUMNS = (
    "instance_availability", "failures_per_year", "interruptions_per_year", "swaps_per_year",
    "stockout_hours", "repairs", "events", "max_failed_gpus",
)
#: Distributions of :func:`lifetime_study` (INTERFACE.md first, then extras).
SUMMARY_METRICS = (
    "instance_availability", "failures_per_year", "interruptions_per_year", "swaps_per_year",
    "stockout_hours", "repairs_per_year", "max_failed_gpus",
)
#: Lifetimes per kernel call in a study: a whole number of summary blocks, so the
#: summaries do not depend on it; memory stays bounded for any sample size.
CHUNK_LIFETIMES = 4 * BLOCK_TRIALS


# --------------------------------------------------------------------------- tables


def law_table(law: Law, values: dict[str, np.ndarray], n: int, lines: int = MAX_LAW_PARTS) -> np.ndarray:
    """Kernel table ``float64[n, lines, 4]`` of one law (see kernels/laws.py).

    Parameters
    ----------
    law : Law
        The scenario law (plain or mixture).
    values : dict of str to float64[n]
        Its per-trial parameters by suffix (``TrialInputs.law_values``).
    n : int
        Number of trials.
    lines : int
        Lines per table: at least the law's parts (unused lines repeat weight 1.0).
    """
    out = np.zeros((n, lines, LAW_COLUMNS))
    out[:, :, CUM_WEIGHT] = 1.0
    parts = law.parts()
    cumulative = np.cumsum([w for w, _ in parts])
    for j, (_, part) in enumerate(parts):
        prefix = f"parts.{j}." if isinstance(law, MixtureLaw) else ""
        p = {name: np.asarray(values[prefix + name], dtype=float) for name, _ in part.param_items()}
        out[:, j, CUM_WEIGHT] = 1.0 if j == len(parts) - 1 else cumulative[j]
        out[:, j, KIND] = part.code
        if part.code == LAW_WEIBULL:
            out[:, j, P1] = p["mean"] / special.gamma(1.0 + 1.0 / p["shape"])
            out[:, j, P2] = p["shape"]
        else:
            first, *rest = part.required
            out[:, j, P1] = p[first]
            if rest:
                out[:, j, P2] = p[rest[0]]
    return out


def _weibull_groups(scenario: Scenario, inputs: TrialInputs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exponential permanent rate per GPU-hour, and the Weibull groups of a GPU.

    A class of ``count`` units with rate ``afr`` and shape ``k`` has cumulative hazard
    ``count * (t / eta)**k`` with ``eta = (HOURS_PER_YEAR / afr) / Γ(1 + 1/k)``; classes
    of equal shape add their coefficients ``count * eta**-k`` into one group.

    Returns
    -------
    lam_perm : float64[n]
        Sum of ``count * afr`` over shape-1 classes, per GPU-hour.
    wb : float64[n, K, 2]
        ``(shape, scale hours)`` per group, ``K = max(1, classes)``.
    n_wb : int64[n]
        Groups per trial.
    """
    n = inputs.n
    comps = scenario.reliability.components
    lam_perm = np.zeros(n)
    shapes = np.zeros((n, max(1, len(comps))))
    coef = np.zeros_like(shapes)  # sum of count * eta**-shape
    n_wb = np.zeros(n, dtype=np.int64)
    slot = np.arange(shapes.shape[1])
    for name, comp in comps:
        key = f"reliability.components.{name}"
        afr, shape = inputs[f"{key}.afr"], inputs[f"{key}.weibull_shape"]
        exp_class = shape == 1.0
        lam_perm += np.where(exp_class, comp.count * afr / HOURS_PER_YEAR, 0.0)
        a = np.where(exp_class, 0.0, comp.count * (afr * special.gamma(1.0 + 1.0 / shape) / HOURS_PER_YEAR) ** shape)
        match = (shapes == shape[:, None]) & (slot < n_wb[:, None])
        group = np.where(match.any(axis=1), match.argmax(axis=1), n_wb)
        rows = np.flatnonzero(a > 0.0)
        shapes[rows, group[rows]] = shape[rows]
        coef[rows, group[rows]] += a[rows]
        n_wb[rows] = np.maximum(n_wb[rows], group[rows] + 1)
    wb = np.zeros((n, shapes.shape[1], 2))
    used = coef > 0.0
    wb[..., life.WB_SHAPE] = np.where(used, shapes, 1.0)
    wb[used, life.WB_SCALE] = coef[used] ** (-1.0 / shapes[used])
    return lam_perm, wb, n_wb


def _params(scenario: Scenario, inputs: TrialInputs) -> dict:
    """Every kernel argument of :func:`simulate_lifetimes` but the seed and trial start."""
    r, c = scenario.reliability, scenario.cluster
    n = inputs.n
    lam_perm, wb, n_wb = _weibull_groups(scenario, inputs)
    params = np.zeros((n, life.N_PARAMS))
    params[:, life.P_LAM_TRANSIENT_GPU] = sum(
        comp.count * inputs[f"reliability.components.{name}.transient_afr"] for name, comp in r.components
    ) / HOURS_PER_YEAR if r.components else 0.0
    params[:, life.P_LAM_PERM_GPU] = lam_perm
    params[:, life.P_LAM_TRANSIENT_HOST] = inputs["reliability.host_transient_afr"] / HOURS_PER_YEAR
    host_afr, host_shape = inputs["reliability.host_afr"], inputs["reliability.host_weibull_shape"]
    host_exp = host_shape == 1.0
    params[:, life.P_LAM_PERM_HOST] = np.where(host_exp, host_afr / HOURS_PER_YEAR, 0.0)
    params[:, life.P_HOST_SHAPE] = host_shape
    with np.errstate(divide="ignore"):
        scale = HOURS_PER_YEAR / host_afr / special.gamma(1.0 + 1.0 / host_shape)
    params[:, life.P_HOST_SCALE] = np.where(host_exp | (host_afr <= 0.0), 0.0, scale)
    params[:, life.P_HORIZON_HOURS] = inputs["run.horizon_years"] * HOURS_PER_YEAR
    named = ((life.LAW_REPAIR, "repair_hours"), (life.LAW_SWAP, "swap_hours"), (life.LAW_RESTART, "restart_hours"))
    parts = max(len(getattr(r, name).parts()) for _, name in named)  # no unused lines for the kernel to carry
    laws = np.empty((n, life.N_LAWS, parts, LAW_COLUMNS))
    for w, name in named:
        law = getattr(r, name)
        laws[:, w] = law_table(law, inputs.law_values(f"reliability.{name}", law), n, parts)
    host_mode = r.replace_unit == "host"
    spare_units = c.spare_gpus // c.gpus_per_host if host_mode else c.spare_gpus
    slots = -(-scenario.active_gpus // c.gpus_per_host) if host_mode else scenario.active_gpus
    crews = slots + spare_units if math.isinf(r.repair_crews) else min(int(r.repair_crews), slots + spare_units)
    for key, arr in (("params", params), ("weibull", wb), ("laws", laws)):
        if not np.all(np.isfinite(arr)):
            bad = int(np.flatnonzero(~np.all(np.isfinite(arr.reshape(n, -1)), axis=1))[0])
            raise NumericalError(f"reliability: non-finite {key} table for trial {inputs.trial_start + bad}")
    return dict(
        params=params, wb=wb, n_wb=n_wb, laws=laws, active_gpus=scenario.active_gpus, instance_gpus=c.instance_gpus,
        gpus_per_host=c.gpus_per_host, host_mode=host_mode, spare_units=spare_units, crews=crews,
    )


# --------------------------------------------------------------------------- stage API


def lifetimes(scenario: Scenario, inputs: TrialInputs, seed: int) -> dict[str, np.ndarray]:
    """Per-trial reliability columns of the trials in ``inputs``.

    Trial ``i`` of the block is global lifetime ``inputs.trial_start + i`` and draws its
    events from its own stream, so the columns do not depend on the chunking.

    Returns
    -------
    dict of str to ndarray[n]
        ``instance_availability`` (time-averaged fraction of instances up),
        ``failures_per_year`` (permanent GPU failures, a host failure counting its GPUs),
        ``interruptions_per_year`` (instance up -> down transitions, whole cluster),
        ``swaps_per_year``, ``stockout_hours`` (instance-hours waiting for a unit),
        ``repairs`` (units sent to repair over the horizon), ``events`` (int64),
        ``max_failed_gpus`` (int64: most GPUs in the repair system at once).
    """
    return lifetimes_of([scenario], [inputs], seed)[0]


def lifetimes_of(scenarios: list[Scenario], inputs: list[TrialInputs], seed: int) -> list[dict[str, np.ndarray]]:
    """:func:`lifetimes` of each scenario, with the same trials (``inputs[k]`` drawn for
    ``scenarios[k]``).

    Scenarios whose kernel tables are equal but for their duration laws (a fast-swap
    design beside its plain twin, with common random numbers) are variants of one
    kernel call: it simulates them in one pass while their draws coincide, each with
    exactly the numbers of its own run (:func:`mcengine.kernels.life.simulate_lifetimes`).
    """
    _check_seed(seed)
    tables = [_params(s, inp) for s, inp in zip(scenarios, inputs)]
    groups: list[list[int]] = []
    for k, table in enumerate(tables):
        group = next((g for g in groups if _same_but_laws(tables[g[0]], table)), None)
        if group is None:
            groups.append([k])
        else:
            group.append(k)
    out: list[dict[str, np.ndarray]] = [{} for _ in scenarios]
    for group in groups:
        args = group_arguments([tables[k] for k in group])
        # the kernel's blocks go to the threads one at a time as they free up: numba's
        # default static split gave each thread half of them, and a thread slowed by a
        # busy neighbour (a shared VM) held the whole call up. Same numbers either way.
        with numba.parallel_chunksize(1):
            out_f, out_i = life.simulate_lifetimes(np.uint64(seed), int(inputs[group[0]].trial_start), **args)
        for v, k in enumerate(group):
            out[k] = _columns(out_f[:, v], out_i[:, v], inputs[k])
    return out


def group_arguments(tables: list[dict]) -> dict:
    """The kernel arguments of variants simulated in one pass (their :func:`_params`,
    equal but for the laws): the leader's, with every variant's law tables side by side."""
    return {**tables[0], "laws": _variant_laws([t["laws"] for t in tables])}


def _variant_laws(tables: list[np.ndarray]) -> np.ndarray:
    """The law tables of variants side by side, ``float64[n, V, N_LAWS, parts, 4]`` (the
    most parts of any; unused lines repeat weight 1.0)."""
    n, parts = tables[0].shape[0], max(t.shape[2] for t in tables)
    laws = np.zeros((n, len(tables), life.N_LAWS, parts, LAW_COLUMNS))
    laws[..., CUM_WEIGHT] = 1.0
    for v, table in enumerate(tables):
        laws[:, v, :, :table.shape[2]] = table
    return laws


def _same_but_laws(a: dict, b: dict) -> bool:
    """Whether two kernel argument sets (:func:`_params`) differ at most in their laws."""
    return all(np.array_equal(a[key], b[key]) for key in a if key != "laws")


def _columns(out_f: np.ndarray, out_i: np.ndarray, inputs: TrialInputs) -> dict[str, np.ndarray]:
    """The stage's columns from one variant's kernel outputs, checked finite."""
    years = inputs["run.horizon_years"]
    cols = {
        "instance_availability": out_f[:, life.OUT_AVAILABILITY],
        "failures_per_year": out_i[:, life.OUT_FAILURES] / years,
        "interruptions_per_year": out_i[:, life.OUT_INTERRUPTIONS] / years,
        "swaps_per_year": out_i[:, life.OUT_SWAPS] / years,
        "stockout_hours": out_f[:, life.OUT_STOCKOUT_HOURS],
        "repairs": out_i[:, life.OUT_REPAIRS].astype(float),
        "events": out_i[:, life.OUT_EVENTS],
        "max_failed_gpus": out_i[:, life.OUT_MAX_FAILED_GPUS],
    }
    for name, values in cols.items():
        bad = ~np.isfinite(values)
        if bad.any():
            raise NumericalError(f"reliability: non-finite {name} in trial {inputs.trial_start + int(np.argmax(bad))}")
    return cols


def _check_seed(seed) -> np.uint64:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) < 2**64:
        raise InputError(Problem("--seed", seed, "allowed: an integer in [0, 2**64)"))
    return np.uint64(seed)


def analytic_reference(scenario: Scenario) -> dict:
    """Closed-form reference values at the median inputs (renewal rates, no stock-out).

    See :func:`mcengine.analytic.reliability.cluster_reference`; every class enters at
    its long-run rate ``afr`` (1/MTTF) whatever its Weibull shape.
    """
    r, c = scenario.reliability, scenario.cluster
    q = quantile_inputs(scenario, 0.5)

    def at(key: str) -> float:
        return float(q[key][0])

    def law_values(name: str) -> dict[str, float]:
        law = getattr(r, name)
        return {k: float(v[0]) for k, v in q.law_values(f"reliability.{name}", law).items()}

    def law_mean(name: str) -> float:
        return getattr(r, name).mean_at(law_values(name))

    repair, values = r.repair_hours, law_values("repair_hours")
    mixture = isinstance(repair, MixtureLaw)
    repair_parts = [(w, part.kind, *(values[(f"parts.{j}." if mixture else "") + name] for name, _ in part.param_items()))
                    for j, (w, part) in enumerate(repair.parts())]

    key = "reliability.components"
    gpu_perm = sum(comp.count * at(f"{key}.{name}.afr") for name, comp in r.components) / HOURS_PER_YEAR
    gpu_transient = sum(comp.count * at(f"{key}.{name}.transient_afr") for name, comp in r.components) / HOURS_PER_YEAR
    host_mode = r.replace_unit == "host"
    ref = analytic.cluster_reference(
        c.instances, c.instance_gpus, c.gpus_per_host, host_mode, gpu_perm, gpu_transient,
        at("reliability.host_afr") / HOURS_PER_YEAR, at("reliability.host_transient_afr") / HOURS_PER_YEAR,
        law_mean("swap_hours"), law_mean("restart_hours"), repair_parts,
        c.spare_gpus // c.gpus_per_host if host_mode else c.spare_gpus, math.isinf(r.repair_crews))
    ref["mean_repair_hours"] = law_mean("repair_hours")
    return ref


def lifetime_study(scenario: Scenario, lifetimes: int, seed: int) -> dict:
    """Body of ``mcengine reliability``: ``lifetimes`` cluster lifetimes.

    Lifetime ``l`` draws the uncertain inputs as trial ``l`` and its events from stream
    ``(seed, STAGE_LIFE, 0, l)``; lifetimes run in chunks of :data:`CHUNK_LIFETIMES`
    (same numbers whatever the chunking or the thread count).

    Returns
    -------
    dict
        Summaries over lifetimes of ``instance_availability``, ``failures_per_year``,
        ``interruptions_per_year``, ``swaps_per_year``, ``stockout_hours``,
        ``repairs_per_year`` and ``max_failed_gpus``; ``events`` (int, all lifetimes);
        ``analytic`` (:func:`analytic_reference`); ``cluster`` (shape of the model).
    """
    if isinstance(lifetimes, bool) or not isinstance(lifetimes, (int, np.integer)) or lifetimes < 1:
        raise InputError(Problem("--lifetimes", lifetimes, "allowed: a positive integer"))
    _check_seed(seed)
    total = int(lifetimes)
    # availabilities crowd near 1: the quantile sketch works on their distance from 1
    summaries = {name: Summary(offset=1.0 if name == "instance_availability" else 0.0) for name in SUMMARY_METRICS}
    events = 0
    for start in range(0, total, CHUNK_LIFETIMES):
        inputs = draw_inputs(scenario, seed, start, min(CHUNK_LIFETIMES, total - start))
        cols = lifetimes_of([scenario], [inputs], seed)[0]
        cols["repairs_per_year"] = cols["repairs"] / inputs["run.horizon_years"]
        for name, summary in summaries.items():
            summary.add(cols[name], f"reliability {name}")
        events += int(cols["events"].sum())
    c, r = scenario.cluster, scenario.reliability
    return {
        **{name: summary.to_dict() for name, summary in summaries.items()},
        "events": events,
        "analytic": analytic_reference(scenario),
        "cluster": {
            "instances": c.instances, "instance_gpus": c.instance_gpus, "active_gpus": scenario.active_gpus,
            "spare_gpus": c.spare_gpus, "gpus_per_host": c.gpus_per_host, "replace_unit": r.replace_unit,
            "repair_crews": "inf" if math.isinf(r.repair_crews) else int(r.repair_crews),
        },
    }


def render(body: dict):
    """A rich Table of ``mcengine reliability``: Monte Carlo beside the renewal references."""
    from rich.table import Table

    an = body.get("analytic", {})
    name = body.get("scenario")
    table = Table(title=f"reliability stage{f': {name}' if name else ''}, {body.get('lifetimes', '?')} lifetimes",
                  caption="references: long-run renewal rates at the median inputs, ample spares; "
                          f"{body.get('events', 0):,} events simulated")
    for col in ("quantity", "MC mean ± sem", "MC p05 – p95", "reference"):
        table.add_column(col, justify="left" if col == "quantity" else "right")
    rows = (
        ("instance availability", "instance_availability", ".6f", an.get("availability_no_stockout")),
        ("failures / year", "failures_per_year", ",.2f", an.get("failures_per_year")),
        ("interruptions / year", "interruptions_per_year", ",.2f", an.get("interruptions_per_year")),
        ("swaps / year", "swaps_per_year", ",.2f", None),
        ("repairs / year", "repairs_per_year", ",.2f", None),
        ("stock-out inst-hours", "stockout_hours", ",.1f", None),
        ("max failed GPUs", "max_failed_gpus", ",.1f", None),
    )
    for label, key, fmt, ref in rows:
        if key not in body:
            continue
        d = body[key]
        table.add_row(label, f"{d['mean']:{fmt}} ± {d['sem']:.2g}", f"{d['p05']:{fmt}} – {d['p95']:{fmt}}",
                      "" if ref is None else f"{ref:{fmt}}")
    if "p_stockout" in an:
        table.add_row("P(units in repair > spares)", "", "", f"{an['p_stockout']:.3g}")
    return table


def validation_checks() -> list:
    """The closed-form cross-checks of :mod:`mcengine.stages._reliability_checks`."""
    from ._reliability_checks import checks

    return checks()
