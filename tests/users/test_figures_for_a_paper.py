"""Figures for a paper (issue 50, item 5, in part): a paired tornado shows the
no-difference line (B / A = 1, where the verdict flips) in range; figures in png, svg or
pdf at a chosen dpi (`run --format`, `--dpi`)."""

from __future__ import annotations

import subprocess

import matplotlib

from mcengine.report import figures
from mcengine.report.sensitivity import tornado_figure
from tests.procs import env, python

matplotlib.use("Agg")


def _paired_tornado() -> dict:
    # the chart: every bar between 1.15 and 1.235, zoomed there with no line at 1
    bars = {"fab.optics_cost_per_gbps_usd": {"input_low": 0.8, "input_high": 4.0, "low": 1.15, "high": 1.235, "swing": 0.085},
            "econ.gpu_markup": {"input_low": 1.5, "input_high": 2.5, "low": 1.18, "high": 1.2, "swing": 0.02}}
    return {"method": "tornado", "scenario": "h100 vs lite-h100-2x", "ratio_of": "lite-h100-2x / h100", "output": "cost_per_mtok_usd",
            "trials": 256, "quantiles": [0.05, 0.95], "baseline": 1.19, "bars": bars}


def test_a_paired_tornado_draws_the_no_difference_line_in_range():
    ax = tornado_figure(_paired_tornado()).axes[0]
    lo, hi = ax.get_xlim()
    assert lo < 1.0 < hi
    lines = [ln for ln in ax.get_lines() if list(ln.get_xdata()) == [1.0, 1.0]]
    assert len(lines) == 1 and "no difference" in lines[0].get_label()


def test_a_single_scenario_tornado_has_no_ratio_line():
    doc = _paired_tornado()
    del doc["ratio_of"]
    ax = tornado_figure(doc).axes[0]
    assert not [ln for ln in ax.get_lines() if list(ln.get_xdata()) == [1.0, 1.0]]


def test_figures_in_svg_pdf_and_at_a_chosen_dpi(tmp_path):
    fig = tornado_figure(_paired_tornado())
    small = figures.save_png(fig, tmp_path / "t.png")
    with figures.figure_format("png", 240):
        large = figures.save_png(fig, tmp_path / "big" / "t.png")
    assert large.stat().st_size > small.stat().st_size
    with figures.figure_format("svg"):
        svg = figures.save_png(fig, tmp_path / "t.png")
    with figures.figure_format("pdf"):
        pdf = figures.save_png(fig, tmp_path / "t.png")
    assert svg.name == "t.svg" and svg.read_text().lstrip().startswith("<?xml") and pdf.read_bytes().startswith(b"%PDF")


def test_run_writes_its_figures_in_the_format_asked_for(tmp_path):
    out = tmp_path / "run"
    got = subprocess.run(python("-m", "mcengine", "run", "h100", "lite-h100", "--trials", "1024", "--quiet", "--format", "pdf", "--dpi", "200",
                                "--out", str(out)), capture_output=True, text=True, env=env(), timeout=600)
    assert got.returncode == 0, got.stderr
    assert sorted(p.name for p in out.glob("*.pdf")) == ["availability.pdf", "cost_breakdown.pdf", "cost_per_mtok_cdf.pdf", "paired_ratio.pdf"]
    assert not list(out.glob("*.png")) and "paired_ratio.pdf" in got.stdout
    bad = subprocess.run(python("-m", "mcengine", "run", "h100", "--format", "gif"), capture_output=True, text=True, env=env(), timeout=120)
    assert bad.returncode == 2 and "--format: got 'gif'; allowed: png, svg, pdf" in bad.stderr


def test_the_layout_chart_names_each_layout_with_its_attention_mode():
    # the issue: `TP32×PP1` five times over, the attention mode left out
    from mcengine import api
    from mcengine.report.stages import roofline_figures

    doc = api.roofline("lite-h100")
    ax = roofline_figures(doc)["roofline.png"].axes[1]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert len(labels) == len(doc["layouts"]) == len(set(labels))
    assert "TP16×PP2 grouped/2" in labels and "TP32×PP1 tensor" in labels
