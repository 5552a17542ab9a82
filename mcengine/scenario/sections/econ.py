"""``[econ]``: prices that turn hardware and energy into dollars per token."""

from __future__ import annotations

from dataclasses import dataclass

from ..dists import Dist
from ..fields import number
from ..limits import USD


@dataclass(frozen=True)
class EconSection:
    gpu_markup: Dist = number(2.0, "GPU price = fab cost per good package x markup (unless gpu_price_usd is set).", lo=0.0, lo_open=True, hi=1000.0,
                              why="100x the largest margins seen (~10x); keeps prices finite")
    gpu_price_usd: Dist | None = number(None, "Given GPU price; when set, the fab cost does not enter the capex.", "USD", **USD)
    host_cost_per_gpu_usd: Dist = number(2500.0, "Host (CPU, memory, chassis) cost per GPU slot.", "USD", **USD)
    network_cost_per_gpu_usd: Dist = number(1500.0, "Network and optics cost per GPU slot.", "USD", **USD)
    power_usd_per_kwh: Dist = number(0.08, "Electricity price.", "USD/kWh", lo=0.0, hi=100.0,
                                     why="~1000x today's industrial price; keeps energy costs finite")
    pue: Dist = number(1.3, "Power usage effectiveness of the data centre.", lo=1.0, hi=5.0,
                       why="1 is the ideal; 5 is worse than any data centre on record")
    repair_cost_usd: Dist = number(500.0, "Cost of one repair (parts, labour, logistics).", "USD", **USD)
