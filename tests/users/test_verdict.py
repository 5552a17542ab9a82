"""The verdict block (issue 50, item 1): per design, the median cost ratio with its
interval, P(cheaper), downtime, drivers (a quick sensitivity, labelled) and the nearest
flip when the paper study has searched that pair; at the top of `run`/`compare` and in
their JSON as ``"verdict"``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd

from mcengine.report import tables
from mcengine.report.verdict import stored_paper, verdict
from tests.conftest import reads_in_pieces
from tests.procs import env, python
from tests.report.test_narrow import narrow, run_doc

GOLDEN = Path(__file__).with_name("golden")


def _table(n: int = 64) -> pd.DataFrame:
    """Per-trial rows of h100 and lite-h100: the Lite's cost rises with its optics price."""
    rng = np.random.default_rng(0)
    optics, defects = rng.uniform(0.8, 4.0, n), rng.lognormal(-2.3, 0.3, n)
    a = pd.DataFrame({"scenario": "h100", "trial": np.arange(n), "cost_per_mtok_usd": 0.6 + 0.1 * defects,
                      "input.fab.optics_cost_per_gbps_usd": optics, "input.fab.defect_density_per_cm2": defects, "input.econ.pue": 1.3})
    b = a.assign(scenario="lite-h100", cost_per_mtok_usd=0.6 + 0.05 * optics)
    return pd.concat([a, b], ignore_index=True)


def _doc() -> dict:
    doc = run_doc()
    doc["scenarios"] = {n: doc["scenarios"][n] for n in ("h100", "lite-h100")}
    doc["paired_all"] = {"lite-h100 / h100": doc["paired_all"]["lite-h100 / h100"]}
    return doc


def test_the_block_states_ratio_p_cheaper_downtime_and_labelled_drivers():
    doc = _doc()
    block = verdict(doc, _table())
    entry = block["lite-h100 / h100"]
    assert entry["cost_ratio"] == {"p50": 1.01, "p05": 0.9 * 1.01, "p95": 1.1 * 1.01} and entry["p_cheaper"] == 0.25
    assert entry["drivers"]["inputs"][0]["key"] == "fab.optics_cost_per_gbps_usd"
    assert entry["drivers"]["inputs"][0]["rank_correlation"] > 0.99  # the ratio rises with it
    assert "econ.pue" not in [i["key"] for i in entry["drivers"]["inputs"]]  # an input that does not vary
    assert entry["drivers"]["source"].startswith("quick sensitivity: Spearman rank correlation")
    assert 4 <= len(entry["lines"]) <= 6
    doc["verdict"] = block
    text = narrow(tables.render_run(doc))
    assert text.startswith("verdict") or text.lstrip().startswith("verdict")
    assert (GOLDEN / "run_verdict_80.txt").read_text() == text


def test_without_the_per_trial_table_the_drivers_say_why():
    entry = verdict(_doc())["lite-h100 / h100"]
    assert entry["drivers"]["inputs"] == [] and "--keep-trials" in entry["drivers"]["source"]
    assert "nearest_flip" not in entry


def test_the_nearest_flip_is_the_paper_search_of_that_pair():
    paper = stored_paper()
    assert paper is not None  # docs/paper/summary.json in the checkout
    doc = _doc()
    doc["paired_all"] = {"lite-h100-2x / h100": doc["paired_all"]["lite-h100 / h100"]}
    doc["scenarios"]["lite-h100-2x"] = doc["scenarios"]["lite-h100"]
    flip = verdict(doc, None, paper)["lite-h100-2x / h100"]["nearest_flip"]
    near = paper["verdict"]["nearest_world"]["worlds"][0]
    assert flip["distance"] == near["distance"] and len(flip["changed"]) == len(near["changed"])
    assert flip["changed"][0]["key"] == "B:workload.compute_efficiency"  # the largest move first


def test_compare_prints_the_verdict_first_and_its_json_carries_it(tmp_path):
    args = ["compare", "h100", "lite-h100-2x", "--trials", "1024", "--seed", "0", "--quiet"]
    text = subprocess.run(python("-m", "mcengine", *args), capture_output=True, text=True, env=env(), timeout=600, cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert text.stdout.lstrip().startswith("verdict:")
    assert "lite-h100-2x vs h100: dearer per output token" in text.stdout and "nearest flip (stored paper search)" in text.stdout
    got = subprocess.run(python("-m", "mcengine", *args, "--json"), capture_output=True, text=True, env=env(), timeout=600, cwd=tmp_path)
    doc = json.loads(got.stdout)
    entry = doc["verdict"]["lite-h100-2x / h100"]
    assert entry["cost_ratio"]["p50"] == doc["paired"]["cost_per_mtok_usd"]["ratio"]["p50"]
    # dearer: a few trials of the widest readings (cheap optical port, steep package law) go the Lite's way
    assert entry["p_cheaper"] == doc["paired"]["cost_per_mtok_usd"]["p_b_below_a"] < 0.05
    assert entry["drivers"]["inputs"] and "nearest_flip" in entry
    assert list(doc)[:4] == ["scenario", "seed", "trials", "verdict"]


def test_a_pair_of_training_jobs_is_judged_per_trained_token():
    """Training clusters may serve no token (cost per output token +inf in every trial):
    the block states the paired ratio of the cost per trained token, its P(cheaper) and
    drivers from that column, and says "per trained token"."""
    doc = _doc()
    pair = doc["paired_all"]["lite-h100 / h100"]
    pair["cost_per_mtok_trained_usd"] = {"ratio": {"p50": 1.6, "p05": 1.3, "p95": 2.0}, "p_b_below_a": 0.0}
    table = _table()
    table["cost_per_mtok_trained_usd"] = table["cost_per_mtok_usd"] * np.where(table["scenario"] == "h100", 1.0, 2.0)
    entry = verdict(doc, table)["lite-h100 / h100"]
    assert entry["cost"] == "cost_per_mtok_trained_usd"
    assert entry["cost_ratio"] == {"p50": 1.6, "p05": 1.3, "p95": 2.0} and entry["p_cheaper"] == 0.0
    assert entry["lines"][0] == "lite-h100 vs h100: dearer per trained token"
    assert entry["drivers"]["inputs"][0]["key"] == "fab.optics_cost_per_gbps_usd"
    assert verdict(_doc(), _table())["lite-h100 / h100"]["lines"][0].endswith("per output token")


def test_a_pair_serving_a_demand_is_judged_per_token_served_by_its_fleet():
    """With a demand set (docs/load.md) a pair is judged on the cost per token of the
    fleet sized for that demand (``load.cost_per_mtok_fleet_usd``), not on the saturated
    cluster's cost per output token, which it also has."""
    doc = _doc()
    pair = doc["paired_all"]["lite-h100 / h100"]
    pair["load.cost_per_mtok_fleet_usd"] = {"ratio": {"p50": 1.48, "p05": 1.2, "p95": 1.9}, "p_b_below_a": 0.004}
    entry = verdict(doc, _table())["lite-h100 / h100"]
    assert entry["cost"] == "load.cost_per_mtok_fleet_usd"
    assert entry["cost_ratio"] == {"p50": 1.48, "p05": 1.2, "p95": 1.9} and entry["p_cheaper"] == 0.004
    assert entry["lines"][0] == "lite-h100 vs h100: dearer per token served by a fleet sized for the demand"
    assert entry["drivers"]["source"] == "none: the per-trial table has no load.cost_per_mtok_fleet_usd column"


def test_the_drivers_read_a_written_table_a_few_columns_at_a_time_to_the_same_numbers(tmp_path, monkeypatch):
    """A run's trials.parquet is read for the drivers in pieces (the pair's costs, then
    B's inputs DRIVER_COLUMNS at a time: a few columns of one scenario's rows per read,
    never the whole table, docs/performance.md#memory), to the bits of the in-memory table."""
    from mcengine.report import verdict as verdict_module
    from mcengine.results import TrialsFile

    table = _table(200)
    (tmp_path / "trials.parquet").mkdir()
    for start in (0, 100):  # two parts, as two chunks write them
        part = table[(table.trial >= start) & (table.trial < start + 100)]
        part.to_parquet(tmp_path / "trials.parquet" / f"part-{start:012d}.parquet", index=False)
    in_memory = verdict(_doc(), table)["lite-h100 / h100"]["drivers"]
    reads = reads_in_pieces(monkeypatch)
    monkeypatch.setattr(verdict_module, "DRIVER_COLUMNS", 2)
    written = verdict(_doc(), TrialsFile(tmp_path / "trials.parquet"))["lite-h100 / h100"]["drivers"]
    monkeypatch.undo()
    assert written == in_memory
    assert written["inputs"][0]["key"] == "fab.optics_cost_per_gbps_usd" and "200 paired trials" in written["source"]
    inputs = [c for c in table.columns if c.startswith("input.")]
    assert len(inputs) == 3
    assert reads == [("h100", ("trial", "cost_per_mtok_usd")), ("lite-h100", ("trial", "cost_per_mtok_usd")),
                     ("lite-h100", ("trial", *inputs[:2])), ("lite-h100", ("trial", inputs[2]))]
