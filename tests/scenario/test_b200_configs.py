"""The shipped B200 scenarios (docs/sources.md#gen-b200): datasheet figures as typed, the
NVL72 domain, and the Lite derivatives by the shoreline rule, by hand."""

from __future__ import annotations

import pytest

from mcengine import api


def test_b200_carries_its_datasheet_figures():
    s = api.check("b200")
    g = s.gpu
    assert (g.peak_tflops.bf16.median(), g.hbm_gb.median(), g.hbm_tbps.median(), g.link_gbps.median()) == (2250.0, 180.0, 7.7, 900.0)
    assert (g.peak_tflops.at("fp8").median(), g.peak_tflops.at("fp4").median()) == (4500.0, 9000.0)  # dense, per precision
    # TDP from the link rule: 964 W + 5 pJ/bit x 900 GB/s x 8 bit = 1,000 W
    assert g.tdp_w.median() == pytest.approx(1000.0, rel=1e-12)
    assert s.fab.hbm_stacks == 8 and s.cluster.scale_up_domain_gpus == 8
    assert api.check("b200-nvl72").cluster.scale_up_domain_gpus == 72


def test_lite_b200_is_a_quarter_of_the_b200_by_the_shoreline_rule():
    s = api.check("lite-b200")
    # a quarter of 51.8 x 31.4 mm at its aspect: 25.9 x 15.7 mm; perimeter 83.2 mm, HBM edge
    # 0.548 x 83.2 = 45.59 mm -> 4 stacks of 11 mm; 4 x 24 GB, 4 x 1.2 TB/s (HBM3E)
    assert (s.fab.die_width_mm.median(), s.fab.die_height_mm.median()) == (25.9, 15.7)
    assert s.fab.hbm_stacks == 4
    assert (s.gpu.peak_tflops.bf16.median(), s.gpu.hbm_gb.median(), s.gpu.hbm_tbps.median()) == (562.5, 96.0, 4.8)
    assert s.gpu.peak_tflops.at("fp4").median() == 2250.0  # every precision's peak scales by the quarter
    # the I/O edge 83.2 - 45.59 mm carries co-packaged optics at 112 GB/s per mm, or electrical at 8.69
    io_edge = 83.2 - 0.548 * 83.2
    assert s.gpu.link_gbps.median() == pytest.approx(io_edge * 112.0, rel=1e-9)
    assert api.check("lite-b200-electrical").gpu.link_gbps.median() == pytest.approx(io_edge * 8.69, rel=1e-9)
