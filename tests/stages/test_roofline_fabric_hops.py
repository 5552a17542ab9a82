"""The switched fabric's tiers lengthen every scale-out hop (docs/model.md#fabric):
``workload.scale_out_hop_us`` for the first switch and ``econ.switch_latency_us`` for
each other one on the longest path (2 t - 1 packet switches, one fewer through an OCS)."""

import pytest

from mcengine.scenario import load_scenario
from mcengine.scenario.sampling import quantile_inputs
from mcengine.stages.roofline.layout import rates_of

BASE = ["workload.scale_out_hop_us=4", "econ.switch_latency_us=0.5"]


def _hop_us(overrides):
    s = load_scenario("h100", BASE + overrides)
    return float(rates_of(s, quantile_inputs(s)).scale_out_hop_s[0]) * 1e6


def test_hops_by_tiers():
    """1,040 NICs on ports as quoted: one tier of 2,048-port switches, two of 64-port
    (2 x 32^2 = 2,048), three of 32-port (2 x 16^2 = 512 < 1,040 <= 2 x 16^3)."""
    fat_tree = ["econ.fabric_model=fat_tree", 'econ.port_speed="switch"']
    assert _hop_us([]) == 4.0  # the per-GPU network: no tiers
    assert _hop_us(fat_tree + ["econ.switch_radix=2048"]) == 4.0
    assert _hop_us(fat_tree + ["econ.switch_radix=64"]) == pytest.approx(4.0 + 2 * 0.5)
    assert _hop_us(fat_tree + ["econ.switch_radix=64", 'econ.top_tier="ocs"']) == pytest.approx(4.0 + 0.5)
    assert _hop_us(fat_tree + ["econ.switch_radix=32"]) == pytest.approx(4.0 + 4 * 0.5)


def test_hops_at_the_nics_speed():
    """The same 32 x 800G switch split into 64 ports of the 400G NICs serves the 1,040 in
    two tiers (2 x 32^2 = 2,048), one fewer than at 800G; 16 x 800G = 32 x 400G, three."""
    fat_tree = ["econ.fabric_model=fat_tree", 'econ.port_speed="nic"']
    assert _hop_us(fat_tree + ["econ.switch_radix=32"]) == pytest.approx(4.0 + 2 * 0.5)
    assert _hop_us(fat_tree + ["econ.switch_radix=16"]) == pytest.approx(4.0 + 4 * 0.5)
