"""Closed forms of a switched fabric: switch tiers from endpoints and radix, switch ports
and optics per endpoint, switch traversals on the longest path (docs/model.md#fabric).

A fabric of ``k``-port switches built as a folded Clos (fat tree) of ``t`` tiers serves at
most ``2 (k/2)^t`` endpoints without oversubscription: one switch serves ``k``; a
leaf-spine ``k^2/2``; a three-tier fat tree ``k^3/4`` (Al-Fares, Loukissas and Vahdat,
SIGCOMM 2008, docs/sources.md#fabric-fat-tree). Oversubscription ``r`` (down:up at the
leaf, the usual place for it) gives a leaf ``d = floor(k r / (1 + r))`` endpoint ports
and ``k - d`` uplinks, so ``t >= 2`` tiers serve ``2 (k/2)^(t-1) d`` endpoints (the
tiers above the leaf are as wide as without it). Ports and optics are counted per
endpoint, so a part-filled tree costs its share: each endpoint takes one leaf port and,
per tier above the leaf, ``2 / r`` ports (a link's two ends), ``1 + 2 (t - 1) / r``
switch ports in all. An optical circuit switch (OCS) as the top tier (Google's Apollo,
docs/sources.md#fabric-ocs) turns that tier's ``1 / r`` ports per endpoint into OCS
ports, which need no transceiver and forward light without a packet-switch hop.

Ports by bandwidth (docs/sources.md#fabric-port-bandwidth): a switch ASIC of ``k`` ports
of ``b_k`` Gb/s has ``k b_k`` Gb/s to split; its SerDes lanes of ``l`` Gb/s group into
ports, so a port carrying ``b`` Gb/s takes ``ceil(b / l)`` lanes (:func:`port_lanes`)
and the switch has ``floor(k b_k / (lanes x l))`` of them (:func:`radix_at`): 64 x 800G
is 128 x 400G or 512 x 100G. A port's share of the switch's price and power is its
share of the bandwidth, ``lanes x l / b_k``; a transceiver's price and power grow as a
power of its bandwidth (:func:`bandwidth_scale`), below proportion (one DSP, one laser
array and one housing per module); a co-packaged optical engine's as its bandwidth
(pJ/bit); an OCS port's not at all (a mirror passes any bit rate).
"""

from __future__ import annotations

import math

from ..errors import InputError, Problem

#: The most switch tiers a fabric may have (three tiers of 64-port switches serve 65,536
#: endpoints; of 128-port ones, 524,288).
MAX_TIERS = 3


def leaf_endpoint_ports(radix: int, oversubscription: float = 1.0) -> int:
    """Endpoint (down) ports of a leaf switch: ``floor(k r / (1 + r))`` of its ``k``."""
    return int(radix * oversubscription // (1.0 + oversubscription))


def fat_tree_capacity(radix: int, tiers: int, oversubscription: float = 1.0) -> int:
    """Most endpoints ``t`` tiers of ``radix``-port switches serve: ``k`` for one tier,
    ``2 (k/2)^(t-1) d`` for more, ``d`` the leaf's endpoint ports
    (:func:`leaf_endpoint_ports`; ``2 (k/2)^t`` when not oversubscribed)."""
    if tiers == 1:
        return radix
    return 2 * (radix // 2) ** (tiers - 1) * leaf_endpoint_ports(radix, oversubscription)


def tiers_needed(endpoints: int, radix: int, oversubscription: float = 1.0, key: str | None = None) -> int:
    """The fewest switch tiers (1 to :data:`MAX_TIERS`) whose fat tree serves ``endpoints``.

    Raises ``ValueError`` when even :data:`MAX_TIERS` tiers are too few, or an InputError
    on the scenario key ``key`` (the radix's) when one is given."""
    for tiers in range(1, MAX_TIERS + 1):
        if endpoints <= fat_tree_capacity(radix, tiers, oversubscription):
            return tiers
    why = (f"{endpoints} endpoints need more than {MAX_TIERS} tiers of {radix}-port switches "
           f"(at most {fat_tree_capacity(radix, MAX_TIERS, oversubscription)})")
    if key is None:
        raise ValueError(why)
    raise InputError(Problem(key, radix, f"allowed: a radix whose {MAX_TIERS} tiers serve the fabric: {why}"))


def switch_ports_per_endpoint(tiers: int, oversubscription: float = 1.0, ocs: bool = False) -> tuple[float, float]:
    """Packet-switch ports and OCS ports per endpoint: ``1 + 2 (t - 1) / r`` ports in all,
    of which the top tier's ``1 / r`` are OCS ports with ``ocs`` (and ``t >= 2``)."""
    ports = 1.0 + 2.0 * (tiers - 1) / oversubscription
    top = 1.0 / oversubscription if ocs and tiers >= 2 else 0.0
    return ports - top, top


def switch_traversals(tiers: int, ocs: bool = False) -> int:
    """Packet switches on the longest path between two endpoints: up ``t`` tiers and down
    again, ``2 t - 1``; one fewer with an OCS top tier (``t >= 2``)."""
    return 2 * tiers - 1 - (1 if ocs and tiers >= 2 else 0)


def port_lanes(port_gbps: float, lane_gbps: float) -> int:
    """SerDes lanes of a switch port that carries ``port_gbps``: ``ceil(port / lane)``, at least one."""
    return max(1, math.ceil(round(port_gbps / lane_gbps, 9)))


def radix_at(radix: int, radix_port_gbps: float, port_gbps: float) -> int:
    """Ports of ``port_gbps`` a switch of ``radix`` ports of ``radix_port_gbps`` splits its
    bandwidth into: ``floor(k b_k / b)`` (64 x 800G: 128 at 400G, 32 at 1.6T)."""
    return int(round(radix * radix_port_gbps / port_gbps, 9))


def bandwidth_scale(port_gbps: float, quote_gbps: float, exponent):
    """A price or power quoted at ``quote_gbps`` moved to ``port_gbps``: ``(b / b_q)^x``
    (``x = 1``: proportional to the bandwidth; ``x < 1``: a dearer bit on slower parts)."""
    return (port_gbps / quote_gbps) ** exponent
