"""A fixed uncore area per derived die (docs/model.md#derive): A = f (A_p - u) + u."""

from __future__ import annotations

import pytest

from mcengine.errors import InputError
from mcengine.scenario.load import load_scenario, load_scenarios


def test_no_uncore_is_the_fraction_of_the_parent_to_the_bit():
    s = load_scenario("lite-h100-shoreline")
    assert s.gpu.derive.uncore_area_mm2.value == 0.0 and s.derivation.area_mm2 == 0.25 * 25.9 * 31.4


def test_the_uncore_adds_its_area_and_keeps_the_units():
    """u = 40 mm2 on a quarter of 813.26 mm2: 0.25 x 773.26 + 40 = 233.315 mm2; 36 of 144 SMs."""
    plain = load_scenario("lite-h100-shoreline")
    s = load_scenarios(["lite-h100-shoreline"], ["gpu.derive.uncore_area_mm2=40"])[0]
    assert s.derivation.area_mm2 == pytest.approx(0.25 * (25.9 * 31.4 - 40) + 40, rel=1e-12)
    assert s.fab.die_width_mm.value * s.fab.die_height_mm.value == pytest.approx(233.315, rel=1e-6)
    assert (s.fab.units_per_die, s.gpu.peak_tflops) == (plain.fab.units_per_die, plain.gpu.peak_tflops)


def test_an_uncore_as_large_as_the_parent_is_refused_naming_it():
    with pytest.raises(InputError) as exc:
        load_scenarios(["lite-h100-shoreline"], ["gpu.derive.uncore_area_mm2=900"])
    assert [p.key.split(": ")[-1] for p in exc.value.problems] == ["gpu.derive.uncore_area_mm2"]
