"""Honest comparisons (issue 50, item 4): a tie is never "better", the paired JSON
carries P(B = A) beside P(B < A), and availability reads as downtime minutes a year."""

from __future__ import annotations

import numpy as np

from mcengine.report import tables
from mcengine.report.metrics import downtime_minutes, p_better
from mcengine.columns import BREAKDOWN_COLUMN, METRICS, PAIRED_METRICS
from mcengine.runner import Accumulators
from mcengine.stages.econ import BREAKDOWN_PARTS
from tests.report.test_narrow import narrow, run_doc


def _chunk(avail_a, avail_b) -> dict:
    """Two scenarios' columns for a chunk of trials: b equals a in cost, its availability given."""
    n = len(avail_a)
    base = {m: np.full(n, 1.0) for m in METRICS}
    base.update({"trial": np.arange(n), "slo_met": np.ones(n), "tokens_per_s": np.full(n, 100.0)})
    base.update({BREAKDOWN_COLUMN.format(p): np.full(n, 0.1) for p in BREAKDOWN_PARTS})
    a, b = dict(base), dict(base)
    a["availability"], b["availability"] = np.asarray(avail_a, float), np.asarray(avail_b, float)
    a["cost_per_mtok_usd"], b["cost_per_mtok_usd"] = np.full(n, 2.0), np.array([1.0, 2.0, 3.0, 2.0])
    return {"a": a, "b": b}


def test_paired_summary_counts_ties_apart_from_b_below_a():
    acc = Accumulators(("a", "b"))
    acc.add(_chunk([0.99, 0.99, 0.99, 0.99], [0.99, 0.99, 0.98, 0.995]))
    paired = acc.summary()["paired"]
    assert paired["availability"]["p_b_below_a"] == 0.25 and paired["availability"]["p_tie"] == 0.5
    assert paired["cost_per_mtok_usd"]["p_b_below_a"] == 0.25 and paired["cost_per_mtok_usd"]["p_tie"] == 0.5
    assert set(PAIRED_METRICS) <= set(paired)


def test_ties_survive_a_checkpoint_and_an_old_checkpoint_leaves_p_tie_out():
    acc = Accumulators(("a", "b"))
    acc.add(_chunk([0.99] * 4, [0.99] * 4))
    again = Accumulators.from_state(acc.state())
    assert again.summary()["paired"]["availability"]["p_tie"] == 1.0
    old = {k: v for k, v in acc.state().items() if k != "ties"}
    assert "p_tie" not in Accumulators.from_state(old).summary()["paired"]["availability"]


def test_identical_availability_is_not_better():
    # the case: ratio 1.00000 in every trial printed "P(B better) 1.000"
    assert p_better("availability", 0.0, 1.0)[0] == 0.0
    assert p_better("availability", 0.25, 0.5)[0] == 0.25
    assert p_better("availability", 0.25)[0] == 0.75  # a document without p_tie: P(B >= A), as before
    assert p_better("cost_per_mtok_usd", 0.25, 0.5)[0] == 0.25


def test_run_table_prints_p_tie_only_where_some_tie_exists():
    doc = run_doc()
    for metrics in doc["paired_all"].values():
        for m in metrics.values():
            m["p_tie"] = 0.0
    text = narrow(tables.render_run(doc))
    assert "P(tie)" not in text and "a tie (B = A) is not better" in " ".join(text.split())
    doc["paired_all"]["lite-h100 / h100"]["availability"]["p_tie"] = 0.75
    text = narrow(tables.render_run(doc))
    assert "P(tie)" in text and "0.750" in text and "0.000" in text  # better: 1 - 0.25 - 0.75


def test_availability_reads_as_downtime_minutes_a_year():
    assert downtime_minutes(0.99988) == (1 - 0.99988) * 8766 * 60
    text = narrow(tables.render_run(run_doc()))
    assert "downtime (minutes a year)" in text
    assert f"{downtime_minutes(0.99988):,.0f}" in text  # 63
