"""``[cluster]``: the serving cluster's shape."""

from __future__ import annotations

from dataclasses import dataclass

from ..fields import choice, integer
from ..limits import MAX_TOTAL_GPUS


@dataclass(frozen=True)
class ClusterSection:
    instances: int = integer(128, "Serving instances (model replicas).", lo=1, hi=2**20,
                             why=f"and instances x instance_gpus + spare_gpus <= {MAX_TOTAL_GPUS:,} (reliability memory and time grow with GPUs)")
    instance_gpus: int = integer(8, "GPUs per instance; any failed GPU takes its instance down.", lo=1, hi=2**16,
                                 why="the layout search visits every tensor degree up to it; 65,536 GPUs per replica is beyond any model")
    spare_gpus: int = integer(0, "GPUs in the shared spare pool.", lo=0, hi=2**20,
                              why=f"counts towards the {MAX_TOTAL_GPUS:,} GPUs of a scenario")
    gpus_per_host: int = integer(8, "GPUs per host; a host failure takes all of them down.", lo=1, hi=1024,
                                 why="a host of 1,024 GPUs is 14x an NVL72 rack; per-host work scales with it")
    scale_up: str = choice(
        "switched",
        'Scale-up fabric inside an instance: "switched" (any-to-any, NVSwitch-like: every all-reduce algorithm) or "ring" '
        "(ring all-reduce only; docs/sources.md#roof-scale-up-fabric).",
        ("switched", "ring"),
    )
