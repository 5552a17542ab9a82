"""The command spine: listing, resolved scenarios, the validation table, --out files."""

from __future__ import annotations

import json

import tomllib


def test_scenarios_lists_shipped_with_descriptions(cli):
    r = cli("scenarios", "--json")
    assert r.code == 0
    rows = {row["name"]: row["description"] for row in json.loads(r.out)["scenarios"]}
    assert {"h100", "lite-h100", "lite-h100-2x", "lite-h100-2x-fastswap"} <= set(rows)
    assert all(rows.values())


def test_check_prints_resolved_toml_and_json(cli):
    toml_out = cli("check", "lite-h100", "--set", "fab.scribe_mm=0.2")
    json_out = cli("check", "lite-h100", "--set", "fab.scribe_mm=0.2", "--json")
    assert toml_out.code == json_out.code == 0
    doc = json.loads(json_out.out)
    assert doc["fab"]["scribe_mm"] == 0.2 and doc["reliability"]["repair_crews"] == "inf"
    assert tomllib.loads(toml_out.out)["fab"] == doc["fab"]


def test_validate_passes_every_closed_form(cli):
    r = cli("validate", "--json")
    assert r.code == 0, r.out[-2000:]
    doc = json.loads(r.out)
    stages = {c["stage"] for c in doc["checks"]}
    assert doc["passed"] and {"fab", "reliability", "roofline", "sensitivity"} <= stages


def test_stage_command_writes_summary_and_scenario(cli, tmp_path):
    r = cli("reliability", "h100", "--lifetimes", "64", "--json", "--out", str(tmp_path))
    assert r.code == 0, r.err
    assert json.loads((tmp_path / "summary.json").read_text()) == json.loads(r.out)
    assert tomllib.loads((tmp_path / "h100.toml").read_text())["name"] == "h100"
