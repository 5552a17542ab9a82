"""``[econ]``: prices that turn hardware and energy into dollars per token."""

from __future__ import annotations

from dataclasses import dataclass

from ..dists import Choice, Dist
from ..fields import number, subset
from ..limits import USD

#: The parts of a GPU's price, and of a cluster's capex, the GPU markup may multiply.
PACKAGE_PARTS = ("die", "hbm", "packaging", "test", "optics")
MARKUP_PARTS = (*PACKAGE_PARTS, "hosts", "fabric")


@dataclass(frozen=True)
class EconSection:
    gpu_markup: Dist = number(2.0, "The vendor's markup on the parts in markup_applies_to (unless gpu_price_usd is set).", lo=0.0, lo_open=True, hi=1000.0,
                              why="100x the largest margins seen (~10x); keeps prices finite")
    markup_applies_to: tuple[str, ...] | Choice = subset(("die", "packaging", "test"),
                                                         "Cost parts the markup multiplies (the designed silicon by default); the others pass at cost. "
                                                         "All five package parts = price = fab cost x markup. May be a choice among lists drawn per trial, "
                                                         '{dist = "choice", values = [[...], [...]], weights = [...]} (docs/sources.md#econ-markup-scope); '
                                                         "every run also reports the cost at cost, without any markup.", MARKUP_PARTS)
    gpu_price_usd: Dist | None = number(None, "Given GPU price; when set, the fab cost does not enter the capex.", "USD", **USD)
    host_cost_per_gpu_usd: Dist = number(2500.0, "Host (CPU, memory, chassis) cost per GPU slot; used when host_cost_usd is unset.", "USD", **USD)
    host_cost_usd: Dist | None = number(None, "Cost of one host (CPU, memory, chassis) carrying cluster.gpus_per_host GPUs; when set, replaces host_cost_per_gpu_usd.", "USD", **USD)
    network_cost_per_gpu_usd: Dist = number(1500.0, "Scale-out network (NICs, pluggable optics, switch share) per GPU slot.", "USD", **USD)
    scale_up_port_cost_usd: Dist = number(0.0, "Scale-up fabric per GPU port (switch port and its share of the switch) when the fabric is not in the host cost; "
                                   "replaced by scale_up_port_cost_per_gbps_usd x gpu.link_gbps when that is set.", "USD", **USD)
    scale_up_port_cost_per_gbps_usd: Dist | None = number(None, "Scale-up fabric per GB/s of gpu.link_gbps (per direction); when set, the port cost is this x gpu.link_gbps "
                                                          "and replaces scale_up_port_cost_usd (docs/sources.md#econ-scale-up-fabric).", "USD per GB/s", lo=0.0, hi=1e6,
                                                          why="a million dollars per GB/s is beyond any switch; keeps the port price finite")
    power_usd_per_kwh: Dist = number(0.08, "Electricity price.", "USD/kWh", lo=0.0, hi=100.0,
                                     why="~1000x today's industrial price; keeps energy costs finite")
    pue: Dist = number(1.3, "Power usage effectiveness of the data centre.", lo=1.0, hi=5.0,
                       why="1 is the ideal; 5 is worse than any data centre on record")
    repair_cost_usd: Dist = number(500.0, "Cost of one repair (parts, labour, logistics): a GPU's, a host's (reliability.host_failure = "
                                          "\"host\") or a NIC swap's.", "USD", **USD)
    module_cost_usd: Dist = number(0.0, "Price of one field-replaceable module (an external laser source) used up by a module swap "
                                        "(reliability.module_swap_hours) and by each of the module pool (cluster.spare_modules); the failed one is scrapped "
                                        "(docs/sources.md#econ-els-module).",
                                   "USD", **USD)
