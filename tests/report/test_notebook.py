"""The notebook API of Results: to_frame, repr, HTML repr, plot (issue 21)."""

from __future__ import annotations

import pytest

import mcengine.api as mc
from mcengine.results import metric_items
from mcengine.summaries import SUMMARY_KEYS


@pytest.fixture(scope="module")
def res():
    return mc.compare("h100", "lite-h100-2x-fastswap", trials=1024, seed=5)


def test_to_frame_is_tidy_and_equals_the_summary(res):
    frame = res.to_frame()
    doc = res.summary()
    # one row per metric, the cost breakdown's parts as "cost_breakdown_per_mtok_usd.<part>"
    flat = {(n, m): s for n, metrics in doc["scenarios"].items() for m, s in metric_items(metrics)}
    scenario_rows = frame[frame.p_b_below_a.isna()]
    assert scenario_rows.shape == (len(flat), 5 + len(SUMMARY_KEYS))
    assert ("h100", "cost_breakdown_per_mtok_usd.die") in flat
    assert list(frame.columns) == ["scenario", "metric", *SUMMARY_KEYS, "p_b_below_a", "p_b_better", "p_tie"]
    assert ("h100", "failures_by_class.host.failures_per_year") in flat
    for row in scenario_rows.itertuples(index=False):
        s = flat[(row.scenario, row.metric)]
        assert all(getattr(row, k) == s[k] for k in SUMMARY_KEYS)


def test_to_frame_of_a_compare_has_the_paired_rows_of_table_csv(res, tmp_path):
    """Per metric the paired ratio B / A and P(B better) in the metric's direction: P(B < A)
    for cost, P(B >= A) = 1 - P(B < A) for availability and tokens/s; the same rows as
    table.csv of the same comparison written with --out."""
    import pandas as pd

    frame = res.to_frame()
    paired = frame[frame.scenario == "lite-h100-2x-fastswap / h100"].set_index("metric")
    doc = res.summary()["paired"]
    assert set(paired.index) == {f"{m} ratio" for m in doc}
    for m, d in doc.items():
        row = paired.loc[f"{m} ratio"]
        assert [row[k] for k in SUMMARY_KEYS] == [d["ratio"][k] for k in SUMMARY_KEYS]
        assert row["p_b_below_a"] == d["p_b_below_a"]
    assert paired.loc["cost_per_mtok_usd ratio", "p_b_better"] == doc["cost_per_mtok_usd"]["p_b_below_a"]
    assert paired.loc["availability ratio", "p_b_better"] == 1.0 - doc["availability"]["p_b_below_a"]
    written = mc.compare("h100", "lite-h100-2x-fastswap", trials=1024, seed=5, out=tmp_path / "o")
    csv = pd.read_csv(tmp_path / "o" / "table.csv")
    mine = written.to_frame()
    assert list(csv.columns) == list(mine.columns) and len(csv) == len(mine)
    pd.testing.assert_frame_equal(csv[csv.p_b_below_a.notna()].reset_index(drop=True),
                                  mine[mine.p_b_below_a.notna()].reset_index(drop=True), check_dtype=False)


@pytest.mark.parametrize("name", ["compare", "run", "sweep", "tornado", "sobol", "yield_", "reliability", "roofline", "paper", "bench"])
def test_public_functions_have_explicit_keywords(name):
    """No bare ``**kwargs``: completion and help() show every option."""
    import inspect

    params = inspect.signature(getattr(mc, name)).parameters
    assert all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in params.values()), params
    if name in ("compare", "run", "sweep", "tornado", "sobol"):
        assert {"trials", "seed", "overrides", "out", "force", "progress"} <= set(params)


def test_every_public_api_function_is_explicit():
    import inspect

    for name in mc.__all__:
        fn = getattr(mc, name)
        if callable(fn):
            assert all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in inspect.signature(fn).parameters.values()), name


def test_figure_helpers_return_figures_that_display():
    from matplotlib.figure import Figure

    from mcengine.report.stages import roofline_figures
    from mcengine.standalone.roofline import roofline_summary
    from mcengine.scenario import load_scenario

    figs = roofline_figures({"scenario": "h100", **roofline_summary(load_scenario("h100"))})
    assert list(figs) == ["roofline.png"] and all(isinstance(f, Figure) for f in figs.values())
    html = figs._repr_html_()
    assert html.count("<img src='data:image/png;base64,") == 1 and "roofline.png" in html


def test_run_figures_display_too(res):
    from matplotlib.figure import Figure

    from mcengine.report.figures import run_figures

    figs = run_figures(res)
    assert "paired_ratio.png" in figs and all(isinstance(f, Figure) for f in figs.values())
    assert figs._repr_html_().count("<img") == len(figs)


def test_notebook_bar_only_in_a_kernel():
    """``progress="auto"`` draws nothing outside a Jupyter kernel (the tests, a script);
    the bar's HTML is a real <progress> element with the trial counts."""
    from mcengine.report.progress import NotebookBar, progress_for

    assert progress_for("auto", "x") is None and progress_for(None, "x") is None
    assert progress_for(print, "x") is print
    html = NotebookBar("h100 vs lite-h100").html(2048, 8192)
    assert "<progress value='2048' max='8192'" in html and "2,048 / 8,192 trials" in html


def test_html_repr_names_every_scenario(res):
    html = res._repr_html_()
    assert html.startswith("<table>") and "h100" in html and "lite-h100-2x-fastswap" in html
    assert "cost per M output tokens" in html


def test_repr_is_readable_not_a_dataclass_dump(res):
    text = repr(res)
    assert text.startswith("Results('h100 vs lite-h100-2x-fastswap'") and "lite-h100-2x-fastswap" in text
    assert "summaries=" not in text and "Accumulators" not in text and len(text) < 1000


def test_plot_rejects_an_unknown_kind(res):
    from mcengine.errors import InputError

    with pytest.raises(InputError, match="cost_cdf"):
        res.plot("pie")
