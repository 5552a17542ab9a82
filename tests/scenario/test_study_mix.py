"""Study files with a ``set`` list (overrides of every scenario), and the shipped workload
mixes run through `run` and `compare` with a verdict per request class."""

from __future__ import annotations

import json

import pytest

from mcengine.errors import InputError
from mcengine.scenario.study import load_study

MIXES = ("mix-azure-2023", "mix-reasoning")


def test_a_study_set_list_reaches_every_scenario_before_the_command_line(tmp_path):
    from mcengine import api

    path = tmp_path / "mine.toml"
    path.write_text('scenarios = ["h100", "lite-h100"]\nset = ["econ.pue=1.5", "cluster.instances=4", "cluster.spare_gpus=8"]\n')
    assert load_study(path)["set"] == ("econ.pue=1.5", "cluster.instances=4", "cluster.spare_gpus=8")
    _, scenarios, _ = api.resolve_scenarios([str(path)], ["econ.pue=1.25"])
    assert [(s.cluster.instances, s.econ.pue.value) for s in scenarios] == [(4, 1.25), (4, 1.25)]


def test_a_bad_set_list_is_reported_naming_the_key(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('scenarios = ["h100"]\nset = ["econ.pue"]\n')
    with pytest.raises(InputError) as exc:
        load_study(path)
    assert exc.value.problems[0].key == "set"


@pytest.mark.parametrize("study", MIXES)
def test_a_shipped_mix_compares_its_designs_per_class_and_for_the_mix(cli, study):
    r = cli("compare", study, "--trials", "16", "--json", "--quiet")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert list(doc["scenarios"]) == ["h100", "lite-h100", "lite-h100-2x", "lite-h100-2x-fastswap"]
    classes = list(doc["scenarios"]["h100"]["mix"])
    assert len(classes) == 2
    for pair, metrics in doc["paired_all"].items():
        for cls in classes:
            assert metrics[f"mix.{cls}.cost_per_mtok_usd"]["ratio"]["p50"] > 0.0, pair
        assert metrics["cost_per_mtok_usd"]["ratio"]["p50"] > 0.0
    # the instance shares of the classes add up to 1 in every trial, so their means do
    assert sum(doc["scenarios"]["h100"]["mix"][c]["instance_share"]["mean"] for c in classes) == pytest.approx(1.0, rel=1e-12)


def test_compare_of_one_plain_scenario_still_needs_two(cli):
    r = cli("compare", "h100", "--trials", "16")
    assert r.code == 2 and "at least 2 scenarios" in r.err
