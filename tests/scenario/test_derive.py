"""``[gpu.derive]``: a GPU from a fraction of a parent die (docs/model.md#derive).

The expected numbers are worked by hand from the formulas and the shipped defaults
(docs/sources.md#derive): H100 die 25.9 x 31.4 mm, HBM edge share 0.548, 11 mm per
stack, hbm3-h100 stacks of 16 GB / 0.67 TB/s / 20.9 W, electrical I/O 8.69 GB/s/mm at
5 pJ/bit, 0.71 W/mm².
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mcengine.errors import InputError
from mcengine.scenario import load_scenario, scenario_from_dict
from mcengine.scenario.derive import die_size_mm, hbm_stack_count, io_power_w, link_gbps, perimeter_mm, tdp_w
from mcengine.scenario.load import load_scenarios
from mcengine.scenario.sampling import draw_inputs, inputs_from_columns, quantile_inputs

# ---------------------------------------------------------------- the quarter die, by hand
QUARTER_AREA_MM2 = 0.25 * 25.9 * 31.4          # 203.315
QUARTER_PERIMETER_MM = 2 * (12.95 + 15.7)      # 57.3: half the H100's 114.6
QUARTER_HBM_EDGE_MM = 0.548 * 57.3             # 31.4004 -> floor(/11) = 2 stacks
QUARTER_IO_EDGE_MM = 57.3 - 31.4004            # 25.8996
QUARTER_LINK_GBPS = 25.8996 * 8.69             # 225.0675
QUARTER_TDP_W = 0.71 * 203.315 + 2 * 20.9 + 5e-12 * QUARTER_LINK_GBPS * 1e9 * 8   # 144.354 + 41.8 + 9.003 = 195.157


def test_formulas_on_plain_numbers():
    w, h = die_size_mm(QUARTER_AREA_MM2, 31.4 / 25.9)
    assert (w, h) == pytest.approx((12.95, 15.7), rel=1e-12)
    assert perimeter_mm(w, h) == pytest.approx(QUARTER_PERIMETER_MM, rel=1e-12)
    assert hbm_stack_count(31.4004, 11.0, 8) == 2
    assert hbm_stack_count(33.0, 11.0, 8) == 3          # an edge of exactly three stacks holds three
    assert hbm_stack_count(3 * 10.4667, 10.4667, 8) == 3  # despite float rounding
    assert hbm_stack_count(200.0, 11.0, 8) == 8         # capped
    assert link_gbps(25.8996, 8.69) == pytest.approx(225.067524, rel=1e-12)
    assert io_power_w(225.0, 5.0) == pytest.approx(9.0, rel=1e-12)   # 5 pJ x 1.8 Tb/s
    assert tdp_w(203.315, 0.71, 2, 20.9, QUARTER_LINK_GBPS, 5.0) == pytest.approx(QUARTER_TDP_W, rel=1e-12)
    # vectorised: arrays in, arrays out
    np.testing.assert_allclose(link_gbps(10.0, np.array([1.0, 2.0])), [10.0, 20.0])


def test_derived_quarter_die_of_the_h100():
    s = load_scenario("lite-h100-shoreline")
    d = s.derivation
    assert (s.fab.die_width_mm.value, s.fab.die_height_mm.value) == (12.95, 15.7)
    assert d.area_mm2 == pytest.approx(QUARTER_AREA_MM2, rel=1e-12)
    assert d.perimeter_mm == pytest.approx(QUARTER_PERIMETER_MM, rel=1e-9)
    assert d.hbm_edge_mm == pytest.approx(QUARTER_HBM_EDGE_MM, rel=1e-9)
    assert d.io_edge_mm == pytest.approx(QUARTER_IO_EDGE_MM, rel=1e-9)
    assert s.fab.hbm_stacks == 2 and dict(s.reliability.components)["hbm"].count == 2
    assert (s.fab.units_per_die, s.fab.units_required) == (36, 33)
    g = s.gpu
    assert g.peak_tflops.bf16.value == pytest.approx(247.35, rel=1e-12)
    assert g.hbm_gb.value == 32.0
    assert g.hbm_tbps.value == pytest.approx(1.34, rel=1e-12)
    assert g.link_gbps.value == pytest.approx(QUARTER_LINK_GBPS, rel=1e-9)
    assert g.tdp_w.value == pytest.approx(QUARTER_TDP_W, rel=1e-9)
    assert g.h100_equivalents.value == 0.25
    # bandwidth per FLOP: 1.34 TB/s / 0.24735 PFLOP/s = 5.42, 1.6x the H100's 3.35 / 0.9894 = 3.39
    assert g.hbm_tbps.value / (g.peak_tflops.bf16.value / 1000) == pytest.approx(5.4174, rel=1e-4)


def test_the_whole_die_gives_the_parent_back():
    s = load_scenario("h100", ['gpu.derive={parent="h100", fraction=1}'])
    # explicit [gpu] keys of h100.toml win (set in the same file), so read the derivation
    d = s.derivation.values
    assert d["fab.hbm_stacks"] == 5
    assert d["gpu.hbm_gb"] == 80.0 and d["gpu.hbm_tbps"] == pytest.approx(3.35, rel=1e-12)
    link = (1 - 0.548) * 114.6 * 8.69                                   # 51.7992 mm x 8.69 = 450.135 GB/s
    assert d["gpu.link_gbps"] == pytest.approx(link, rel=1e-9)
    # h100.toml's own 450 GB/s is explicit, so it feeds the TDP: 577.41 + 104.5 + 18 = 699.9 W
    assert d["gpu.tdp_w"] == pytest.approx(0.71 * 813.26 + 5 * 20.9 + 5e-12 * 450 * 1e9 * 8, rel=1e-9)
    assert abs(d["gpu.tdp_w"] - 700.0) < 1.0
    assert s.derivation.explicit >= {"gpu.hbm_gb", "fab.die_width_mm"}


def test_explicit_values_override_and_inherited_ones_do_not():
    s = load_scenario("lite-h100-shoreline", ["gpu.hbm_tbps=2", "fab.hbm_stacks=3"])
    assert s.gpu.hbm_tbps.value == 2.0 and s.fab.hbm_stacks == 3
    assert s.gpu.hbm_gb.value == 32.0                     # still derived: 2 stacks
    assert not s.derivation.is_derived("gpu.hbm_tbps") and s.derivation.is_derived("gpu.hbm_gb")
    resolved = s.to_dict(with_unset=True)["gpu"]["derive"]["resolved"]
    assert resolved["gpu.hbm_tbps"].startswith("explicit (the derivation gives 1.34")
    assert resolved["gpu.hbm_gb"].startswith("32 = 2 stacks x 16 GB (hbm3-h100)")
    # lite-h100 (the ancestor) types in 20 GB, 1 stack, 112.5 GB/s: not explicit here
    assert s.gpu.link_gbps.value == pytest.approx(QUARTER_LINK_GBPS, rel=1e-9)
    # an explicit value with an explicit link feeds the TDP formula
    t = load_scenario("lite-h100-shoreline", ["gpu.link_gbps=100"])
    assert t.gpu.tdp_w.value == pytest.approx(0.71 * QUARTER_AREA_MM2 + 2 * 20.9 + 5e-12 * 100e9 * 8, rel=1e-9)


def test_half_and_eighth_dies():
    half, eighth = load_scenario("lite-h100-half"), load_scenario("lite-h100-eighth")
    # half: 18.314 x 22.203 mm, perimeter 81.03, HBM edge 44.41 -> 4 stacks, I/O edge 36.63 mm
    assert half.fab.hbm_stacks == 4 and half.gpu.hbm_gb.value == 64.0
    assert half.gpu.link_gbps.value == pytest.approx(2 * (1 - 0.548) * math.sqrt(0.5) * (25.9 + 31.4) * 8.69, rel=1e-6)
    assert (half.fab.units_per_die, half.fab.units_required, half.cluster.instance_gpus) == (72, 66, 16)
    # eighth: 9.157 x 11.102 mm, perimeter 40.52, HBM edge 22.2 -> 2 stacks
    assert eighth.fab.hbm_stacks == 2 and eighth.gpu.hbm_tbps.value == pytest.approx(1.34)
    assert (eighth.fab.units_per_die, eighth.fab.units_required, eighth.cluster.instance_gpus) == (18, 17, 64)
    for s in (half, eighth):   # the same H100s of silicon per instance as 8 H100s
        assert s.cluster.instance_gpus * s.gpu.h100_equivalents.value == 8


def test_lite_h100_is_unchanged():
    s = load_scenario("lite-h100")
    assert s.derivation is None
    assert (s.gpu.hbm_gb.value, s.gpu.hbm_tbps.value, s.gpu.link_gbps.value, s.gpu.tdp_w.value, s.fab.hbm_stacks) == (20.0, 0.84, 112.5, 177.25, 1)  # 170.5 + 7.5 pJ/bit x 112.5 GB/s


def test_uncertain_rates_are_derived_per_trial():
    s = load_scenario("lite-h100-shoreline", ['gpu.derive.io_gbps_per_mm={dist="uniform", low=4, high=16}',
                                              'gpu.derive.tdp_w_per_mm2={dist="uniform", low=0.5, high=0.9}'])
    assert "gpu.derive.io_gbps_per_mm" in s.uncertain_inputs() and "gpu.link_gbps" not in s.uncertain_inputs()
    x = draw_inputs(s, seed=3, trial_start=0, n=500)
    density, w_mm2 = x["gpu.derive.io_gbps_per_mm"], x["gpu.derive.tdp_w_per_mm2"]
    assert density.std() > 0
    np.testing.assert_allclose(x["gpu.link_gbps"], s.derivation.io_edge_mm * density, rtol=1e-12)
    np.testing.assert_allclose(x["gpu.tdp_w"], w_mm2 * QUARTER_AREA_MM2 + 2 * 20.9 + 5e-12 * x["gpu.link_gbps"] * 1e9 * 8, rtol=1e-12)
    # the median trial is the value check shows
    q = quantile_inputs(s)
    assert q["gpu.link_gbps"][0] == pytest.approx(s.gpu.link_gbps.value, rel=1e-12)
    assert q["gpu.link_gbps"][0] == pytest.approx(QUARTER_IO_EDGE_MM * 10, rel=1e-9)
    # a design (Sobol) column reaches the derived link too
    c = inputs_from_columns(s, {"gpu.derive.io_gbps_per_mm": np.array([4.0, 16.0])})
    np.testing.assert_allclose(c["gpu.link_gbps"], [QUARTER_IO_EDGE_MM * 4, QUARTER_IO_EDGE_MM * 16], rtol=1e-9)


def test_the_resolved_dict_loads_back_and_overrides_still_reach_the_derivation():
    s = load_scenario("lite-h100-shoreline")
    plain = s.to_dict()
    assert "hbm_gb" not in plain["gpu"] and "hbm_stacks" not in plain["fab"]
    again = scenario_from_dict(plain)
    assert again.gpu == s.gpu and again.fab == s.fab
    checked = scenario_from_dict(_without_none(s.to_dict(with_unset=True)))   # check's output (TOML drops unset keys) loads too
    assert checked.gpu.hbm_gb == s.gpu.hbm_gb
    half = load_scenarios([s], ["gpu.derive.fraction=0.5"])[0]
    assert half.fab.hbm_stacks == 4 and half.gpu.peak_tflops.bf16.value == pytest.approx(494.7)


def _without_none(doc):
    return {k: _without_none(v) if isinstance(v, dict) else v for k, v in doc.items() if v is not None}


# ---------------------------------------------------------------- bad input


def _problem(overrides, ref="lite-h100-shoreline"):
    with pytest.raises(InputError) as exc:
        load_scenario(ref, overrides)
    return exc.value


@pytest.mark.parametrize("override, key, words", [
    ("gpu.derive.fraction=0", "gpu.derive.fraction", ["(0, 1]"]),
    ("gpu.derive.fraction=1.5", "gpu.derive.fraction", ["(0, 1]"]),
    ('gpu.derive.fraction={dist="uniform", low=0.2, high=0.3}', "gpu.derive.fraction", ["structural"]),
    ('gpu.derive.hbm_generation="hbm3f"', "gpu.derive.hbm_generation", ["hbm3e"]),
    ('gpu.derive.parent="h1000"', "gpu.derive.parent", ["shipped scenario"]),
    ("gpu.derive.hbm_edge_share=0.1", "gpu.derive.hbm_edge_share", ["holds 0 stacks", "at least 0.192"]),
    ("gpu.derive.hbm_edge_share=1", "gpu.link_gbps (derived)", ["I/O edge 0 mm"]),
    ("gpu.derive.io_gbps_per_mm=-1", "gpu.derive.io_gbps_per_mm", ["(0, 10000]"]),
    ("gpu.derive.colour=1", "gpu.derive.colour", ["unknown key"]),
])
def test_bad_derive_input_names_the_key(override, key, words):
    exc = _problem([override])
    text = str(exc)
    assert any(p.key == key for p in exc.problems), text
    for word in words:
        assert word in text, text


def test_a_design_cannot_derive_from_itself(tmp_path):
    path = tmp_path / "loop.toml"
    path.write_text(f'extends = "h100"\n[gpu.derive]\nparent = "{path}"\n', encoding="utf-8")
    with pytest.raises(InputError, match="cycle"):
        load_scenario(str(path))


def test_check_shows_the_derivation_and_bad_input_is_exit_2(cli):
    out = cli("check", "lite-h100-shoreline")
    assert out.code == 0
    assert '"gpu.link_gbps" = "225.068 = I/O edge 25.9 mm x 8.69 GB/s/mm (electrical)"' in out.out
    assert 'shoreline = "die 12.95 x 15.7 mm = 203.3 mm², perimeter 57.3 mm' in out.out
    bad = cli("check", "lite-h100-shoreline", "--set", "gpu.derive.hbm_phy_edge_mm=0.5")
    assert bad.code == 2 and "gpu.derive.hbm_phy_edge_mm" in bad.err and "Traceback" not in bad.err


@pytest.mark.parametrize("name", ["lite-h100-shoreline", "lite-h100-half", "lite-h100-eighth"])
def test_shipped_derived_designs_run(cli, name):
    import json

    out = cli("run", name, "--trials", "3", "--json")
    assert out.code == 0, out.err
    summary = json.loads(out.out)["scenarios"][name]
    assert 0 < summary["cost_per_mtok_usd"]["p50"] < 100
    assert summary["tokens_per_s_per_gpu"]["min"] > 0
    assert cli("yield", name, "--wafers", "20").code == 0


def test_sweep_reaches_an_unset_derive_rate(cli):
    import json

    out = cli("sweep", "lite-h100-shoreline", "--param", "gpu.derive.io_gbps_per_mm", "--values", "8.69,30", "--trials", "8", "--json")
    assert out.code == 0, out.err
    low, high = json.loads(out.out)["rows"]
    # same trials (common random numbers), 3.45x the links: every trial at least as fast
    assert high["tokens_per_s"]["min"] >= low["tokens_per_s"]["min"]
    assert high["tokens_per_s"]["mean"] > low["tokens_per_s"]["mean"]
