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


def test_new_gpu_writes_a_scenario_derived_by_the_shipped_rules(tmp_path):
    path = tmp_path / "mygpu.toml"
    got = subprocess.run(python("-m", "mcengine", "new-gpu", "mygpu", "--fraction", "0.5", "--out", str(path)), capture_output=True,
                         text=True, env=env(), timeout=120)
    assert got.returncode == 0, got.stderr
    s, h100, half = api.check(str(path)), api.check("h100"), api.check("lite-h100-half")
    area = s.fab.die_width_mm.median() * s.fab.die_height_mm.median()
    assert abs(area / (0.5 * h100.fab.die_width_mm.median() * h100.fab.die_height_mm.median()) - 1) < 1e-6  # dimensions kept to 1 nm
    assert s.gpu.peak_tflops.to_toml() == {p: 0.5 * h100.gpu.peak_tflops.at(p).median() for p in ("bf16", "fp8", "fp4")}
    # the shipped half-die design is derived by the same rules: the same die, stacks, memory and power
    for key in ("hbm_gb", "hbm_tbps", "tdp_w", "link_gbps"):
        assert getattr(s.gpu, key).median() == getattr(half.gpu, key).median(), key
    assert s.fab.hbm_stacks == half.fab.hbm_stacks and "wrote" in got.stdout and "4 HBM stacks" in got.stdout
    again = subprocess.run(python("-m", "mcengine", "new-gpu", "mygpu", "--out", str(path)), capture_output=True, text=True, env=env(), timeout=120)
    assert again.returncode == 2 and "never replaced" in again.stderr
    bad = subprocess.run(python("-m", "mcengine", "new-gpu", "x", "--fraction", "2", "--out", str(tmp_path / "x.toml")), capture_output=True,
                         text=True, env=env(), timeout=120)
    assert bad.returncode == 2 and "gpu.derive.fraction" in bad.stderr and not (tmp_path / "x.toml").exists()
