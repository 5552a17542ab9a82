"""Claims 3 and 6 under a demand (docs/load.md#paper): the failure headroom each design
buys, and what its fleet costs per served token, when it serves a stated demand instead
of running saturated.

The demand is the shipped study ``load-diurnal``'s (configs/studies/load-diurnal.toml:
its ``workload.load`` overrides and ``cluster.instances = "auto"``), so the paper's
numbers move with that study's sourced inputs. Each design then buys, in each trial, the
fewest whole instances that meet the SLO quantile at the peak with the instances its
reliability stage has down at ``cluster.headroom_quantile`` out
(``load.fleet_instances``); ``load.headroom_instances`` of them are bought for failures
alone. A failure's blast radius is paid in that headroom: here it is counted in
H100-equivalents (``headroom_instances x instance_gpus x gpu.h100_equivalents``) and as a
share of the fleet.
"""

from __future__ import annotations

import numpy as np

from ..scenario.load import load_study
from ._common import interval, paired_ratio

#: The shipped study whose demand the claims are evaluated under.
STUDY = "load-diurnal"


def demand_overrides() -> list[str]:
    """The ``--set``-style overrides of :data:`STUDY` (its demand, diurnal profile and ``cluster.instances = "auto"``)."""
    return list(load_study(STUDY)["set"])


def demand_of(overrides: list[str]) -> float:
    """The mean demand (output tokens/s) the overrides state."""
    key = "workload.load.demand="
    return float(next(o for o in overrides if o.startswith(key))[len(key):])


def headroom_h100e(cols: dict, scenario) -> np.ndarray:
    """Per trial, the instances bought for failures in H100-equivalents."""
    return cols["load.headroom_instances"] * scenario.cluster.instance_gpus * scenario.gpu.h100_equivalents.value


def headroom(cols: dict, scenarios: dict) -> dict:
    """Per design (``scenarios``: design -> the scenario run under the demand, its
    columns in ``cols`` by that scenario's name): the fleet bought, its failure headroom
    in instances, H100-equivalents and share of the fleet, its utilisation, and its cost
    per million served tokens."""
    out = {}
    for design, s in scenarios.items():
        c = cols[s.name]
        fleet = c["load.fleet_instances"]
        out[design] = {
            "fleet_instances": interval(fleet),
            "headroom_instances": interval(c["load.headroom_instances"]),
            "headroom_h100_equivalents": interval(headroom_h100e(c, s)),
            "headroom_share_of_fleet": interval(np.divide(c["load.headroom_instances"], fleet, out=np.zeros(fleet.size), where=fleet > 0)),
            "instance_unavailability": interval(1.0 - c["instance_availability"]),
            "utilisation_mean": interval(c["load.utilisation_mean"]),
            "cost_per_mtok_usd": interval(c["cost_per_mtok_usd"]),
        }
    return out


def cost_ratio(cols: dict, b, a) -> dict:
    """The paired ratio B / A of the fleets' cost per served token, and P(B cheaper)."""
    ratio = paired_ratio(cols[b.name]["cost_per_mtok_usd"], cols[a.name]["cost_per_mtok_usd"])
    return {"paired_ratio": interval(ratio), "p_cheaper": float(np.mean(ratio < 1.0))}
