"""Your own part, consistent (issue 50, item 2, in part): a precision that disagrees with
the weight size is warned about on stderr (`check`, `run`, `compare`), never silently
computed; the shipped scenarios raise no warning."""

from __future__ import annotations

import subprocess

from mcengine import api
from mcengine.scenario.consistency import consistency_warnings
from tests.procs import env, python


def test_fp8_with_bf16_weights_is_warned_about_and_consistent_files_are_not():
    fp8 = api.check("h100", {"workload.precision": "fp8"})
    (text,) = consistency_warnings(fp8)
    assert "workload.precision = 'fp8'" in text and "workload.bytes_per_param = 2" in text and "gpu.peak_tflops" in text
    assert consistency_warnings(api.check("h100", {"workload.precision": "fp8", "workload.bytes_per_param": 1})) == []
    assert consistency_warnings(api.check("h100", {"workload.bytes_per_param": 1})) == []  # "auto" follows the weights
    for name, _ in api.scenarios():
        assert consistency_warnings(api.check(name)) == [], name


def test_check_prints_the_warning_on_stderr_and_exits_0():
    got = subprocess.run(python("-m", "mcengine", "check", "h100", "--set", 'workload.precision="fp8"'), capture_output=True, text=True,
                         env=env(), timeout=120)
    assert got.returncode == 0 and got.stderr.startswith("warning: h100: workload.precision = 'fp8'")
    assert got.stdout.startswith("name = ") or "[workload]" in got.stdout
