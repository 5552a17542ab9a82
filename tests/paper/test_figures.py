"""The paper study's figures read right (issue 33, item 4): claim 6's sweep is labelled as
the fleet cost ratio it draws, with trials where a fleet serves no tokens left out of the
band instead of drawn at 0; titles are wrapped, never cut; the swept key carries its unit;
curves hidden under another say so; dollar ticks read ``$2``, not ``2×10^0``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mcengine.paper._common import boundary, entry, interval
from mcengine.paper.fleet import defined_ratio
from mcengine.report.paper import claim_figure, frontier_figure, nearest_figure, write_paper_figures

from ..report.figure_checks import _drawn, _tick_texts, check_figure

LONG_CLAIM = "Same aggregate resources fall short; ~2x bandwidth-to-compute matches or beats H100 (Llama-3-70B, GPT-3-175B, Llama-3-405B)"
#: Paired fleet cost ratios at two sweep points: 0 where the H100 fleet served no tokens, +inf where the Lite one did not.
RATIOS = [np.array([0.0, 1.4, 1.5, 1.6, np.inf]), np.array([0.0, 0.0, 0.0, 0.0, 0.0])]


def fleet_like() -> dict:
    b = boundary("fleet.models[0].share (llama-3-8b)", [0.0, 0.5], RATIOS, lambda f: f < 1.0, lambda f: f < 1.0, "note",
                 figure=("fleet cost per Mtok, lite-h100-2x / h100, paired over trials", "ratio"),
                 key_axis="demand share of llama-3-8b\nfleet.models[0].share (share of output tokens, 0-1)",
                 defined=("both fleets serve tokens", defined_ratio))
    side = {"scenarios": ["h100", "lite-h100-2x"], "figure": {"median": 0.5, "p05": 0.5, "p95": 0.5}, "p_holds": 1.0}
    return entry(number=6, key="fleet", claim=LONG_CLAIM, metric="capacity lost to rounding, H100 fleet minus Lite fleet (share of allocated "
                 "packages, demand-weighted)", paper_figure=None, paper_figure_text="less (qualitative)", source="s", confirmed=True,
                 paper_assumptions=side, shipped=side, boundary_=b, holds_when="h", model="m", unit="points")


def test_a_boundary_takes_its_interval_over_the_trials_where_the_figure_is_defined():
    b = fleet_like()["boundary"]
    assert b["figure"] == [interval(np.array([1.4, 1.5, 1.6])), None]
    assert b["defined_share"] == [0.6, 0.0] and b["defined_when"] == "both fleets serve tokens"
    assert b["p_holds"] == [0.2, 1.0]  # the probabilities count every trial: a fleet without tokens is dearer
    assert (b["figure_label"], b["figure_unit"]) == ("fleet cost per Mtok, lite-h100-2x / h100, paired over trials", "ratio")


def test_claim_6_draws_the_fleet_cost_ratio_with_missing_points_as_gaps():
    fig = claim_figure(fleet_like())
    top, bottom = fig.axes
    assert top.get_ylabel().replace("\n", " ") == "fleet cost per Mtok, lite-h100-2x / h100, paired over trials (x, dimensionless)"
    [median] = [ln for ln in top.get_lines() if ln.get_label().endswith("median")]
    y = np.asarray(median.get_ydata(), float)
    assert y[0] == interval(np.array([1.4, 1.5, 1.6]))["median"] and math.isnan(y[1])  # not 0
    band = [t.get_text() for t in top.get_legend().get_texts()][0]
    assert band == "90 % of the trials where both fleets serve tokens (0%-60% of trials; others left out)"
    assert bottom.get_xlabel().startswith("demand share of llama-3-8b")
    assert check_figure(fig) == []


def test_a_long_claim_is_wrapped_whole_and_the_probabilities_say_they_overlap():
    fig = claim_figure(fleet_like())
    title = fig.axes[0].get_title()
    assert title.replace("\n", " ") == f"claim 6: {LONG_CLAIM}"
    labels = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert labels == ["P(claim holds)", "P(Lite better) (overlaps P(claim holds))"]


def test_a_claim_sweeping_a_scenario_key_labels_it_with_its_unit():
    e = fleet_like()
    e["boundary"] = boundary("B:fab.optics_cost_per_gbps_usd", [0.0, 1.0], [np.array([0.1, 0.2]), np.array([-0.1, 0.0])],
                             lambda f: f >= 0.32, lambda f: f > 0.0, "note")
    e["unit"], e["paper_figure"] = "gain", 0.32
    fig = claim_figure(e)
    assert fig.axes[1].get_xlabel() == "Co-packaged optics per GB/s of gpu.link_gbps\nB:fab.optics_cost_per_gbps_usd (USD per GB/s)"
    assert fig.axes[0].get_ylabel().endswith("(%)")
    assert check_figure(fig) == []


def frontier() -> dict:
    cost = [{"median": m, "p05": 0.8 * m, "p95": 1.2 * m} for m in (2.0, 1.2, 0.9)]
    return {"slo_ms": [20.0, 50.0, 100.0], "baseline": "h100", "model": "llama-3-70b",
            "designs": {"h100": {"cost_per_mtok_usd": [{"median": 0.7, "p05": 0.6, "p95": math.inf}] * 3},
                        "lite-h100-2x": {"cost_per_mtok_usd": cost, "p_cheaper_than_h100": [0.0, 0.1, 0.2]},
                        "lite-h100-2x-fastswap": {"cost_per_mtok_usd": cost, "p_cheaper_than_h100": [0.0, 0.1, 0.2]}}}


def test_the_frontier_flags_the_design_hidden_under_another_and_ticks_in_dollars():
    fig = frontier_figure(frontier())
    top, bottom = fig.axes
    assert [t.get_text() for t in top.get_legend().get_texts()] == ["h100", "lite-h100-2x", "lite-h100-2x-fastswap (overlaps lite-h100-2x)"]
    assert [t.get_text() for t in bottom.get_legend().get_texts()] == ["lite-h100-2x", "lite-h100-2x-fastswap (overlaps lite-h100-2x)"]
    _drawn(fig)
    ticks = _tick_texts(top.yaxis)
    assert "$1" in ticks and "$2" in ticks and all(t.startswith("$") for t in ticks)
    assert check_figure(fig) == []


@pytest.mark.slow
def test_every_figure_of_a_quick_study_reads_right(tmp_path):
    from mcengine.paper import study

    doc = study(trials=16, seed=0, quick=True)
    figs = ([claim_figure(c) for c in doc["claims"]] + [frontier_figure(doc["frontier"])]
            + [nearest_figure(c) for c in [*doc["claims"], doc["verdict"]] if c["nearest_world"].get("path")])
    problems = {i: check_figure(f) for i, f in enumerate(figs)}
    assert {k: v for k, v in problems.items() if v} == {}
    fleet = next(c for c in doc["claims"] if c["key"] == "fleet")
    assert fleet["boundary"]["figure_unit"] == "ratio" and "defined_share" in fleet["boundary"]
    paths = sum(1 for c in doc["claims"] if c["nearest_world"].get("path"))
    assert paths >= 4  # every claim with a search draws its path (to its nearest world or the best one seen)
    verdict = 1 if doc["verdict"]["nearest_world"].get("path") else 0  # verdict-nearest.png
    assert len(doc["claims"]) == 7  # the six claims of the paper and its fault-tolerance argument
    assert len(write_paper_figures(doc, tmp_path)) == len(doc["claims"]) + 1 + paths + verdict  # + the frontier


def test_the_frontier_sets_each_designs_band_beside_the_others_at_every_slo():
    """Whiskers, not filled bands: at each SLO the designs' 90 % whiskers stand at distinct
    x positions, neighbours a factor FRONTIER_DODGE apart, centred on the SLO; a band with
    an infinite end (trials that serve nothing) is a gap, not a whisker to infinity."""
    import numpy as np

    from mcengine.report.paper import FRONTIER_DODGE

    f = frontier()
    h100, middle, last = frontier_figure(f).axes[0].collections  # one whisker set per design, in order
    assert all(len(seg) == 0 for seg in h100.get_segments())
    xs = np.array([[seg[0][0] for seg in coll.get_segments()] for coll in (middle, last)])
    assert np.allclose(xs[0], f["slo_ms"])  # the middle design of three sits on the SLO itself
    assert np.allclose(xs[1] / xs[0], FRONTIER_DODGE)
    lows = [seg[0][1] for seg in middle.get_segments()]
    assert lows == [0.8 * c["median"] for c in f["designs"]["lite-h100-2x"]["cost_per_mtok_usd"]]
