"""The scale-out fabric a scenario builds (``econ.fabric_model = "fat_tree"``,
docs/model.md#fabric): its endpoints, the speed and number of its switch ports and its
tiers, read by the roofline (the tiers' switch hops) and the econ stage (their price and
power) alike (:mod:`mcengine.analytic.fabric`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..analytic import fabric as fb
from ..errors import InputError, Problem

if TYPE_CHECKING:
    from .schema import Scenario

#: Gigabits in a gigabyte (``gpu.scale_out_gbps`` is in GB/s, switch ports in Gb/s).
GBIT_PER_GBYTE = 8.0


@dataclass(frozen=True)
class ScaleOut:
    """The scale-out fat tree: ``endpoints`` NICs on switches of ``radix`` ports of
    ``port_gbps`` each, ``tiers`` of them; ``share`` is a port's share of a switch
    port as quoted (``port_gbps / econ.switch_port_gbps``)."""

    endpoints: int
    port_gbps: float
    radix: int
    tiers: int
    share: float


def nic_gbps(scenario: Scenario) -> float:
    """A NIC's bandwidth (Gb/s): ``cluster.gpus_per_nic x gpu.scale_out_gbps`` (median) x 8."""
    return scenario.cluster.gpus_per_nic * scenario.gpu.scale_out_gbps.median() * GBIT_PER_GBYTE


def scale_out(scenario: Scenario) -> ScaleOut:
    """The scale-out fabric of ``scenario``: one NIC per ``cluster.gpus_per_nic`` GPUs
    (spares included); with ``econ.port_speed = "nic"`` the switch ports run at the NIC's
    bandwidth in whole lanes (:func:`mcengine.analytic.fabric.port_lanes`,
    :func:`~mcengine.analytic.fabric.radix_at`), with ``"switch"`` at
    ``econ.switch_port_gbps``, ``econ.switch_radix`` of them; the tiers are the fewest
    whose fat tree serves the NICs (:func:`~mcengine.analytic.fabric.tiers_needed`)."""
    e = scenario.econ
    endpoints = -(-scenario.total_gpus // scenario.cluster.gpus_per_nic)
    if e.port_speed == "switch":
        port, radix = float(e.switch_port_gbps), e.switch_radix
    else:
        port = fb.port_lanes(nic_gbps(scenario), e.switch_lane_gbps) * float(e.switch_lane_gbps)
        radix = fb.radix_at(e.switch_radix, e.switch_port_gbps, port)
        if radix < 2:
            raise InputError(Problem("gpu.scale_out_gbps", scenario.gpu.scale_out_gbps.median(),
                                     f"allowed: a NIC of at most half a switch's bandwidth ({e.switch_radix} x {e.switch_port_gbps} Gb/s) "
                                     f'with econ.port_speed = "nic"; this NIC of {port:g} Gb/s leaves {radix} port(s) a switch'))
    tiers = fb.tiers_needed(endpoints, radix, e.oversubscription.value, "econ.switch_radix")
    return ScaleOut(endpoints, port, radix, tiers, port / e.switch_port_gbps)
