"""The terminal tables of the stage commands: every row and column a reader needs is there."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from mcengine.report import tables
from mcengine.scenario import load_scenario
from mcengine.standalone import fab, reliability, roofline


def _text(renderable, width: int = 160) -> str:
    out = io.StringIO()
    Console(file=out, width=width).print(renderable)
    return out.getvalue()


def test_yield_table_has_both_columns():
    body = fab.yield_summary(load_scenario("h100", []), 500, 1)
    body.update(scenario="h100", wafers=500)
    text = _text(tables.render_yield(body), width=100)
    for word in ("dies per wafer", "closed form", "negative binomial", "moore", "seeds", "GPU package", "67"):
        assert word in text


def test_reliability_table_has_every_metric():
    body = reliability.lifetime_summary(load_scenario("h100"), 50, 0)
    table = tables.render_reliability({**body, "scenario": "h100", "lifetimes": 50})
    assert isinstance(table, Table)
    assert table.row_count >= 7 and len(table.columns) == 4


def test_roofline_tables_show_the_terms():
    body = roofline.roofline_summary(load_scenario("h100"))
    text = _text(tables.render_roofline({"scenario": "h100", **body}))
    for word in ("terms (ms)", "compute", "memory", "comm", "overhead", "TPOT", "layouts searched", "chosen"):
        assert word in text


def test_validate_table_marks_a_failed_check():
    doc = {"checks": [
        {"stage": "fab", "name": "ok", "expected": 1.0, "got": 1.0, "tolerance": 0.0, "passed": True},
        {"stage": "fab", "name": "bad", "expected": 1.0, "got": 2.0, "tolerance": 0.5, "passed": False},
    ]}
    text = _text(tables.render_validate(doc))
    assert "pass" in text and "FAIL" in text


def test_validate_table_marks_a_known_miss_and_says_why():
    doc = {"checks": [
        {"stage": "roofline", "name": "bf16 ITL", "expected": 14.7, "got": 19.3, "tolerance": 0.7, "passed": False,
         "status": "known miss", "known_miss": "+32%: fitted on FP8"},
    ]}
    text = _text(tables.render_validate(doc))
    assert "known miss" in text and "+32%: fitted on FP8" in text and "1 checks: 0 pass, 1 known miss, 0 FAIL" in text
    assert "│ FAIL" not in text


def test_scenarios_table_lists_names_and_descriptions():
    text = _text(tables.render_scenarios([("h100", "1,024 H100s"), ("lite-h100", "4,096 Lite-H100s")]))
    assert "h100" in text and "4,096 Lite-H100s" in text


def test_bench_table_flattens_nested_figures():
    text = _text(tables.render_bench({"machine": {"cpus": 2}, "chain": {"cases": {"h100": {"trials_per_s": 12345.678}}}}))
    assert "cpus 2" in text and "bench: chain" in text and "trials/s" in text and "12,346" in text


#: The laser's sensitivity case (docs/sources.md#rel-laser-els): 1 % failing in its first
#: year, Weibull shape 2, on the package.
WEAROUT_LASER = "reliability.components.laser={first_year_fraction=0.01, weibull_shape=2.0}"


def test_reliability_reference_is_the_horizons_and_the_long_run_one_is_labelled():
    """lite-h100 with a wear-out laser on the package (the laser's sensitivity case): over its
    5-year horizon the renewal function expects fewer failures than the long-run 1/MTTF
    rate. The reference beside the Monte Carlo value is the horizon's (and within 4 SEM of
    it); the long-run one sits on a labelled row."""
    body = reliability.lifetime_summary(load_scenario("lite-h100", [WEAROUT_LASER]), 64, 0)
    an = body["analytic"]
    text = _text(tables.render_reliability({**body, "scenario": "lite-h100", "lifetimes": 64}))
    lines = text.splitlines()
    failures = next(i for i, line in enumerate(lines) if "failures / year" in line)
    assert lines[failures].rstrip(" │").endswith(f"{an['failures_per_year_over_horizon']:,.2f}")
    assert "long-run reference (t → ∞)" in lines[failures + 1] and f"{an['failures_per_year']:,.2f}" in lines[failures + 1]
    d = body["failures_per_year"]
    assert abs(d["mean"] - an["failures_per_year_over_horizon"]) <= 4 * d["sem"]
    avail = next(line for line in lines if "instance availability" in line)
    assert avail.rstrip(" │").endswith(f"{an['availability_no_stockout_over_horizon']:.6f}")


def test_reliability_figure_marks_the_horizon_reference_and_the_long_run_one():
    from mcengine.report import stages

    body = reliability.lifetime_summary(load_scenario("lite-h100", [WEAROUT_LASER]), 64, 0)
    an = body["analytic"]
    fig = stages.reliability_figures({**body, "scenario": "lite-h100", "lifetimes": 64})["reliability.png"]
    events = fig.axes[1]
    marks = {line.get_label(): line.get_xdata()[0] for line in events.get_lines() if not line.get_label().startswith("_")}
    assert marks == {"renewal reference over the horizon": an["failures_per_year_over_horizon"],
                     "long-run reference (t → ∞)": an["failures_per_year"]}
