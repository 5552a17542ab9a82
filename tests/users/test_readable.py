"""Output that reads (issue 50, item 3): at 80 columns or in a pipe no number is cut and
no column is dropped (renderings compared to golden files, tests/users/golden/); `paper`
compact with the details in --out; `validate` summarised, its misses listed, `--all` for
the rest; the nearest-world searches say how far they have got."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path


from mcengine.paper import worlds
from mcengine.paper._common import Settings
from mcengine.report import tables
from mcengine.report.tables import as_text
from mcengine.report.paper import render_paper
from tests.procs import env, python

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).with_name("golden")


def _at_80(renderable) -> str:
    return as_text(renderable, 80)


def _fits(text: str) -> None:
    assert max(len(line) for line in text.splitlines()) <= 80 and "…" not in text


def test_roofline_piped_keeps_every_column_and_matches_its_golden():
    got = subprocess.run(python("-m", "mcengine", "roofline", "lite-h100"), capture_output=True, text=True, env=env(), timeout=300)
    assert got.returncode == 0, got.stderr
    _fits(got.stdout)
    assert got.stdout == (GOLDEN / "roofline_lite-h100_piped.txt").read_text()
    chosen = [line for line in got.stdout.splitlines() if line.rstrip().endswith("│ * │")]
    assert len(chosen) == 1 and "86.8" in chosen[0]  # the chosen layout's mark, inside the table


def test_paper_is_compact_at_80_columns_with_the_details_in_out():
    doc = json.loads((ROOT / "docs" / "paper" / "summary.json").read_text())
    text = _at_80(render_paper(doc))
    _fits(text)
    assert text == (GOLDEN / "paper_80.txt").read_text()
    for name in doc["frontier"]["designs"]:
        assert f"  {name} " in text  # every design named whole (the issue: `lite-…`)
    assert "when each claim holds, and the nearest worlds' moves: --out DIR" in " ".join(text.split())
    assert doc["claims"][0]["holds_when"] not in " ".join(text.split())


def _validate_doc() -> dict:
    from mcengine.validation import roofline

    return {"checks": [c.to_dict() for c in roofline.checks()]}


def test_validate_summarises_and_lists_every_check_that_did_not_pass():
    doc = _validate_doc()
    short, every = _at_80(tables.render_validate(doc)), _at_80(tables.render_validate(doc, every=True))
    _fits(short)
    flat = " ".join(short.split())
    assert "checks per stage" in short and "every check: mcengine validate --all" in flat
    missed = [c for c in doc["checks"] if c["status"] != "pass"]
    passed = [c for c in doc["checks"] if c["status"] == "pass"]
    assert missed and passed
    for c in missed:
        assert " ".join(c["name"].split()[-2:]) in flat
    assert len(short.splitlines()) < len(every.splitlines())
    assert sum(" ".join(c["name"].split()) in " ".join(every.split()) for c in passed) > sum(" ".join(c["name"].split()) in flat for c in passed)
    reasons = {c["known_miss"] for c in missed}
    assert all(flat.count(" ".join(r.split()[:6])) == 1 for r in reasons)  # each reason said once


def test_validate_all_is_an_option():
    got = subprocess.run(python("-m", "mcengine", "validate", "--help"), capture_output=True, text=True, env=env(), timeout=120)
    assert got.returncode == 0 and "--all" in got.stdout


def test_a_nearest_world_search_notes_the_points_it_has_evaluated():
    notes: list[str] = []
    settings = Settings(trials=16, seed=0, progress=notes.append)
    score = worlds._noting(lambda ws: [len(ws)] * len(ws), "yield", settings)
    for _ in range(6):
        score([{}] * 10)
    assert [n.split(" (")[0] for n in notes] == ["nearest world: yield: 30 points evaluated", "nearest world: yield: 50 points evaluated"]
    assert all(n.endswith(" s)") for n in notes)
