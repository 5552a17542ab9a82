"""The fab harness (quick mode): both engines run, and both sample the model they claim.

No wall-clock assertion: only the structure and the agreement of each engine's die yield
with the closed form (harvest integral) within 4 standard errors.
"""

from __future__ import annotations

import json
import math

import pytest

from benchmarks.harness import fab

pytestmark = pytest.mark.slow


def test_quick_bench_reports_both_engines_side_by_side():
    out = fab.run(quick=True)
    json.dumps(out)
    assert out["quick"] is True
    cases = out["cases"]
    threads = sorted({c["threads"] for c in cases})
    assert threads[0] == 1
    assert {(c["die"], c["harvesting"]) for c in cases} == {(d, h) for d in fab.CASES for h in (True, False)}
    for c in cases:
        assert c["kernel_dies_per_s"] > 0 and c["numpy_dies_per_s"] > 0
        assert 0 < c["kernel_uniforms_per_die"] <= 1.0  # at most one draw per die
        for engine in ("kernel", "numpy"):
            got, sem = c[f"{engine}_die_yield"], c[f"{engine}_die_yield_sem"]
            assert abs(got - c["closed_form_die_yield"]) <= 4 * sem, (engine, c)
    assert set(out["first_call_s"]) >= {"simulate_wafers_s", "simulate_runs_s", "geometry_s"}
    assert all(v > 0 for v in out["production_runs_trials_per_s"].values())
    assert math.isfinite(out["min_ratio"])
