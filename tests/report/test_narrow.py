"""Every table reads at 80 columns: full scenario and key names, no "…", no Python reprs,
counts with thousands separators (each failed on the tables before issue 21)."""

from __future__ import annotations


import pytest

from mcengine.report import sensitivity, tables
from mcengine.report.tables import as_text

NAMES = ("h100", "lite-h100", "lite-h100-2x", "lite-h100-2x-fastswap")
KEY = "fab.defect_density_per_cm2"


def _s(x: float) -> dict:
    return {"mean": x, "std": 0.1 * x, "sem": 0.001 * x, "p01": 0.8 * x, "p05": 0.9 * x, "p50": x, "p95": 1.1 * x, "p99": 1.2 * x,
            "min": 0.7 * x, "max": 1.3 * x}


def run_doc() -> dict:
    metrics = {"cost_per_mtok_usd": 1.2, "availability": 0.99988, "tokens_per_s": 194_300.0, "gpu_cost_usd": 3488.0,
               "interruptions_per_year": 146.0, "capex_usd": 5e7, "energy_usd": 1e7, "repair_usd": 1e5, "slo_met": 1.0}
    doc = {"scenario": "case-study", "seed": 0, "trials": 2048, "baseline": "h100",
           "scenarios": {n: {k: _s(v) for k, v in metrics.items()} for n in NAMES}}
    doc["paired_all"] = {f"{n} / h100": {k: {"ratio": _s(1.01), "p_b_below_a": 0.25} for k in ("cost_per_mtok_usd", "availability", "tokens_per_s")}
                         for n in NAMES[1:]}
    doc["paired"] = doc["paired_all"]["lite-h100 / h100"]
    return doc


def sweep_doc(two: bool) -> dict:
    outputs = ["cost_per_mtok_usd", "availability", "tokens_per_s", "gpu_cost_usd"]
    params = [KEY, "B:workload.collective_start_us"] if two else KEY
    values = [[0.05, 0.1], [1, 20]] if two else [0.05, 0.1, 0.2]
    grid = [[a, b] for a in values[0] for b in values[1]] if two else values
    rows = [{"value": v, **{m: _s(1.0 + i / 10) for m in outputs}, "p_b_below_a": {m: 0.2 for m in outputs}} for i, v in enumerate(grid)]
    return {"scenario": "h100 vs lite-h100-2x-fastswap", "seed": 0, "trials": 1024, "ratio_of": "lite-h100-2x-fastswap / h100",
            "param": params, "values": values, "outputs": outputs, "rows": rows, "crossings": {m: [] for m in outputs}}


def tornado_doc() -> dict:
    bars = {k: {"input_low": 13283.0, "input_high": 21757.0, "low": 1.3, "high": 1.33, "swing": 0.03}
            for k in ("workload.collective_start_us", KEY, "econ.power_usd_per_kwh")}
    return {"method": "tornado", "scenario": "lite-h100-2x-fastswap", "output": "cost_per_mtok_usd", "trials": 1024,
            "quantiles": [0.05, 0.95], "baseline": 1.316, "bars": bars}


def bench_doc() -> dict:
    return {"machine": {"python": "3.11", "cpus": 2}, "quick": True,
            "fab": {"warmup_and_compile_s": 0.45, "wafers": 2048, "cases": {n: {"wafers_per_s": 19806.5} for n in NAMES[:2]}},
            "reliability": {"lifetimes": 256, "cases": {n: {"lifetimes_per_s": 5702.3, "events_per_s": 32825306.7} for n in NAMES}},
            "chain": {"cases": {"case-study": {"trials_per_s_1_thread": 3106.6, "speedup": 0.61, "projected_s_for_1e6_trials": 525.9,
                                               "stage_seconds": {"fab": 0.018, "reliability": 0.21, "roofline": 0.0115, "econ": 0.0003},
                                               "orchestration_overhead": 1.26}}}}


def narrow(renderable) -> str:
    text = as_text(renderable, 80)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text, text
    return text


def test_run_table_keeps_every_scenario_name_at_80_columns():
    text = narrow(tables.render_run(run_doc()))
    for n in NAMES:
        assert n in text
    assert "194,300" in text and "P(B better)" in text


def test_run_table_p_better_follows_the_metric_direction():
    # P(B < A) = 0.25 everywhere: better for cost (0.250), worse for availability (0.750 better)
    text = narrow(tables.render_run(run_doc()))
    assert "0.250" in text and "0.750" in text


@pytest.mark.parametrize("two", [False, True])
def test_sweep_tables_keep_keys_and_names(two):
    text = narrow(sensitivity.render(sweep_doc(two)))
    assert KEY in text and "lite-h100-2x-fastswap" in text
    if two:
        assert "B:workload.collective_start_us" in text


def test_tornado_keys_whole_and_counts_with_separators():
    text = narrow(sensitivity.render(tornado_doc()))
    assert "workload.collective_start_us" in text and KEY in text
    assert "13,283" in text and "e+04" not in text


def test_bench_renders_a_table_per_harness_not_dict_reprs():
    text = narrow(tables.render_bench(bench_doc()))
    assert "{" not in text and "'" not in text
    for harness in ("bench: fab", "bench: reliability", "bench: chain"):
        assert harness in text
    assert "lite-h100-2x-fastswap" in text and "32,825,307" in text and "19,806" in text


def test_fmt_value_uses_separators_not_exponents():
    assert tables.fmt_value(194_300.0) == "194,300"
    assert tables.fmt_value(0.61234) == "0.6123"
    assert tables.fmt_value(2048) == "2,048"
    assert tables.fmt_value(0.0003) == "3.000e-04"


# ------------------------------------------------------------ issue 33: long labels, piped output
#: A swept value 90 characters long (a `dist` table given in --values).
LONG_VALUE = '{dist = "lognormal", median = 0.1, sigma = 0.3, low = 0.01, high = 10.0, shared = false}'


def _cells_whole(text: str, cells) -> None:
    """Each number appears whole on one line (never cut, never wrapped)."""
    for cell in cells:
        assert cell in text, (cell, text)


def test_sweep_with_a_long_value_label_keeps_every_column_at_80():
    doc = sweep_doc(False)
    for row in doc["rows"]:
        row["value"] = LONG_VALUE
    doc["values"] = [LONG_VALUE] * 3
    text = narrow(sensitivity.render(doc))
    header = next(line for line in text.splitlines() if "median" in line)
    assert "5% – 95%" in header and "P(B better)" in header  # no column squeezed to nothing
    _cells_whole(text, ["0.900 – 1.100", "0.990 – 1.210", "0.200"])  # the ratio in the rounding `run` uses
    # the label folds over lines, never cut: its first column, read across lines, holds it whole
    folded = "".join(line.strip("│ ").split("│")[0].strip() for line in text.splitlines() if "│" in line)
    assert "".join(LONG_VALUE.split()) in "".join(folded.split())


def test_validate_names_every_row_whole_and_tallies(cli):
    """Roofline rows (long calibration names) at 80 columns: no name cut, the calibration
    rows in a table whose expected column says "measured", and the tally line."""
    from mcengine.validation import roofline

    doc = {"checks": [c.to_dict() for c in roofline.checks()]}
    text = narrow(tables.render_validate(doc, every=True))
    flat = " ".join(text.split())
    for c in doc["checks"]:
        words = c["name"].split()
        assert words[-1] in flat and words[0] in flat
    assert "measured" in text and "closed form" in text
    tally = tables.validate_tally(doc)
    assert f"{len(doc['checks'])} checks: {tally['pass']} pass, {tally['known miss']} known miss, {tally['FAIL']} FAIL" in text
    assert tally["pass"] + tally["known miss"] == len(doc["checks"]) and tally["known miss"] > 0
    assert {c["basis"] for c in doc["checks"] if c["name"].startswith("calibration:")} == {"measured"}


@pytest.mark.parametrize("name", ["h100", "lite-h100"])
def test_roofline_tables_keep_mode_and_row_names_at_80(name):
    from mcengine.scenario import load_scenario
    from mcengine.standalone import roofline

    body = roofline.roofline_summary(load_scenario(name))
    text = narrow(tables.render_roofline({"scenario": name, **body}))
    for word in ("static", "continuous", "disaggregated", "tokens/s per GPU", "TPOT ms", "chosen"):
        assert word in text


def test_piped_sweep_output_has_no_cut_cells(cli):
    """The CLI's stdout when piped (not a terminal: rich's 80 columns): the real sweep."""
    r = cli("sweep", "h100", "--param", "fab.defect_density_per_cm2", "--values",
            '{dist="lognormal", median=0.1, sigma=0.3},{dist="uniform", low=0.05, high=0.3}', "--trials", "64")
    assert r.code == 0, r.err
    assert "…" not in r.out and max(len(line) for line in r.out.splitlines()) <= 80
