"""`mcengine paper`: one JSON entry per claim with the fields of docs/interface.md, the
--out contract (one figure per claim, the frontier, table.csv); same seed, same numbers on one thread
or two is tests/paper/test_docs_paper_current.py."""

from __future__ import annotations

import csv
import json
import sys

import pytest

from tests.conftest import ROOT

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


def test_the_paper_called_from_python_records_its_own_arguments(tmp_path, monkeypatch):
    """Called from Python (no CLI), the paper records the command of the arguments it was
    given, its --out as given (here relative to the working folder), and leaves sys.argv as
    it was: the host's command line, whatever --out it carries, is not the paper's. The
    study is the committed one (docs/paper/summary.json): what is checked is the recording."""
    from mcengine import api, paper

    committed = json.loads((ROOT / "docs" / "paper" / "summary.json").read_text())
    monkeypatch.setattr(paper, "study", lambda **kwargs: {**committed, "elapsed_s": 0.0})
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["host.py", "--out", str(tmp_path / "elsewhere")])
    before = list(sys.argv)
    doc = api.paper(trials=committed["trials"], seed=committed["seed"], out="docs/paper")
    assert sys.argv == before
    command = ["mcengine", "paper", "--trials", str(committed["trials"]), "--seed", str(committed["seed"]), "--out", "docs/paper"]
    assert doc["provenance"]["command_line"] == command
    assert json.loads((tmp_path / "docs" / "paper" / "summary.json").read_text())["provenance"]["command_line"] == command
