"""docs/paper.md's table is the shipped study's output (docs/paper/summary.json), cell for
cell; the study's table.csv holds its figures as numbers."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from mcengine.outfolder import table_csv
from mcengine.report.paper import claim_number_rows, claim_rows, table_header

ROOT = Path(__file__).resolve().parents[2]
HEADER = "| claim | paper's figure |"


def page_lines() -> list[str]:
    return (ROOT / "docs" / "paper.md").read_text(encoding="utf-8").splitlines()


def page_rows() -> list[list[str]]:
    lines = page_lines()
    start = next(i for i, line in enumerate(lines) if line.startswith(HEADER)) + 2  # skip the header and its rule
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split(" | ")])
    return rows


def shipped_summary() -> dict:
    return json.loads((ROOT / "docs" / "paper" / "summary.json").read_text(encoding="utf-8"))


def test_page_paper_table_is_the_studys_table():
    rows = claim_rows(shipped_summary())
    assert page_rows() == [list(r.values()) for r in rows]
    assert table_header(rows) in page_lines()


def test_table_csv_holds_numbers():
    """Every figure column of table.csv parses as a number (empty only where the paper
    gives no figure); the prose sits in the text columns."""
    doc = shipped_summary()
    rows = list(csv.DictReader(io.StringIO(table_csv(claim_number_rows(doc)))))
    assert [r["claim"] for r in rows] == [f"{c['number']}. {c['key']}" for c in doc["claims"]]
    for row, claim in zip(rows, doc["claims"]):
        for side in ("paper_assumptions", "shipped"):
            assert [float(row[f"{side}_{q}"]) for q in ("median", "p05", "p95")] == [claim[side]["figure"][q] for q in ("median", "p05", "p95")]
        assert row["paper"] == ("" if claim["paper_figure"] is None else str(claim["paper_figure"]))
        assert row["holds_when"] == claim["holds_when"] and row["paper_text"] == claim["paper_figure_text"]
