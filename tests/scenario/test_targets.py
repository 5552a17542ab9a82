"""Targeted overrides (`--set NAME:KEY=VALUE`, `A:`/`B:`...) and the errors an override causes."""

from __future__ import annotations

import json

import pytest

from mcengine.errors import InputError
from mcengine.scenario.load import load_scenario, load_targeted, plan_overrides, split_target


def test_split_target_reads_the_target_only_before_the_equals_sign():
    assert split_target("B:gpu.hbm_tbps=1.2") == ("B", "gpu.hbm_tbps=1.2")
    assert split_target("gpu.name=a:b") == (None, "gpu.name=a:b")
    assert split_target("lite-h100:gpu.link_gbps=900") == ("lite-h100", "gpu.link_gbps=900")


def test_position_and_name_targets_reach_one_scenario():
    (a, b), plans = load_targeted(["h100", "lite-h100"], ["B:gpu.hbm_tbps=1.2", "h100:gpu.tdp_w=650", "econ.pue=1.4"])
    assert b.gpu.hbm_tbps.value == 1.2 and a.gpu.hbm_tbps.value == 3.35
    assert a.gpu.tdp_w.value == 650 and b.gpu.tdp_w.value != 650
    assert a.econ.pue.value == b.econ.pue.value == 1.4
    assert [p.to_dict() for p in plans] == [
        {"set": "B:gpu.hbm_tbps=1.2", "scenarios": ["lite-h100"]},
        {"set": "h100:gpu.tdp_w=650", "scenarios": ["h100"]},
        {"set": "econ.pue=1.4", "scenarios": ["h100", "lite-h100"]},
    ]


def test_a_position_letter_reaches_only_its_own_copy_of_a_repeated_scenario():
    (a, b), _ = load_targeted(["h100", "h100"], ["B:gpu.tdp_w=650"])
    assert (a.gpu.tdp_w.value, b.gpu.tdp_w.value, b.name) == (700.0, 650.0, "h100#2")


def test_the_distinct_name_of_a_repeated_scenario_loads_back():
    """Issue 51 case 4: `h100#2` (written to run.json and `h100#2.toml`) was no valid name,
    so a resume of `compare h100 h100` was refused."""
    from mcengine.scenario.load import scenario_from_dict

    (a, b, c), _ = load_targeted(["h100", "h100", "h100"])
    assert [s.name for s in (a, b, c)] == ["h100", "h100#2", "h100#3"]
    assert scenario_from_dict(b.to_dict()) == b
    (_, again, taken), _ = load_targeted(["h100", "h100", c])  # a given h100#3 keeps its name
    assert (again.name, taken.name) == ("h100#2", "h100#3")
    (_, _, after), _ = load_targeted(["h100", b, "h100"])
    assert after.name == "h100#3"


def test_scenarios_of_one_command_share_their_sample_size_and_seed(cli):
    """Issue 51 case 5: per-scenario run.trials / run.seed silently gave way to A's."""
    r = cli("compare", "h100", "lite-h100", "--set", "A:run.trials=128", "--set", "B:run.trials=256", "--set", "B:run.seed=9", "--quiet")
    assert r.code == 2 and "run.trials: got {'h100': 128, 'lite-h100': 256}" in r.err and "run.seed: got {'h100': 0, 'lite-h100': 9}" in r.err
    r = cli("sweep", "h100", "--param", "run.seed", "--values", "1,2", "--trials", "8")
    assert r.code == 2 and "--param: got 'run.seed'" in r.err and "--seed" in r.err


def test_an_unknown_target_names_the_set_and_lists_the_allowed_ones():
    with pytest.raises(InputError) as info:
        plan_overrides(["h100", "lite-h100"], ["C:gpu.hbm_tbps=1"])
    text = str(info.value)
    assert "--set C:gpu.hbm_tbps=1" in text and "h100, lite-h100, A, B" in text


def test_a_single_scenario_accepts_its_name_and_a():
    assert load_scenario("h100", ["A:gpu.tdp_w=600"]).gpu.tdp_w.value == 600
    assert load_scenario("h100", ["h100:gpu.tdp_w=610"]).gpu.tdp_w.value == 610


def test_an_override_error_names_the_set_not_the_shipped_file():
    with pytest.raises(InputError) as info:
        load_scenario("h100", ["gpu.hbm_tbps=1e9"])
    text = str(info.value)
    assert "--set gpu.hbm_tbps=1e9" in text and "configs/h100.toml" not in text and "site-packages" not in text
    assert info.value.problems[0].key == "gpu.hbm_tbps"  # the key itself is unchanged for scripts


def test_cli_set_b_targets_the_second_scenario(cli):
    # the reproducer: `--set B:KEY` was refused as "B:gpu ... unknown key"
    r = cli("compare", "h100", "lite-h100", "--trials", "1024", "--json", "--quiet", "--set", "B:gpu.hbm_tbps=1.2")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["provenance"]["overrides"] == [{"set": "B:gpu.hbm_tbps=1.2", "scenarios": ["lite-h100"]}]
    base = json.loads(cli("compare", "h100", "lite-h100", "--trials", "1024", "--json", "--quiet").out)
    assert doc["scenarios"]["h100"] == base["scenarios"]["h100"]
    assert doc["scenarios"]["lite-h100"]["tokens_per_s"] != base["scenarios"]["lite-h100"]["tokens_per_s"]


def test_cli_plain_set_on_several_scenarios_says_which_on_stderr(cli):
    r = cli("compare", "h100", "lite-h100", "--trials", "1024", "--json", "--quiet", "--set", "econ.pue=1.4")
    assert r.code == 0, r.err
    assert "--set econ.pue=1.4 applies to 2 scenarios: h100, lite-h100" in r.err
    json.loads(r.out)  # stdout is still one JSON document


def test_cli_targeted_sets_work_on_sweep_and_sensitivity(cli):
    r = cli("sweep", "h100", "lite-h100", "--param", "econ.pue", "--values", "1.2", "--trials", "1024", "--json", "--quiet",
            "--set", "lite-h100:gpu.tdp_w=150")
    assert r.code == 0, r.err
    r = cli("sensitivity", "h100", "--method", "tornado", "--trials", "8", "--json", "--quiet", "--set", "A:econ.pue=1.2")
    assert r.code == 0, r.err


def test_cli_override_error_is_exit_2_naming_the_set(cli):
    r = cli("check", "h100", "--set", "gpu.hbm_tbps=1e9")
    assert r.code == 2
    assert "--set gpu.hbm_tbps=1e9" in r.err and "configs/h100.toml" not in r.err
