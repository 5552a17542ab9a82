"""The `--out` contract: summary.json, scenarios, table.csv, figures, the manifest, --force."""

from __future__ import annotations

import csv
import io
import json

import pytest

from mcengine.errors import InputError
from mcengine.outfolder import MANIFEST, OutFolder, metric_rows, table_csv

RUN = ("--trials", "1024", "--quiet")


def _manifest(folder) -> dict:
    return json.loads((folder / MANIFEST).read_text())


def _table(folder) -> list[dict]:
    return list(csv.DictReader(io.StringIO((folder / "table.csv").read_text())))


def test_compare_over_a_case_study_folder_is_refused_then_forced_without_stale_files(cli, tmp_path):
    # the reproducer: compare over an older run left its lite-h100-2x*.toml behind
    out = tmp_path / "d"
    assert cli("run", *RUN, "--keep-trials", "--out", str(out)).code == 0
    assert (out / "lite-h100-2x.toml").is_file() and (out / "trials.parquet").is_dir()
    r = cli("compare", "h100", "lite-h100", *RUN, "--out", str(out))
    assert r.code == 2 and "--force" in r.err and str(out) in r.err
    assert (out / "lite-h100-2x.toml").is_file()  # refused: nothing touched
    r = cli("compare", "h100", "lite-h100", *RUN, "--out", str(out), "--force")
    assert r.code == 0, r.err
    names = {p.name for p in out.iterdir()}
    assert not {"lite-h100-2x.toml", "lite-h100-2x-fastswap.toml", "trials.parquet"} & names
    assert {"summary.json", "h100.toml", "lite-h100.toml", "table.csv", "cost_per_mtok_cdf.png", MANIFEST} <= names
    assert set(_manifest(out)["files"]) == names - {MANIFEST, ".mcengine.lock"}


def test_force_keeps_files_mcengine_did_not_write(cli, tmp_path):
    out = tmp_path / "d"
    assert cli("yield", "h100", "--wafers", "64", "--out", str(out)).code == 0
    (out / "notes.txt").write_text("mine")
    assert cli("reliability", "h100", "--lifetimes", "4", "--out", str(out), "--force").code == 0
    assert (out / "notes.txt").read_text() == "mine"


def test_the_same_run_may_write_its_folder_again(cli, tmp_path):
    out = tmp_path / "d"
    for _ in range(2):
        r = cli("yield", "h100", "--wafers", "64", "--seed", "1", "--out", str(out))
        assert r.code == 0, r.err


def test_every_command_writes_summary_scenario_table_and_manifest(cli, tmp_path):
    cases = {
        "yield": ("yield", "h100", "--wafers", "64"),
        "reliability": ("reliability", "h100", "--lifetimes", "4"),
        "roofline": ("roofline", "h100"),
        "sweep": ("sweep", "h100", "--param", "econ.pue", "--values", "1.1,1.5", "--output", "energy_usd", "--trials", "1024", "--quiet"),
        "tornado": ("sensitivity", "h100", "--method", "tornado", "--output", "energy_usd", "--trials", "8", "--quiet"),
    }
    for name, args in cases.items():
        out = tmp_path / name
        r = cli(*args, "--out", str(out))
        assert r.code == 0, (name, r.err)
        files = set(_manifest(out)["files"])
        assert {"summary.json", "h100.toml", "table.csv"} <= files, name
        assert all((out / f).exists() for f in files), name
        assert "provenance" in json.loads((out / "summary.json").read_text()), name
    yield_rows = {row["metric"]: row for row in _table(tmp_path / "yield")}
    summary = json.loads((tmp_path / "yield" / "summary.json").read_text())
    assert float(yield_rows["die_yield"]["mean"]) == pytest.approx(summary["die_yield"]["mean"])
    assert int(yield_rows["dies_per_wafer"]["value"]) == summary["dies_per_wafer"]
    sweep_rows = _table(tmp_path / "sweep")
    assert [float(r["value"]) for r in sweep_rows] == [1.1, 1.5] and all(r["metric"] == "energy_usd" for r in sweep_rows)
    assert any(f.endswith(".png") for f in _manifest(tmp_path / "sweep")["files"])
    tornado = json.loads((tmp_path / "tornado" / "summary.json").read_text())
    assert {r["input"] for r in _table(tmp_path / "tornado")} == set(tornado["bars"])


def test_run_table_has_one_row_per_scenario_metric_and_pair(cli, tmp_path):
    out = tmp_path / "c"
    assert cli("compare", "h100", "lite-h100", *RUN, "--out", str(out)).code == 0
    summary = json.loads((out / "summary.json").read_text())
    rows = _table(out)
    cost = next(r for r in rows if r["scenario"] == "lite-h100" and r["metric"] == "cost_per_mtok_usd")
    assert float(cost["p50"]) == pytest.approx(summary["scenarios"]["lite-h100"]["cost_per_mtok_usd"]["p50"])
    ratio = next(r for r in rows if r["metric"] == "cost_per_mtok_usd ratio")
    assert float(ratio["p_b_below_a"]) == pytest.approx(summary["paired"]["cost_per_mtok_usd"]["p_b_below_a"])


def test_an_empty_trials_folder_is_never_left(cli, tmp_path):
    out = tmp_path / "d"
    (out / "trials.parquet").mkdir(parents=True)
    assert cli("run", "h100", *RUN, "--out", str(out)).code == 0
    assert not (out / "trials.parquet").exists()


def test_resume_of_its_own_run_is_allowed(cli, tmp_path):
    out = tmp_path / "d"
    assert cli("run", "h100", *RUN, "--out", str(out)).code == 0
    r = cli("run", "--resume", str(out), "--quiet")
    assert r.code == 0, r.err


def test_a_manifest_entry_outside_the_folder_is_never_deleted(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    out = tmp_path / "d"
    out.mkdir()
    (out / MANIFEST).write_text(json.dumps({"fingerprint": "x", "command": "run", "files": ["../victim.txt", "/etc/passwd"]}))
    with pytest.raises(InputError, match="--force"):
        OutFolder.claim(out, "yield", "y")
    OutFolder.claim(out, "yield", "y", force=True)
    assert victim.read_text() == "keep"


def test_metric_rows_flatten_distributions_and_values():
    dist = {"mean": 1.0, "std": 0.1, "sem": 0.01, "p01": 0.8, "p05": 0.9, "p50": 1.0, "p95": 1.1, "p99": 1.2, "min": 0.7, "max": 1.3}
    rows = metric_rows({"a": dist, "b": {"c": 3, "d": "memory"}})
    assert rows[0]["metric"] == "a" and rows[0]["p95"] == 1.1
    assert rows[1:] == [{"metric": "b.c", "value": 3}, {"metric": "b.d", "value": "memory"}]
    assert table_csv(rows).splitlines()[0].startswith("metric,mean")


def test_force_never_deletes_the_files_of_a_folder_a_run_is_using(tmp_path):
    """A stage command with --force on a folder whose lock a chain run holds is refused
    before it deletes anything (it used to delete the listed files)."""
    from mcengine import api
    from mcengine.errors import InputError
    from mcengine.outfolder import locked

    out = tmp_path / "busy"
    api.roofline("h100", out=out)
    listed = sorted(p.name for p in out.iterdir())
    with locked(out):
        with pytest.raises(InputError, match="in use by another mcengine run"):
            api.roofline("lite-h100", out=out, force=True)
    assert sorted(p.name for p in out.iterdir() if p.name != ".mcengine.lock") == listed
