"""``[econ]``: prices that turn hardware and energy into dollars per token; the switched
fabric, the data hall and the cost of capital (docs/model.md#fabric, #facility, #finance),
each off by default (``fabric_model = "per_gpu"``, ``facility = false``, ``wacc = 0``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..dists import Choice, Dist
from ..fields import choice, flag, integer, number, subset
from ..limits import USD

#: The parts of a GPU's price, and of a cluster's capex, the GPU markup may multiply.
PACKAGE_PARTS = ("die", "hbm", "packaging", "test", "optics")
MARKUP_PARTS = (*PACKAGE_PARTS, "hosts", "fabric")

PUE = dict(lo=1.0, hi=5.0, why="1 is the ideal; 5 is worse than any data centre on record")
RADIX = dict(lo=4, hi=2048, why="the largest switch ASICs have 512 ports at their lowest speed")
PORT_W = dict(lo=0.0, hi=1e4, why="ten kilowatts per port is beyond any switch or transceiver")
PER_MW = dict(lo=0.0, hi=1e9, why="a billion dollars per MW is 50x any data hall")
LIFE = dict(lo=0.5, hi=50.0, why="fifty years is beyond any computer")


@dataclass(frozen=True)
class EconSection:
    gpu_markup: Dist = number(2.0, "The vendor's markup on the parts in markup_applies_to (unless gpu_price_usd is set).", lo=0.0, lo_open=True, hi=1000.0,
                              why="100x the largest margins seen (~10x); keeps prices finite")
    markup_applies_to: tuple[str, ...] | Choice = subset(("die", "packaging", "test"),
                                                         "Cost parts the markup multiplies (the designed silicon by default); the others pass at cost. "
                                                         "All five package parts = price = fab cost x markup. May be a choice among lists drawn per trial, "
                                                         '{dist = "choice", values = [[...], [...]], weights = [...]} (docs/sources.md#econ-markup-scope); '
                                                         "every run also reports the cost at cost, without any markup.", MARKUP_PARTS)
    markup_scope: str = choice("per_part", 'How the vendor prices a GPU (docs/model.md#markup-scope): "per_part" (gpu_markup on the parts in '
                                           'markup_applies_to), "package" (a gross margin on the whole package: package_markup on all five '
                                           'package parts) or "value" (value pricing per FLOP: value_price_per_h100_equivalent_usd x '
                                           'gpu.h100_equivalents); a given gpu_price_usd wins over each.', ("per_part", "package", "value"))
    package_markup: Dist = number(7.75, "The markup on the whole package's fab cost (markup_scope = \"package\"; shipped h100: uniform "
                                  "6.5-9, docs/sources.md#econ-gpu-markup).", lo=0.0, lo_open=True, hi=1000.0,
                                  why="100x the largest margins seen (~10x); keeps prices finite")
    value_price_per_h100_equivalent_usd: Dist = number(27500.0, "GPU price per H100-equivalent of compute under value pricing (markup_scope = \"value\"): "
                                                       "the H100's street price (shipped h100: uniform 25,000-30,000, docs/sources.md#econ-gpu-markup).", "USD", **USD)
    gpu_price_usd: Dist | None = number(None, "Given GPU price; when set, the fab cost does not enter the capex.", "USD", **USD)
    host_cost_per_gpu_usd: Dist = number(2500.0, "Host (CPU, memory, chassis) cost per GPU slot; used when host_cost_usd is unset.", "USD", **USD)
    host_cost_usd: Dist | None = number(None, "Cost of one host (CPU, memory, chassis) carrying cluster.gpus_per_host GPUs; when set, replaces host_cost_per_gpu_usd.", "USD", **USD)
    network_cost_per_gpu_usd: Dist = number(1500.0, "Scale-out network (NICs, pluggable optics, switch share) per GPU slot.", "USD", **USD)
    scale_up_port_cost_usd: Dist = number(0.0, "Scale-up fabric per GPU port (switch port and its share of the switch) when the fabric is not in the host cost; "
                                   "replaced by scale_up_port_cost_per_gbps_usd x gpu.link_gbps when that is set.", "USD", **USD)
    scale_up_port_cost_per_gbps_usd: Dist | None = number(None, "Scale-up fabric per GB/s of gpu.link_gbps (per direction); when set, the port cost is this x gpu.link_gbps "
                                                          "and replaces scale_up_port_cost_usd (docs/sources.md#econ-scale-up-fabric).", "USD per GB/s", lo=0.0, hi=1e6,
                                                          why="a million dollars per GB/s is beyond any switch; keeps the port price finite")
    scale_up_fabric: str = choice("electrical", 'The scale-up fabric\'s kind: "electrical" (switch ports at scale_up_port_cost_per_gbps_usd, '
                                                'an NVSwitch) or "optical" (at optical_port_cost_per_gbps_usd when that is set; the electrical price '
                                                'otherwise, the "electrical-equal" reading; docs/sources.md#econ-scale-up-fabric).', ("electrical", "optical"))
    optical_port_cost_per_gbps_usd: Dist | None = number(None, 'Scale-up switch port per GB/s of gpu.link_gbps of an optical fabric (scale_up_fabric = '
                                                         '"optical"): its own price range, apart from the electrical one (docs/sources.md#econ-scale-up-fabric).',
                                                         "USD per GB/s", lo=0.0, hi=1e6, why="a million dollars per GB/s is beyond any switch; keeps the port price finite")
    power_usd_per_kwh: Dist = number(0.08, "Electricity price.", "USD/kWh", lo=0.0, hi=100.0,
                                     why="~1000x today's industrial price; keeps energy costs finite")
    pue: Dist = number(1.3, "Power usage effectiveness of the data centre.", **PUE)
    repair_cost_usd: Dist = number(500.0, "Cost of one repair (parts, labour, logistics): a GPU's, a host's (reliability.host_failure = "
                                          "\"host\") or a NIC swap's.", "USD", **USD)
    module_cost_usd: Dist = number(0.0, "Price of one field-replaceable module (an external laser source) used up by a module swap "
                                        "(reliability.module_swap_hours) and by each of the module pool (cluster.spare_modules); the failed one is scrapped "
                                        "(docs/sources.md#econ-els-module).",
                                   "USD", **USD)

    # -- the switched fabric (docs/model.md#fabric, docs/sources.md#fabric-switch)
    fabric_model: str = choice("per_gpu", 'Scale-out network pricing: "per_gpu" (network_cost_per_gpu_usd per GPU slot) or "fat_tree" (a NIC per '
                                          "cluster.gpus_per_nic GPUs and the switch tiers its endpoints need: switch_radix, oversubscription, "
                                          "ports and optics per tier; the tiers' extra switch hops lengthen every scale-out hop).", ("per_gpu", "fat_tree"))
    switch_radix: int = integer(64, "Ports of a scale-out switch (a 51.2 Tb/s ASIC: 64 x 800G); tiers = the fewest whose fat tree, 2 (k/2)^t "
                                    "endpoints, serves the NICs (docs/sources.md#fabric-fat-tree).", **RADIX)
    scale_up_switch_radix: int = integer(64, "GPU ports of a scale-up switch (scale_up_tiers from cluster.scale_up_domain_gpus); with fabric_model = "
                                             '"fat_tree" the scale-up port cost is paid per switch port the tiers need, 2 t - 1 per GPU.', **RADIX)
    oversubscription: Dist = number(1.0, "Down:up port ratio at the leaf switch (1 = non-blocking).", lo=1.0, hi=16.0, uncertain=False,
                                    why="beyond 16:1 a leaf is no longer a fabric for collectives")
    top_tier: str = choice("packet", 'The top tier of a fabric of two tiers or more: "packet" switches or an optical circuit switch, "ocs" '
                                     "(no transceivers, no packet hop; docs/sources.md#fabric-ocs).", ("packet", "ocs"))
    switch_optics: str = choice("pluggable", 'Optics at the switch ports: "pluggable" transceivers or switch-side "cpo" (co-packaged); the NIC end is '
                                             "a pluggable either way.", ("pluggable", "cpo"))
    nic_cost_usd: Dist = number(1500.0, "One scale-out NIC (fabric_model = \"fat_tree\").", "USD", **USD)
    switch_port_cost_usd: Dist = number(1000.0, "A packet-switch port of switch_port_gbps: the switch's price over its ports (docs/sources.md#fabric-switch).", "USD", **USD)
    switch_port_w: Dist = number(15.0, "A packet-switch port's share of the switch's power, optics apart (docs/sources.md#fabric-switch).", "W", **PORT_W)
    pluggable_cost_usd: Dist = number(1000.0, "A pluggable transceiver of switch_port_gbps (docs/sources.md#fabric-optics).", "USD", **USD)
    pluggable_w: Dist = number(15.0, "A pluggable transceiver's power (docs/sources.md#fabric-optics).", "W", **PORT_W)
    cpo_port_cost_usd: Dist = number(500.0, "Co-packaged optics per switch port of switch_port_gbps (switch_optics = \"cpo\"; docs/sources.md#fabric-optics).", "USD", **USD)
    cpo_port_w: Dist = number(5.0, "Co-packaged optics' power per switch port (docs/sources.md#fabric-optics).", "W", **PORT_W)
    ocs_port_cost_usd: Dist = number(1000.0, "An optical circuit switch port (top_tier = \"ocs\"; docs/sources.md#fabric-ocs).", "USD", **USD)
    ocs_port_w: Dist = number(1.0, "An optical circuit switch port's power (docs/sources.md#fabric-ocs).", "W", **PORT_W)
    switch_latency_us: Dist = number(1.0, "Latency of one more packet switch on a scale-out hop: each tier above the first adds two to the path "
                                          "(docs/sources.md#fabric-switch).", "us", lo=0.0, hi=1e6,
                                     why="a second per switch is no longer a network")
    # -- switch ports and optics by bandwidth (docs/model.md#fabric, docs/sources.md#fabric-port-bandwidth)
    port_speed: str = choice("nic", 'The speed of the scale-out switch ports: "nic" (the NIC\'s bandwidth, cluster.gpus_per_nic x gpu.scale_out_gbps '
                                    "at its median, in whole switch_lane_gbps lanes: the switch's switch_radix x switch_port_gbps split into "
                                    "ports of that speed, each priced and powered by its share of the bandwidth, the pluggables by "
                                    "optics_cost_exponent and optics_power_exponent, co-packaged optics per bit, OCS ports alike at any speed) "
                                    'or "switch" (every port a switch_radix port at its quoted price and power, whatever the NIC\'s speed).',
                             ("nic", "switch"))
    switch_port_gbps: int = integer(800, "Speed of the switch_radix ports, at which the switch port, pluggable and co-packaged optics prices "
                                         "and powers are quoted (a 51.2 Tb/s ASIC: 64 x 800G; docs/sources.md#fabric-port-bandwidth).", "Gb/s",
                                    lo=1, hi=1_000_000, why="a petabit port is beyond any switch")
    switch_lane_gbps: int = integer(100, "A switch SerDes lane: a port is a whole number of lanes, so 51.2 Tb/s has at most 512 ports "
                                         "(docs/sources.md#fabric-port-bandwidth).", "Gb/s", lo=1, hi=1_000_000,
                                    why="a petabit lane is beyond any SerDes")
    optics_cost_exponent: Dist = number(0.8, "A pluggable's price goes as (its bandwidth / switch_port_gbps)^x: 400G at 0.57 of an 800G "
                                             "one, 1.6T at 1.74 (docs/sources.md#fabric-port-bandwidth).", lo=0.0, hi=2.0,
                                        why="0 = one price at every speed; 2 = a bit dearer on faster parts than any seen")
    optics_power_exponent: Dist = number(0.8, "A pluggable's power goes as (its bandwidth / switch_port_gbps)^x "
                                              "(docs/sources.md#fabric-port-bandwidth).", lo=0.0, hi=2.0,
                                         why="0 = one power at every speed; 2 = a bit costlier on faster parts than any seen")
    # -- the data hall (docs/model.md#facility, docs/sources.md#facility-capex, #facility-cooling)
    facility: bool = flag(False, "Price the data hall: capex per MW of rated IT load (GPUs at TDP, hosts, switches, optics) for power delivery "
                                 "and cooling, racks, the cooling kind by rack power (air up to air_cooling_limit_kw, liquid above) and its PUE "
                                 "in place of econ.pue; host and network power in the energy.")
    facility_usd_per_mw: Dist = number(8e6, "Power delivery, shell and fit-out per MW of IT load, cooling apart (docs/sources.md#facility-capex).",
                                       "USD/MW", **PER_MW)
    air_cooling_usd_per_mw: Dist = number(1.5e6, "Air cooling per MW of IT load (docs/sources.md#facility-cooling).", "USD/MW", **PER_MW)
    liquid_cooling_usd_per_mw: Dist = number(2.5e6, "Liquid (direct-to-chip) cooling per MW of IT load (docs/sources.md#facility-cooling).", "USD/MW", **PER_MW)
    cooling: str = choice("by_rack", 'How the hall is cooled: "by_rack" (air up to air_cooling_limit_kw, liquid above) or "liquid" '
                                     "(every rack liquid-cooled whatever its power: what air cooling is worth to a design whose racks "
                                     "could have it; docs/sources.md#facility-cooling).", ("by_rack", "liquid"))
    air_cooling_limit_kw: Dist = number(30.0, "Highest rack power air cooling serves; racks above it are liquid-cooled (docs/sources.md#facility-cooling).",
                                        "kW", lo=1.0, hi=1000.0, why="no rack draws a megawatt")
    air_pue: Dist = number(1.4, "PUE of an air-cooled hall (docs/sources.md#facility-cooling).", **PUE)
    liquid_pue: Dist = number(1.15, "PUE of a liquid-cooled hall (docs/sources.md#facility-cooling).", **PUE)
    hosts_per_rack: int = integer(4, "Hosts in one rack (rack power = its hosts' rated power).", lo=1, hi=1024,
                                  why="a thousand hosts is beyond any rack")
    rack_cost_usd: Dist = number(20000.0, "One rack with its power distribution and cabling, the floor apart (docs/sources.md#facility-capex).", "USD", **USD)
    floor_m2_per_rack: Dist = number(5.0, "Floor per rack position: the rack, its share of the aisles and of the hall's power and cooling "
                                          "rooms (docs/sources.md#facility-floor).", "m2", lo=0.1, hi=1000.0,
                                     why="a rack takes at least its footprint and no hall gives one a thousand m2")
    floor_usd_per_m2: Dist = number(1700.0, "The building per m2 of floor (shell and core; power and cooling in the prices per MW; "
                                            "docs/sources.md#facility-floor).", "USD/m2", lo=0.0, hi=1e6,
                                    why="a million dollars per m2 is beyond any building")
    host_power_per_h100_equivalent_w: Dist = number(575.0, "A host's own power (CPUs, memory, NICs, fans, scale-up switches) per H100-equivalent of "
                                                           "GPU silicon it carries (docs/sources.md#facility-host-power).", "W", lo=0.0, hi=1e5,
                                                    why="a hundred kilowatts per GPU is beyond any host")
    # -- the cost of capital (docs/model.md#finance, docs/sources.md#finance-crf)
    wacc: Dist = number(0.0, "Cost of capital a year: each part's price is recovered as a levelised charge over its own life "
                             "(capital recovery factor); 0 with the lives at the horizon = the capex as spent (docs/sources.md#finance-wacc).",
                        lo=0.0, hi=1.0, why="100 % a year is beyond any lender")
    gpu_life_years: Dist | None = number(None, "Economic life of the GPUs (unset: run.horizon_years).", "years", **LIFE)
    host_life_years: Dist | None = number(None, "Economic life of the hosts (unset: run.horizon_years).", "years", **LIFE)
    network_life_years: Dist | None = number(None, "Economic life of the network and fabric (unset: run.horizon_years).", "years", **LIFE)
    facility_life_years: Dist = number(15.0, "Economic life of the data hall and racks (docs/sources.md#facility-capex).", "years", lo=1.0, hi=100.0,
                                       why="a century is beyond any data hall")
    residual_fraction: Dist = number(0.0, "Share of the hardware's price its resale returns at the end of its life.", lo=0.0, hi=1.0,
                                     why="a share of the price")
    price_decline: Dist = number(0.0, "Yearly fall of the price of new hardware: the charge that recovers a part falls with it "
                                      "(a tilted annuity, docs/sources.md#finance-wacc).", lo=0.0, hi=0.9, why="a share a year below 1")
