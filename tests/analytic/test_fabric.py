"""Switch tiers, ports and hops of a fat tree (mcengine/analytic/fabric.py)."""

import pytest

from mcengine.analytic import fabric
from mcengine.errors import InputError


def test_radix_64_two_tiers_serve_2048_and_three_16384():
    """The issue's hand values: 2 (k/2)^t endpoints for t tiers of k = 64 ports
    (64, 2,048, 65,536; Al-Fares et al. 2008: k^3/4 for three tiers)."""
    assert [fabric.fat_tree_capacity(64, t) for t in (1, 2, 3)] == [64, 2048, 65536]
    assert fabric.tiers_needed(2048, 64) == 2
    assert fabric.tiers_needed(2049, 64) == 3
    assert fabric.tiers_needed(16384, 64) == 3
    assert fabric.tiers_needed(64, 64) == 1
    assert fabric.tiers_needed(65, 64) == 2


def test_oversubscription_widens_the_leaf():
    """3:1 at the leaf: 48 endpoint ports and 16 uplinks of 64; two tiers serve 64 x 48."""
    assert fabric.leaf_endpoint_ports(64, 3.0) == 48
    assert fabric.fat_tree_capacity(64, 2, 3.0) == 3072
    assert fabric.tiers_needed(3072, 64, 3.0) == 2
    assert fabric.fat_tree_capacity(64, 1, 3.0) == 64  # one switch: no uplinks to share


def test_more_than_three_tiers_is_refused():
    with pytest.raises(InputError, match="econ.switch_radix"):
        fabric.tiers_needed(65537, 64, key="econ.switch_radix")
    with pytest.raises(ValueError, match="more than 3 tiers"):
        fabric.tiers_needed(65537, 64)


def test_ports_per_endpoint_and_traversals():
    """1 + 2 (t - 1) / r switch ports per endpoint, the OCS top tier's 1 / r apart;
    2 t - 1 packet switches on the longest path, one fewer through an OCS top tier."""
    assert fabric.switch_ports_per_endpoint(1) == (1.0, 0.0)
    assert fabric.switch_ports_per_endpoint(2) == (3.0, 0.0)
    assert fabric.switch_ports_per_endpoint(3) == (5.0, 0.0)
    assert fabric.switch_ports_per_endpoint(3, 2.0) == (3.0, 0.0)
    assert fabric.switch_ports_per_endpoint(2, 1.0, ocs=True) == (2.0, 1.0)
    assert fabric.switch_ports_per_endpoint(1, 1.0, ocs=True) == (1.0, 0.0)
    assert [fabric.switch_traversals(t) for t in (1, 2, 3)] == [1, 3, 5]
    assert [fabric.switch_traversals(t, ocs=True) for t in (1, 2, 3)] == [1, 2, 4]


def test_ports_by_bandwidth():
    """A 51.2 Tb/s switch (64 x 800G) in 100G lanes: 128 x 400G, 512 x 100G, 32 x 1.6T; a
    150G port takes two lanes; a pluggable's price at 400G is 0.5^0.8 = 0.574 of 800G's."""
    assert [fabric.port_lanes(b, 100) for b in (50, 100, 150, 400, 1600)] == [1, 1, 2, 4, 16]
    assert [fabric.radix_at(64, 800, b) for b in (100, 200, 400, 800, 1600)] == [512, 256, 128, 64, 32]
    assert fabric.bandwidth_scale(400, 800, 0.8) == pytest.approx(0.574349, rel=1e-6)
    assert fabric.bandwidth_scale(400, 800, 1.0) == 0.5


def test_quarter_speed_endpoints_fit_fewer_tiers_at_their_own_speed():
    """2,048 H100 NICs of 400G and the 8,192 NICs of 100G a quarter-die design would have:
    at 800G ports (radix 64) the Lite's need three tiers; split to their speed (radix
    128 and 512) both need two."""
    assert fabric.tiers_needed(8192, 64) == 3
    assert fabric.tiers_needed(2048, fabric.radix_at(64, 800, 400)) == 2
    assert fabric.tiers_needed(8192, fabric.radix_at(64, 800, 100)) == 2
