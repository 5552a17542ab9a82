"""Every figure of every command passes the checks a person makes (figure_checks.py):
units from the key metadata on the axes, balanced titles, legends that list every series
and flag the ones hidden under another, no text over data, labels that stay beside their
panel. Each check is also shown to fail on a figure with the fault (issue 33, item 4)."""

from __future__ import annotations

import json
import math

import pytest

import mcengine.api as mc
from mcengine.report import figures, sensitivity, stages
from mcengine.report.figures import new_figure
from mcengine.report.metrics import key_axis, unit_text
from mcengine.scenario import load_scenario
from mcengine.scenario.keys import key_rows
from mcengine.standalone import fab, reliability, roofline

from .figure_checks import (_drawn, _tick_texts, axis_labels_carry_units, check_figure, labels_stay_in_their_panel, legends_list_every_series,
                            no_text_over_lines, overlaps_flagged, texts_balanced)
from .test_narrow import sweep_doc, tornado_doc

NAMES = ["h100", "lite-h100", "lite-h100-2x", "lite-h100-2x-fastswap"]


@pytest.fixture(scope="module")
def res():
    return mc.compare(*NAMES, trials=256, seed=5)


def unpaired(doc: dict) -> dict:
    """A sweep document of one scenario (no ratio, no P(B better))."""
    doc = json.loads(json.dumps(doc))
    del doc["ratio_of"]
    for row in doc["rows"]:
        del row["p_b_below_a"]
    doc["scenario"] = "lite-h100"
    return doc


def empty_tornado_doc() -> dict:
    doc = tornado_doc()
    doc["output"] = "availability"
    doc["baseline"] = 0.99948
    doc["bars"] = {k: {**b, "low": 0.99948, "high": 0.99948, "swing": 0.0} for k, b in doc["bars"].items()}
    return doc


def availability_tornado_doc() -> dict:
    """One input moving an availability near 1 by parts per million (the Lite's laser rate)."""
    doc = empty_tornado_doc()
    doc["baseline"] = 0.9998405
    doc["bars"] = {k: {**b, "low": 0.9998405 + (1.5e-6 if i == 0 else 0.0), "high": 0.9998405 - (1.9e-6 if i == 0 else 0.0),
                       "swing": 3.4e-6 if i == 0 else 0.0} for i, (k, b) in enumerate(doc["bars"].items())}
    return doc


def sobol_doc() -> dict:
    indices = {"workload.memory_efficiency": {"S1": 0.6, "S1_conf": 0.05, "ST": 0.7, "ST_conf": 0.06},
               "fab.optics_cost_per_gbps_usd": {"S1": 0.2, "S1_conf": 0.04, "ST": 0.25, "ST_conf": 0.05}}
    return {"method": "sobol", "scenario": "h100 vs lite-h100", "output": "cost_per_mtok_usd", "ratio_of": "lite-h100 / h100",
            "conf_level": 0.95, "scramblings": 8, "base_samples": 64, "evaluations": 640, "indices": indices}


def command_figures(res) -> dict:
    """{name: Figure} of every command: run/compare, yield, reliability, roofline, sweep
    (1-D and 2-D, paired and one scenario), tornado (with bars and empty), Sobol."""
    figs = {f"run/{k}": f for k, f in figures.run_figures(res).items()}
    body = fab.yield_summary(load_scenario("lite-h100"), 200, 1)
    figs.update(stages.yield_figures({"scenario": "lite-h100", "wafers": 200, **json.loads(json.dumps(body))}))
    figs.update(stages.reliability_figures({"scenario": "lite-h100", "lifetimes": 20, **reliability.lifetime_summary(load_scenario("lite-h100"), 20, 0)}))
    figs.update(stages.roofline_figures({"scenario": "lite-h100", **roofline.roofline_summary(load_scenario("lite-h100"))}))
    for label, doc in (("paired", sweep_doc(False)), ("one", unpaired(sweep_doc(False))), ("paired", sweep_doc(True)),
                       ("one", unpaired(sweep_doc(True))), ("bars", tornado_doc()), ("empty", empty_tornado_doc()),
                       ("ppm", availability_tornado_doc()), ("", sobol_doc())):
        figs.update({f"{label}/{k}": f for k, f in sensitivity.sensitivity_figures(doc).items()})
    return figs


def test_every_command_figure_reads_right(res):
    figs = command_figures(res)
    assert len(figs) == 4 + 3 + 2 * (1 + 4) + 3 + 1
    problems = {name: check_figure(fig) for name, fig in figs.items()}
    assert {k: v for k, v in problems.items() if v} == {}


# ----------------------------------------------------------------------------- each check fails on its fault
def _line_figure():
    fig = new_figure()
    ax = fig.add_subplot()
    return fig, ax


def test_checks_find_a_missing_unit_and_scientific_dollar_ticks():
    fig, ax = _line_figure()
    ax.plot([1, 2], [0.6, 2.2], label="a")
    ax.set_yscale("log")
    ax.set(xlabel="B:gpu.hbm_tbps", ylabel="USD per M output tokens")
    problems = axis_labels_carry_units(fig)
    assert any("scientific notation" in p for p in problems)
    assert any("'B:gpu.hbm_tbps', no unit" in p for p in problems) and any("'USD per M output tokens', no unit" in p for p in problems)


def test_checks_find_an_unclosed_title():
    fig, ax = _line_figure()
    ax.set_title("capacity lost to rounding, H100 fleet minus Lite fleet (share of allocated packages, demand-weighted")
    assert texts_balanced(fig) == [f"unbalanced parentheses: {ax.get_title()!r}"]


def test_checks_find_a_series_missing_from_the_legend_and_a_hidden_one_not_flagged():
    fig, ax = _line_figure()
    ax.plot([0, 1, 2], [0.1, 0.5, 0.9], label="P(claim holds)")
    ax.plot([0, 1, 2], [0.1, 0.5, 0.9], label="P(Lite better)")
    ax.plot([0, 1, 2], [0.9, 0.5, 0.1], label="third")
    ax.legend(handles=ax.get_lines()[:2])
    assert legends_list_every_series(fig) == ["'': line 'third' is in no legend"]
    assert overlaps_flagged(fig) == ["'': 'P(Lite better)' is drawn over 'P(claim holds)' and does not say so"]


def test_checks_find_text_over_a_line():
    fig, ax = _line_figure()
    ax.plot([0.5, 3], [0, 1], label="ratio")
    ax.axvline(1.0, color="k", label="one")
    ax.set_ylim(0, 1)
    ax.text(1.0, 0.97, " same cost ", ha="center", va="top")
    assert no_text_over_lines(fig) == ["'': text ' same cost ' is drawn over the line 'one'"]


def test_checks_find_a_y_label_taller_than_its_panel():
    fig = new_figure(7.5, 4.0)
    axes = fig.subplots(3, 1, sharex=True)
    for ax in axes:
        ax.plot([0, 1], [0, 1])
    axes[1].set_ylabel("availability: ratio lite-h100-2x-fastswap / h100 (dimensionless; 1 = same)")
    assert any("taller than its panel" in p for p in labels_stay_in_their_panel(fig))


# ----------------------------------------------------------------------------- the figures issue 33 named
@pytest.mark.parametrize("key", ["B:fab.optics_cost_per_gbps_usd", "fab.defect_density_per_cm2", "B:gpu.hbm_tbps",
                                 "reliability.components.die.afr", "workload.collective_start_us", "lite-h100:reliability.swap_hours"])
def test_a_key_axis_carries_the_unit_of_the_key_metadata(key):
    leaf = key.rpartition(":")[2]
    rows = {r["key"]: r for r in key_rows()}
    row = rows.get(leaf) or rows[leaf.replace(".die.", ".NAME.")]
    label = key_axis(key)
    assert label.endswith(f"{key} ({unit_text(row['unit'])})")
    assert label.splitlines()[0] and label.splitlines()[0] in row["help"]


def test_a_unitless_number_reads_dimensionless_and_units_read_as_written():
    assert key_axis("gpu.dvfs_scale").endswith("gpu.dvfs_scale (dimensionless)")
    assert unit_text("defects/cm^2") == "defects/cm²" and unit_text("us") == "µs"


def test_the_2d_sweep_axis_of_an_optics_price_per_bandwidth_says_usd_per_gb_s():
    doc = sweep_doc(True)
    doc["param"] = ["B:gpu.hbm_tbps", "B:fab.optics_cost_per_gbps_usd"]
    fig = sensitivity.sweep_2d_figures(doc)["cost_per_mtok_usd"]
    assert fig.axes[0].get_xlabel().endswith("B:fab.optics_cost_per_gbps_usd (USD per GB/s)")
    assert fig.axes[0].get_ylabel().endswith("B:gpu.hbm_tbps (TB/s)")


def test_paired_ratio_names_the_same_cost_line_in_the_legend_not_over_it(res):
    ax = figures.paired_ratio_figure(res).axes[0]
    assert len(ax.texts) == 0
    assert "ratio 1: same cost" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_an_empty_tornado_says_why_in_the_figure_and_the_table():
    doc = empty_tornado_doc()
    note = sensitivity.tornado_empty_note(doc)
    assert note.startswith("the tornado of availability is empty: none of the 3 uncertain inputs")
    fig = sensitivity.tornado_figure(doc)
    [text] = fig.axes[0].texts
    assert text.get_text().replace("\n", " ").startswith(note[:60]) and "workload.collective_start_us" in text.get_text()
    assert len(fig.axes[0].patches) == 0  # no zero-width bars
    assert sensitivity.tornado_empty_note(tornado_doc()) is None


def test_the_empty_availability_tornado_says_so_on_stderr(cli):
    r = cli("sensitivity", "h100", "--output", "availability", "--method", "tornado", "--trials", "16", "--seed", "1")
    assert r.code == 0, r.err[-2000:]
    assert "note: the tornado of availability is empty: none of the" in r.err


def test_1d_sweep_y_labels_name_the_ratio_without_running_into_the_next_panel():
    fig = sensitivity.sweep_1d_figure(sweep_doc(False))
    labels = [ax.get_ylabel() for ax in fig.axes if "ratio B / A" in ax.get_ylabel()]
    assert labels[1] == "availability ratio B / A\n(dimensionless; 1 = same)" and len(labels) == 4
    assert "B = lite-h100-2x-fastswap, A = h100" in fig._suptitle.get_text()
    assert labels_stay_in_their_panel(fig) == []


def test_dollar_ticks_read_as_dollars():
    assert [figures.dollars(v) for v in (2.0, 0.6, 1.5, 1000.0, 0.005)] == ["$2", "$0.60", "$1.50", "$1,000", "$0.005"]
    fig, ax = _line_figure()
    ax.plot([1, 2], [0.6, 2.2])
    ax.set_yscale("log")
    figures.dollar_log_axis(ax.yaxis)
    _drawn(fig)
    shown = _tick_texts(ax.yaxis)
    assert {"$0.70", "$1", "$1.50", "$2"} <= set(shown) and all(t.startswith("$") for t in shown)


def test_overlap_labels_name_the_series_hidden_beneath():
    same = [0.0, 0.0, 0.0]
    labels = figures.overlap_labels(["a", "b", "c"], [same, [0.004, 0.0, 0.0], [0.5, 0.0, 0.0]], 1.0)
    assert labels == ["a", "b (overlaps a)", "c"]
    # a gap (no value) where the other has one is a different series
    assert figures.overlap_labels(["a", "b"], [[0.0, math.nan], [0.0, 0.0]], 1.0) == ["a", "b"]


def test_paired_ratio_histogram_spans_its_trials_and_shows_a_coinciding_curve(res):
    """The axis ends where the central 99.8 % of each ratio's trials end (and takes in
    ratio 1); two coinciding ratios (here the fast-swap design's made the plain 2x
    design's) are a thick line beneath a thin one, so the reader sees both."""
    import numpy as np

    ratio = np.array([1.10, 1.12, 1.15, 1.2, 1.3])
    share = np.array([0.0005, 0.2, 0.6, 0.9995, 1.0])  # the last point is the sketch's far tail
    # 1 is taken in; the 0.999 quantile lies between the 3rd and 4th points, linearly
    assert figures.central_range([(ratio, share)]) == (1.0, pytest.approx(1.15 + 0.05 * (0.999 - 0.6) / (0.9995 - 0.6)))
    assert figures.central_range([(ratio, share)], tail=0.0) == (1.0, 1.3)
    from types import SimpleNamespace

    ratios = dict(res.summaries.ratios)
    ratios[("lite-h100-2x-fastswap", "cost_per_mtok_usd")] = ratios[("lite-h100-2x", "cost_per_mtok_usd")]  # a twin
    ax = figures.paired_ratio_figure(SimpleNamespace(doc=res.doc, summaries=SimpleNamespace(ratios=ratios))).axes[0]
    widths = {t.get_text(): h.get_linewidth() for t, h in zip(ax.get_legend().get_texts(), ax.get_legend().legend_handles)}
    assert widths["lite-h100-2x-fastswap / h100 (overlaps lite-h100-2x / h100)"] == 1.0
    assert widths["lite-h100-2x / h100"] == 3.2 and widths["lite-h100 / h100"] == 1.6
    far = max(float(res.summaries.ratios[(n, "cost_per_mtok_usd")].cdf_points()[0].max()) for n in NAMES[1:])
    drawn = max(float(patch.get_xy()[:, 0].max()) for patch in ax.patches)
    assert drawn < far  # the bins end before the sketch's farthest point
