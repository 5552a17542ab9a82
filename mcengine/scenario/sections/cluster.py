"""``[cluster]``: the serving cluster's shape."""

from __future__ import annotations

from dataclasses import dataclass

from ..dists import Dist
from ..fields import AUTO, choice, integer, number
from ..limits import MAX_DURATION_HOURS, MAX_TOTAL_GPUS


@dataclass(frozen=True)
class ClusterSection:
    instances: int | str = integer(128, 'Serving instances (model replicas); "auto", with a demand (workload.load.demand): in each trial the '
                                        "fewest whole instances that meet the SLO quantile at the peak demand with the instances down at "
                                        "headroom_quantile out, costed as bought (docs/load.md#auto; the fab and reliability stages simulate "
                                        "simulated_instances of them).", lo=1, hi=2**20, auto_ok=True,
                                   why=f"and instances x instance_gpus + spare_gpus <= {MAX_TOTAL_GPUS:,} (reliability memory and time grow with GPUs)")
    instance_gpus: int = integer(8, "GPUs per instance; a failed GPU takes its instance down (on_failure = \"down\") or to a smaller layout (\"reshard\").", lo=1, hi=2**16,
                                 why="the layout search visits every tensor degree up to it; 65,536 GPUs per replica is beyond any model")
    spare_gpus: int = integer(0, "GPUs in the shared spare pool.", lo=0, hi=2**20,
                              why=f"counts towards the {MAX_TOTAL_GPUS:,} GPUs of a scenario")
    gpus_per_host: int = integer(8, "GPUs per host; a host failure takes all of them down.", lo=1, hi=1024,
                                 why="a host of 1,024 GPUs is 14x an NVL72 rack; per-host work scales with it")
    spare_hosts: int = integer(0, "Hosts in the shared host spare pool (reliability.host_failure = \"host\": a failed host is replaced by one, "
                                   "its GPUs stay; docs/model.md#host-units).", lo=0, hi=2**20,
                               why="a pool larger than the cluster's hosts never runs dry; the kernel keeps one repair entry per host")
    spare_modules: int | str = integer(AUTO, "Field-replaceable modules (component classes with replace_unit = \"module\": an external laser "
                                             "source) in the shared module pool; a failed module is replaced by a new one "
                                             "reliability.module_restock_hours later, a swap with the pool empty waits for it "
                                             "(docs/model.md#module-pool). \"auto\" = spare_gpus: the GPU pool's share of units "
                                             "(docs/sources.md#rel-module-pool).", lo=0, hi=2**20, auto_ok=True,
                                       why="a pool larger than the modules' failures over a lead time never runs dry; the kernel keeps one "
                                           "pending restock per pool module and GPU")
    gpus_per_nic: int = integer(1, "GPUs one scale-out NIC serves (component classes with per = \"nic\" fail per NIC): HGX H100 one 400 Gb/s "
                                   "ConnectX-7 per GPU (docs/sources.md#rel-per-nic); NIC k serves GPUs k x gpus_per_nic onwards (of one or more instances).",
                                lo=1, hi=1024, why="a NIC serves GPUs of one host; 1,024 is the largest host")
    scale_up: str = choice(
        "switched",
        'Scale-up fabric inside an instance: "switched" (any-to-any, NVSwitch-like: every all-reduce algorithm) or "ring" '
        "(ring all-reduce only; docs/sources.md#roof-scale-up-fabric).",
        ("switched", "ring"),
    )
    scale_up_domain_gpus: int | str = integer(AUTO, "GPUs sharing one scale-up domain (gpu.link_gbps); a collective or pipeline hop between domains runs on "
                                                     'the scale-out network (gpu.scale_out_gbps, workload.scale_out_hop_us). "auto" = instance_gpus: one domain '
                                                     "per instance (HGX H100: 8; docs/sources.md#roof-scale-up-domain).", lo=1, hi=2**16, auto_ok=True,
                                              why="as instance_gpus")
    on_failure: str = choice("down", "What an instance does when it loses GPUs: \"down\" until every slot has a unit again and it has "
                                     "restarted; \"reshard\": after reshard_hours it serves on the best layout that fits the GPUs it "
                                     "still has (docs/model.md#reshard).", ("down", "reshard"))
    headroom_quantile: Dist = number(
        0.999, "With a demand (workload.load.demand): the share of the time the fleet (load.fleet_instances) still meets the SLO "
        "quantile at the peak demand with the instances the reliability stage has down (docs/load.md#fleet).",
        lo=0.5, hi=1.0, hi_open=True, why="a high quantile; 1 buys for every instance down at once")
    reshard_hours: Dist = number(0.1, "Time to reload the weights and restart at a smaller layout after losing GPUs (on_failure = "
                                      "\"reshard\"): a vLLM cold start from local storage, 3-5 min (docs/sources.md#rel-reshard-time).",
                                 "hours", lo=0.0, hi=MAX_DURATION_HOURS, why="10^9 h already means never; keeps event times finite")
    simulated_instances: int = integer(128, 'With instances = "auto": the instances of the cluster the fab and reliability stages simulate; '
                                            "its instance availability, spare pools and repairs per GPU carry to the fleet each trial buys "
                                            "(docs/load.md#auto; the case study's 128, docs/sources.md#load-fleet).", lo=1, hi=2**20,
                                       why="as instances")

    def simulated(self) -> int:
        """The instances the fab, reliability and roofline stages simulate: ``instances``,
        or ``simulated_instances`` where ``instances`` is "auto" (the fleet is then bought
        per trial by the load stage)."""
        return self.simulated_instances if self.instances == AUTO else self.instances
