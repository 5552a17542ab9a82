"""gpu.hbm_part: a design's memory as a whole number of catalogue stacks (docs/model.md#hbm-part)."""

from __future__ import annotations

import pytest

from mcengine.scenario.load import load_scenario, load_scenarios
from mcengine.scenario.parts import hbm_generations


def test_typed_memory_is_kept_by_default():
    s = load_scenario("lite-h100")
    assert s.gpu.hbm_part == "typed" and (s.gpu.hbm_gb.value, s.gpu.hbm_tbps.value) == (20.0, 0.84)


@pytest.mark.parametrize("part", list(hbm_generations()))
def test_a_part_gives_its_stacks_capacity_and_bandwidth(part):
    """The Lite's one stack and the H100's five: 1 x and 5 x the part's GB and TB/s."""
    p = hbm_generations()[part]
    lite, h100 = (load_scenarios([n], [f'gpu.hbm_part="{part}"'])[0] for n in ("lite-h100", "h100"))
    assert (lite.gpu.hbm_gb.value, lite.gpu.hbm_tbps.value) == (p.gb_per_stack, p.tbps_per_stack)
    assert (h100.gpu.hbm_gb.value, h100.gpu.hbm_tbps.value) == (5 * p.gb_per_stack, 5 * p.tbps_per_stack)


def test_the_h100s_own_stack_is_a_real_one_and_the_lites_is_not():
    """hbm3-h100: 16 GB and 0.67 TB/s a stack; the H100's 80 GB / 3.35 TB/s are five of them,
    the Lite's 20 GB / 0.84 TB/s are not one."""
    p = hbm_generations()["hbm3-h100"]
    assert (5 * p.gb_per_stack, 5 * p.tbps_per_stack) == pytest.approx((80.0, 3.35), rel=1e-15)
    assert (p.gb_per_stack, p.tbps_per_stack) != (20.0, 0.84)
