"""One vocabulary (issue 50, item 6): `tornado` and `sobol` are commands of their own (the
sensitivity study with that method), and a sample-size option given to a command whose
sample is counted in other units names that command's own option (real processes)."""

from __future__ import annotations

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
