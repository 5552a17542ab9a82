"""The `--out` contract: summary.json, scenarios, table.csv, figures, the manifest, --force."""

from __future__ import annotations

import csv
import io
import json
import os

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
    assert cli("run", "h100", *RUN, "--keep-trials", "--out", str(out)).code == 0
    for part in (out / "trials.parquet").iterdir():
        part.unlink()
    assert cli("run", "h100", *RUN, "--out", str(out), "--force").code == 0
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
    listed = sorted(p.name for p in out.iterdir() if p.name != ".mcengine.lock")
    with locked(out):
        with pytest.raises(InputError, match=r"in use by another mcengine command \(`mcengine run`, process"):
            api.roofline("lite-h100", out=out, force=True)
    assert sorted(p.name for p in out.iterdir() if p.name != ".mcengine.lock") == listed


def test_a_locked_folder_names_the_command_holding_it(tmp_path):
    """The refusal names the command whose lock it met (a paper study, here), and a lock
    file written with its process alone still reads as that process."""
    import os

    from mcengine import api
    from mcengine.errors import InputError
    from mcengine.outfolder import LOCK_FILE, _take

    out = tmp_path / "busy"
    out.mkdir()
    fd = _take(out, "paper")
    try:
        with pytest.raises(InputError, match=rf"`mcengine paper`, process {os.getpid()}\)"):
            api.roofline("h100", out=out)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        with pytest.raises(InputError, match=rf"in use by another mcengine command \(process {os.getpid()}\)"):
            api.roofline("h100", out=out)
    finally:
        os.close(fd)
    assert (out / LOCK_FILE).exists()


# ----------------------------------------------------------------------------- --out touches only what mcengine wrote
SMALL = ("--trials", "64", "--quiet", "--set", "cluster.instances=4")


def _tree(root) -> dict:
    """Every entry under ``root`` (links not followed) with its bytes (files) or target (links)."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = ("link", str(p.readlink())) if p.is_symlink() else ("dir",) if p.is_dir() else p.read_bytes()
    return out


def test_a_linked_trials_folder_is_never_followed(cli, tmp_path):
    """Issue 34 case 1: `trials.parquet` a link to a folder outside --out (its part was deleted)."""
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "part-000000000000.parquet").write_bytes(b"user data")
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "trials.parquet").symlink_to("../v")
    before = _tree(tmp_path)
    for extra in ((), ("--force",)):
        r = cli("run", "h100", *SMALL, "--out", str(tmp_path / "o"), *extra)
        assert r.code == 2 and "--out" in r.err and "trials.parquet" in r.err, r.err
        assert _tree(tmp_path) == before


def test_a_link_swapped_into_a_finished_run_folder_is_never_followed(cli, tmp_path):
    out = tmp_path / "o"
    assert cli("run", "h100", *SMALL, "--keep-trials", "--out", str(out)).code == 0
    for part in (out / "trials.parquet").iterdir():
        part.unlink()
    (out / "trials.parquet").rmdir()
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "part-000000000000.parquet").write_bytes(b"user data")
    (out / "trials.parquet").symlink_to("../v")
    for extra in ((), ("--force",), ("--set", "cluster.instances=8", "--force")):
        r = cli("run", "h100", *SMALL, "--keep-trials", "--out", str(out), *extra)
        assert r.code == 2 and "trials.parquet is a link" in r.err, r.err
    assert (tmp_path / "v" / "part-000000000000.parquet").read_bytes() == b"user data"


def test_a_linked_lock_file_is_never_written_through(cli, tmp_path):
    """Issue 34 case 2: `.mcengine.lock` a link to a user file (it was truncated to a PID)."""
    (tmp_path / "v.txt").write_text("DATA\n")
    (tmp_path / "o3").mkdir()
    (tmp_path / "o3" / ".mcengine.lock").symlink_to(tmp_path / "v.txt")
    for extra in ((), ("--force",)):
        r = cli("run", "h100", *SMALL, "--out", str(tmp_path / "o3"), *extra)
        assert r.code == 2 and "--out" in r.err and ".mcengine.lock" in r.err, r.err
    assert (tmp_path / "v.txt").read_text() == "DATA\n"


def test_a_hard_linked_lock_file_is_never_written_through(cli, tmp_path):
    """Issue 51 case 2: `.mcengine.lock` a hard link to a user file (O_NOFOLLOW stops
    symlinks only: the file got the PID)."""
    (tmp_path / "victim").write_text("DATA\n")
    (tmp_path / "H" / "o").mkdir(parents=True)
    os.link(tmp_path / "victim", tmp_path / "H" / "o" / ".mcengine.lock")
    for extra in ((), ("--force",)):
        r = cli("run", "h100", *SMALL, "--out", str(tmp_path / "H" / "o"), *extra)
        assert r.code == 2 and ".mcengine.lock is a hard link" in r.err, r.err
    assert (tmp_path / "victim").read_text() == "DATA\n"


def test_the_input_scenario_is_never_replaced(cli, tmp_path, monkeypatch):
    """Issue 34 case 3 (and issue 33 item 2): `run mine.toml --out .` replaced mine.toml."""
    text = '# my own comments\nname = "mine"\nextends = "h100"\n'
    (tmp_path / "mine.toml").write_text(text)
    monkeypatch.chdir(tmp_path)
    r = cli("run", "mine.toml", *SMALL, "--out", ".")
    assert r.code == 2 and "--out" in r.err and "mine.toml" in r.err and "--force" in r.err, r.err
    r = cli("run", "mine.toml", *SMALL, "--out", ".", "--force")
    assert r.code == 2 and "mine.toml is an input of this command" in r.err, r.err
    assert (tmp_path / "mine.toml").read_text() == text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.toml"]


def test_a_folder_of_user_files_is_refused(cli, tmp_path):
    """Issue 33 item 2: the user's commented h100.toml and summary.json were replaced."""
    text = '# mine\nname = "h100"\nextends = "h100"\n'
    (tmp_path / "h100.toml").write_text(text)
    (tmp_path / "summary.json").write_text('{"mine": 1}')
    before = _tree(tmp_path)
    r = cli("yield", str(tmp_path / "h100.toml"), "--wafers", "8", "--out", str(tmp_path))
    assert r.code == 2 and "did not write" in r.err and "h100.toml" in r.err and "summary.json" in r.err, r.err
    r = cli("yield", "h100", "--wafers", "8", "--out", str(tmp_path), "--force")
    assert r.code == 2 and "summary.json is not mcengine's" in r.err, r.err
    assert _tree(tmp_path) == before


def test_force_writes_beside_foreign_files_and_never_deletes_them(cli, tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (out / "sub").mkdir()
    (out / "elsewhere").symlink_to(tmp_path)
    assert cli("yield", "h100", "--wafers", "8", "--out", str(out)).code == 2
    assert cli("yield", "h100", "--wafers", "8", "--out", str(out), "--force").code == 0
    assert "notes.txt" not in _manifest(out)["files"]
    r = cli("reliability", "h100", "--lifetimes", "2", "--out", str(out), "--force")
    assert r.code == 0, r.err
    assert (out / "notes.txt").read_text() == "mine" and (out / "sub").is_dir() and (out / "elsewhere").is_symlink()


def test_a_folder_where_the_manifest_goes_is_exit_2(cli, tmp_path):
    """Issue 34 case 4: `m1/mcengine.json/` a folder (raw exit 1, Is a directory)."""
    (tmp_path / "m1" / "mcengine.json").mkdir(parents=True)
    for extra in ((), ("--force",)):
        r = cli("yield", "h100", "--wafers", "8", "--out", str(tmp_path / "m1"), *extra)
        assert r.code == 2 and "--out" in r.err and "mcengine.json" in r.err, r.err
    assert [p.name for p in (tmp_path / "m1").iterdir()] == ["mcengine.json"]


def test_a_manifest_listing_a_link_never_deletes_through_it(cli, tmp_path):
    (tmp_path / "victim.txt").write_text("keep")
    out = tmp_path / "d"
    out.mkdir()
    (out / "x.png").symlink_to(tmp_path / "victim.txt")
    (out / MANIFEST).write_text(json.dumps({"fingerprint": "x", "command": "run", "files": ["x.png"]}))
    assert cli("yield", "h100", "--wafers", "8", "--out", str(out), "--force").code == 0
    assert (tmp_path / "victim.txt").read_text() == "keep" and (out / "x.png").is_symlink()


def test_a_foreign_entry_inside_trials_parquet_is_refused_not_parsed(cli, tmp_path):
    """A part named `part-abc.parquet` was a raw exit 1 (int() of 'abc'); it is neither read nor deleted."""
    out = tmp_path / "o"
    assert cli("run", "h100", *SMALL, "--keep-trials", "--out", str(out)).code == 0
    (out / "trials.parquet" / "part-abc.parquet").write_text("user data")
    for extra in ((), ("--force",), ("--set", "cluster.instances=8", "--force")):
        r = cli("run", "h100", *SMALL, "--keep-trials", "--out", str(out), *extra)
        assert r.code == 2 and "trials.parquet/part-abc.parquet is not a part mcengine wrote" in r.err, r.err
    assert (out / "trials.parquet" / "part-abc.parquet").read_text() == "user data"


def test_a_part_write_killed_mid_way_does_not_block_the_resume(cli, tmp_path):
    """A run killed while io.write_atomic wrote a part leaves ``trials.parquet/.part-….tmp``:
    the same command resumes (and --force reruns) beside it, and the parts read back whole."""
    import pandas as pd

    out = tmp_path / "o"
    assert cli("run", "h100", *SMALL, "--keep-trials", "--out", str(out)).code == 0
    before = pd.read_parquet(out / "trials.parquet")
    leftover = out / "trials.parquet" / ".part-000000000000.parquet.k3x_9q2a.tmp"
    leftover.write_bytes(b"PAR1 torn")
    for extra in ((), ("--force",)):
        r = cli("run", "h100", *SMALL, "--keep-trials", "--out", str(out), *extra)
        assert r.code == 0, r.err
        pd.testing.assert_frame_equal(pd.read_parquet(out / "trials.parquet"), before)
