"""Econ stage: dollars and joules per million output tokens (docs/model.md#econ,
docs/model.md#cost, docs/model.md#power).

Per trial, with that trial's inputs and the other stages' columns:

* GPU price by part (:func:`price_parts`): the fab stage's cost parts of a good package
  (die, HBM, packaging, test, optics), those in ``econ.markup_applies_to`` (the trial's
  option when it is a choice, :func:`markup_scope`) times ``econ.gpu_markup``, the others
  at cost; or ``econ.gpu_price_usd`` when set (then one part, ``gpu_price``). With all
  five package parts listed the price is exactly fab cost x markup;
* hosts: ``ceil(total GPUs / cluster.gpus_per_host) x econ.host_cost_usd`` when set, else
  total GPUs x ``host_cost_per_gpu_usd``; scale-out network: total GPUs x
  ``network_cost_per_gpu_usd``; scale-up fabric: total GPUs x ``scale_up_port_cost_usd``
  (per GB/s x link bandwidth under the link rule, docs/model.md#links; hosts and fabric
  times the markup when listed);
* capex = total GPUs x (GPU price + host, network and fabric per GPU slot);
* GPU power = idle + (TDP - idle) x s^3 x utilisation x availability, with ``s`` =
  ``gpu.dvfs_scale`` and utilisation the roofline's ``busy_fraction``; idle =
  ``gpu.idle_w``, or the TDP when unset (a GPU that always draws its TDP);
* energy = active GPUs x power x ``econ.pue`` x horizon hours x ``power_usd_per_kwh``;
* repairs = (GPU and host repairs, NIC swaps) x ``repair_cost_usd`` + (module swaps + the
  module pool, ``Scenario.spare_modules``) x ``module_cost_usd``;
* cluster tokens/s = per-instance output tokens/s x instances x availability: the
  instance availability, or with ``cluster.on_failure = "reshard"`` the capacity
  availability (an instance short of GPUs still serves on a smaller layout);
* cost per million tokens = (capex + energy + repairs) / (cluster tokens/s x horizon
  seconds / 10^6), and the same per part (:data:`BREAKDOWN_PARTS`), which add up to it;
* the same at cost (``cost_per_mtok_at_cost_usd``): no markup on anything, the GPU at
  its fab cost (also when ``econ.gpu_price_usd`` is set), so the verdict's share that
  is the vendor's margin shows (docs/model.md#cost).
* cost per request = cost per token x the output tokens per request (the mix's mean
  with request classes); per request class (docs/model.md#mix), the cost per million
  tokens were the cluster to serve that class alone (:data:`~mcengine.columns.CLASS_COST_COLUMN`).

Before the roofline stage, :func:`plan_power_weight` hands the per-trial planner what it
needs to take the least cost per token (docs/model.md#plan): the weight of the dynamic
energy against the costs every plan of the trial shares; :func:`planning_power_weight`
the same weight for a plan chosen ahead of the trials.

Vectorised NumPy: a handful of multiplications per trial needs no kernel.
"""

from __future__ import annotations

import numpy as np

from ..columns import BREAKDOWN_COLUMN, CLASS_COST_COLUMN
from ..errors import InputError, Problem
from ..scenario import Scenario
from ..scenario.sampling import TrialInputs
from ..scenario.dists import Choice
from ..scenario.sections.econ import MARKUP_PARTS, PACKAGE_PARTS
from ..units import HOURS_PER_YEAR, TOKENS_PER_MTOK, W_PER_KW

#: The parts of the cost per token, in the order of the breakdown figure: the package
#: (at price), a given GPU price, hosts, scale-out network, scale-up fabric, energy, repairs.
BREAKDOWN_PARTS = (*PACKAGE_PARTS, "gpu_price", "hosts", "network", "fabric", "energy", "repairs")

#: Columns this stage adds, in order.
COLUMNS = ("gpu_price_usd", "gpu_price_per_h100_equivalent_usd", "capex_usd", "energy_usd", "repair_usd", "total_cost_usd",
           "availability", "tokens_per_s", "tokens_total", "cost_per_mtok_usd", "cost_per_mtok_at_cost_usd", "gpu_power_w", "power_w_per_h100_equivalent",
           "energy_j_per_token", "cost_per_request_usd", *(BREAKDOWN_COLUMN.format(p) for p in BREAKDOWN_PARTS))

SECONDS_PER_HOUR = 3600.0



def per_unit(amount, units) -> np.ndarray:
    """``amount / units`` per trial; a trial with no units delivered (no tokens: it missed
    its SLOs) gets ``+inf`` for a positive amount and 0 for none (a part nobody paid for
    costs nothing per token even then), never NaN."""
    amount, units = np.broadcast_arrays(np.asarray(amount, float), np.asarray(units, float))
    out = np.where(amount > 0, np.inf, 0.0)
    np.divide(amount, units, out=out, where=units > 0)
    return out

def markup_scope(scope: tuple[str, ...] | Choice, drawn: np.ndarray) -> dict[str, np.ndarray]:
    """Per part of :data:`MARKUP_PARTS`, whether the markup multiplies it in each trial:
    the parts listed in ``scope``, or, for a choice, in the option each trial drew
    (``drawn``: the trial's option index, the input column ``econ.markup_applies_to``)."""
    if isinstance(scope, Choice):
        index = np.asarray(drawn).astype(np.int64)
        return {p: np.array([p in option for option in scope.options])[index] for p in MARKUP_PARTS}
    return {p: np.full(np.shape(drawn), p in scope) for p in MARKUP_PARTS}


def price_parts(cost_parts: dict[str, np.ndarray], markup: np.ndarray, applies: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The GPU price by part (USD): each package cost part times ``markup`` where
    ``applies[part]`` (:func:`markup_scope`), else at cost (docs/model.md#cost)."""
    return {part: np.where(applies[part], cost_parts[part] * markup, cost_parts[part]) for part in PACKAGE_PARTS}


def gpu_price(cost_usd: np.ndarray, cost_parts: dict[str, np.ndarray], markup: np.ndarray, applies: dict[str, np.ndarray]) -> np.ndarray:
    """Price of one GPU package: the marked-up share of ``cost_usd`` times ``markup`` plus
    the parts at cost. Written ``(cost - at_cost) x markup + at_cost`` so that with every
    package part marked up it is ``cost x markup`` to the bit."""
    at_cost = sum((np.where(applies[p], 0.0, cost_parts[p]) for p in PACKAGE_PARTS), np.zeros_like(cost_usd))
    return (cost_usd - at_cost) * markup + at_cost


def hosts(scenario: Scenario) -> int:
    """Hosts carrying the cluster's GPUs (active and spare): ``ceil(total / gpus_per_host)``."""
    return -(-scenario.total_gpus // scenario.cluster.gpus_per_host)


def host_cost_per_slot(scenario: Scenario, inputs: TrialInputs) -> np.ndarray:
    """Host cost per GPU slot (USD): ``hosts x econ.host_cost_usd / total GPUs`` when the
    per-host price is set, else ``econ.host_cost_per_gpu_usd``; with host units
    (``reliability.host_failure = "host"``) the ``cluster.spare_hosts`` of the pool too."""
    r = scenario.reliability
    spare = scenario.cluster.spare_hosts if r.host_failure == "host" and r.replace_unit != "host" else 0  # the host pool
    if scenario.econ.host_cost_usd is None:
        per_gpu = inputs["econ.host_cost_per_gpu_usd"]
        return per_gpu * (1.0 + spare * scenario.cluster.gpus_per_host / scenario.total_gpus) if spare else per_gpu
    return (hosts(scenario) + spare) * inputs["econ.host_cost_usd"] / scenario.total_gpus


def gpu_power_w(scenario: Scenario, inputs: TrialInputs, busy_fraction: np.ndarray, availability: np.ndarray) -> np.ndarray:
    """Mean board power of an active GPU over the horizon (W, docs/model.md#power).

    ``idle + (tdp - idle) x s^3 x busy_fraction x availability``: a GPU draws its idle
    power always and its dynamic power while its instance is up and computing or
    streaming memory; ``s`` (``gpu.dvfs_scale``) scales the dynamic power by s^3
    (voltage tracking frequency). ``gpu.idle_w`` unset: the TDP, whatever the load.
    """
    tdp = inputs["gpu.tdp_w"]
    if scenario.gpu.idle_w is None:
        return np.broadcast_to(tdp, (inputs.n,)).astype(float)
    idle = inputs["gpu.idle_w"]
    bad = np.flatnonzero(idle > tdp)
    if bad.size:
        i = int(bad[0])
        raise InputError(Problem("gpu.idle_w", float(idle[i]), f"allowed: at most gpu.tdp_w (= {float(tdp[i]):g} W in trial {inputs.trial_start + i})"))
    return idle + (tdp - idle) * inputs["gpu.dvfs_scale"] ** 3 * busy_fraction * availability


def served_availability(scenario: Scenario, columns: dict[str, np.ndarray]) -> np.ndarray:
    """The share of the cluster's capacity that serves: the capacity availability with
    ``cluster.on_failure = "reshard"`` (docs/model.md#reshard), else the instance one."""
    return columns["capacity_availability" if scenario.cluster.on_failure == "reshard" else "instance_availability"]


def energy_usd(scenario: Scenario, inputs: TrialInputs, power_w: np.ndarray) -> np.ndarray:
    """Energy bill over the horizon (USD): active GPUs x ``power_w`` x ``econ.pue`` x
    horizon hours x ``econ.power_usd_per_kwh``."""
    horizon_hours = scenario.run.horizon_years.value * HOURS_PER_YEAR
    energy_kwh = scenario.active_gpus * power_w / W_PER_KW * inputs["econ.pue"] * horizon_hours
    return energy_kwh * inputs["econ.power_usd_per_kwh"]


def plan_power_weight(scenario: Scenario, inputs: TrialInputs, columns: dict[str, np.ndarray]) -> np.ndarray:
    """Per trial, what the planner needs to take the least cost per token
    (``workload.plan_objective = "cost"``, docs/model.md#plan): ``k = D / C``.

    A trial's plans share ``C`` = capex + repairs + the energy of idle GPUs (all before
    the roofline stage: fab and reliability columns, prices) and differ in output tokens/s
    ``T`` and busy fraction ``u``; the energy is ``C``'s idle part plus ``D u`` with ``D``
    the energy of the GPUs' dynamic power at full load (:func:`gpu_power_w` at ``u = 1``
    minus ``u = 0``; 0 with ``gpu.idle_w`` unset). Cost per token is ``(C + D u) / (T x
    served hours)``, so the least is the largest ``T / (1 + k u)``.
    ``columns`` holds the fab (``gpu_cost_usd`` and its parts) and reliability
    (availabilities, ``repairs``) columns of the trials."""
    availability = served_availability(scenario, columns)
    idle = energy_usd(scenario, inputs, gpu_power_w(scenario, inputs, np.zeros(inputs.n), availability))
    full = energy_usd(scenario, inputs, gpu_power_w(scenario, inputs, np.ones(inputs.n), availability))
    fixed = purchase(scenario, inputs, columns)["capex"] + repair_usd(inputs, columns, scenario.spare_modules) + idle
    return (full - idle) / fixed


def planning_power_weight(scenario: Scenario, inputs: TrialInputs, package_costs: dict[str, np.ndarray]) -> np.ndarray:
    """:func:`plan_power_weight` for a plan chosen ahead of the trials, at ``inputs`` (one
    trial: the median, a pessimistic quantile; docs/model.md#plan), which have no fab or
    reliability columns of their own: the package at its expected cost at those inputs
    (``package_costs``: ``gpu_cost_usd`` and its parts, which the pipeline takes from
    :func:`mcengine.stages.fab.expected_package_costs`) and a cluster that never fails
    (availability 1, no repairs). Failures left out move ``k`` by about the unavailability
    and the repairs' share of ``C`` (under 1 % on the shipped designs, docs/model.md#plan),
    and keep the choice free of the reliability stage, which reads the reshard table
    chosen this way."""
    n = inputs.n
    columns = {**package_costs, "instance_availability": np.ones(n), "capacity_availability": np.ones(n), "repairs": np.zeros(n)}
    return plan_power_weight(scenario, inputs, columns)


def purchase(scenario: Scenario, inputs: TrialInputs, columns: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """What the cluster costs to buy, per trial: the GPU ``price`` and its parts
    (``per_gpu``, :data:`BREAKDOWN_PARTS`' package parts and ``gpu_price``), per GPU slot
    the ``host``, ``network`` and ``fabric`` (marked up where listed) and their at-cost
    ``host_at_cost``, ``fabric_at_cost``, and ``capex`` / ``capex_at_cost`` (module docstring)."""
    e = scenario.econ
    n, total_gpus = inputs.n, scenario.total_gpus
    markup = inputs["econ.gpu_markup"]
    applies = markup_scope(e.markup_applies_to, inputs.values.get("econ.markup_applies_to", np.zeros(n)))
    cost_parts = {p: columns[f"gpu_cost_{p}_usd"] for p in PACKAGE_PARTS}
    if e.gpu_price_usd is None:
        price = gpu_price(columns["gpu_cost_usd"], cost_parts, markup, applies)
        per_gpu = {**price_parts(cost_parts, markup, applies), "gpu_price": np.zeros(n)}
    else:
        price = inputs["econ.gpu_price_usd"]
        per_gpu = {**{p: np.zeros(n) for p in PACKAGE_PARTS}, "gpu_price": price}
    host_at_cost, fabric_at_cost = host_cost_per_slot(scenario, inputs), inputs["econ.scale_up_port_cost_usd"]
    host = host_at_cost * np.where(applies["hosts"], markup, 1.0)
    fabric = fabric_at_cost * np.where(applies["fabric"], markup, 1.0)
    network = inputs["econ.network_cost_per_gpu_usd"]
    per_slot = price + host + network + fabric
    return {"price": price, "per_gpu": per_gpu, "host": host, "network": network, "fabric": fabric, "host_at_cost": host_at_cost,
            "fabric_at_cost": fabric_at_cost, "capex": total_gpus * per_slot,
            "capex_at_cost": total_gpus * (columns["gpu_cost_usd"] + host_at_cost + network + fabric_at_cost)}


def repair_usd(inputs: TrialInputs, columns: dict[str, np.ndarray], spare_modules: int = 0) -> np.ndarray:
    """Repair spend over the horizon: GPU and host repairs and NIC swaps at
    ``econ.repair_cost_usd`` each, and a module swap using up a module
    (``econ.module_cost_usd``), as does each of the ``spare_modules`` of the module pool
    bought at the start (docs/model.md#module-pool); a reliability column not given (a
    hand-built block) means none of those events."""
    years = inputs["run.horizon_years"]
    host_repairs, nic_swaps, module_swaps = (columns.get(k, 0.0) for k in ("host_repairs", "nic_swaps_per_year", "module_swaps_per_year"))
    return ((columns["repairs"] + host_repairs + nic_swaps * years) * inputs["econ.repair_cost_usd"]
            + (module_swaps * years + spare_modules) * inputs["econ.module_cost_usd"])


def economics(scenario: Scenario, inputs: TrialInputs, columns: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The econ columns of a block of trials.

    ``columns`` holds the fab (``gpu_cost_usd`` and its parts ``gpu_cost_<part>_usd``),
    reliability (``instance_availability``, ``capacity_availability``, ``repairs``) and
    roofline (``tokens_per_s_instance``, ``tokens_per_s_per_gpu``, ``busy_fraction``)
    columns of the same trials. With ``cluster.on_failure = "reshard"`` the served share
    is the capacity availability (docs/model.md#reshard), else the instance availability.
    """
    n, total_gpus = inputs.n, scenario.total_gpus
    horizon_hours = scenario.run.horizon_years.value * HOURS_PER_YEAR
    bought = purchase(scenario, inputs, columns)
    price, per_gpu, host, network, fabric = (bought[k] for k in ("price", "per_gpu", "host", "network", "fabric"))
    capex, capex_at_cost = bought["capex"], bought["capex_at_cost"]
    availability = served_availability(scenario, columns)
    power_w = gpu_power_w(scenario, inputs, columns["busy_fraction"], availability)
    energy = energy_usd(scenario, inputs, power_w)
    repairs = repair_usd(inputs, columns, scenario.spare_modules)
    total = capex + energy + repairs
    tokens_per_s = columns["tokens_per_s_instance"] * scenario.cluster.instances * availability
    tokens_total = tokens_per_s * horizon_hours * SECONDS_PER_HOUR
    mtok = tokens_total / TOKENS_PER_MTOK
    spend = {**{p: total_gpus * v for p, v in per_gpu.items()}, "hosts": total_gpus * host, "network": total_gpus * network,
             "fabric": total_gpus * fabric, "energy": energy, "repairs": repairs}
    h100e = scenario.gpu.h100_equivalents.value
    cost_per_mtok = per_unit(total, mtok)
    cost_per_mtok_at_cost = per_unit(capex_at_cost + energy + repairs, mtok)
    breakdown = {BREAKDOWN_COLUMN.format(p): per_unit(np.broadcast_to(spend[p], (n,)), mtok) for p in BREAKDOWN_PARTS}
    served_mtok = horizon_hours * SECONDS_PER_HOUR * scenario.cluster.instances * availability / TOKENS_PER_MTOK
    by_class = {CLASS_COST_COLUMN.format(name): per_unit(total, columns[f"mix.{name}.tokens_per_s_instance"] * served_mtok)
                for name, _ in scenario.workload.classes}
    joules_per_token = per_unit(scenario.active_gpus * power_w * horizon_hours * SECONDS_PER_HOUR, tokens_total)
    price = np.broadcast_to(price, (n,)).astype(float)
    return {
        "gpu_price_usd": price,
        "gpu_price_per_h100_equivalent_usd": price / h100e,
        "capex_usd": capex,
        "energy_usd": energy,
        "repair_usd": repairs,
        "total_cost_usd": total,
        "availability": availability,
        "tokens_per_s": tokens_per_s,
        "tokens_total": tokens_total,
        "cost_per_mtok_usd": cost_per_mtok,
        "cost_per_mtok_at_cost_usd": cost_per_mtok_at_cost,
        "gpu_power_w": power_w,
        "power_w_per_h100_equivalent": power_w / h100e,
        "energy_j_per_token": joules_per_token,
        "cost_per_request_usd": cost_per_mtok * columns["output_tokens_per_request"] / TOKENS_PER_MTOK,
        **breakdown,
        **by_class,
    }
