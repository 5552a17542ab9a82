"""``mcengine reliability``: the reliability stage over N cluster lifetimes, beside its
renewal references (:func:`mcengine.analytic.reliability.cluster_reference`)."""

from __future__ import annotations

import math

from ..analytic import reliability as analytic
from .. import interrupt
from ..options import check_seed, positive
from ..results import BLOCK_TRIALS, Summary
from ..scenario.dists import MixtureLaw
from ..scenario.sampling import draw_inputs, quantile_inputs
from ..scenario.schema import Scenario
from ..scenario.sections.reliability import resolved_law
from ..stages.reliability import lifetimes_of
from ..units import HOURS_PER_YEAR


#: Distributions of :func:`lifetime_study` (docs/interface.md first, then extras).
SUMMARY_METRICS = (
    "instance_availability", "failures_per_year", "interruptions_per_year", "swaps_per_year",
    "stockout_hours", "repairs_per_year", "max_failed_gpus",
)


#: Lifetimes per kernel call in a study: a whole number of summary blocks, so the
#: summaries do not depend on it; memory stays bounded for any sample size.
CHUNK_LIFETIMES = 4 * BLOCK_TRIALS


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
    gpu_perm = sum(comp.count * long_run_afr(name, comp) for name, comp in r.components) / HOURS_PER_YEAR
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
    positive("--lifetimes", lifetimes)
    check_seed(seed)
    total = int(lifetimes)
    # availabilities crowd near 1: the quantile sketch works on their distance from 1
    summaries = {name: Summary(offset=1.0 if name == "instance_availability" else 0.0) for name in SUMMARY_METRICS}
    events = 0
    with interrupt.deferred():  # a signal stops between chunks
        for start in range(0, total, CHUNK_LIFETIMES):
            inputs = draw_inputs(scenario, seed, start, min(CHUNK_LIFETIMES, total - start))
            cols = lifetimes_of([scenario], [inputs], seed)[0]
            cols["repairs_per_year"] = cols["repairs"] / inputs["run.horizon_years"]
            for name, summary in summaries.items():
                summary.add(cols[name], f"reliability {name}")
            events += int(cols["events"].sum())
            interrupt.check()
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
