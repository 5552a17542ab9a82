"""Reliability stage: scenario + per-trial inputs -> lifetime metrics per trial.

Orchestration only (docs/model.md#reliability): validate, turn the scenario's
component classes, host law and duration laws into the kernel's per-trial tables,
run :func:`mcengine.kernels.life.simulate_lifetimes`, check the outputs and build
columns and summaries. The model and the algorithm are documented in
:mod:`mcengine.kernels.life`; the closed forms in :mod:`mcengine.analytic.reliability`.

Conversions: a class's law is its shape and one of ``afr`` (a rate per unit-year with
a year of :data:`~mcengine.units.HOURS_PER_YEAR` hours; for a Weibull shape read as
1/MTTF, so the scale is ``MTTF / Γ(1 + 1/shape)``), ``mttf_hours``, ``scale_hours`` or
``first_year_fraction``, all through one function
(:func:`~mcengine.analytic.reliability.weibull_rate_per_hour`,
docs/sources.md#rel-unit-conversions).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from scipy import special

from ..errors import NumericalError
from ..options import check_seed
from ..columns import CLASS_PREFIX
from ..kernels import life
from ..kernels.laws import CUM_WEIGHT, KIND, LAW_COLUMNS, P1, P2
from ..kernels.law_codes import LAW_WEIBULL, MAX_LAW_PARTS
from ..scenario.dists import Law, MixtureLaw
from ..scenario.sampling import TrialInputs
from ..analytic.reliability import weibull_rate_per_hour
from ..scenario.sections.reliability import HOST_CLASS
from ..scenario.schema import Scenario
from ..units import HOURS_PER_YEAR

__all__ = ["lifetimes", "lifetimes_of", "law_table", "COLUMNS", "HOST_CLASS", "CLASS_PREFIX", "CLASS_KINDS",
           "class_column", "class_names", "nest_by_class", "COUNT_CATEGORIES", "expected_counts", "observed_counts",
           "exposure_shortfall"]

#: Per-trial columns of :func:`lifetimes`, in order.
COLUMNS = (
    "instance_availability", "capacity_availability", "failures_per_year", "interruptions_per_year", "swaps_per_year",
    "stockout_hours", "repairs", "events", "max_failed_gpus", "module_swaps_per_year", "host_repairs",
    "host_swaps_per_year", "host_stockout_hours", "nic_swaps_per_year", "module_stockout_hours",
)

#: What each class reports (per year of horizon), in columns ``CLASS_PREFIX + <class>.<kind>``.
CLASS_KINDS = ("failures_per_year", "faults_per_year")


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


def _weibull_groups(scenario: Scenario, inputs: TrialInputs, modules: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """Exponential permanent rate per GPU-hour, and the Weibull groups of a GPU.

    ``modules``: the same for the classes with ``replace_unit = "module"`` (the others
    without): every such class is a Weibull group (shape 1 included, no exponential rate),
    the law of a GPU's field-replaceable module, renewed at each module swap.

    A class of ``count`` units with shape ``k`` and scale ``eta`` (from its one law key,
    :func:`~mcengine.analytic.reliability.weibull_rate_per_hour`; ``afr`` as
    1/MTTF gives ``eta = (HOURS_PER_YEAR / afr) / Γ(1 + 1/k)``) has cumulative hazard
    ``count * (t / eta)**k``; classes of equal shape add their coefficients
    ``count * eta**-k`` into one group.

    Returns
    -------
    lam_perm : float64[n]
        Sum of ``count / eta`` (``count * afr``) over shape-1 classes, per GPU-hour.
    wb : float64[n, K, 2]
        ``(shape, scale hours)`` per group, ``K = max(1, classes)``.
    n_wb : int64[n]
        Groups per trial.
    shares : dict of str to (int64[n], float64[n])
        Per class: the kernel column counting its permanent failures
        (``OUT_GPU_EXP_FAILURES`` or ``OUT_WEAR_FAILURES + group``) and its share of the
        column's rate (``count * afr`` over the column's total, or its coefficient over
        the group's: equal shapes keep their shares at every age).
    """
    n = inputs.n
    comps = scenario.reliability.components
    lam_perm = np.zeros(n)
    shapes = np.zeros((n, max(1, len(comps))))
    coef = np.zeros_like(shapes)  # sum of count * eta**-shape
    n_wb = np.zeros(n, dtype=np.int64)
    classes = {}  # name -> (weibull group per trial (-1: exponential class), its rate or coefficient per trial)
    for name, comp in comps:
        key = f"reliability.components.{name}"
        law_key, shape = comp.law_key(), inputs[f"{key}.weibull_shape"]
        if law_key is None or (comp.replace_unit == "module") != modules or comp.per != "gpu":  # never fails, in the other
            # set, or counted per host or NIC (:func:`_unit_rates`)
            classes[name] = (np.full(n, -1), np.zeros(n))  # (a module's failures are module swaps, not GPU failures)
            continue
        value = inputs[f"{key}.{law_key}"]
        exp_class = (shape == 1.0) & (not modules)
        rate = weibull_rate_per_hour(law_key, value, shape)  # 1/eta
        # afr keeps its historical expression (bit-identical numbers for old files)
        lam_perm += np.where(exp_class, comp.count * value / HOURS_PER_YEAR if law_key == "afr" else comp.count * rate, 0.0)
        a = np.where(exp_class, 0.0, comp.count * rate ** shape)
        group = _group_of(shape, shapes, n_wb)
        rows = np.flatnonzero(a > 0.0)
        shapes[rows, group[rows]] = shape[rows]
        coef[rows, group[rows]] += a[rows]
        n_wb[rows] = np.maximum(n_wb[rows], group[rows] + 1)
        exp_rate = comp.count * value / HOURS_PER_YEAR if law_key == "afr" else comp.count * rate
        classes[name] = (np.where(exp_class, -1, group), np.where(exp_class, exp_rate, a))
    wb = np.zeros((n, shapes.shape[1], 2))
    used = coef > 0.0
    wb[..., life.WB_SHAPE] = np.where(used, shapes, 1.0)
    wb[used, life.WB_SCALE] = coef[used] ** (-1.0 / shapes[used])
    shares = {}  # name -> (kernel column of its permanent failures per trial, its share of that column)
    rows = np.arange(n)
    for name, (group, weight) in classes.items():
        total = np.where(group < 0, lam_perm, coef[rows, np.maximum(group, 0)])
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(total > 0.0, weight / total, 0.0)
        shares[name] = (np.where(group < 0, life.OUT_GPU_EXP_FAILURES, life.OUT_WEAR_FAILURES + group), share)
    return lam_perm, wb, n_wb, shares


def _group_of(shape: np.ndarray, shapes: np.ndarray, n_wb: np.ndarray) -> np.ndarray:
    """Per trial, the first of its ``n_wb`` Weibull groups (columns of ``shapes``) whose
    shape is ``shape``, else ``n_wb`` (a new group): one pass per group in use, the
    lowest matching group written last."""
    group = n_wb.copy()
    for j in range(int(n_wb.max(initial=0)) - 1, -1, -1):
        group[(shapes[:, j] == shape) & (j < n_wb)] = j
    return group


def _unit_rates(scenario: Scenario, inputs: TrialInputs) -> dict[str, tuple[str, np.ndarray, np.ndarray]]:
    """The classes counted per host or per NIC (``per``, docs/model.md#per-unit): per class,
    its unit and its permanent and transient rates per year of one such unit (``count *
    afr``, ``count * transient_afr``; exponential laws only)."""
    out = {}
    for name, comp in scenario.reliability.components:
        if comp.per == "gpu":
            continue
        key = f"reliability.components.{name}"
        law_key = comp.law_key()
        perm = (np.zeros(inputs.n) if law_key is None
                else comp.count * weibull_rate_per_hour(law_key, inputs[f"{key}.{law_key}"], 1.0) * HOURS_PER_YEAR)
        out[name] = (comp.per, perm, comp.count * inputs[f"{key}.transient_afr"])
    return out


def _transient_per_gpu(scenario: Scenario, inputs: TrialInputs) -> dict[str, np.ndarray]:
    """Transient faults per GPU-year of each class counted per GPU."""
    return {name: comp.count * inputs[f"reliability.components.{name}.transient_afr"]
            for name, comp in scenario.reliability.components if comp.per == "gpu"}


def _params(scenario: Scenario, inputs: TrialInputs, capacity: np.ndarray | None = None) -> dict:
    """Every kernel argument of :func:`simulate_lifetimes` but the seed and trial start
    (``capacity``: :func:`lifetimes`')."""
    r, c = scenario.reliability, scenario.cluster
    n = inputs.n
    lam_perm, wb, n_wb, _ = _weibull_groups(scenario, inputs)
    per_unit = _unit_rates(scenario, inputs)
    params = np.zeros((n, life.N_PARAMS))
    transient = _transient_per_gpu(scenario, inputs)
    params[:, life.P_LAM_TRANSIENT_GPU] = sum(transient.values()) / HOURS_PER_YEAR if transient else 0.0
    params[:, life.P_LAM_PERM_GPU] = lam_perm
    host_classes = [v for per, *v in per_unit.values() if per == "host"]
    params[:, life.P_LAM_TRANSIENT_HOST] = (inputs["reliability.host_transient_afr"]
                                           + sum(t for _, t in host_classes)) / HOURS_PER_YEAR
    host_afr, host_shape = inputs["reliability.host_afr"], inputs["reliability.host_weibull_shape"]
    host_exp = host_shape == 1.0
    params[:, life.P_LAM_PERM_HOST] = (np.where(host_exp, host_afr / HOURS_PER_YEAR, 0.0)
                                       + sum(f for f, _ in host_classes) / HOURS_PER_YEAR)
    params[:, life.P_LAM_NIC_PERM] = sum(f for per, f, _ in per_unit.values() if per == "nic") / HOURS_PER_YEAR
    params[:, life.P_LAM_NIC_FAULT] = sum(t for per, _, t in per_unit.values() if per == "nic") / HOURS_PER_YEAR
    params[:, life.P_NIC_SWAP_HOURS] = inputs["reliability.nic_swap_hours"]
    host_units = r.host_failure == "host" and r.replace_unit != "host"  # (host mode: the host is the unit already)
    params[:, life.P_HOST_SWAP_HOURS] = inputs["reliability.host_swap_hours"] if host_units else 0.0
    params[:, life.P_HOST_SHAPE] = host_shape
    with np.errstate(divide="ignore"):
        scale = HOURS_PER_YEAR / host_afr / special.gamma(1.0 + 1.0 / host_shape)
    params[:, life.P_HOST_SCALE] = np.where(host_exp | (host_afr <= 0.0), 0.0, scale)
    params[:, life.P_HORIZON_HOURS] = inputs["run.horizon_years"] * HOURS_PER_YEAR
    _, mwb, n_mwb, _ = _weibull_groups(scenario, inputs, modules=True)  # field-replaceable module classes
    params[:, life.P_MODULE_SWAP_HOURS] = inputs["reliability.module_swap_hours"]
    params[:, life.P_MODULE_RESTOCK_HOURS] = inputs["reliability.module_restock_hours"]
    reshard = c.on_failure == "reshard"
    params[:, life.P_RESHARD_HOURS] = inputs["cluster.reshard_hours"] if reshard else 0.0
    if not reshard:
        capacity = np.ones(1)
    elif capacity is None:
        raise ValueError("cluster.on_failure = \"reshard\" needs the roofline's capacity table (mcengine.pipeline.reshard_capacity)")
    else:  # a writeable copy of the roofline's cached, read-only table: the kernel is compiled for writeable arrays
        capacity = np.array(capacity, dtype=np.float64)
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
    for key, arr in (("params", params), ("weibull", wb), ("module weibull", mwb), ("laws", laws)):
        if not np.all(np.isfinite(arr)):
            bad = int(np.flatnonzero(~np.all(np.isfinite(arr.reshape(n, -1)), axis=1))[0])
            raise NumericalError(f"reliability: non-finite {key} table for trial {inputs.trial_start + bad}")
    return dict(
        params=params, wb=wb, n_wb=n_wb, mwb=mwb, n_mwb=n_mwb, laws=laws, active_gpus=scenario.active_gpus, instance_gpus=c.instance_gpus,
        gpus_per_host=c.gpus_per_host, host_mode=host_mode, spare_units=spare_units, crews=crews,
        capacity=capacity, reshard=reshard, host_units=host_units, spare_hosts=c.spare_hosts if host_units else 0,
        gpus_per_nic=c.gpus_per_nic, spare_modules=scenario.spare_modules,
    )


# --------------------------------------------------------------------------- stage API


def lifetimes(scenario: Scenario, inputs: TrialInputs, seed: int, capacity: np.ndarray | None = None,
              host_log: int = 0) -> dict[str, np.ndarray]:
    """Per-trial reliability columns of the trials in ``inputs``.

    ``capacity``: with ``cluster.on_failure = "reshard"``, the share of an instance's
    throughput it keeps with ``k`` GPUs lost (``float64[instance_gpus + 1]``, the roofline
    stage's reshard table, docs/model.md#reshard, handed in by the pipeline:
    :func:`mcengine.pipeline.reshard_capacity`); unused otherwise.

    Trial ``i`` of the block is global lifetime ``inputs.trial_start + i`` and draws its
    events from its own stream, so the columns do not depend on the chunking.

    Returns
    -------
    dict of str to ndarray[n]
        ``instance_availability`` (time-averaged fraction of instances up),
        ``capacity_availability`` (time-averaged delivered throughput ÷ full: with
        ``cluster.on_failure = "reshard"`` an instance short of GPUs serves on a smaller
        layout; with ``"down"`` equal to ``instance_availability``),
        ``failures_per_year`` (permanent GPU failures, a host failure counting its GPUs),
        ``interruptions_per_year`` (instance up -> down transitions, whole cluster),
        ``swaps_per_year``, ``stockout_hours`` (instance-hours waiting for a unit),
        ``repairs`` (units sent to repair over the horizon), ``events`` (int64),
        ``max_failed_gpus`` (int64: most GPUs in the repair system at once),
        ``module_swaps_per_year`` (failed field-replaceable modules swapped in place);
        with ``reliability.host_failure = "host"`` (docs/model.md#host-units)
        ``host_repairs`` (failed hosts sent to repair over the horizon),
        ``host_swaps_per_year`` (pool or repaired hosts put in failed hosts' places) and
        ``host_stockout_hours`` (instance-hours waiting for a host; not in
        ``stockout_hours``, which counts the waits for GPUs), zero otherwise;
        ``nic_swaps_per_year`` (failed NICs of ``per = "nic"`` classes swapped in place);
        ``module_stockout_hours`` (instance-hours a module swap waits for a module from the
        module pool, docs/model.md#module-pool; not in ``stockout_hours``).
        With ``host_log`` > 0 (host units), also ``host_log``: float64[n, 1 + 2 host_log],
        each lifetime's count of candidate permanent host failures and the first
        ``host_log`` of them (:data:`mcengine.kernels.life.OUT_HOST_LOG`); every other
        column is the same whatever it is.
    """
    return lifetimes_of([scenario], [inputs], seed, [capacity], host_log)[0]


def lifetimes_of(scenarios: list[Scenario], inputs: list[TrialInputs], seed: int,
                 capacities: list[np.ndarray | None] | None = None, host_log: int = 0) -> list[dict[str, np.ndarray]]:
    """:func:`lifetimes` of each scenario, with the same trials (``inputs[k]`` drawn for
    ``scenarios[k]``, ``capacities[k]`` its reshard table; None: no scenario reshards).

    Scenarios whose kernel tables are equal but for their duration laws (a fast-swap
    design beside its plain twin, with common random numbers) are variants of one
    kernel call: it simulates them in one pass while their draws coincide, each with
    exactly the numbers of its own run (:func:`mcengine.kernels.life.simulate_lifetimes`).
    Scenarios whose tables are equal in full (``lite-h100`` and ``lite-h100-2x``: links
    change no reliability input) are one variant, its lifetimes simulated once.
    ``host_log``: as :func:`lifetimes`.
    """
    check_seed(seed)
    capacities = [None] * len(scenarios) if capacities is None else capacities
    tables = [_params(s, inp, cap) for s, inp, cap in zip(scenarios, inputs, capacities)]
    groups: list[list[int]] = []
    for k, table in enumerate(tables):
        group = next((g for g in groups if _same_but_laws(tables[g[0]], table)), None)
        if group is None:
            groups.append([k])
        else:
            group.append(k)
    out: list[dict[str, np.ndarray]] = [{} for _ in scenarios]
    for group in groups:
        first: dict[bytes, int] = {}  # a law stack (its bytes) -> its variant: equal stacks, one variant
        variant = [first.setdefault(tables[k]["laws"].tobytes(), len(first)) for k in group]
        args = group_arguments([tables[group[variant.index(v)]] for v in range(len(first))])
        # the kernel's blocks go to the threads one at a time as they free up, so a thread
        # slowed by other load on its core does not hold up the call (numba's default
        # splits the blocks statically). Same numbers either way.
        with numba.parallel_chunksize(1):
            out_f, out_i = life.simulate_lifetimes(np.uint64(seed), int(inputs[group[0]].trial_start), **args,
                                                   host_log=host_log)
        taken: set[int] = set()
        for v, k in zip(variant, group):
            f, i = out_f[:, v], out_i[:, v]
            if v in taken:  # a variant's second scenario: arrays of its own
                f, i = f.copy(), i.copy()
            taken.add(v)
            out[k] = _columns(f, i, inputs[k])
            out[k].update(_by_class(scenarios[k], inputs[k], i))
            if host_log > 0:
                out[k]["host_log"] = f[:, life.OUT_HOST_LOG:]
    return out


def class_column(name: str, kind: str) -> str:
    """The per-trial column of class ``name``'s ``kind`` (``failures_per_year`` or
    ``faults_per_year``): ``failures_by_class.<name>.<kind>``."""
    return f"{CLASS_PREFIX}{name}.{kind}"


def _by_class(scenario: Scenario, inputs: TrialInputs, out_i: np.ndarray) -> dict[str, np.ndarray]:
    """Failures and faults per year of each component class and of the host, per trial
    (columns :func:`class_column`; the host's class is :data:`HOST_CLASS`).

    The kernel counts permanent failures per merged column (the exponential classes
    together, each Weibull group) and transient faults of all classes together; a
    class gets its share of its column's count (its rate over the column's total). That
    is the conditional expectation of its count given the column's: an exact split in
    mean (the classes of a column are competing risks with constant relative hazards,
    docs/model.md#failures-by-class), with no draw and less variance than a sampled one.
    """
    years = inputs["run.horizon_years"]
    _, _, _, shares = _weibull_groups(scenario, inputs)
    rows = np.arange(inputs.n)
    comps = [(name, comp) for name, comp in scenario.reliability.components if comp.per == "gpu"]
    transient = _transient_per_gpu(scenario, inputs)
    total_transient = sum(transient.values()) if transient else 0.0
    out: dict[str, np.ndarray] = {}

    def share_of(part, whole):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(whole > 0.0, part / whole, 0.0)

    for name, _ in comps:
        column, share = shares[name]
        out[class_column(name, "failures_per_year")] = out_i[rows, column] * share / years
        out[class_column(name, "faults_per_year")] = out_i[:, life.OUT_GPU_FAULTS] * share_of(transient[name], total_transient) / years
    # classes per host or NIC share their unit's columns by rate (the host's own law at its
    # long-run rate 1/MTTF: an exact split in mean when it is exponential)
    per_unit = _unit_rates(scenario, inputs)
    host_perm = inputs["reliability.host_afr"] + sum(f for per, f, _ in per_unit.values() if per == "host")
    host_transient = inputs["reliability.host_transient_afr"] + sum(t for per, _, t in per_unit.values() if per == "host")
    nic_perm = sum(f for per, f, _ in per_unit.values() if per == "nic")
    nic_transient = sum(t for per, _, t in per_unit.values() if per == "nic")
    for name, (per, perm, trans) in per_unit.items():
        if per == "host":
            out[class_column(name, "failures_per_year")] = out_i[:, life.OUT_HOST_FAILURES] * share_of(perm, host_perm) / years
            out[class_column(name, "faults_per_year")] = out_i[:, life.OUT_HOST_FAULTS] * share_of(trans, host_transient) / years
        else:
            out[class_column(name, "failures_per_year")] = out_i[:, life.OUT_NIC_FAILURES] * share_of(perm, nic_perm) / years
            out[class_column(name, "faults_per_year")] = out_i[:, life.OUT_NIC_FAULTS] * share_of(trans, nic_transient) / years
    own = 1.0 if not per_unit else share_of(inputs["reliability.host_afr"], host_perm)
    own_t = 1.0 if not per_unit else share_of(inputs["reliability.host_transient_afr"], host_transient)
    out[class_column(HOST_CLASS, "failures_per_year")] = out_i[:, life.OUT_HOST_FAILURES] * own / years
    out[class_column(HOST_CLASS, "faults_per_year")] = out_i[:, life.OUT_HOST_FAULTS] * own_t / years
    return out


#: The event categories of :func:`expected_counts` and :func:`observed_counts`: those whose every unit fails at a
#: constant rate (exponential laws), so their count over a lifetime has a mean known per trial.
COUNT_CATEGORIES = ("gpu_faults", "gpu_failures", "host_faults", "host_failures", "nic_faults", "nic_failures",
                    "module_failures")


def expected_counts(scenario: Scenario, inputs: TrialInputs) -> dict[str, np.ndarray]:
    """Per category of :data:`COUNT_CATEGORIES`, the events a lifetime counts in
    expectation at full exposure: the unit's rate x its units x the horizon.

    Units: ``A = active_gpus`` GPU positions and module clocks, ``ceil(A / gpus_per_host)``
    hosts, ``ceil(A / gpus_per_nic)`` NICs (:mod:`mcengine.kernels.life`). A unit is at
    risk whenever it is in place; what a lifetime's count falls short of this by, its
    units out of place, is :func:`exposure_shortfall`. Rows where a category's law is not exponential (a Weibull host law, a
    Weibull module group) get zero, as in :func:`observed_counts`: no count whose mean is
    unknown.
    """
    years = inputs["run.horizon_years"]
    lam_perm, _, _, _ = _weibull_groups(scenario, inputs)
    _, mwb, n_mwb, _ = _weibull_groups(scenario, inputs, modules=True)
    per_unit = _unit_rates(scenario, inputs)
    zero = np.zeros(inputs.n)
    used = np.arange(mwb.shape[1]) < n_mwb[:, None]
    with np.errstate(divide="ignore"):
        module_rate = np.where(used, 1.0 / mwb[..., life.WB_SCALE], 0.0).sum(axis=1)
    rates = {  # per unit-year
        "gpu_faults": sum(_transient_per_gpu(scenario, inputs).values(), zero),
        "gpu_failures": lam_perm * HOURS_PER_YEAR,
        "host_faults": inputs["reliability.host_transient_afr"] + sum((t for per, _, t in per_unit.values() if per == "host"), zero),
        "host_failures": np.where(_host_exponential(inputs), inputs["reliability.host_afr"], 0.0)
        + sum((f for per, f, _ in per_unit.values() if per == "host"), zero),
        "nic_faults": sum((t for per, _, t in per_unit.values() if per == "nic"), zero),
        "nic_failures": sum((f for per, f, _ in per_unit.values() if per == "nic"), zero),
        "module_failures": np.where(_modules_exponential(mwb, n_mwb), module_rate * HOURS_PER_YEAR, 0.0),
    }
    units = _count_units(scenario)
    return {k: rates[k] * units[k] * years for k in COUNT_CATEGORIES}


def observed_counts(scenario: Scenario, inputs: TrialInputs, columns: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per category of :data:`COUNT_CATEGORIES`, the events each lifetime counted, from
    the stage's ``columns`` (:func:`lifetimes`): the class columns of its units summed
    (the classes of a kernel column share its count, so they add up to it), and
    ``module_swaps_per_year``; zero where :func:`expected_counts` is."""
    years = inputs["run.horizon_years"]
    _, _, _, shares = _weibull_groups(scenario, inputs)
    _, mwb, n_mwb, _ = _weibull_groups(scenario, inputs, modules=True)
    per_unit = _unit_rates(scenario, inputs)
    zero = np.zeros(inputs.n)

    def counted(names: list[str], kind: str) -> np.ndarray:
        return sum((columns[class_column(name, kind)] for name in names), zero) * years

    gpu_classes = [name for name, comp in scenario.reliability.components if comp.per == "gpu"]
    exp_classes = [name for name in gpu_classes if np.all(shares[name][0] == life.OUT_GPU_EXP_FAILURES)]
    host_classes = [name for name, (per, _, _) in per_unit.items() if per == "host"] + [HOST_CLASS]
    nic_classes = [name for name, (per, _, _) in per_unit.items() if per == "nic"]
    return {
        "gpu_faults": counted(gpu_classes, "faults_per_year"),
        "gpu_failures": counted(exp_classes, "failures_per_year"),
        "host_faults": counted(host_classes, "faults_per_year"),
        "host_failures": np.where(_host_exponential(inputs), counted(host_classes, "failures_per_year"), 0.0),
        "nic_faults": counted(nic_classes, "faults_per_year"),
        "nic_failures": counted(nic_classes, "failures_per_year"),
        "module_failures": np.where(_modules_exponential(mwb, n_mwb), columns["module_swaps_per_year"] * years, 0.0),
    }


def exposure_shortfall(scenario: Scenario, inputs: TrialInputs, columns: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per category of :data:`COUNT_CATEGORIES`, what each lifetime's count falls short of
    :func:`expected_counts` by in expectation: the rate x the unit-hours its units were
    out of place (not at risk), so ``observed - (expected - shortfall)`` is the count
    minus its compensator, mean zero.

    Out of place (:func:`~mcengine.kernels.life.handlers.pick_superposed`): a slot from
    its unit's failure to its new unit's install (each swap's mean ``swap_hours``, plus
    ``stockout_hours``): a GPU, whose module's clock stops too (``replace_unit = "gpu"``),
    or a host with its GPUs (``"host"``); with ``reliability.host_failure = "host"``, a
    host from its failure to its replacement's install (each host swap's
    ``host_swap_hours``, plus ``host_stockout_hours``); a module in its swap (each module
    swap's ``module_swap_hours``, plus ``module_stockout_hours``). A NIC is always in
    place. The swaps' mean durations stand for their draws (each drawn when its swap
    starts, so the mean is kept: Wald's identity); stock-outs count instance-hours, the
    unit-hours unless two units of one instance wait at once (or, with ``"host"``, an
    instance spans hosts), and a swap still running at the horizon is counted in full:
    second-order terms. A permanent host failure with ``host_failure = "gpu"`` empties
    its GPU slots, counted among the swaps; the host itself is not corrected for. A
    module whose GPU is swapped during its own swap or wait is out twice for the overlap
    (docs/availability-vr.md measures it).
    """
    r, years = scenario.reliability, inputs["run.horizon_years"]
    zero = np.zeros(inputs.n)
    expected = expected_counts(scenario, inputs)
    horizon = years * HOURS_PER_YEAR
    units = _count_units(scenario)

    def per_unit_hour(category: str) -> np.ndarray:  # the category's rate per unit-hour
        return expected[category] / (units[category] * horizon)

    slot_out = (columns["swaps_per_year"] * years * _law_mean(r.swap_hours, inputs.law_values("reliability.swap_hours", r.swap_hours))
                + columns["stockout_hours"])  # slot-hours without a unit
    host_mode = r.replace_unit == "host"
    gpu_out = slot_out * scenario.cluster.gpus_per_host if host_mode else slot_out
    host_out = slot_out if host_mode else zero
    if r.host_failure == "host" and not host_mode:
        host_out = columns["host_swaps_per_year"] * years * inputs["reliability.host_swap_hours"] + columns["host_stockout_hours"]
    module_out = (columns["module_swaps_per_year"] * years * inputs["reliability.module_swap_hours"]
                  + columns["module_stockout_hours"] + gpu_out)
    out_of = {"gpu_faults": gpu_out, "gpu_failures": gpu_out, "host_faults": host_out, "host_failures": host_out,
              "nic_faults": zero, "nic_failures": zero, "module_failures": module_out}
    return {k: per_unit_hour(k) * out_of[k] for k in COUNT_CATEGORIES}


def _count_units(scenario: Scenario) -> dict[str, int]:
    """The units of each category of :data:`COUNT_CATEGORIES` (:func:`expected_counts`)."""
    c, gpus = scenario.cluster, scenario.active_gpus
    hosts, nics = -(-gpus // c.gpus_per_host), -(-gpus // c.gpus_per_nic)
    return {"gpu_faults": gpus, "gpu_failures": gpus, "host_faults": hosts, "host_failures": hosts, "nic_faults": nics,
            "nic_failures": nics, "module_failures": gpus}


def _law_mean(law: Law, values: dict[str, np.ndarray]) -> np.ndarray:
    """Per trial, the mean of ``law`` at its drawn parameters (one evaluation when none is drawn)."""
    n = len(next(iter(values.values())))
    if all(np.all(v == v[0]) for v in values.values()):
        return np.full(n, float(law.mean_at({k: float(v[0]) for k, v in values.items()})))
    return np.array([law.mean_at({k: float(v[i]) for k, v in values.items()}) for i in range(n)])


def host_repair_laws(scenario: Scenario, inputs: TrialInputs) -> np.ndarray:
    """Each trial's repair law table, ``float64[n, parts, LAW_COLUMNS]``
    (:mod:`mcengine.kernels.laws`), and whether it has a Weibull part (``bool[n]``)."""
    law = scenario.reliability.repair_hours
    table = law_table(law, inputs.law_values("reliability.repair_hours", law), inputs.n, len(law.parts()))
    return table, np.any(table[:, :, KIND] == LAW_WEIBULL, axis=1)


def host_units_exponential(scenario: Scenario, inputs: TrialInputs) -> np.ndarray:
    """Per trial, whether failed hosts are host units (docs/model.md#host-units) whose
    permanent law is exponential: their candidate failures a Poisson process."""
    r = scenario.reliability
    return _host_exponential(inputs) & (r.host_failure == "host" and r.replace_unit != "host")


def _host_exponential(inputs: TrialInputs) -> np.ndarray:
    """Per trial, whether the host's own permanent law is exponential."""
    return inputs["reliability.host_weibull_shape"] == 1.0


def _modules_exponential(mwb: np.ndarray, n_mwb: np.ndarray) -> np.ndarray:
    """Per trial, whether every module group in use has shape 1."""
    return np.all((mwb[..., life.WB_SHAPE] == 1.0) | (np.arange(mwb.shape[1]) >= n_mwb[:, None]), axis=1)


def class_names(scenario: Scenario) -> list[str]:
    """The classes of ``failures_by_class``: the GPU's component classes, then the host."""
    return [name for name, _ in scenario.reliability.components] + [HOST_CLASS]


def nest_by_class(flat: dict, names: list[str]) -> dict:
    """``{class: {kind: flat[class_column(class, kind)]}}`` for the classes ``names``."""
    return {name: {kind: flat[class_column(name, kind)] for kind in CLASS_KINDS} for name in names}


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
        "capacity_availability": out_f[:, life.OUT_CAPACITY],
        "failures_per_year": out_i[:, life.OUT_FAILURES] / years,
        "interruptions_per_year": out_i[:, life.OUT_INTERRUPTIONS] / years,
        "swaps_per_year": out_i[:, life.OUT_SWAPS] / years,
        "stockout_hours": out_f[:, life.OUT_STOCKOUT_HOURS],
        "repairs": out_i[:, life.OUT_REPAIRS].astype(float),
        "events": out_i[:, life.OUT_EVENTS],
        "max_failed_gpus": out_i[:, life.OUT_MAX_FAILED_GPUS],
        "module_swaps_per_year": out_i[:, life.OUT_MODULE_SWAPS] / years,
        "host_repairs": out_i[:, life.OUT_HOST_REPAIRS].astype(float),
        "host_swaps_per_year": out_i[:, life.OUT_HOST_SWAPS] / years,
        "host_stockout_hours": out_f[:, life.OUT_HOST_STOCKOUT_HOURS],
        "nic_swaps_per_year": out_i[:, life.OUT_NIC_SWAPS] / years,
        "module_stockout_hours": out_f[:, life.OUT_MODULE_STOCKOUT_HOURS],
    }
    for name, values in cols.items():
        bad = ~np.isfinite(values)
        if bad.any():
            raise NumericalError(f"reliability: non-finite {name} in trial {inputs.trial_start + int(np.argmax(bad))}")
    return cols


