"""``[econ]``: prices that turn hardware and energy into dollars per token."""

from __future__ import annotations

from dataclasses import dataclass

from ..dists import Dist
from ..fields import number


@dataclass(frozen=True)
class EconSection:
    gpu_markup: Dist = number(2.0, "GPU price = fab cost per good package x markup (unless gpu_price_usd is set).", lo=0.0, lo_open=True)
    gpu_price_usd: Dist | None = number(None, "Given GPU price; when set, the fab cost does not enter the capex.", "USD", lo=0.0)
    host_cost_per_gpu_usd: Dist = number(2500.0, "Host (CPU, memory, chassis) cost per GPU slot.", "USD", lo=0.0)
    network_cost_per_gpu_usd: Dist = number(1500.0, "Network and optics cost per GPU slot.", "USD", lo=0.0)
    power_usd_per_kwh: Dist = number(0.08, "Electricity price.", "USD/kWh", lo=0.0)
    pue: Dist = number(1.3, "Power usage effectiveness of the data centre.", lo=1.0, hi=5.0)
    repair_cost_usd: Dist = number(500.0, "Cost of one repair (parts, labour, logistics).", "USD", lo=0.0)
