"""The README's paper table is the shipped study's output (docs/paper/table.csv), cell for cell."""

from __future__ import annotations

import csv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEADER = "| claim | paper's figure | mcengine (paper's assumptions) | mcengine (shipped) | holds when |"


def readme_rows() -> list[list[str]]:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    start = lines.index(HEADER) + 2  # skip the header and its rule
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split(" | ")])
    return rows


def test_readme_paper_table_is_the_studys_table():
    with open(ROOT / "docs" / "paper" / "table.csv", newline="", encoding="utf-8") as f:
        study = [list(r.values()) for r in csv.DictReader(f)]
    assert readme_rows() == study
