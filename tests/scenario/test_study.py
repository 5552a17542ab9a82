"""Study files: `mcengine run STUDY.toml`, shipped studies by name, and their validation."""

from __future__ import annotations

import json

import pytest

from mcengine.errors import InputError
from mcengine.scenario.study import load_study, study_path


def _write(tmp_path, text: str):
    path = tmp_path / "study.toml"
    path.write_text(text)
    return path


def test_a_study_file_runs_its_scenarios_with_its_trials_and_seed(cli, tmp_path):
    # the reproducer: `run STUDY.toml` failed with "scenarios: unknown key"
    path = _write(tmp_path, 'name = "mine"\nscenarios = ["h100", "lite-h100"]\ntrials = 1024\nseed = 4\n')
    r = cli("run", str(path), "--json", "--quiet")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert (doc["scenario"], list(doc["scenarios"]), doc["trials"], doc["seed"]) == ("mine", ["h100", "lite-h100"], 1024, 4)
    assert doc["provenance"]["sample_size"] == {"trials": 1024}


def test_a_study_scenario_path_is_relative_to_the_study_file(tmp_path):
    (tmp_path / "mine.toml").write_text('name = "mine"\nextends = "h100"\n[econ]\npue = 1.4\n')
    study = load_study(_write(tmp_path, 'scenarios = ["mine.toml", "h100"]\n'))
    assert study["scenarios"] == [str(tmp_path / "mine.toml"), "h100"] and study["name"] == "study"


def test_shipped_study_runs_by_name(cli):
    r = cli("run", "case-study", "--trials", "1024", "--json", "--quiet")
    assert r.code == 0, r.err
    assert list(json.loads(r.out)["scenarios"]) == ["h100", "lite-h100", "lite-h100-2x", "lite-h100-2x-fastswap"]


def test_scenarios_lists_studies_marked_as_such(cli):
    r = cli("scenarios")
    assert "case-study (study)" in r.out
    doc = json.loads(cli("scenarios", "--json").out)
    assert {"name": "case-study", "kind": "study"}.items() <= doc["studies"][0].items()
    assert "case-study" not in [s["name"] for s in doc["scenarios"]]


def test_every_problem_of_a_study_file_is_reported_at_once(cli, tmp_path):
    path = _write(tmp_path, 'scenarios = ["h100", "lite-h10"]\ntrails = 5\nseed = -1\n')
    with pytest.raises(InputError) as info:
        load_study(path)
    keys = {p.key for p in info.value.problems}
    assert keys == {"trails", "scenarios[1]", "seed"}
    text = str(info.value)
    assert "did you mean 'trials'" in text and "did you mean 'lite-h100'" in text
    r = cli("run", str(path))
    assert r.code == 2 and "scenarios[1]" in r.err and "trails" in r.err


@pytest.mark.parametrize("text, key", [('scenarios = []\n', "scenarios"), ('scenarios = ["h100"]\ntrials = 0\n', "trials"),
                                       ('scenarios = ["h100"]\noutputs = "cost"\n', "outputs")])
def test_bad_study_values_name_their_key(tmp_path, text, key):
    with pytest.raises(InputError) as info:
        load_study(_write(tmp_path, text))
    assert [p.key for p in info.value.problems] == [key]


def test_a_study_with_an_unknown_metric_is_exit_2(cli, tmp_path):
    path = _write(tmp_path, 'scenarios = ["h100"]\noutputs = ["cost"]\n')
    r = cli("run", str(path), "--trials", "1024")
    assert r.code == 2 and "outputs" in r.err and "cost_per_mtok_usd" in r.err


def test_a_study_runs_alone_and_a_scenario_file_is_not_a_study(cli, tmp_path):
    r = cli("run", "case-study", "h100")
    assert r.code == 2 and "a study runs alone" in r.err
    assert study_path("h100") is None and study_path("case-study") is not None
    (tmp_path / "s.toml").write_text('name = "s"\nextends = "h100"\n')
    assert study_path(str(tmp_path / "s.toml")) is None
