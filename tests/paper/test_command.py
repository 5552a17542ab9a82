"""`mcengine paper`: one JSON entry per claim with the fields of docs/interface.md, the
--out contract (one figure per claim, the frontier, table.csv); same seed, same numbers on one thread
or two is tests/paper/test_docs_paper_current.py."""

from __future__ import annotations

import csv
import json

import pytest

ENTRY_FIELDS = {"number", "key", "claim", "metric", "unit", "paper_figure", "paper_figure_text", "paper_figure_source",
                "paper_figure_confirmed", "paper_assumptions", "shipped", "boundary", "holds_when", "model"}
BOUNDARY_FIELDS = {"key", "values", "figure", "p_holds", "p_better", "crossing_holds", "crossing_better"}


def test_quick_paper_json_and_out(cli, tmp_path):
    out = tmp_path / "paper"
    r = cli("paper", "--quick", "--trials", "16", "--threads", "1", "--json", "--out", str(out))
    assert r.code == 0, r.err[-2000:]
    doc = json.loads(r.out)
    claims = doc["claims"]
    assert [c["number"] for c in claims] == [1, 2, 3, 4, 5, 6, 7]
    for c in claims:
        assert ENTRY_FIELDS <= set(c), c["key"]
        for side in ("paper_assumptions", "shipped"):
            f = c[side]["figure"]
            assert f["p05"] <= f["median"] <= f["p95"], (c["key"], side)
        assert BOUNDARY_FIELDS <= set(c["boundary"])
        assert len(c["boundary"]["values"]) == len(c["boundary"]["p_holds"]) == 3  # --quick: three points
        assert c["readings"] and c["text_states"] and c["text_does_not_state"], c["key"]
        n = c["nearest_world"]
        assert n["norm"].startswith("L2") and all(w["p_holds"] >= 0.5 for w in n["worlds"]), c["key"]
        assert n.get("points", 0) <= n.get("points_bound", 0), c["key"]
        # every reported world confirmed on more trials (--quick: twice the search's, at most the study's 16)
        assert all(w["confirmed"]["trials"] == 16 and w["confirmed"]["se"] == pytest.approx((w["confirmed"]["p_holds"] * (1 - w["confirmed"]["p_holds"]) / 16) ** 0.5)
                   for w in n["worlds"] if n.get("searched", True)), c["key"]
    by_key = {c["key"]: c for c in claims}
    assert set(by_key["performance"]["shipped"]["models"]) == {"llama-3-70b", "gpt-3-175b", "llama-3.1-405b"}
    assert by_key["blast_radius"]["paper_assumptions"]["figure"]["median"] == 4.0
    reshard = by_key["blast_radius"]["paper_assumptions"]["reshard"]
    kept = reshard["capacity_kept_after_one_failure"]
    # per failure under reshard: the instance's H100-equivalents times the share its best smaller layout gives up
    assert reshard["per_failure_ratio"] == pytest.approx((8 * (1 - kept["h100"])) / (32 * 0.25 * (1 - kept["lite-h100"])))
    assert by_key["blast_radius"]["shipped"]["on_failure"] == "down"
    front = doc["frontier"]
    assert set(front["designs"]) == {"h100", "lite-h100", "lite-h100-2x", "lite-h100-2x-fastswap", "lite-h100-shoreline",
                                     "lite-h100-half", "lite-h100-eighth"}
    power = by_key["power"]
    # a quarter of everything at s = 1 but the doubled links: 4 x 179.5 W = 718 W per H100-equivalent against 700 W,
    # at the H100's busy fraction u (idle 80 W both): (80 + 620 u) / (80 + 638 u) - 1, which falls with u
    busy = power["paper_assumptions"]["busy_fraction"]["paper-h100"]

    def at_parity(u):
        return (80 + 620 * u) / (80 + 638 * u) - 1

    assert at_parity(busy["p95"]) <= power["paper_assumptions"]["closed_form_at_parity"] <= at_parity(busy["p05"]) < 0
    assert set(power["shipped"]["by_design"]) == {"lite-h100-2x", "lite-h100-shoreline"}
    assert power["boundary"]["key"] == "B:gpu.dvfs_scale"
    assert "lite-h100-shoreline" in by_key["performance"]["shipped"]["models"]["gpt-3-175b"]["p_holds_by_design"]
    assert all(len(row["p_cheaper_than_h100"]) == len(front["slo_ms"]) for name, row in front["designs"].items() if name != "h100")
    files = json.loads((out / "mcengine.json").read_text())["files"]
    assert {f"claim-{c['number']}-{c['key']}.png" for c in claims} | {"slo-frontier.png", "table.csv", "summary.json"} <= set(files)
    assert {f"claim-{c['number']}-{c['key']}-nearest.png" for c in claims if c["nearest_world"].get("path")} <= set(files)
    assert set(doc["nearest_world_elapsed_s"]) == {c["key"] for c in claims} | {"verdict"}
    verdict = doc["verdict"]
    assert verdict["key"] == "verdict" and verdict["nearest_world"]["norm"].startswith("L2")
    assert all(w["p_holds"] >= 0.5 for w in verdict["nearest_world"]["worlds"])
    assert ("verdict-nearest.png" in files) == bool(verdict["nearest_world"].get("path"))
    with (out / "table.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert [row["claim"] for row in rows] == [f"{c['number']}. {c['key']}" for c in claims]
    assert json.loads((out / "summary.json").read_text())["claims"] == claims


def test_paper_refuses_bad_trials(cli):
    r = cli("paper", "--trials", "0")
    assert r.code == 2 and "--trials" in r.err and not r.out


def test_run_paper_refuses_chain_options(cli):
    r = cli("run", "paper", "--set", "fab.scribe_mm=0.2", "--keep-trials")
    assert r.code == 2 and "--set" in r.err and "--keep-trials" in r.err and not r.out


def test_the_paper_records_its_out_folder_relative_to_the_checkout(tmp_path):
    """docs/paper/summary.json records no path of the machine that regenerated it: an --out
    folder inside the checkout is written relative to it (either form of the option, given
    absolute or relative to the checkout); one outside it, or with no checkout (an installed
    package), as given."""
    from mcengine.api import _out_in_repository

    root = tmp_path / "checkout"  # a checkout: a folder holding pyproject.toml (the installed package's holds none)
    paper = root / "docs" / "paper"
    paper.mkdir(parents=True)
    (root / "pyproject.toml").write_text("")
    assert _out_in_repository(["mcengine", "paper", "--out", str(paper), "--force"], paper, root) == ["mcengine", "paper", "--out", "docs/paper", "--force"]
    assert _out_in_repository(["mcengine", "paper", f"--out={paper}"], paper, root) == ["mcengine", "paper", "--out=docs/paper"]
    argv = ["mcengine", "paper", "--out", str(tmp_path / "paper")]
    assert _out_in_repository(argv, tmp_path / "paper", root) == argv
    (root / "pyproject.toml").unlink()  # no checkout: as given
    assert _out_in_repository(["mcengine", "paper", "--out", str(paper)], paper, root) == ["mcengine", "paper", "--out", str(paper)]
