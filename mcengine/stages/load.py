"""Load stage: the cluster under a demand (docs/load.md; closed forms in
:mod:`mcengine.analytic.queueing`).

Runs between the roofline and econ stages when ``workload.load.demand`` is a number (with
``"saturate"``, the default, it adds nothing and the chain is the older one to the bit).
Per trial, from the roofline's plan (output tokens/s ``T`` of an instance, its batch
``B``, unloaded TTFT, output tokens ``O`` per request) and the served availability ``A``
the pipeline hands in:

* the cluster's saturated rate ``X = T x cluster.instances x A`` (the old
  ``tokens_per_s``) and its utilisation at the mean and at the peak demand,
  ``D / X`` and ``D x peak_to_mean / X``;
* the TTFT at ``workload.slo_quantile`` at the peak (unloaded TTFT plus the G/G/c wait
  for one of the ``B`` slots, :func:`~mcengine.analytic.queueing.ttft_quantile_ms`, at a
  utilisation of at most :data:`RHO_SHOWN`); the TPOT is the roofline's, that of the full
  batch, which bounds the batch at any occupancy;
* the capacity at SLO: the largest cluster rate whose TTFT quantile meets
  ``workload.ttft_slo_ms`` (:func:`~mcengine.analytic.queueing.utilisation_at_slo`), 0
  where the plan misses its SLOs unloaded;
* goodput: the diurnal demand served within the SLOs, ``E[min(D(t), capacity at SLO)]``
  (:func:`~mcengine.analytic.queueing.served_mean`), and the share of the day the SLO
  quantile holds (``load.slo_attainment``);
* the fleet a demand needs: the fewest instances that meet the SLO quantile at the peak
  with the instances down at ``cluster.headroom_quantile``
  (:func:`~mcengine.analytic.queueing.fleet_instances`, instances down independently
  with probability ``1 - instance availability``), and the headroom it buys.

With ``cluster.instances = "auto"`` that fleet is the cluster: every column above is its
(``load.instances``, docs/load.md#auto). The econ stage then charges the cluster
(``load.instances`` of them) to its goodput and its dynamic power to the utilisation
(:func:`mcengine.stages.econ.economics`), and is run once more on the fleet for the demand
(:func:`fleet_view`, ``load.cost_per_mtok_fleet_usd``). The roofline's per-trial planner
has chosen each trial's plan under the same demand (docs/load.md#planner).
"""

from __future__ import annotations

import numpy as np

from ..analytic import queueing as qu
from ..scenario import Scenario
from ..scenario.sampling import TrialInputs
from ..scenario.fields import AUTO
from ..scenario.sections.workload import SATURATE

#: Highest utilisation at which ``load.ttft_at_load_ms`` is shown: above it (a peak beyond the
#: saturated rate) the queue grows without bound and ``load.slo_attainment`` says so.
RHO_SHOWN = 0.999

#: Columns this stage adds, in order.
COLUMNS = ("load.demand_tokens_per_s", "load.saturated_tokens_per_s", "load.capacity_at_slo_tokens_per_s", "load.served_tokens_per_s", "load.utilisation_mean",
           "load.utilisation_peak", "load.ttft_at_load_ms", "load.slo_attainment", "load.fleet_instances", "load.headroom_instances",
           "load.instances", "load.demand_at_slo_tokens_per_s")


def loaded(scenario: Scenario) -> bool:
    """Whether ``scenario`` serves a demand (``workload.load.demand`` is not ``"saturate"``)."""
    return scenario.workload.load.demand != SATURATE


def bought(scenario: Scenario) -> bool:
    """Whether the fleet is bought per trial (``cluster.instances = "auto"``, docs/load.md#auto)."""
    return scenario.cluster.instances == AUTO


def arrival_cv(scenario: Scenario, inputs: TrialInputs) -> np.ndarray:
    """The CV of the gaps between requests: 1 for Poisson, ``workload.load.arrival_cv`` for gamma."""
    if scenario.workload.load.arrival == "poisson":
        return np.ones(inputs.n)
    return np.broadcast_to(inputs["workload.load.arrival_cv"], (inputs.n,)).astype(float)


def demand_of(inputs: TrialInputs) -> tuple[np.ndarray, np.ndarray]:
    """Per trial, the mean demand (output tokens/s) and the peak-to-mean."""
    n = inputs.n
    return (np.broadcast_to(inputs["workload.load.demand"], (n,)).astype(float),
            np.broadcast_to(inputs["workload.load.peak_to_mean"], (n,)).astype(float))


def fleet_for(per_instance_at_slo: np.ndarray, peak: np.ndarray, instance_availability: np.ndarray, headroom_quantile) -> tuple[np.ndarray, np.ndarray]:
    """``(fleet, up_needed)``: the up instances that carry ``peak`` at ``per_instance_at_slo``
    each, and the fewest whole instances that keep them up at ``headroom_quantile``
    (:func:`~mcengine.analytic.queueing.fleet_instances`); 0 where an instance carries nothing within the SLOs."""
    n = peak.size
    up_needed = np.divide(peak, per_instance_at_slo, out=np.zeros(n), where=per_instance_at_slo > 0)
    fleet = qu.fleet_instances(up_needed, 1.0 - instance_availability, headroom_quantile)
    return np.where(per_instance_at_slo > 0, fleet, 0.0), up_needed


def load_columns(scenario: Scenario, inputs: TrialInputs, columns: dict[str, np.ndarray], availability: np.ndarray) -> dict[str, np.ndarray]:
    """The load columns (:data:`COLUMNS`, module docstring) of a block of trials.

    ``columns`` holds the roofline (``tokens_per_s_instance``, ``batch``, ``ttft_ms``,
    ``output_tokens_per_request``) and reliability (``instance_availability``) columns;
    ``availability`` is the served share of the capacity (:func:`mcengine.stages.econ.served_availability`).
    With ``cluster.instances = "auto"`` the cluster is the fleet bought (``load.instances`` =
    ``load.fleet_instances``; where no fleet meets the SLOs, the simulated cluster, which
    then serves nothing and costs ``+inf`` per token), else ``cluster.instances``."""
    n = inputs.n
    demand, peak_to_mean = demand_of(inputs)
    q = inputs["workload.slo_quantile"]
    ca, cs = arrival_cv(scenario, inputs), inputs["workload.load.service_cv"]
    per_instance = columns["tokens_per_s_instance"]
    batch = columns["batch"].astype(float)
    slot_s = qu.slot_time_s(batch, columns["output_tokens_per_request"], per_instance)
    rho_slo = qu.utilisation_at_slo(q, inputs["workload.ttft_slo_ms"], columns["ttft_ms"], batch, slot_s, ca, cs)
    peak = demand * peak_to_mean
    fleet, up_needed = fleet_for(np.where(per_instance > 0, rho_slo * per_instance, 0.0), peak, columns["instance_availability"], inputs["cluster.headroom_quantile"])
    # a trial no fleet serves within the SLOs (its plan misses them unloaded) keeps the simulated cluster, serving nothing
    instances = np.where(fleet > 0, fleet, float(scenario.cluster.simulated())) if bought(scenario) else np.full(n, float(scenario.cluster.instances))
    saturated, capacity, served, rho_mean, rho_peak = served_by(instances, per_instance, availability, rho_slo, demand, peak_to_mean)
    shown = np.minimum(rho_peak, RHO_SHOWN)
    ttft = qu.ttft_quantile_ms(q, columns["ttft_ms"], batch, np.where(np.isfinite(slot_s), slot_s, 0.0), shown, ca, cs)
    return {
        "load.demand_tokens_per_s": demand,
        "load.saturated_tokens_per_s": saturated,
        "load.capacity_at_slo_tokens_per_s": capacity,
        "load.served_tokens_per_s": served,
        "load.utilisation_mean": rho_mean,
        "load.utilisation_peak": np.minimum(rho_peak, 1.0),
        "load.ttft_at_load_ms": ttft,
        "load.slo_attainment": qu.share_below(demand, peak_to_mean, capacity),
        "load.fleet_instances": fleet,
        "load.headroom_instances": np.where(fleet > 0, fleet - np.ceil(up_needed), 0.0),
        "load.instances": instances,
        "load.demand_at_slo_tokens_per_s": capacity / peak_to_mean,
    }


def served_by(instances, per_instance, availability, rho_slo, demand, peak_to_mean) -> tuple[np.ndarray, ...]:
    """A cluster of ``instances`` under the demand: its saturated rate ``T N A``, its
    capacity at SLO (``rho_slo`` of it), its goodput (the diurnal demand up to that
    capacity, :func:`~mcengine.analytic.queueing.served_mean`), its mean utilisation
    (the demand up to the saturated rate, over it) and its utilisation at the peak."""
    n = np.size(demand)
    saturated = per_instance * instances * availability
    capacity = np.where(saturated > 0, rho_slo * saturated, 0.0)
    peak = demand * peak_to_mean
    rho_peak = np.divide(peak, saturated, out=np.full(n, np.inf), where=saturated > 0)
    rho_mean = np.divide(qu.served_mean(demand, peak_to_mean, saturated), saturated, out=np.zeros(n), where=saturated > 0)
    return saturated, capacity, qu.served_mean(demand, peak_to_mean, capacity), rho_mean, rho_peak


def fleet_view(inputs: TrialInputs, columns: dict[str, np.ndarray], availability: np.ndarray) -> dict[str, np.ndarray]:
    """The load columns the econ stage reads (``load.instances``, ``load.served_tokens_per_s``,
    ``load.saturated_tokens_per_s``, ``load.utilisation_mean``) for the fleet sized for the
    demand (``load.fleet_instances``) in place of the scenario's cluster (:func:`served_by`
    at the same utilisation at SLO)."""
    demand, peak_to_mean = demand_of(inputs)
    saturated = columns["load.saturated_tokens_per_s"]
    fleet = np.where(columns["load.fleet_instances"] > 0, columns["load.fleet_instances"], columns["load.instances"])  # none: the cluster, serving nothing
    rho_slo = np.divide(columns["load.capacity_at_slo_tokens_per_s"], saturated, out=np.zeros(fleet.size), where=saturated > 0)
    fleet_saturated, _, served, rho_mean, _ = served_by(fleet, columns["tokens_per_s_instance"], availability, rho_slo, demand, peak_to_mean)
    return {"load.instances": fleet, "load.served_tokens_per_s": served, "load.saturated_tokens_per_s": fleet_saturated, "load.utilisation_mean": rho_mean}
