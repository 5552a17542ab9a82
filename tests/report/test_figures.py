"""Figures read right: units on the axes, the metric's direction in titles and colours,
overlapping curves named, and the global matplotlib backend left alone (each failed on
the figures before issue 21)."""

from __future__ import annotations

import json

import matplotlib
import numpy as np
import pytest

import mcengine.api as mc
from mcengine.report import figures, sensitivity, stages
from mcengine.scenario import load_scenario
from mcengine.standalone import fab, reliability, roofline

from .test_narrow import sweep_doc, tornado_doc

NAMES = ["h100", "lite-h100", "lite-h100-2x"]


@pytest.fixture(scope="module")
def res():
    return mc.compare(*NAMES, trials=1024, seed=3)


@pytest.fixture
def svg_backend():
    """A backend other than Agg, to see whether the library switches it."""
    before = matplotlib.get_backend()
    matplotlib.use("svg")
    yield
    matplotlib.use(before)


def test_writing_run_figures_leaves_the_backend_and_pyplot_alone(res, tmp_path, svg_backend):
    import matplotlib.pyplot as plt

    open_before = plt.get_fignums()
    paths = figures.write_figures(res, tmp_path)
    assert {p.name for p in paths} == {"cost_per_mtok_cdf.png", "availability.png", "cost_breakdown.png", "paired_ratio.png"}
    assert matplotlib.get_backend() == "svg"
    assert plt.get_fignums() == open_before


def test_sensitivity_and_stage_figures_leave_the_backend_alone(tmp_path, svg_backend):
    sensitivity.write_figures(sweep_doc(True), tmp_path)
    sensitivity.write_figures(tornado_doc(), tmp_path)
    stages.figures_for_roofline({"scenario": "h100", **roofline.roofline_summary(load_scenario("h100"))}, tmp_path)
    assert matplotlib.get_backend() == "svg"


def test_results_plot_returns_figures_with_units(res, svg_backend):
    from matplotlib.figure import Figure

    cdf = res.plot("cost_cdf")
    assert isinstance(cdf, Figure) and matplotlib.get_backend() == "svg"
    assert "USD per Mtok" in cdf.axes[0].get_xlabel()
    avail = res.plot("availability").axes[0]
    assert "minutes per year" in avail.get_xlabel() and "better" in avail.get_title()
    assert "USD per Mtok" in res.plot("cost_breakdown").axes[0].get_ylabel()
    assert "dimensionless" in res.plot("paired_ratio").axes[0].get_xlabel()


def test_coinciding_curves_are_named_in_the_legend(res):
    # lite-h100 and lite-h100-2x differ only in links: the same availability in every trial
    labels = [t.get_text() for t in res.plot("availability").axes[0].get_legend().get_texts()]
    assert labels[2] == "lite-h100-2x (overlaps lite-h100)"
    styles = [line.get_linestyle() for line in res.plot("availability").axes[0].get_lines()]
    assert len(set(styles)) == len(NAMES)


def test_cost_breakdown_is_per_million_tokens_and_adds_up(res):
    parts = figures.cost_breakdown_per_mtok(res.doc)
    for n in NAMES:
        assert sum(parts[n].values()) == pytest.approx(res.doc["scenarios"][n]["cost_per_mtok_usd"]["mean"])
    ax = res.plot("cost_breakdown").axes[0]
    tops = [t.get_text() for t in ax.texts]
    assert tops == [f"{sum(parts[n].values()):.3f}" for n in NAMES]


def test_cost_breakdown_shows_the_markup_as_its_own_segment_and_the_package_at_cost(res):
    """The vendor's margin is one segment; die, packaging and test are at their fab cost,
    so the markup is larger than the three together on the shipped designs (markup 10.5-14.75)."""
    ax = res.plot("cost_breakdown").axes[0]
    labels = [bars.get_label() for bars in ax.containers]
    assert "markup (vendor's margin)" in labels and "die (at price)" not in labels
    parts = figures.cost_breakdown_per_mtok(res.doc)
    for n in NAMES:
        assert parts[n]["markup (vendor's margin)"] > parts[n]["die"] + parts[n]["packaging"] + parts[n]["test"]


def test_sweep_heat_maps_colour_the_ratio_in_each_metric_direction_and_print_p_better():
    doc = sweep_doc(True)  # median ratio 1.0, 1.1, 1.2, 1.3 over the cells; P(B < A) = 0.2 in every cell and output
    figs = sensitivity.sweep_2d_figures(doc)
    cost, avail = figs["cost_per_mtok_usd"].axes[0], figs["availability"].axes[0]
    assert "median ratio B / A" in cost.get_title() and "lower" in cost.get_title() and "higher" in avail.get_title()
    for ax in (cost, avail):
        assert np.allclose(ax.images[0].get_array(), [[1.0, 1.1], [1.2, 1.3]])  # the colour is the median ratio
        norm = ax.images[0].norm
        assert norm.vmin == pytest.approx(1 / 1.3) and norm.vmax == pytest.approx(1.3)  # symmetric in log around 1
    # blue where B is better: a ratio above 1 is worse for cost (reversed map: high = red), better for availability
    assert cost.images[0].get_cmap().name == "RdBu_r" and avail.images[0].get_cmap().name == "RdBu"
    assert [t.get_text() for t in cost.texts][-1] == "ratio 1.3\nP 0.20"  # lower cost better: P(B < A)
    assert [t.get_text() for t in avail.texts][-1] == "ratio 1.3\nP 0.80"  # higher availability better: 1 − P(B < A)
    assert len(cost.collections) == 0  # no crossing of ratio 1 or P = 0.5 inside the grid: no contour drawn
    assert "(defects/cm²)" in cost.get_ylabel() and "(µs)" in cost.get_xlabel()  # units of the key metadata


def test_a_heat_map_crossing_ratio_1_draws_where_the_verdict_flips():
    doc = sweep_doc(True)
    for row, ratio in zip(doc["rows"], (0.9, 1.05, 1.1, 1.2)):
        row["cost_per_mtok_usd"]["p50"] = ratio
    ax = sensitivity.sweep_2d_figures(doc)["cost_per_mtok_usd"].axes[0]
    assert len(ax.collections) == 1  # the solid ratio-1 line (P stays 0.2 everywhere: no dashed one)


def test_sweep_1d_axes_carry_units_and_directions():
    fig = sensitivity.sweep_1d_figure(sweep_doc(False))
    axes = [a for a in fig.axes if a.get_ylabel().startswith(("cost", "availability", "throughput", "GPU"))]
    assert len(axes) == 4 and all("dimensionless" in a.get_ylabel() for a in axes)
    assert any("(defects/cm²)" in a.get_xlabel() for a in fig.axes)
    assert any("higher is better" in a.get_title() for a in fig.axes)


def test_stage_figures_are_written(tmp_path):
    body = fab.yield_summary(load_scenario("lite-h100"), 200, 1)
    doc = {"scenario": "lite-h100", "wafers": 200, **json.loads(json.dumps(body))}
    [p] = stages.figures_for_yield(doc, tmp_path)
    assert p.name == "die_yield.png" and p.stat().st_size > 10_000
    rel = {"scenario": "h100", "lifetimes": 20, **reliability.lifetime_summary(load_scenario("h100"), 20, 0)}
    assert [p.name for p in stages.figures_for_reliability(rel, tmp_path)] == ["reliability.png"]
    fig = stages.yield_figures(doc)["die_yield.png"]
    assert "die yield" in fig.axes[0].get_xlabel()


def test_cost_breakdown_of_a_design_whose_trials_serve_no_tokens_is_a_note_not_a_nan_bar():
    from mcengine.report.figures import COST_PARTS, cost_breakdown_figure

    parts = {part: {"mean": 1.0} for part, _ in COST_PARTS}
    doc = {"scenarios": {"a": {"cost_breakdown_per_mtok_usd": parts},
                         "b": {"cost_breakdown_per_mtok_usd": {**parts, "die": {"mean": float("inf")}}}}}
    fig = cost_breakdown_figure(doc)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts[0] == f"{len(COST_PARTS):.3f}" and texts[1].startswith("infinite mean")
