"""The fab benchmark harness runs (quick mode) and reports what `mcengine bench` prints.

No wall-clock assertion: only the structure and the model agreement of kernel and peer.
"""

from __future__ import annotations

import json

from mcengine.bench import fab


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
        assert c["ratio"] == c["kernel_dies_per_s"] / c["numpy_dies_per_s"]
        assert 0 < c["kernel_uniforms_per_die"] <= 1.0  # at most one draw per die
        # both engines sample the same model: yields agree loosely even on a quick sample
        assert abs(c["kernel_die_yield"] - c["numpy_die_yield"]) < 0.05
    assert set(out["first_call_s"]) >= {"simulate_wafers_s", "simulate_runs_s", "geometry_s"}
    assert all(v > 0 for v in out["production_runs_trials_per_s"].values())
