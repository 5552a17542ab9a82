"""Econ stage: dollars per million output tokens (docs/model.md#econ).

Per trial, with that trial's inputs and the other stages' columns:

* GPU price = ``econ.gpu_price_usd`` if set, else fab cost per good package x ``econ.gpu_markup``;
* capex = (instances x instance_gpus + spare_gpus) x (GPU price + ``host_cost_per_gpu_usd``
  + ``network_cost_per_gpu_usd``);
* energy = active GPUs x ``gpu.tdp_w`` x ``econ.pue`` x horizon hours x ``power_usd_per_kwh``;
* repairs = repair events x ``repair_cost_usd``;
* cluster tokens/s = per-instance output tokens/s x instances x availability: the
  instance availability, or with ``cluster.on_failure = "reshard"`` the capacity
  availability (an instance short of GPUs still serves on a smaller layout);
* cost per million tokens = (capex + energy + repairs) / (cluster tokens/s x horizon
  seconds / 10^6).

Vectorised NumPy: a handful of multiplications per trial needs no kernel.
"""

from __future__ import annotations

import numpy as np

from ..scenario import Scenario
from ..scenario.sampling import TrialInputs
from ..units import HOURS_PER_YEAR, TOKENS_PER_MTOK, W_PER_KW

#: Columns this stage adds, in order.
COLUMNS = ("gpu_price_usd", "capex_usd", "energy_usd", "repair_usd", "total_cost_usd", "availability", "tokens_per_s", "tokens_total", "cost_per_mtok_usd")


def economics(scenario: Scenario, inputs: TrialInputs, columns: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The econ columns of a block of trials.

    ``columns`` holds the fab (``gpu_cost_usd``), reliability (``instance_availability``,
    ``capacity_availability``, ``repairs``) and roofline (``tokens_per_s_instance``) columns of the same trials.
    """
    e = scenario.econ
    horizon_hours = scenario.run.horizon_years.value * HOURS_PER_YEAR
    if e.gpu_price_usd is None:
        price = columns["gpu_cost_usd"] * inputs["econ.gpu_markup"]
    else:
        price = inputs["econ.gpu_price_usd"]
    per_slot = price + inputs["econ.host_cost_per_gpu_usd"] + inputs["econ.network_cost_per_gpu_usd"]
    capex = scenario.total_gpus * per_slot
    energy_kwh = scenario.active_gpus * inputs["gpu.tdp_w"] / W_PER_KW * inputs["econ.pue"] * horizon_hours
    energy = energy_kwh * inputs["econ.power_usd_per_kwh"]
    repairs = columns["repairs"] * inputs["econ.repair_cost_usd"]
    total = capex + energy + repairs
    reshard = scenario.cluster.on_failure == "reshard"
    availability = columns["capacity_availability" if reshard else "instance_availability"]
    tokens_per_s = columns["tokens_per_s_instance"] * scenario.cluster.instances * availability
    tokens_total = tokens_per_s * horizon_hours * 3600.0
    with np.errstate(divide="ignore"):
        cost_per_mtok = total / (tokens_total / TOKENS_PER_MTOK)
    return {
        "gpu_price_usd": np.broadcast_to(price, (inputs.n,)).astype(float),
        "capex_usd": capex,
        "energy_usd": energy,
        "repair_usd": repairs,
        "total_cost_usd": total,
        "availability": availability,
        "tokens_per_s": tokens_per_s,
        "tokens_total": tokens_total,
        "cost_per_mtok_usd": cost_per_mtok,
    }
