"""Properties: whatever an ``--out`` folder holds (links to files and folders outside it,
dangling links, folders where files go, files mcengine did not write, a manifest listing
any of them), a command exits 0 or 2 naming ``--out``, and nothing outside the folder nor
any entry mcengine did not write is changed; and a resume given any options either
continues to the straight run's numbers (every option the saved run's) or exits 2 naming
each option that differs, before any work."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mcengine.outfolder import MANIFEST

#: Names a command writes (or reads) in its folder, and two it never writes.
NAMES = (MANIFEST, ".mcengine.lock", "summary.json", "table.csv", "h100.toml", "trials.parquet", "run.json", "checkpoint.json",
         "notes.txt", "sub")
KINDS = ("file", "dir", "link-file", "link-dir", "dangling")
COMMANDS = {
    "yield": ("yield", "h100", "--wafers", "8"),
    "roofline": ("roofline", "h100"),
    "run": ("run", "h100", "--trials", "64", "--quiet", "--keep-trials", "--set", "cluster.instances=4", "--set", "cluster.spare_gpus=8"),
}


def _make(folder: Path, outside: Path, name: str, kind: str) -> None:
    path = folder / name
    if kind == "file":
        path.write_text(f"user's {name}")
    elif kind == "dir":
        path.mkdir()
        (path / "part-000000000000.parquet").write_text("user's part")
    elif kind == "link-file":
        path.symlink_to(outside / "victim.txt")
    elif kind == "link-dir":
        path.symlink_to(outside / "victim")
    else:
        path.symlink_to(outside / "nowhere")


def _snapshot(root: Path) -> dict:
    """Every entry under ``root``: a file's bytes, a link's target (never followed), or "dir"."""
    out = {}
    for p in sorted(root.rglob("*")):
        out[str(p.relative_to(root))] = ("link", os.readlink(p)) if p.is_symlink() else "dir" if p.is_dir() else p.read_bytes()
    return out


@st.composite
def out_folders(draw):
    entries = draw(st.dictionaries(st.sampled_from(NAMES), st.sampled_from(KINDS), max_size=4), label="entries")
    listed = draw(st.none() | st.lists(st.sampled_from(NAMES[2:]), unique=True, max_size=4), label="manifest lists")
    if listed is not None:
        entries.pop(MANIFEST, None)  # the manifest is then a real one of another run
    return entries, listed, draw(st.booleans(), label="force"), draw(st.sampled_from(sorted(COMMANDS)), label="command")


@pytest.mark.slow
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=out_folders())
@example(case=({"trials.parquet": "link-dir"}, None, True, "run"))  # issue 34 case 1
@example(case=({".mcengine.lock": "link-file"}, None, True, "run"))  # issue 34 case 2
@example(case=({MANIFEST: "dir"}, None, True, "yield"))  # issue 34 case 4
@example(case=({"summary.json": "file", "h100.toml": "file"}, None, False, "yield"))  # issue 33 item 2
@example(case=({"table.csv": "link-file"}, ["table.csv"], True, "roofline"))  # a listed name swapped for a link
def test_out_touches_only_what_mcengine_wrote(cli, tmp_path_factory, case):
    entries, listed, force, command = case
    root = tmp_path_factory.mktemp("out")
    outside, folder = root / "outside", root / "o"
    (outside / "victim").mkdir(parents=True)
    (outside / "victim.txt").write_text("user data")
    (outside / "victim" / "part-000000000000.parquet").write_text("user part")
    folder.mkdir()
    for name, kind in entries.items():
        _make(folder, outside, name, kind)
    if listed is not None:
        (folder / MANIFEST).write_text(json.dumps({"format": 1, "command": "run", "fingerprint": "another", "files": listed}))
    # mcengine's: the names the manifest lists, and a regular file where its manifest or lock goes
    mine = {*(listed or ()), *(n for n in (MANIFEST, ".mcengine.lock") if entries.get(n, "file") == "file")}
    foreign = {k: v for k, v in _snapshot(folder).items() if k.split("/")[0] not in mine}
    before_outside = _snapshot(outside)
    r = cli(*COMMANDS[command], "--out", str(folder), *(["--force"] if force else []))
    assert r.code in (0, 2), (r.code, r.err[-800:])
    if r.code == 2:
        assert "--out" in r.err and "Traceback" not in r.err, r.err[-800:]
    assert _snapshot(outside) == before_outside
    after = _snapshot(folder)
    assert {k: after.get(k) for k in foreign} == foreign  # what mcengine did not write is untouched
    if r.code == 0:
        assert (folder / "summary.json").is_file() and not (folder / "summary.json").is_symlink()
        for name in json.loads((folder / MANIFEST).read_text())["files"]:
            assert not (folder / name).is_symlink() and name not in foreign


# ----------------------------------------------------------------------------- resume options
SMALL = ["cluster.instances=4", "cluster.spare_gpus=8"]


@pytest.fixture(scope="module")
def unfinished(tmp_path_factory):
    """A compare stopped after its first chunk of 1,024 (3,000 trials, seed 11), and the
    straight run's numbers."""
    from mcengine import api

    folder = tmp_path_factory.mktemp("resume") / "run"

    def stop(done, total):
        if done:
            raise KeyboardInterrupt

    kw = dict(trials=3000, seed=11, overrides=SMALL, figures=False, chunk_trials=1024, keep_trials=False)
    with pytest.raises(KeyboardInterrupt):
        api.run(["h100", "lite-h100"], out=folder, progress=stop, **kw)
    straight = api.run(["h100", "lite-h100"], **kw).summary()
    return folder, {k: v for k, v in straight.items() if k not in ("elapsed_s", "provenance")}


#: (option, value the saved run used or a different one) -> whether it differs.
OPTIONS = {
    "--seed": (["11"], ["12"]),
    "--trials": (["3000"], ["2048"]),
    "--set": (SMALL, ["cluster.reshard_hours=0.3", "reliability.repair_hours=48"]),
    "--keep-trials": ([], [""]),
}


@pytest.mark.slow
@settings(max_examples=24, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(choice=st.fixed_dictionaries({k: st.sampled_from([None, "same", "other"]) for k in OPTIONS}),
       scenarios=st.sampled_from([None, ["h100", "lite-h100"], ["h100", "lite-h100-2x"]]))
@example(choice=dict.fromkeys(OPTIONS), scenarios=None)  # the plain resume
@example(choice={**dict.fromkeys(OPTIONS, "same"), "--keep-trials": None}, scenarios=["h100", "lite-h100"])  # the whole run again
@example(choice={**dict.fromkeys(OPTIONS), "--set": "other"}, scenarios=None)  # issue 34 case 5
def test_resume_honours_every_option_or_refuses_naming_it(cli, tmp_path_factory, unfinished, choice, scenarios):
    folder, straight = unfinished
    copy = tmp_path_factory.mktemp("resumed") / "run"
    shutil.copytree(folder, copy, symlinks=True)
    args, differs = [], []
    for option, pick in choice.items():
        if pick is None:
            continue
        same, other = OPTIONS[option]
        values = same if pick == "same" else other
        if option == "--keep-trials":
            args += ["--keep-trials"] if values else []
        else:
            args += [a for v in values for a in (option, v)]
        if pick == "other" and (option != "--set" or scenarios is None):
            differs.append(option)
    if scenarios is not None:
        args = [*scenarios, *args]
        # with scenarios the whole run is given again: its seed, trials and --set are what they resolve to
        if choice["--seed"] is None:
            differs.append("--seed")  # the scenarios' run.seed (0), not the saved 11
        if choice["--trials"] is None:
            differs.append("--trials")  # the scenario's run.trials, not the saved 3,000
        if scenarios[1] != "lite-h100" or choice["--set"] != "same":
            differs.append("SCENARIO")
    r = cli("run", "--resume", str(copy), "--quiet", "--json", *args)
    if not differs:
        assert r.code == 0, r.err[-800:]
        doc = json.loads(r.out)
        assert {k: v for k, v in doc.items() if k not in ("elapsed_s", "provenance", "figures")} == json.loads(json.dumps(straight))
        return
    assert r.code == 2 and "Traceback" not in r.err, (args, r.err[-800:])
    for option in differs:
        assert option in r.err, (option, args, r.err[-800:])
    assert json.loads((copy / "checkpoint.json").read_text())["state"]["trials_done"] == 1024  # nothing ran
