"""``[cluster]``: the serving cluster's shape."""

from __future__ import annotations

from dataclasses import dataclass

from ..fields import integer


@dataclass(frozen=True)
class ClusterSection:
    instances: int = integer(128, "Serving instances (model replicas).", lo=1, hi=10**7)
    instance_gpus: int = integer(8, "GPUs per instance; any failed GPU takes its instance down.", lo=1, hi=10**6)
    spare_gpus: int = integer(0, "GPUs in the shared spare pool.", lo=0, hi=10**7)
    gpus_per_host: int = integer(8, "GPUs per host; a host failure takes all of them down.", lo=1, hi=10**4)
