"""Bad input is exit 2 naming it (issue 34 cases 10-13): integer literals beyond Python's
digit limit, keys nested beyond the file depth, keys a sweep cannot vary, and a horizon
short enough to push the cost per token out of float range."""

from __future__ import annotations

import json
import math

import pytest

from mcengine.scenario.files import MAX_TOML_DEPTH, max_int_digits
from mcengine.scenario.sections.run import MIN_HORIZON_YEARS
from mcengine.units import HOURS_PER_YEAR

SMALL = ("--set", "cluster.instances=4", "--set", "cluster.spare_gpus=8")
NINES = "9" * (max_int_digits() + 700)


def _refused(r, *words):
    assert r.code == 2 and r.out == "" and "Traceback" not in r.err, (r.code, r.err[-500:])
    for word in words:
        assert word in r.err, r.err[-800:]
    assert len(r.err) < 2000  # the long value is shortened, not echoed three times


def test_an_integer_literal_beyond_pythons_digit_limit_is_refused_in_a_set(cli):
    _refused(cli("check", "h100", "--set", f"cluster.instances={NINES}"), "--set cluster.instances", f"at most {max_int_digits():,} digits")


def test_an_integer_literal_beyond_pythons_digit_limit_is_refused_in_a_file(cli, tmp_path):
    path = tmp_path / "big.toml"
    path.write_text(f'name = "big"\nextends = "h100"\n[cluster]\ninstances = {NINES}\n')
    _refused(cli("check", str(path)), str(path), f"at most {max_int_digits():,} digits")


@pytest.mark.parametrize("command", [("check", "h100"), ("run", "h100", "--trials", "64", "--quiet")])
def test_a_key_nested_beyond_the_file_depth_is_refused(cli, command):
    key = ".".join(["a"] * 2000)
    _refused(cli(*command, "--set", f"{key}=1"), "--set a.a.a", f"at most {MAX_TOML_DEPTH} dotted parts")


def test_a_key_at_the_file_depth_is_judged_as_a_key(cli):
    key = ".".join(["a"] * MAX_TOML_DEPTH)
    _refused(cli("check", "h100", "--set", f"{key}=1"), "unknown key")


@pytest.mark.parametrize("param", ["name", "extends", "description", "B:name"])
def test_a_key_that_identifies_the_scenario_is_not_swept(cli, param):
    """`sweep h100 --param name` was a raw KeyError."""
    _refused(cli("sweep", "h100", "lite-h100", "--param", param, "--values", "a,b", "--trials", "64"), f"--param: got '{param}'",
             "mcengine compare")


@pytest.mark.parametrize("years", ["1e-310", "1e-305", "1e-4"])
def test_a_horizon_below_one_hour_is_refused(cli, years):
    """1e-310 years overflowed the cost per token (exit 1); 1e-305 gave 3.7e305 USD per M tokens."""
    _refused(cli("run", "h100", "--trials", "64", "--quiet", *SMALL, "--set", f"run.horizon_years={years}"), "run.horizon_years")


def test_a_horizon_of_one_hour_gives_finite_numbers(cli):
    """At the bound (one hour) the cost per token and each of its parts are finite."""
    assert MIN_HORIZON_YEARS * HOURS_PER_YEAR == pytest.approx(1.0)

    def run(years):
        r = cli("run", "h100", "--trials", "64", "--quiet", "--json", *SMALL, "--set", f"run.horizon_years={years!r}")
        assert r.code == 0, r.err[-500:]
        return json.loads(r.out)["scenarios"]["h100"]

    hour = run(MIN_HORIZON_YEARS)
    cost = hour["cost_per_mtok_usd"]
    assert all(math.isfinite(cost[k]) for k in ("mean", "p50", "max")) and cost["p50"] > 0
    capex = hour["cost_breakdown_per_mtok_usd"]
    assert all(math.isfinite(v["mean"]) for v in capex.values())
