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


def frontier_figures(doc: dict) -> list[str]:
    """The phrases of docs/paper.md's SLO-frontier paragraph, rendered from the study's
    ``frontier``: median cost per M output tokens at 20, 50 and 200 ms per design, and
    P(Lite cheaper) for the half die (every other Lite design's is 0 at every SLO)."""
    f = doc["frontier"]
    slo = f["slo_ms"]
    cost = {n: [c["median"] for c in d["cost_per_mtok_usd"]] for n, d in f["designs"].items()}
    lites = ("lite-h100", "lite-h100-2x", "lite-h100-shoreline", "lite-h100-half", "lite-h100-eighth")
    at = {ms: slo.index(ms) for ms in (20.0, 50.0, 200.0)}
    p_half = f["designs"]["lite-h100-half"]["p_cheaper_than_h100"]
    others_zero = all(not any(d.get("p_cheaper_than_h100", [0])) for n, d in f["designs"].items() if n != "lite-h100-half")
    i = at[20.0]
    first = (f"at 20 ms the H100 cluster costs ${cost['h100'][i]:.2f} per M output tokens against ${cost[lites[0]][i]:.2f} "
             f"(plain Lite), ${cost[lites[1]][i]:.2f} (2× links), ${cost[lites[2]][i]:.2f} (shoreline quarter), "
             f"${cost[lites[3]][i]:.2f} (shoreline half) and ${cost[lites[4]][i]:.2f} (shoreline eighth)")
    later = [f"at {ms:.0f} ms ${cost['h100'][j]:.2f} against " + ", ".join(f"${cost[n][j]:.2f}" for n in lites[:-1])
             + f" and ${cost[lites[-1]][j]:.2f}" for ms, j in at.items() if ms != 20.0]
    half = (f"P(Lite cheaper) is {p_half[0]:.2f} for it at 20 ms, {p_half[1]:.2f} at 30 ms and at most "
            f"{max(p_half[slo.index(40.0):]):.2f} from 40 ms on")
    return [first, *later, half] + (["it is 0.00 for every other Lite design at every SLO"] if others_zero else [])


def test_frontier_paragraph_quotes_the_study():
    """The SLO frontier's figures in docs/paper.md are the committed study's (edit the
    paragraph when `python docs/make_paper.py` changes them)."""
    text = " ".join("\n".join(page_lines()).split())
    missing = [p for p in frontier_figures(shipped_summary()) if p not in text]
    assert not missing, f"docs/paper.md's SLO frontier no longer quotes docs/paper/summary.json: {missing}"


def test_the_frontier_check_can_fail():
    doc = shipped_summary()
    doc["frontier"]["designs"]["h100"]["cost_per_mtok_usd"][0]["median"] += 0.05
    text = " ".join("\n".join(page_lines()).split())
    assert [p for p in frontier_figures(doc) if p not in text] == [frontier_figures(doc)[0]]
