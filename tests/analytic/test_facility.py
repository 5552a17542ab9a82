"""Cooling by rack power, capex per MW (mcengine/analytic/facility.py)."""

import numpy as np

from mcengine.analytic import facility


def test_air_up_to_the_limit_liquid_above():
    assert list(facility.liquid_cooled([29.9, 30.0, 30.1], 30.0)) == [False, False, True]
    liquid = facility.liquid_cooled(np.array([20.0, 45.0]), 30.0)
    assert list(facility.by_cooling(liquid, 1.4, 1.15)) == [1.4, 1.15]


def test_capex_per_mw():
    """2.5 MW of IT load at $10 M per MW."""
    assert facility.capex_usd(2.5e6, 10e6) == 25e6


def test_floor_by_rack_positions():
    """The Lite's 65 racks x 5 m2 x $1,700 = $552,500; the H100's 33 racks of twice the
    power, $280,500."""
    assert facility.floor_usd(65, 5.0, 1700.0) == 552_500.0
    assert facility.floor_usd(33, 5.0, 1700.0) == 280_500.0
