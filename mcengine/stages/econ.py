"""Econ stage: dollars and joules per million output tokens (docs/model.md#econ,
docs/model.md#cost, docs/model.md#power).

Per trial, with that trial's inputs and the other stages' columns:

* GPU price by part (:func:`price_parts`): the fab stage's cost parts of a good package
  (die, HBM, packaging, test, optics), those in ``econ.markup_applies_to`` (the trial's
  option when it is a choice, :func:`markup_scope`) times ``econ.gpu_markup``, the others
  at cost; or ``econ.gpu_price_usd`` when set (then one part, ``gpu_price``). With all
  five package parts listed the price is exactly fab cost x markup. ``econ.markup_scope``
  reads the vendor's pricing (docs/model.md#markup-scope): ``"per_part"`` as above,
  ``"package"`` ``econ.package_markup`` on all five package parts, ``"value"`` the
  price ``econ.value_price_per_h100_equivalent_usd x gpu.h100_equivalents`` with the
  parts at cost and the premium over cost as ``gpu_price``;
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
  availability (an instance short of GPUs still serves on a smaller layout); with a
  demand (``workload.load.demand``, docs/load.md) the goodput the load stage hands in
  (``load.served_tokens_per_s``: tokens served within the SLOs), and the utilisation
  ``busy_fraction`` is scaled by the mean utilisation (``load.utilisation_mean``): idle
  capacity draws idle power and its capex is charged to the tokens served;
* cost per million tokens = (capex + energy + repairs) / (cluster tokens/s x horizon
  seconds / 10^6), and the same per part (:data:`BREAKDOWN_PARTS`), which add up to it:
  the marked-up parts at cost and the vendor's margin on them as its own part,
  ``markup`` (:func:`split_markup`);
* the same at cost (``cost_per_mtok_at_cost_usd``): no markup on anything, the GPU at
  its fab cost (also when ``econ.gpu_price_usd`` is set), so the verdict's share that
  is the vendor's margin shows (docs/model.md#cost).
* cost per request = cost per token x the output tokens per request (the mix's mean
  with request classes); per request class (docs/model.md#mix), the cost per million
  tokens were the cluster to serve that class alone (:data:`~mcengine.columns.CLASS_COST_COLUMN`).

Off by default, each adding its own columns and breakdown parts only when on:

* the switched fabric (``econ.fabric_model = "fat_tree"``, docs/model.md#fabric): a NIC
  per ``cluster.gpus_per_nic`` GPUs (``network``) and the switch tiers its endpoints need
  (``switch_tiers``: switch ports, optics, OCS ports per endpoint, each priced by its
  bandwidth with ``econ.port_speed = "nic"``, :mod:`mcengine.analytic.fabric`); the
  scale-up port cost times the ``2 t - 1`` switch ports a GPU needs in its domain's
  tiers; columns ``scale_out_tiers``, ``scale_up_tiers``;
* the data hall (``econ.facility``, docs/model.md#facility): capex per MW of rated IT
  load (GPUs at TDP, hosts, switches and optics) and racks (``facility``), cooling by
  rack power (``cooling``), the building's floor by rack positions (``floor``), the
  cooling kind's PUE in place of ``econ.pue`` and the host and network power in the
  energy (:mod:`mcengine.analytic.facility`); columns ``it_power_mw``, ``rack_kw``,
  ``liquid_cooled``, ``racks``;
* the cost of capital (``econ.wacc`` and the parts' lives, residual value and price
  decline, docs/model.md#finance): each part charged at its levelised share over the
  horizon (:func:`mcengine.analytic.finance.horizon_factor`), the part lines at
  ``wacc = 0`` and ``capital`` the rest. The data hall is always charged over its own
  life (``econ.facility_life_years``).

Before the roofline stage, :func:`plan_power_weight` hands the per-trial planner what it
needs to take the least cost per token (docs/model.md#plan): the weight of the dynamic
energy against the costs every plan of the trial shares; :func:`planning_power_weight`
the same weight for a plan chosen ahead of the trials.

Vectorised NumPy: a handful of multiplications per trial needs no kernel.
"""

from __future__ import annotations

import numpy as np

from ..analytic import facility as af
from ..analytic import fabric as fb
from ..analytic import finance as fi
from ..columns import BREAKDOWN_COLUMN, CLASS_COST_COLUMN
from ..errors import InputError, Problem
from ..scenario import Scenario
from ..scenario.fabric import scale_out
from ..scenario.dists import Fixed
from ..scenario.sampling import TrialInputs
from ..scenario.dists import Choice
from ..scenario.sections.econ import MARKUP_PARTS, PACKAGE_PARTS
from ..units import HOURS_PER_YEAR, TOKENS_PER_MTOK, W_PER_KW

#: The parts of the cost per token: the package (at cost), a given GPU price, hosts,
#: scale-out network, scale-up fabric (at cost), energy, repairs, and the vendor's
#: margin on all of them, ``markup`` (:func:`split_markup`).
BREAKDOWN_PARTS = (*PACKAGE_PARTS, "gpu_price", "hosts", "network", "fabric", "energy", "repairs", "markup")

#: Parts a markup may fall on: in the breakdown each is at cost and its margin is in
#: ``markup`` (the premium of ``econ.markup_scope = "value"`` sits on ``gpu_price``).
MARKED_PARTS = (*PACKAGE_PARTS, "gpu_price", "hosts", "fabric")

#: Parts the switched fabric, the data hall and the cost of capital add to the breakdown,
#: each only in a scenario that turns it on (:func:`breakdown_parts`).
EXTRA_BREAKDOWN_PARTS = ("switch_tiers", "facility", "cooling", "floor", "capital")

#: Every part a breakdown may have, in the figure's order.
ALL_BREAKDOWN_PARTS = (*BREAKDOWN_PARTS, *EXTRA_BREAKDOWN_PARTS)

#: The data hall's parts, charged over ``econ.facility_life_years``.
HALL_PARTS = ("facility", "cooling", "floor")

#: Columns of the switched fabric and of the data hall, each only when on.
FABRIC_COLUMNS = ("scale_out_tiers", "scale_up_tiers")
FACILITY_COLUMNS = ("it_power_mw", "rack_kw", "liquid_cooled", "racks")

#: Columns this stage adds, in order.
COLUMNS = ("gpu_price_usd", "gpu_price_per_h100_equivalent_usd", "capex_usd", "energy_usd", "repair_usd", "total_cost_usd",
           "availability", "tokens_per_s", "tokens_total", "cost_per_mtok_usd", "cost_per_mtok_at_cost_usd", "gpu_power_w", "power_w_per_h100_equivalent",
           "energy_j_per_token", "cost_per_request_usd", *(BREAKDOWN_COLUMN.format(p) for p in BREAKDOWN_PARTS))

SECONDS_PER_HOUR = 3600.0


def fat_tree(scenario: Scenario) -> bool:
    """Whether the scale-out network is priced as switch tiers (``econ.fabric_model``)."""
    return scenario.econ.fabric_model == "fat_tree"


def finance_on(scenario: Scenario) -> bool:
    """Whether capital carries a cost: ``econ.wacc``, a life, the residual value or the
    price decline set away from the defaults (else the capex counts as spent)."""
    e = scenario.econ
    zero = all(isinstance(d, Fixed) and d.value == 0.0 for d in (e.wacc, e.residual_fraction, e.price_decline))
    return not zero or any(v is not None for v in (e.gpu_life_years, e.host_life_years, e.network_life_years))


def breakdown_parts(scenario: Scenario) -> tuple[str, ...]:
    """The breakdown parts of ``scenario``: :data:`BREAKDOWN_PARTS` and those of
    :data:`EXTRA_BREAKDOWN_PARTS` it turns on."""
    hall_on = scenario.econ.facility
    on = {"switch_tiers": fat_tree(scenario), "facility": hall_on, "cooling": hall_on, "floor": hall_on, "capital": finance_on(scenario)}
    return (*BREAKDOWN_PARTS, *(p for p in EXTRA_BREAKDOWN_PARTS if on[p]))


def scale_out_endpoints(scenario: Scenario) -> int:
    """Scale-out endpoints: one NIC per ``cluster.gpus_per_nic`` GPUs, spares included."""
    return scale_out(scenario).endpoints


def scale_out_tiers(scenario: Scenario) -> int:
    """Switch tiers the scale-out endpoints need (:func:`mcengine.scenario.fabric.scale_out`)."""
    return scale_out(scenario).tiers


def scale_up_tiers(scenario: Scenario) -> int:
    """Switch tiers one scale-up domain needs: ``cluster.scale_up_domain_gpus`` GPUs ("auto":
    the instance) on ``econ.scale_up_switch_radix``-port switches, non-blocking."""
    c = scenario.cluster
    domain = c.instance_gpus if c.scale_up_domain_gpus == "auto" else c.scale_up_domain_gpus
    return fb.tiers_needed(domain, scenario.econ.scale_up_switch_radix, 1.0, "econ.scale_up_switch_radix")


def switch_tier_parts(scenario: Scenario, inputs: TrialInputs) -> tuple[np.ndarray, np.ndarray]:
    """Per scale-out endpoint, the switch tiers' price and power (USD, W): each packet-switch
    port with its optic (pluggable or co-packaged, ``econ.switch_optics``), each OCS port
    (``econ.top_tier = "ocs"``) and the pluggable at the NIC end
    (:func:`mcengine.analytic.fabric.switch_ports_per_endpoint`). With ``econ.port_speed =
    "nic"`` each is priced and powered at the port's bandwidth (``s``, its share of a quoted
    ``econ.switch_port_gbps`` port): a switch port and co-packaged optics ``x s``, a
    pluggable ``x s^econ.optics_cost_exponent`` (power ``^optics_power_exponent``), an OCS
    port alike at any speed (:func:`mcengine.analytic.fabric.bandwidth_scale`)."""
    e = scenario.econ
    fabric = scale_out(scenario)
    packet, ocs = fb.switch_ports_per_endpoint(fabric.tiers, e.oversubscription.value, e.top_tier == "ocs")
    share = fabric.share  # 1 with econ.port_speed = "switch": every port as quoted
    cost_share = fb.bandwidth_scale(fabric.port_gbps, e.switch_port_gbps, inputs["econ.optics_cost_exponent"])
    power_share = fb.bandwidth_scale(fabric.port_gbps, e.switch_port_gbps, inputs["econ.optics_power_exponent"])
    cpo = e.switch_optics == "cpo"
    optic_usd = inputs["econ.cpo_port_cost_usd"] * share if cpo else inputs["econ.pluggable_cost_usd"] * cost_share
    optic_w = inputs["econ.cpo_port_w"] * share if cpo else inputs["econ.pluggable_w"] * power_share
    usd = (packet * (inputs["econ.switch_port_cost_usd"] * share + optic_usd) + ocs * inputs["econ.ocs_port_cost_usd"]
           + inputs["econ.pluggable_cost_usd"] * cost_share)
    watts = packet * (inputs["econ.switch_port_w"] * share + optic_w) + ocs * inputs["econ.ocs_port_w"] + inputs["econ.pluggable_w"] * power_share
    return usd, watts



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


def fleet_slots(scenario: Scenario, instances) -> tuple:
    """``(slots, active)``: the GPU slots and active GPUs of ``instances`` instances (per
    trial, the fleet the load stage has the cluster buy, ``load.instances``,
    docs/load.md#auto), its spare pools in the simulated cluster's proportion
    (``total_gpus x instances / simulated instances``); the scenario's own where ``instances`` is None."""
    if instances is None:
        return scenario.total_gpus, scenario.active_gpus
    return scenario.total_gpus * (instances / scenario.cluster.simulated()), instances * scenario.cluster.instance_gpus


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


def energy_usd(scenario: Scenario, inputs: TrialInputs, power_w: np.ndarray, pue: np.ndarray | None = None, active=None) -> np.ndarray:
    """Energy bill over the horizon (USD): active GPUs (``active``, a fleet's, or the
    scenario's) x ``power_w`` x ``econ.pue`` (or ``pue``) x horizon hours x ``econ.power_usd_per_kwh``."""
    horizon_hours = scenario.run.horizon_years.value * HOURS_PER_YEAR
    energy_kwh = (scenario.active_gpus if active is None else active) * power_w / W_PER_KW * (inputs["econ.pue"] if pue is None else pue) * horizon_hours
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
    (availabilities, ``repairs``) columns of the trials. With the switched fabric, the
    data hall or a cost of capital on (:func:`breakdown_parts`), ``C`` and ``D`` are read
    off the stage's own total (:func:`total_at_load` at ``u = 0`` and ``u = 1``): the
    hall's capex and PUE, the hosts' and network's power and the levelised charges are
    then part of what the planner weighs."""
    if breakdown_parts(scenario) != BREAKDOWN_PARTS:
        idle_total, full_total = (total_at_load(scenario, inputs, columns, u) for u in (0.0, 1.0))
        return (full_total - idle_total) / idle_total
    availability = served_availability(scenario, columns)
    idle = energy_usd(scenario, inputs, gpu_power_w(scenario, inputs, np.zeros(inputs.n), availability))
    full = energy_usd(scenario, inputs, gpu_power_w(scenario, inputs, np.ones(inputs.n), availability))
    fixed = purchase(scenario, inputs, columns)["capex"] + repair_usd(inputs, columns, scenario.spare_modules) + idle
    return (full - idle) / fixed


def total_at_load(scenario: Scenario, inputs: TrialInputs, columns: dict[str, np.ndarray], busy_fraction: float) -> np.ndarray:
    """The stage's total cost over the horizon (USD, :func:`economics`' ``total_cost_usd``)
    of the trials were every plan busy ``busy_fraction`` of the time: ``C + D u``, linear
    in ``u`` (only the GPUs' dynamic energy reads it); the roofline columns it does not
    read are stand-ins."""
    n = inputs.n
    probe = {**columns, "busy_fraction": np.full(n, busy_fraction), "tokens_per_s_instance": np.ones(n), "output_tokens_per_request": np.ones(n),
             **{f"mix.{name}.tokens_per_s_instance": np.ones(n) for name, _ in scenario.workload.classes}}
    return economics(scenario, inputs, probe)["total_cost_usd"]


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


def purchase(scenario: Scenario, inputs: TrialInputs, columns: dict[str, np.ndarray], slots=None) -> dict[str, np.ndarray]:
    """What the cluster costs to buy, per trial: the GPU ``price`` and its parts
    (``per_gpu``, :data:`BREAKDOWN_PARTS`' package parts and ``gpu_price``; the same
    without the vendor's margin in ``per_gpu_at_cost``: a given price counts as cost), per GPU slot
    the ``host``, ``network`` and ``fabric`` (marked up where listed) and their at-cost
    ``host_at_cost``, ``fabric_at_cost``, and ``capex`` / ``capex_at_cost`` (module docstring);
    ``slots``: the GPU slots of a fleet bought per trial (:func:`fleet_slots`), priced per
    slot as the scenario's cluster (its hosts, spare hosts and switch tiers per slot)."""
    e = scenario.econ
    n, total_gpus = inputs.n, scenario.total_gpus if slots is None else slots
    markup = inputs["econ.gpu_markup"]
    applies = markup_scope(e.markup_applies_to, inputs.values.get("econ.markup_applies_to", np.zeros(n)))
    cost_parts = {p: columns[f"gpu_cost_{p}_usd"] for p in PACKAGE_PARTS}
    package_markup = e.markup_scope == "package" and e.gpu_price_usd is None
    if package_markup:  # a gross margin on the whole package: its own markup on all five parts
        applies = {**applies, **{p: np.ones(n, dtype=bool) for p in PACKAGE_PARTS}}
    per_gpu_at_cost = {**cost_parts, "gpu_price": np.zeros(n)}
    if e.gpu_price_usd is None and e.markup_scope == "value":  # price per FLOP; the premium over cost in "gpu_price"
        price = inputs["econ.value_price_per_h100_equivalent_usd"] * scenario.gpu.h100_equivalents.value
        per_gpu = {**cost_parts, "gpu_price": price - columns["gpu_cost_usd"]}
    elif e.gpu_price_usd is None:
        package = inputs["econ.package_markup"] if package_markup else markup
        price = gpu_price(columns["gpu_cost_usd"], cost_parts, package, applies)
        per_gpu = {**price_parts(cost_parts, package, applies), "gpu_price": np.zeros(n)}
    else:  # a given price has no split into cost and margin: one part, no markup line
        price = inputs["econ.gpu_price_usd"]
        per_gpu = per_gpu_at_cost = {**{p: np.zeros(n) for p in PACKAGE_PARTS}, "gpu_price": price}
    host_at_cost, fabric_at_cost = host_cost_per_slot(scenario, inputs), inputs["econ.scale_up_port_cost_usd"]
    host = host_at_cost * np.where(applies["hosts"], markup, 1.0)
    fabric = fabric_at_cost * np.where(applies["fabric"], markup, 1.0)
    network = inputs["econ.network_cost_per_gpu_usd"]
    bought = {"price": price, "per_gpu": per_gpu, "per_gpu_at_cost": per_gpu_at_cost, "host": host, "host_at_cost": host_at_cost}
    if fat_tree(scenario):  # NICs, the switch tiers they need, the scale-up ports of the domain's tiers
        endpoints_per_slot = scale_out_endpoints(scenario) / scenario.total_gpus
        ports = 2 * scale_up_tiers(scenario) - 1
        network, tiers = inputs["econ.nic_cost_usd"] * endpoints_per_slot, switch_tier_parts(scenario, inputs)[0] * endpoints_per_slot
        fabric, fabric_at_cost = fabric * ports, fabric_at_cost * ports
        per_slot, at_cost = price + host + network + tiers + fabric, columns["gpu_cost_usd"] + host_at_cost + network + tiers + fabric_at_cost
        bought["switch_tiers"] = tiers
    else:
        per_slot, at_cost = price + host + network + fabric, columns["gpu_cost_usd"] + host_at_cost + network + fabric_at_cost
    return {**bought, "network": network, "fabric": fabric, "fabric_at_cost": fabric_at_cost, "capex": total_gpus * per_slot,
            "capex_at_cost": total_gpus * at_cost}


def split_markup(scenario: Scenario, inputs: TrialInputs, bought: dict[str, np.ndarray], spend: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``spend`` (USD by breakdown part, at price and charged over the horizon as the
    total is) with each of :data:`MARKED_PARTS` at cost and the vendor's margin on them
    in ``markup`` (docs/model.md#cost): ``econ.gpu_markup - 1`` times the parts in
    ``econ.markup_applies_to`` (``"per_part"``), ``econ.package_markup - 1`` times the
    package (``"package"``, with hosts and fabric as listed), the value price's premium
    over the fab cost (``"value"``); none on a given ``econ.gpu_price_usd``. With a cost
    of capital the at-cost parts take the same charge at ``wacc = 0`` as their prices
    (:func:`levelise`), so the parts still add up to the total; ``capital`` keeps the
    cost of capital on the whole price."""
    total_gpus = scenario.total_gpus
    at_cost = {**{p: total_gpus * v for p, v in bought["per_gpu_at_cost"].items()},
               "hosts": total_gpus * bought["host_at_cost"], "fabric": total_gpus * bought["fabric_at_cost"]}
    if finance_on(scenario):
        zero = charge_factors(scenario, inputs, 0.0)
        at_cost = {p: v * zero[p] for p, v in at_cost.items()}
    markup = sum((spend[p] - at_cost[p] for p in MARKED_PARTS), np.zeros(inputs.n))
    return {**spend, **at_cost, "markup": markup}


def hall(scenario: Scenario, inputs: TrialInputs) -> dict[str, np.ndarray]:
    """The data hall of ``econ.facility`` per trial (docs/model.md#facility): the rated
    IT power (W: every GPU at ``gpu.tdp_w``, every host's own power, the switch tiers'
    ports and optics), a rack's power (kW: ``econ.hosts_per_rack`` hosts with their GPUs),
    whether it is liquid-cooled (above ``econ.air_cooling_limit_kw``, or every rack with
    ``econ.cooling = "liquid"``), the PUE, the ``racks`` (``ceil(hosts / hosts_per_rack)``),
    the capex of power delivery and racks (``facility``), of cooling (``cooling``) and of
    the floor (``floor``: racks x ``econ.floor_m2_per_rack`` x ``econ.floor_usd_per_m2``),
    and ``running_w``, what the hosts of the active GPUs and the network draw besides the GPUs."""
    e, c = scenario.econ, scenario.cluster
    tdp = inputs["gpu.tdp_w"]
    host_w = c.gpus_per_host * scenario.gpu.h100_equivalents.value * inputs["econ.host_power_per_h100_equivalent_w"]
    network_w = scale_out_endpoints(scenario) * switch_tier_parts(scenario, inputs)[1]
    it_w = scenario.total_gpus * tdp + hosts(scenario) * host_w + network_w
    rack_kw = e.hosts_per_rack * (c.gpus_per_host * tdp + host_w) / W_PER_KW
    liquid = af.liquid_cooled(rack_kw, inputs["econ.air_cooling_limit_kw"]) | (e.cooling == "liquid")
    racks = -(-hosts(scenario) // e.hosts_per_rack)
    cooling_per_mw = af.by_cooling(liquid, inputs["econ.air_cooling_usd_per_mw"], inputs["econ.liquid_cooling_usd_per_mw"])
    return {"it_power_w": it_w, "rack_kw": rack_kw, "liquid": liquid, "pue": af.by_cooling(liquid, inputs["econ.air_pue"], inputs["econ.liquid_pue"]),
            "facility": af.capex_usd(it_w, inputs["econ.facility_usd_per_mw"]) + racks * inputs["econ.rack_cost_usd"],
            "cooling": af.capex_usd(it_w, cooling_per_mw), "racks": racks,
            "floor": af.floor_usd(racks, inputs["econ.floor_m2_per_rack"], inputs["econ.floor_usd_per_m2"]),
            "running_w": -(-scenario.active_gpus // c.gpus_per_host) * host_w + network_w}


def charge_factors(scenario: Scenario, inputs: TrialInputs, rate) -> dict[str, np.ndarray]:
    """Per capex part of the breakdown, its levelised charge over the horizon per dollar
    of its price at cost of capital ``rate`` (:func:`mcengine.analytic.finance.horizon_factor`
    times :func:`~mcengine.analytic.finance.net_of_residual`): the GPUs, hosts and network
    over ``econ.gpu_life_years``, ``host_life_years``, ``network_life_years`` (unset: the
    horizon) with the residual value and price decline; the hall over its own life."""
    e = scenario.econ
    horizon = scenario.run.horizon_years.value

    def life(key: str):
        return horizon if getattr(e, key) is None else inputs[f"econ.{key}"]

    def hardware(key: str):
        years = life(key)
        return fi.horizon_factor(rate, years, horizon, inputs["econ.price_decline"]) * fi.net_of_residual(rate, years, inputs["econ.residual_fraction"])

    gpu, host, network = hardware("gpu_life_years"), hardware("host_life_years"), hardware("network_life_years")
    hall_factor = fi.horizon_factor(rate, inputs["econ.facility_life_years"], horizon)
    return {**{p: gpu for p in (*PACKAGE_PARTS, "gpu_price")}, "hosts": host, "network": network, "switch_tiers": network, "fabric": network,
            "facility": hall_factor, "cooling": hall_factor, "floor": hall_factor}


def levelise(scenario: Scenario, inputs: TrialInputs, spend: dict[str, np.ndarray], at_cost: dict[str, np.ndarray]) -> tuple[dict, dict]:
    """``spend`` and ``at_cost`` (USD by breakdown part) with each capex part charged over
    the horizon (:func:`charge_factors`): without a cost of capital (:func:`finance_on`)
    only the hall over its life; with one, the parts at ``wacc = 0`` and ``capital`` the
    difference the cost of capital makes."""
    zero = charge_factors(scenario, inputs, 0.0)
    if not finance_on(scenario):
        return ({p: v * zero[p] if p in HALL_PARTS else v for p, v in spend.items()},
                {p: v * zero[p] if p in HALL_PARTS else v for p, v in at_cost.items()})
    rated = charge_factors(scenario, inputs, inputs["econ.wacc"])
    spent = {p: v * zero[p] if p in zero else v for p, v in spend.items()}
    capital = sum((v * (rated[p] - zero[p]) for p, v in spend.items() if p in zero), np.zeros(inputs.n))
    return {**spent, "capital": capital}, {p: v * rated[p] if p in rated else v for p, v in at_cost.items()}


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
    With a demand, the cluster is the load stage's ``load.instances`` (the fleet bought
    with ``cluster.instances = "auto"``, docs/load.md#auto): its GPU slots bought at the
    scenario's prices per slot (the data hall per slot of the scenario's), its active GPUs'
    energy at its utilisation, the repairs at the scenario's repairs per GPU slot.
    """
    n = inputs.n
    instances = columns.get("load.instances")
    total_gpus, active_gpus = fleet_slots(scenario, instances)
    horizon_hours = scenario.run.horizon_years.value * HOURS_PER_YEAR
    bought = purchase(scenario, inputs, columns, None if instances is None else total_gpus)
    price, per_gpu, host, network, fabric = (bought[k] for k in ("price", "per_gpu", "host", "network", "fabric"))
    capex, capex_at_cost = bought["capex"], bought["capex_at_cost"]
    availability = served_availability(scenario, columns)
    demand = "load.served_tokens_per_s" in columns  # the load stage ran: a demand, not saturation
    busy = columns["busy_fraction"] * columns["load.utilisation_mean"] if demand else columns["busy_fraction"]
    power_w = gpu_power_w(scenario, inputs, busy, availability)
    extra = {}
    if scenario.econ.facility:
        h = hall(scenario, inputs)
        if instances is not None:  # the hall per GPU slot of the scenario's cluster
            h = {**h, **{k: h[k] * (total_gpus / scenario.total_gpus) for k in ("it_power_w", "facility", "cooling", "running_w")}}
        energy = (energy_usd(scenario, inputs, power_w, h["pue"], active_gpus)
                  + h["running_w"] / W_PER_KW * h["pue"] * horizon_hours * inputs["econ.power_usd_per_kwh"])
        extra.update(it_power_mw=h["it_power_w"] / af.W_PER_MW, rack_kw=h["rack_kw"], liquid_cooled=h["liquid"].astype(float),
                     racks=np.full(n, float(h["racks"])))
    else:
        energy = energy_usd(scenario, inputs, power_w, active=active_gpus)
    repairs = repair_usd(inputs, columns, scenario.spare_modules)
    if instances is not None:  # the scenario's repairs per GPU slot, on the fleet's slots
        repairs = repairs * (total_gpus / scenario.total_gpus)
    total = capex + energy + repairs
    tokens_per_s = columns["load.served_tokens_per_s"] if demand else columns["tokens_per_s_instance"] * scenario.cluster.instances * availability
    tokens_total = tokens_per_s * horizon_hours * SECONDS_PER_HOUR
    mtok = tokens_total / TOKENS_PER_MTOK
    spend = {**{p: total_gpus * v for p, v in per_gpu.items()}, "hosts": total_gpus * host, "network": total_gpus * network,
             "fabric": total_gpus * fabric, "energy": energy, "repairs": repairs}
    parts = breakdown_parts(scenario)
    cost_at_cost = capex_at_cost + energy + repairs
    if parts != BREAKDOWN_PARTS:  # the fabric's tiers, the hall, the cost of capital
        at_cost = {"gpu_price": total_gpus * columns["gpu_cost_usd"], "hosts": total_gpus * bought["host_at_cost"], "network": total_gpus * network,
                   "fabric": total_gpus * bought["fabric_at_cost"], "energy": energy, "repairs": repairs}
        if fat_tree(scenario):
            spend["switch_tiers"] = at_cost["switch_tiers"] = total_gpus * bought["switch_tiers"]
            extra.update(scale_out_tiers=np.full(n, float(scale_out_tiers(scenario))), scale_up_tiers=np.full(n, float(scale_up_tiers(scenario))))
        if scenario.econ.facility:
            for part in HALL_PARTS:
                spend[part] = at_cost[part] = h[part]
        spend, at_cost = levelise(scenario, inputs, spend, at_cost)
        total = sum((np.broadcast_to(spend[p], (n,)) for p in parts if p != "markup"), np.zeros(n))
        cost_at_cost = sum((np.broadcast_to(v, (n,)) for v in at_cost.values()), np.zeros(n))
    h100e = scenario.gpu.h100_equivalents.value
    cost_per_mtok = per_unit(total, mtok)
    cost_per_mtok_at_cost = per_unit(cost_at_cost, mtok)
    spend = split_markup(scenario, inputs, bought, spend)
    breakdown = {BREAKDOWN_COLUMN.format(p): per_unit(np.broadcast_to(spend[p], (n,)), mtok) for p in parts}
    served_mtok = horizon_hours * SECONDS_PER_HOUR * (scenario.cluster.instances if instances is None else instances) * availability / TOKENS_PER_MTOK
    if demand:  # each class's instances serve the goodput's share of their saturated rate
        served_mtok = served_mtok * per_unit(columns["load.served_tokens_per_s"], columns["load.saturated_tokens_per_s"])
    by_class = {CLASS_COST_COLUMN.format(name): per_unit(total, columns[f"mix.{name}.tokens_per_s_instance"] * served_mtok)
                for name, _ in scenario.workload.classes}
    joules_per_token = per_unit(active_gpus * power_w * horizon_hours * SECONDS_PER_HOUR, tokens_total)
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
        **extra,
    }
