"""``mcengine reliability``: the reliability stage over N cluster lifetimes, beside its
renewal references (:func:`mcengine.analytic.reliability.cluster_reference`)."""

from __future__ import annotations

import math

from ..analytic import reliability as analytic
from .. import interrupt
from ..options import check_seed, positive
from ..summaries import BLOCK_TRIALS, Summary
from ..scenario.dists import MixtureLaw
from ..scenario.sampling import draw_inputs, quantile_inputs
from ..scenario.schema import Scenario
from ..analytic.reliability import resolved_law, weibull_rate_per_hour
from ..pipeline import reshard_capacity
from ..stages.reliability import CLASS_KINDS, class_column, class_names, lifetimes_of, nest_by_class
from ..units import HOURS_PER_YEAR
from .unavailability import ControlMoments, controls, host_log_size, input_means


#: Distributions of :func:`lifetime_summary` (docs/interface.md first, then extras).
SUMMARY_METRICS = (
    "instance_availability", "capacity_availability", "failures_per_year", "interruptions_per_year", "swaps_per_year",
    "stockout_hours", "repairs_per_year", "max_failed_gpus", "module_swaps_per_year", "host_repairs_per_year",
    "host_swaps_per_year", "host_stockout_hours", "nic_swaps_per_year", "module_stockout_hours",
)


#: Lifetimes per kernel call in a summary: a whole number of summary blocks, so the
#: summaries do not depend on it; memory stays bounded for any sample size.
CHUNK_LIFETIMES = 4 * BLOCK_TRIALS


def analytic_reference(scenario: Scenario) -> dict:
    """Closed-form reference values at the median inputs (renewal rates, no stock-out).

    See :func:`mcengine.analytic.reliability.cluster_reference`; every class enters at
    its long-run rate 1/MTTF whatever its Weibull shape. With a Weibull class (gpu mode)
    the ``..._over_horizon`` values redo them at the horizon's average rate
    (:func:`_horizon_reference`); ``assumptions`` says which is which.
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

    def long_run_afr(name: str, comp) -> float:
        law_key = comp.law_key()
        if law_key in (None, "afr"):  # afr is the long-run rate 1/MTTF already
            return 0.0 if law_key is None else at(f"reliability.components.{name}.afr")
        return float(resolved_law(law_key, at(f"reliability.components.{name}.{law_key}"),
                                  at(f"reliability.components.{name}.weibull_shape"))["afr_long_run"])

    repair, values = r.repair_hours, law_values("repair_hours")
    mixture = isinstance(repair, MixtureLaw)
    repair_parts = [(w, part.kind, *(values[(f"parts.{j}." if mixture else "") + name] for name, _ in part.param_items()))
                    for j, (w, part) in enumerate(repair.parts())]

    key = "reliability.components"
    # (classes with replace_unit = "module" are swapped in place, not failures of a unit: interruptions of their own)
    # (classes counted per host or NIC are the host's and the NICs', docs/model.md#per-unit)
    per_gpu = [(name, comp) for name, comp in r.components if comp.per == "gpu"]
    gpu_perm = sum(comp.count * long_run_afr(name, comp) for name, comp in per_gpu if comp.replace_unit != "module") / HOURS_PER_YEAR
    gpu_transient = (sum(comp.count * at(f"{key}.{name}.transient_afr") for name, comp in per_gpu)
                     + sum(comp.count * at(f"{key}.{name}.transient_afr") / c.gpus_per_nic  # (a NIC in one instance)
                           for name, comp in r.components if comp.per == "nic")) / HOURS_PER_YEAR
    module_rate = sum(comp.count * long_run_afr(name, comp) for name, comp in per_gpu if comp.replace_unit == "module") / HOURS_PER_YEAR
    nic_perm = sum(comp.count * long_run_afr(name, comp) for name, comp in r.components if comp.per == "nic") / c.gpus_per_nic / HOURS_PER_YEAR
    host_mode = r.replace_unit == "host"
    host_rate = (at("reliability.host_afr")
                 + sum(comp.count * long_run_afr(name, comp) for name, comp in r.components if comp.per == "host")) / HOURS_PER_YEAR
    host_transient = (at("reliability.host_transient_afr")
                      + sum(comp.count * at(f"{key}.{name}.transient_afr") for name, comp in r.components if comp.per == "host"))
    host_units = r.host_failure == "host" and not host_mode

    def reference(gpu_perm_rate: float) -> dict:
        return analytic.cluster_reference(
            c.instances, c.instance_gpus, c.gpus_per_host, host_mode, gpu_perm_rate, gpu_transient,
            host_rate, host_transient / HOURS_PER_YEAR,
            law_mean("swap_hours"), law_mean("restart_hours"), repair_parts,
            c.spare_gpus // c.gpus_per_host if host_mode else c.spare_gpus, math.isinf(r.repair_crews),
            host_units, at("reliability.host_swap_hours") if host_units else 0.0, nic_perm, at("reliability.nic_swap_hours"),
            module_rate, at("reliability.module_swap_hours"))

    ref = reference(gpu_perm)
    ref["mean_repair_hours"] = law_mean("repair_hours")
    ref["mean_restart_hours"] = law_mean("restart_hours")
    renews_gpus = 0.0 if host_units else host_rate  # (host units: a host failure renews no GPU)
    ref.update(_instance_availability(scenario, at, ref, repair_parts, gpu_perm + renews_gpus, gpu_transient))
    ref.update(_horizon_reference(scenario, at, ref["failures_per_year"]))
    over = ref.get("failures_per_year_over_horizon")
    if over is not None and at("reliability.host_weibull_shape") == 1.0:
        # the same references with each GPU's horizon-average permanent rate in place of the
        # long-run one (a slot's renewals less the Poisson host failures that renew it)
        horizon = reference(max(0.0, over / HOURS_PER_YEAR / scenario.active_gpus - renews_gpus))
        ref["interruptions_per_year_over_horizon"] = horizon["interruptions_per_year"]
        ref["availability_no_stockout_over_horizon"] = horizon["availability_no_stockout"]
    return ref


def _instance_availability(scenario: Scenario, at, ref: dict, repair_parts: list[tuple], long_run_rate: float,
                           gpu_transient: float) -> dict:
    """The reference of ``instance_availability`` and the assumption it rests on.

    With no spares and unlimited crews (gpu mode) a slot waits for a repair: the time
    average of P(all ``n`` GPUs in place) (:func:`mcengine.analytic.reliability.no_spares_in_place`,
    its closed form where one exists) times the swap, restart and fault losses of
    ``availability_no_stockout`` (only the faults' restarts when nothing is repaired
    within the horizon: no slot is refilled). Otherwise the ample-spares value.
    """
    c, r = scenario.cluster, scenario.reliability
    reshard = c.on_failure == "reshard"
    if r.replace_unit == "host" or c.spare_gpus > 0 or not math.isinf(r.repair_crews):
        out = {"instance_availability": ref["availability_no_stockout"],
               "instance_availability_basis": "ample spares: each failure costs one swap + restart (first order in the rates)"}
        if not reshard:  # (reshard with a pool: no closed form)
            out["capacity_availability"] = out["instance_availability"]
        return out
    horizon = at("run.horizon_years") * HOURS_PER_YEAR
    exp_rate, groups, _ = _gpu_series_law(scenario, at)
    place = analytic.no_spares_in_place(horizon, exp_rate, groups, long_run_rate, repair_parts,
                                        ref["mean_repair_hours"], c.instance_gpus,
                                        reshard_capacity(scenario))
    if place["basis"] == "never repaired":
        hosts = -(-c.instance_gpus // c.gpus_per_host)
        faults = c.instance_gpus * gpu_transient + hosts * at("reliability.host_transient_afr") / HOURS_PER_YEAR
        losses = 1.0 / (1.0 + faults * ref["mean_restart_hours"])
    else:
        losses = ref["availability_no_stockout"]
    basis = {"never repaired": "no spares, nothing repaired within the horizon: time-averaged survival of the instance's GPUs",
             "exponential": "no spares, unlimited crews, exponential lives and repairs: time average of (a + (1-a) e^-(λ+μ)t)^n",
             "long-run": "no spares, unlimited crews: long-run a^n, a = 1/(1 + λ E[R])"}[place["basis"]]
    out = {"instance_availability": place["in_place"] * losses,
           "instance_availability_basis": basis + "; swap, restart and faults to first order"}
    # reshard: Σ_k C(n,k) (1-a)^k a^(n-k) thr(n-k)/thr(n) at each time, no re-layout time
    out["capacity_availability"] = place["capacity"] * losses if reshard else out["instance_availability"]
    if reshard:
        out["capacity_availability_basis"] = ("each GPU in place independently: Σ_k C(n,k) (1-a)^k a^(n-k) thr(n-k)/thr(n), "
                                              "thr from the roofline layout search; re-layout time (cluster.reshard_hours) not counted")
    return out


def _horizon_reference(scenario: Scenario, at, long_run_failures_per_year: float) -> dict:
    """What the long-run references assume, and for wear-out or infant-mortality
    (Weibull) classes the failures the horizon itself expects.

    ``failures_per_year_over_horizon`` (gpu mode, any Weibull class): ``active x M(T) /
    years`` with ``M`` the renewal function of one GPU slot's series life, a host failure
    renewing its GPUs (:func:`mcengine.analytic.reliability.series_renewals`; exact for an
    ample pool and zero swap time). ``weibull_classes``: per Weibull class its long-run
    failures per year (``active x count / MTTF``) and its first-order share over the
    horizon, ``active x F_class(T) / years`` with ``F_class(T) = 1 - exp(-count (T/eta)^k)``
    (each unit's first failure; renewals by other classes not counted).
    """
    years = at("run.horizon_years")
    horizon = years * HOURS_PER_YEAR
    active, host_mode = scenario.active_gpus, scenario.reliability.replace_unit == "host"
    exp_rate, groups, classes = _gpu_series_law(scenario, at)
    text = ("Long-run renewal rates: every class fails at 1/MTTF (its afr, or afr_long_run of its resolved law) "
            "whatever its shape, at the median inputs; availability to first order in the rates with ample spares "
            "(each failure costs one swap + restart); stock-out from M/G/inf with unlimited crews; "
            "classes with replace_unit = 'module' left out.")
    out: dict = {"weibull_classes": classes}
    if groups and not host_mode:
        over = active * analytic.series_renewals(horizon, exp_rate, groups) / years
        out["failures_per_year_over_horizon"] = over
        text += (f" Weibull classes ({', '.join(classes) or 'host'}): over the {years:g}-year horizon, starting new, the renewal "
                 f"function gives {over:,.1f} failures/yr (ample pool, zero swap time) against the long-run "
                 f"{long_run_failures_per_year:,.1f}; the *_over_horizon values redo the references at that rate.")
    elif groups:
        text += (" Weibull classes: their failures over the horizon differ from the long-run rate (replace_unit = 'host': "
                 "no horizon reference; see weibull_classes for each class's first-order share).")
    out["assumptions"] = text
    return out


def _gpu_series_law(scenario: Scenario, at) -> tuple[float, list[tuple[float, float]], dict]:
    """One GPU position's life at the median inputs, a host failure included (gpu mode;
    with host units a host failure renews no GPU, and classes per host or NIC are not the GPU's).

    Returns the exponential rate per hour (shape-1 classes and an exponential host law),
    the finite Weibull groups ``[(shape, scale hours), ...]`` (a class of ``count``
    units as one group, the host law as another) and, per Weibull class, its resolved
    law and its long-run and first-order failures per year over the horizon.
    """
    r = scenario.reliability
    years = at("run.horizon_years")
    horizon = years * HOURS_PER_YEAR
    active = scenario.active_gpus
    exp_rate, groups, classes = 0.0, [], {}
    for name, comp in r.components:
        law_key = comp.law_key()
        if law_key is None or comp.replace_unit == "module" or comp.per != "gpu":
            continue
        key = f"reliability.components.{name}"
        shape = at(f"{key}.weibull_shape")
        rate = float(weibull_rate_per_hour(law_key, at(f"{key}.{law_key}"), shape))
        if shape == 1.0:
            exp_rate += comp.count * rate
            continue
        eta = 1.0 / rate if rate > 0.0 else math.inf
        groups.append((shape, eta * comp.count ** (-1.0 / shape)))
        law = resolved_law(law_key, at(f"{key}.{law_key}"), shape)
        classes[name] = {
            "weibull_shape": shape, "mttf_hours": law["mttf_hours"], "first_year_fraction": law["first_year_fraction"],
            "long_run_failures_per_year": active * comp.count * law["afr_long_run"],
            "first_order_failures_per_year_over_horizon": active * float(-math.expm1(-comp.count * (horizon * rate) ** shape)) / years,
        }
    host_afr, host_shape = at("reliability.host_afr"), at("reliability.host_weibull_shape")
    if r.host_failure == "host" and r.replace_unit != "host":
        host_afr = 0.0
    if host_shape == 1.0:
        exp_rate += host_afr / HOURS_PER_YEAR
    elif host_afr > 0.0:
        groups.append((host_shape, HOURS_PER_YEAR / host_afr / math.gamma(1.0 + 1.0 / host_shape)))
    return exp_rate, [(k, eta) for k, eta in groups if math.isfinite(eta)], classes



def lifetime_summary(scenario: Scenario, lifetimes: int, seed: int) -> dict:
    """Body of ``mcengine reliability``: ``lifetimes`` cluster lifetimes.

    Lifetime ``l`` draws the uncertain inputs as trial ``l`` and its events from stream
    ``(seed, STAGE_LIFE, 0, l)``; lifetimes run in chunks of :data:`CHUNK_LIFETIMES`
    (same numbers whatever the chunking or the thread count).

    Returns
    -------
    dict
        Summaries over lifetimes of ``instance_availability``, ``capacity_availability``, ``failures_per_year``,
        ``interruptions_per_year``, ``swaps_per_year``, ``stockout_hours``,
        ``repairs_per_year`` and ``max_failed_gpus``; ``failures_by_class`` (per
        component class and ``host``: summaries of ``failures_per_year``, permanent,
        and ``faults_per_year``, transient); ``events`` (int, all lifetimes);
        ``unavailability`` (mean ``1 - instance_availability`` by control variates on the
        event counts, with its standard error, beside the plain mean's:
        :meth:`~mcengine.standalone.unavailability.ControlMoments.estimate`,
        docs/availability-vr.md; None for a single lifetime);
        ``analytic`` (:func:`analytic_reference`); ``cluster`` (shape of the model).
    """
    positive("--lifetimes", lifetimes)
    check_seed(seed)
    total = int(lifetimes)
    # availabilities crowd near 1: the quantile sketch works on their distance from 1
    summaries = {name: Summary(offset=1.0 if name.endswith("availability") else 0.0) for name in SUMMARY_METRICS}
    classes = class_names(scenario)
    summaries.update({class_column(name, kind): Summary() for name in classes for kind in CLASS_KINDS})
    events, moments = 0, ControlMoments()
    with interrupt.deferred():  # a signal stops between chunks
        for start in range(0, total, CHUNK_LIFETIMES):
            inputs = draw_inputs(scenario, seed, start, min(CHUNK_LIFETIMES, total - start))
            cols = lifetimes_of([scenario], [inputs], seed, [reshard_capacity(scenario)],
                                host_log_size(scenario, inputs))[0]
            cols["repairs_per_year"] = cols["repairs"] / inputs["run.horizon_years"]
            cols["host_repairs_per_year"] = cols["host_repairs"] / inputs["run.horizon_years"]
            for name, summary in summaries.items():
                summary.add(cols[name], f"reliability {name}")
            events += int(cols["events"].sum())
            moments.add(1.0 - cols["instance_availability"], *controls(scenario, inputs, cols))
            interrupt.check()
    c, r = scenario.cluster, scenario.reliability
    docs = {name: summary.to_dict() for name, summary in summaries.items()}
    return {
        **{name: docs[name] for name in SUMMARY_METRICS},
        "failures_by_class": nest_by_class(docs, classes),
        "events": events,
        "unavailability": moments.estimate(*input_means(scenario, seed)) if total > 1 else None,
        "analytic": analytic_reference(scenario),
        "cluster": {
            "instances": c.instances, "instance_gpus": c.instance_gpus, "active_gpus": scenario.active_gpus,
            "spare_gpus": c.spare_gpus, "gpus_per_host": c.gpus_per_host, "replace_unit": r.replace_unit,
            "on_failure": c.on_failure,
            "repair_crews": "inf" if math.isinf(r.repair_crews) else int(r.repair_crews),
        },
    }
