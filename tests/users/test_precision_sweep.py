"""A precision that disagrees with the weight size, the peak table or the efficiencies is
warned about, naming the keys: in a sweep once per point where it disagrees (issue 50,
item 2: a sweep of workload.precision over bf16, fp8 must not pass silently), and in a
scenario that sets a one-number efficiency beside a precision's table."""

from __future__ import annotations

import json
import subprocess

import pytest

from mcengine import api
from mcengine.scenario.consistency import consistency_warnings, sweep_warnings
from tests.procs import env, python


def test_a_sweep_point_that_disagrees_is_named_once_and_a_point_that_agrees_is_not():
    bases = [api.check("h100"), api.check("lite-h100")]
    fp8 = [api.check(s.name, {"workload.precision": "fp8"}) for s in bases]
    both = [api.check(s.name, {"workload.precision": "fp8", "workload.bytes_per_param": 1}) for s in bases]
    got = sweep_warnings(["workload.precision"], [("bf16",), ("fp8",), ("fp8",)], [bases, fp8, fp8])
    assert len(got) == 2  # one per scenario, the repeated point not repeated
    assert all(t.startswith('at workload.precision = "fp8": ') and "workload.bytes_per_param = 2" in t for t in got)
    assert sweep_warnings(["workload.precision"], [("bf16",), ("fp8",)], [bases, both]) == []
    # a disagreement at every point is the base's own: said once, without a point
    scalar = api.check("h100", {"workload.precision": "fp8", "workload.bytes_per_param": 1, "gpu.peak_tflops": 1000})
    (text,) = sweep_warnings(["gpu.tdp_w"], [(600.0,), (700.0,)], [[scalar], [scalar]])
    assert text.startswith("h100: gpu.peak_tflops is one number")


def test_a_one_number_efficiency_beside_a_precision_table_names_both_keys():
    s = api.check("h100", {"workload.precision": "fp8", "workload.bytes_per_param": 1, "workload.compute_efficiency": 0.5})
    (text,) = consistency_warnings(s)
    assert "workload.compute_efficiency = 0.5" in text and "workload.efficiency.fp8 (compute 0.45)" in text
    # at bf16 the one-number keys are what they always were: no warning
    assert consistency_warnings(api.check("h100", {"workload.compute_efficiency": 0.5})) == []


def test_check_warns_about_the_efficiency_key_on_stderr():
    got = subprocess.run(python("-m", "mcengine", "check", "h100", "--set", 'workload.precision="fp8"', "--set", "workload.bytes_per_param=1",
                                "--set", "workload.memory_efficiency=0.8"), capture_output=True, text=True, env=env(), timeout=120)
    assert got.returncode == 0
    assert got.stderr.count("warning:") == 1 and "workload.memory_efficiency = 0.8" in got.stderr and "workload.efficiency.fp8" in got.stderr


@pytest.mark.slow
def test_sweep_of_precision_warns_once_at_the_point_that_disagrees():
    got = subprocess.run(python("-m", "mcengine", "sweep", "h100", "--param", "workload.precision", "--values", "bf16,fp8", "--trials", "16",
                                "--json"), capture_output=True, text=True, env=env(), timeout=600)
    assert got.returncode == 0, got.stderr
    lines = [line for line in got.stderr.splitlines() if line.startswith("warning:")]
    assert len(lines) == 1 and lines[0].startswith('warning: at workload.precision = "fp8": h100: ')
    assert "workload.bytes_per_param = 2" in lines[0]
    assert json.loads(got.stdout)["warnings"] == [lines[0].removeprefix("warning: ")]
