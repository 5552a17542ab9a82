"""Loading: shipped names, files, extends chains, --set overrides, round trips."""

from __future__ import annotations

import json
import math

import pytest

from mcengine.errors import InputError
from mcengine.scenario import load_scenario, scenario_from_dict, shipped_names
from mcengine.scenario.dists import Lognormal, MixtureLaw
from mcengine.scenario.files import configs_dir
from mcengine.scenario.load import parse_override


def test_shipped_scenarios_load_by_name():
    assert {"h100", "lite-h100"} <= set(shipped_names())
    h100 = load_scenario("h100")
    assert h100.name == "h100"
    assert h100.active_gpus == 1024
    assert h100.fab.units_required == 132


def test_extends_merges_table_by_table():
    lite = load_scenario("lite-h100")
    h100 = load_scenario("h100")
    assert lite.gpu.hbm_gb.value == 20
    # inherited from h100, untouched by lite-h100.toml
    assert lite.reliability.host_weibull_shape == h100.reliability.host_weibull_shape
    assert lite.reliability.host_failure == h100.reliability.host_failure == "host"
    assert lite.fab.wafer_diameter_mm.value == 300
    # a component table merged key by key: count overridden, rates inherited
    assert lite.reliability.component("hbm").count == 1
    assert lite.reliability.component("hbm").afr == h100.reliability.component("hbm").afr
    assert [n for n, _ in lite.reliability.components] == ["die", "hbm", "gsp", "network", "optics", "laser"]
    assert lite.reliability.component("network") == h100.reliability.component("network")  # per NIC, inherited whole
    assert lite.active_gpus == h100.active_gpus * 4


def test_extends_replaces_a_dist_or_law_of_another_kind(tmp_path):
    """A child's ``dist``/``law`` table of another kind replaces the parent's whole; of the
    same kind it merges key by key (the parent's sigma kept)."""
    from mcengine.scenario.dists import Uniform

    (tmp_path / "kind.toml").write_text(
        'extends = "lite-h100"\n[fab]\ndefect_density_per_cm2 = { dist = "uniform", low = 0.07, high = 0.2 }\n'
        '[reliability]\nrepair_hours = { law = "lognormal", median = 72, sigma = 0.9 }\n')
    s = load_scenario(str(tmp_path / "kind.toml"))
    assert isinstance(s.fab.defect_density_per_cm2, Uniform)
    assert (s.fab.defect_density_per_cm2.low, s.fab.defect_density_per_cm2.high) == (0.07, 0.2)
    assert s.to_dict()["reliability"]["repair_hours"] == {"law": "lognormal", "median": 72, "sigma": 0.9}  # h100's is a mixture
    parent = load_scenario("lite-h100").fab.defect_density_per_cm2
    (tmp_path / "same.toml").write_text('extends = "lite-h100"\n[fab]\ndefect_density_per_cm2 = { dist = "lognormal", median = 0.2 }\n')
    same = load_scenario(str(tmp_path / "same.toml")).fab.defect_density_per_cm2
    assert isinstance(same, Lognormal) and same.median_ == 0.2 and same.sigma == parent.sigma


def test_extends_by_relative_path(tmp_path):
    (tmp_path / "base.toml").write_text('extends = "h100"\n[cluster]\ninstances = 3\n')
    (tmp_path / "child.toml").write_text('extends = "base.toml"\n[cluster]\nspare_gpus = 5\n')
    s = load_scenario(str(tmp_path / "child.toml"))
    assert (s.name, s.cluster.instances, s.cluster.spare_gpus) == ("child", 3, 5)


def test_set_overrides_value_table_and_bare_string():
    s = load_scenario(
        "h100",
        [
            "fab.defect_density_per_cm2=0.2",
            'reliability.repair_hours={law="lognormal", median=24, sigma=0.5}',
            "reliability.replace_unit=host",
            "fab.defect_clustering=inf",
        ],
    )
    assert s.fab.defect_density_per_cm2.value == 0.2
    assert s.reliability.repair_hours.kind == "lognormal"
    assert s.reliability.replace_unit == "host"
    assert math.isinf(s.fab.defect_clustering.value)


def test_set_table_replaces_whole_table():
    s = load_scenario("h100", ['reliability.components={die={afr=0.1}}'])
    assert [n for n, _ in s.reliability.components] == ["die"]
    assert s.reliability.component("die").transient_afr.value == 0.0  # default, not h100's


def test_parse_override_rejects_missing_equals():
    with pytest.raises(InputError, match="KEY=VALUE"):
        parse_override("fab.scribe_mm")


def test_uncertain_inputs_and_laws_parse_into_classes():
    s = load_scenario("h100")
    assert isinstance(s.fab.defect_density_per_cm2, Lognormal)
    assert isinstance(s.reliability.repair_hours, MixtureLaw)
    keys = s.inputs()
    assert "reliability.repair_hours.parts.1.median" in keys
    assert "reliability.components.die.afr" in keys
    assert "fab.defect_density_per_cm2" in s.uncertain_inputs()
    assert "fab.scribe_mm" not in s.uncertain_inputs()


def test_law_parameters_may_be_uncertain():
    s = load_scenario("h100", ['reliability.swap_hours={law="exponential", mean={dist="uniform", low=0.05, high=0.5}}'])
    assert "reliability.swap_hours.mean" in s.uncertain_inputs()


def test_resolved_dict_round_trips_through_json_and_toml(tmp_path):
    import tomli_w

    lite = load_scenario("lite-h100")
    doc = lite.to_dict()
    again = scenario_from_dict(json.loads(json.dumps(doc)))
    assert again.to_dict() == doc
    path = tmp_path / "resolved.toml"
    path.write_text(tomli_w.dumps(doc))
    assert load_scenario(str(path)).to_dict() == doc


def test_configs_are_package_data():
    # the wheel maps configs/ to mcengine/configs; a checkout falls back to configs/
    assert (configs_dir() / "h100.toml").is_file()
    assert (configs_dir() / "models" / "llama-3-70b.toml").is_file()
