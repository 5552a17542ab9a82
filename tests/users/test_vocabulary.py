"""One vocabulary (issue 50, item 6): `tornado` and `sobol` are commands of their own (the
sensitivity study with that method), and a sample-size option given to a command whose
sample is counted in other units names that command's own option (real processes)."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.procs import env, python


def _mcengine(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(python("-m", "mcengine", *args), capture_output=True, text=True, env=env(), timeout=120)


@pytest.mark.parametrize("command, given, own", [("yield", "--trials", "--wafers"), ("reliability", "--trials", "--lifetimes"),
                                                 ("run", "--wafers", "--trials")])
def test_a_sample_size_option_of_another_command_suggests_this_ones(command, given, own):
    got = _mcengine(command, "h100", given, "5")
    assert got.returncode == 2 and got.stdout == ""
    assert f"No such option: {given} (the sample size of `mcengine {command}` is {own} N)" in got.stderr
    assert "--threads" not in got.stderr  # the spelling-alike option Click suggested before


def test_a_command_without_a_sample_keeps_clicks_message():
    got = _mcengine("roofline", "h100", "--trials", "5")
    assert got.returncode == 2 and "No such option: --trials" in got.stderr and "sample size" not in got.stderr


@pytest.mark.parametrize("method", ["tornado", "sobol"])
def test_tornado_and_sobol_are_the_sensitivity_study_with_that_method(method):
    got = _mcengine(method, "--help")
    assert got.returncode == 0 and f"mcengine sensitivity --method {method}" in got.stdout
    assert "--method" not in got.stdout.replace(f"--method {method}", "")
    bad = _mcengine(method, "h100", "--metric", "nonsense", "--trials", "16")
    assert bad.returncode == 2 and "nonsense" in bad.stderr and "Traceback" not in bad.stderr


def test_one_rounding_per_metric_in_run_and_sweep():
    # the issue: `run` printed the cost ratio 0.663, `sweep` the same metric 0.6643
    from mcengine.report import sensitivity, tables
    from mcengine.report.metrics import fmt_metric
    from tests.report.test_narrow import narrow, run_doc, sweep_doc

    run, sweep = run_doc(), sweep_doc(False)
    for metrics in run["paired_all"].values():
        metrics["cost_per_mtok_usd"]["ratio"]["p50"] = 0.66431
    sweep["rows"][0]["cost_per_mtok_usd"]["p50"] = 0.66431
    assert fmt_metric("cost_per_mtok_usd", 0.66431, ratio=True) == "0.664"
    assert "0.664 " in narrow(tables.render_run(run)) and "0.664 " in narrow(sensitivity.render(sweep))
    assert "0.6643" not in narrow(sensitivity.render(sweep))
    assert fmt_metric("tokens_per_s", 431_492.4) == "431,492" and fmt_metric("tokens_per_s", 0.8951, ratio=True) == "0.895"


def _json(*args: str) -> dict:
    got = _mcengine(*args, "--json")
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout)


def _numbers(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k not in ("elapsed_s", "provenance")}


def test_stage_commands_take_several_scenarios_each_as_it_runs_alone():
    both = _json("roofline", "h100", "lite-h100")
    assert list(both["scenarios"]) == ["h100", "lite-h100"]
    assert _numbers(both["scenarios"]["lite-h100"]) == _numbers(_json("roofline", "lite-h100"))
    aimed = _json("yield", "h100", "lite-h100", "--wafers", "256", "--set", "B:fab.wafer_cost_usd=20000")
    alone = _json("yield", "lite-h100", "--wafers", "256", "--set", "fab.wafer_cost_usd=20000")
    assert _numbers(aimed["scenarios"]["lite-h100"]) == _numbers(alone)
    assert _numbers(aimed["scenarios"]["h100"]) == _numbers(_json("yield", "h100", "--wafers", "256"))
    text = _mcengine("reliability", "h100", "lite-h100", "--lifetimes", "4")
    assert text.returncode == 0 and "h100" in text.stdout and "lite-h100" in text.stdout
