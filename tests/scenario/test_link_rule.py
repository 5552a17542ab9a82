"""One rule for the scale-up links (docs/model.md#links): every shipped and paper scenario
prices its switch port per GB/s of link bandwidth and charges its links' power,
pJ/bit x link bandwidth, in its TDP; the old keys keep working."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mcengine.errors import InputError
from mcengine.scenario.load import load_scenario, load_scenarios
from mcengine.scenario.parts import io_technologies
from mcengine.scenario.refs import shipped_names
from mcengine.scenario.sampling import draw_inputs

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = [*shipped_names(), *sorted(str(p) for p in (ROOT / "configs" / "paper").glob("paper-*.toml"))]
#: $2,500 per GPU of HGX baseboard and NVSwitch at 450 GB/s (docs/sources.md#econ-scale-up-fabric)
USD_PER_GBPS = 2500 / 450
#: The electrical port's range per GB/s: ($5,875 - $3,500 .. $5,875 - $3,000) / 450, mode 2,500 / 450
ELECTRICAL = (2375 / 450, 2875 / 450)
#: The optical port's range per GB/s: $0 .. $150,000 / 64 ports / 100 GB/s
OPTICAL = (0.0, 150000 / 64 / 100)


def _triangular_median(low: float, mode: float, high: float) -> float:
    """The median of a triangular law whose mode lies below it: high - sqrt((high - low)(high - mode) / 2)."""
    return high - ((high - low) * (high - mode) / 2) ** 0.5
#: W per (pJ/bit x GB/s): 10^-12 J/bit x 10^9 B/s x 8 bit/B
W_PER_PJ_GBPS = 8e-3


def _non_link_w(s, values) -> np.ndarray:
    """The board power without the links, from the keys that state it (not from gpu.tdp_w)."""
    if s.derivation is not None:
        r = s.derivation
        w_mm2 = values.get("gpu.derive.tdp_w_per_mm2")
        return w_mm2 * r.area_mm2 + r.stacks * r.hbm.w_per_stack
    return values["gpu.core_tdp_w"]


def _pj_per_bit(s, values) -> np.ndarray:
    if s.derivation is not None:
        return np.full(len(values["gpu.link_gbps"]), s.derivation.io.pj_per_bit)
    return values["gpu.link_pj_per_bit"]


@pytest.mark.parametrize("ref", SCENARIOS, ids=lambda r: Path(r).stem)
def test_every_shipped_scenario_follows_the_link_rule(ref):
    s = load_scenario(ref)
    values = draw_inputs(s, seed=7, trial_start=0, n=64).values
    link = values["gpu.link_gbps"]
    assert s.econ.scale_up_port_cost_per_gbps_usd is not None
    key, (low, high) = (("econ.optical_port_cost_per_gbps_usd", OPTICAL) if s.econ.scale_up_fabric == "optical"
                        else ("econ.scale_up_port_cost_per_gbps_usd", ELECTRICAL))
    price = values[key]
    assert low <= price.min() < price.max() <= high
    np.testing.assert_allclose(values["econ.scale_up_port_cost_usd"], price * link, rtol=1e-12)
    pj = _pj_per_bit(s, values)
    assert set(np.unique(pj)) <= {t.pj_per_bit for t in io_technologies().values()}
    np.testing.assert_allclose(values["gpu.tdp_w"], _non_link_w(s, values) + pj * link * W_PER_PJ_GBPS, rtol=1e-12)


def test_shipped_figures_by_hand():
    """H100 700 W = 682 + 5 x 450 x 8e-3; Lite 170.5 + 7.5 x 112.5 x 8e-3 = 177.25, at 2x 184;
    the paper's Lite 175 and 179.5; ports at the median price per GB/s x the link: the
    electrical 5.7085 x 450 = $2,568.8, the optical 8.9615 x 112.5 = $1,008.2 (x 225 at 2x)."""
    electrical = _triangular_median(ELECTRICAL[0], USD_PER_GBPS, ELECTRICAL[1])
    optical = _triangular_median(OPTICAL[0], USD_PER_GBPS, OPTICAL[1])
    assert (electrical, optical) == (pytest.approx(5.70848, abs=1e-5), pytest.approx(8.96152, abs=1e-5))
    want = {"h100": (700.0, 450 * electrical), "lite-h100": (177.25, 112.5 * optical), "lite-h100-2x": (184.0, 225 * optical),
            str(ROOT / "configs/paper/paper-lite-h100.toml"): (175.0, 112.5 * optical),
            str(ROOT / "configs/paper/paper-lite-h100-2x.toml"): (179.5, 225 * optical)}
    for ref, (tdp, port) in want.items():
        s = load_scenario(ref)
        assert s.gpu.tdp_w.value == pytest.approx(tdp, rel=1e-12) and s.econ.scale_up_port_cost_usd.value == pytest.approx(port, rel=1e-12)


def test_the_rule_follows_an_uncertain_link_per_trial():
    s = load_scenarios(["lite-h100"], ['gpu.link_gbps={dist="uniform", low=100, high=300}'])[0]
    v = draw_inputs(s, seed=3, trial_start=0, n=256).values
    assert np.ptp(v["gpu.link_gbps"]) > 100
    np.testing.assert_allclose(v["gpu.tdp_w"], 170.5 + 7.5 * v["gpu.link_gbps"] * W_PER_PJ_GBPS, rtol=1e-12)
    np.testing.assert_allclose(v["econ.scale_up_port_cost_usd"], v["econ.optical_port_cost_per_gbps_usd"] * v["gpu.link_gbps"], rtol=1e-12)


def test_the_optical_fabric_prices_its_own_port_and_the_electrical_reading_prices_it_as_the_h100():
    """The Lite's optical port draws its own price, apart from the H100's; with
    econ.scale_up_fabric = "electrical" it pays the H100's electrical draw per GB/s."""
    own = draw_inputs(load_scenario("lite-h100"), seed=5, trial_start=0, n=512).values
    equal = draw_inputs(load_scenarios(["lite-h100"], ["econ.scale_up_fabric=electrical"])[0], seed=5, trial_start=0, n=512).values
    h100 = draw_inputs(load_scenario("h100"), seed=5, trial_start=0, n=512).values
    np.testing.assert_array_equal(equal["econ.scale_up_port_cost_usd"], h100["econ.scale_up_port_cost_per_gbps_usd"] * 112.5)
    np.testing.assert_array_equal(own["econ.scale_up_port_cost_usd"], own["econ.optical_port_cost_per_gbps_usd"] * 112.5)
    assert not np.array_equal(own["econ.optical_port_cost_per_gbps_usd"], h100["econ.scale_up_port_cost_per_gbps_usd"])
    # a triangular 0 / 5.556 / 23.44 law's mean (low + mode + high) / 3 = 9.664, within 4 SEM
    p = own["econ.optical_port_cost_per_gbps_usd"]
    assert abs(p.mean() - (0 + USD_PER_GBPS + OPTICAL[1]) / 3) < 4 * p.std() / len(p) ** 0.5


def test_old_keys_keep_working_in_a_child_file_and_by_set(tmp_path):
    child = tmp_path / "old.toml"
    child.write_text('extends = "h100"\n[gpu]\ntdp_w = 300\n[econ]\nscale_up_port_cost_usd = 3000\n')
    s = load_scenario(str(child))
    v = draw_inputs(s, seed=1, trial_start=0, n=4).values
    assert s.gpu.core_tdp_w is None and s.econ.scale_up_port_cost_per_gbps_usd is None
    assert (v["gpu.tdp_w"] == 300).all() and (v["econ.scale_up_port_cost_usd"] == 3000).all()
    s = load_scenarios(["lite-h100"], ["gpu.tdp_w=800", "econ.scale_up_port_cost_usd=10"])[0]
    v = draw_inputs(s, seed=1, trial_start=0, n=4).values
    assert (v["gpu.tdp_w"] == 800).all() and (v["econ.scale_up_port_cost_usd"] == 10).all()
    # a rule key set again replaces an old key the file gave
    s = load_scenarios([str(child)], ["econ.scale_up_port_cost_per_gbps_usd=2"])[0]
    assert s.econ.scale_up_port_cost_usd.value == 900.0


def test_core_tdp_without_its_link_energy_is_refused_naming_the_key(tmp_path):
    f = tmp_path / "half.toml"
    f.write_text('[gpu]\ncore_tdp_w = 600\n')
    with pytest.raises(InputError) as exc:
        load_scenario(str(f))
    assert [p.key for p in exc.value.problems] == ["gpu.link_pj_per_bit"] and exc.value.problems[0].value is None


def test_a_rule_value_out_of_range_is_refused():
    with pytest.raises(InputError) as exc:
        load_scenarios(["h100"], ["gpu.link_pj_per_bit=1000", "gpu.link_gbps=1e6"])
    assert [p.key.split(": ")[-1] for p in exc.value.problems] == ["gpu.core_tdp_w"]
    hint = exc.value.problems[0].hint
    assert "gpu.tdp_w = 8.00068e+06" in hint and "gpu.link_pj_per_bit = 1000" in hint and "gpu.link_gbps = 1000000" in hint


def test_an_idle_power_above_the_rule_s_tdp_names_the_rule():
    with pytest.raises(InputError) as exc:
        load_scenarios(["h100"], ["gpu.core_tdp_w=1"])
    assert "gpu.tdp_w = gpu.core_tdp_w + gpu.link_pj_per_bit x gpu.link_gbps" in str(exc.value)
