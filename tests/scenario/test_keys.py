"""`mcengine keys`: every scenario key with help, unit, default, range and why."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest

from mcengine.scenario.fields import spec_of
from mcengine.scenario.keys import key_rows
from mcengine.scenario.schema import SECTIONS


def test_every_schema_key_is_listed_once():
    listed = [r["key"] for r in key_rows()]
    assert len(listed) == len(set(listed))
    for table, cls, special in SECTIONS:
        for f in fields(cls):
            if f.name not in special and spec_of(f) is not None:
                assert f"{table}.{f.name}" in listed
    assert "reliability.components.NAME.afr" in listed and "workload.model.layers" in listed


def test_a_numeric_key_shows_its_default_range_and_reason():
    row = next(r for r in key_rows("gpu") if r["key"] == "gpu.hbm_tbps")
    assert (row["unit"], row["default"], row["range"]) == ("TB/s", 3.35, "(0, 10000]")
    assert row["why"] == "1000x an H100" and row["help"] == "HBM bandwidth per package."


def test_cli_keys_text_fits_80_columns_and_json_matches(cli):
    r = cli("keys")
    assert r.code == 0 and max(len(line) for line in r.out.splitlines()) <= 80
    assert "fab.defect_density_per_cm2  [defects/cm^2]\n" in r.out and "    bounds: " in r.out
    doc = json.loads(cli("keys", "fab", "--json").out)
    assert doc["keys"] == key_rows("fab") and all(row["key"].startswith("fab.") for row in doc["keys"])


def test_cli_keys_unknown_section_is_exit_2_with_a_suggestion(cli):
    r = cli("keys", "fabb")
    assert r.code == 2 and "SECTION" in r.err and "did you mean 'fab'" in r.err


def test_an_integer_bound_is_shown_in_full_not_rounded():
    row = next(r for r in key_rows("run") if r["key"] == "run.seed")
    assert row["range"] == f"[0, {2**64 - 1}]"


def test_the_markup_scope_is_a_subset_key():
    from mcengine.errors import InputError
    from mcengine.scenario import load_scenario
    from mcengine.scenario.keys import key_rows

    row = next(r for r in key_rows("econ") if r["key"] == "econ.markup_applies_to")
    assert row["kind"] == "subset" and row["default"] == ["die", "packaging", "test"]
    assert row["choices"] == ["die", "hbm", "packaging", "test", "optics", "hosts", "fabric"]
    s = load_scenario("h100", ['econ.markup_applies_to=["optics", "die"]'])
    assert s.econ.markup_applies_to == ("optics", "die") and s.to_dict()["econ"]["markup_applies_to"] == ["optics", "die"]
    for bad, words in (('["die", "hbmm"]', "did you mean 'hbm'"), ('"die"', "a list of distinct names"), ('["die", "die"]', "distinct")):
        with pytest.raises(InputError, match="econ.markup_applies_to") as err:
            load_scenario("h100", [f"econ.markup_applies_to={bad}"])
        assert words in str(err.value)
    assert load_scenario("h100", ["econ.markup_applies_to=[]"]).econ.markup_applies_to == ()
