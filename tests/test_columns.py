"""The column registry (mcengine/columns.py) against the columns a run produces: every
column of the case study and of mixes of request classes has an entry, and every entry
is produced by one of those runs (those marked conditional by some scenarios only; the
load stage's under a demand)."""

from __future__ import annotations

import pytest

from mcengine import api, columns
from mcengine.columns import COLUMNS, METRICS, PAIRED_METRICS, column
from mcengine.pipeline import run_chunk
from mcengine.report.metrics import BETTER_WORDS, metric
from mcengine.results import metric_items
from mcengine.runner import Accumulators

from .conftest import ROOT

SMALL = ["cluster.instances=4", "cluster.spare_gpus=8"]
CASE = ("h100", "lite-h100", "lite-h100-2x", "lite-h100-2x-fastswap")
MIX = ROOT / "docs" / "case-study" / "mix-azure-2023"
#: The switched fabric, the data hall and the cost of capital on (configs/studies/facility.toml).
FACILITY = ['econ.fabric_model="fat_tree"', "econ.facility=true", "econ.wacc=0.08"]


@pytest.fixture(scope="module")
def chunks() -> dict[str, dict]:
    """A few trials of each run: the case study, the mix of docs/case-study (its classes
    sharing instances), the same mix on whole instances per class, two designs with
    the fabric, the hall and the cost of capital on, one design under a demand (the load
    stage), the mix under a demand, speculative decoding, and two designs as a training job."""
    runs = {
        "case": [api.check(n, SMALL) for n in CASE],
        "mix": [api.check(str(MIX / f"{n}.toml"), SMALL) for n in ("h100", "lite-h100")],
        "whole": [api.check(str(MIX / "h100.toml"), [*SMALL, 'workload.class_instances="whole"'])],
        "facility": [api.check(n, [*SMALL, *FACILITY]) for n in ("h100", "lite-h100")],
        "load": [api.check(n, [*SMALL, "workload.load.demand=5000"]) for n in ("h100", "lite-h100")],
        "mix-load": [api.check(str(MIX / "h100.toml"), [*SMALL, "workload.load.demand=5000"])],
        "speculative": [api.check("h100", [*SMALL, "workload.speculative.draft_tokens=2"])],
        "training": [api.check(n, [*SMALL, 'workload.kind="training"']) for n in ("h100", "lite-h100")],
    }
    return {run: run_chunk(tuple(scenarios), 0, 0, 4) for run, scenarios in runs.items()}


@pytest.fixture(scope="module")
def produced(chunks) -> dict[str, set[str]]:
    """The columns of each scenario of each run, by ``run/scenario``."""
    return {f"{run}/{name}": set(cols) for run, chunk in chunks.items() for name, cols in chunk.items()}


def test_every_column_a_run_produces_has_an_entry(produced):
    missing = sorted({c for cols in produced.values() for c in cols if column(c) is None})
    assert not missing


def test_every_entry_is_produced_and_only_conditional_ones_are_missing_anywhere(produced):
    for entry in COLUMNS:
        where = [run for run, cols in produced.items() if any(entry.pattern.fullmatch(c) for c in cols)]
        assert where, entry.name
        if not entry.conditional:
            assert len(where) == len(produced), (entry.name, sorted(set(produced) - set(where)))
    assert not [c for c in produced["case/h100"] if c.startswith(columns.MIX_PREFIX)]


def test_the_summaries_hold_the_summarised_columns_and_the_pairs_the_paired_ones(chunks):
    """A run's JSON summary (its group keys read back as the columns they summarise) holds
    exactly the produced columns marked summarised, and each pair exactly those marked paired."""
    as_column = {columns.BREAKDOWN: columns.BREAKDOWN_COLUMN.format}
    for chunk in chunks.values():
        acc = Accumulators(tuple(chunk))
        acc.add(chunk)
        doc = acc.summary()
        for name, cols in chunk.items():
            summarised = set()
            for key, _ in metric_items(doc["scenarios"][name]):
                group, _, rest = key.partition(".")
                summarised.add(as_column[group](rest) if group in as_column else key)
            assert summarised == {c for c in cols if column(c).summarised}, name
        for pair in doc.get("paired_all", {}).values():
            base = chunk[doc["baseline"]]
            assert set(pair) == {c for c in base if column(c).paired}


def test_an_exact_name_wins_over_a_family():
    assert column("cost_per_mtok_at_cost_usd").name == "cost_per_mtok_at_cost_usd"
    assert column("cost_per_mtok_die_usd").name == columns.BREAKDOWN_COLUMN
    assert column("input.reliability.components.laser.afr").name == columns.INPUT_PREFIX + "{}"
    assert column("no_such_column") is None


def test_derived_lists_keep_the_summaries_order():
    assert METRICS[:3] == ("cost_per_mtok_usd", "cost_per_mtok_at_cost_usd", "availability")
    assert columns.metrics_of(False)[-1] == "cost_per_request_usd" and METRICS[-1] == "job_lost_hours_per_day"
    assert columns.TRAINING_METRICS == ("cost_per_mtok_trained_usd", "time_to_train_days", "ettr", "job_interruptions_per_day", "mfu",
                                        "job_lost_hours_per_day")
    assert set(PAIRED_METRICS) == set(METRICS) - set(columns.MAY_BE_ZERO) - {"instance_availability", "capacity_availability"}
    assert columns.NEAR_ONE == ("availability", "instance_availability", "capacity_availability")
    assert columns.CLASS_COST.fullmatch("mix.code.cost_per_mtok_usd") and not columns.CLASS_COST.fullmatch("cost_per_mtok_usd")


def test_every_summarised_metric_has_report_words():
    for m in METRICS:
        assert metric(m).better in ("lower", "higher") and metric(m).short, m
    assert metric("cost_per_request_usd").label == "cost per request"
    assert BETTER_WORDS["cost_per_request_usd"] == "cheaper per request"
