"""The failure-heavy benchmark cluster (benchmarks/harness/reliability.py): h100 with every
GPU component's rates ten times the shipped ones, everything else as shipped."""

from __future__ import annotations

import pytest


def test_failure_heavy_is_h100_with_ten_times_its_gpu_rates():
    from benchmarks.harness.instructions import CASES
    from benchmarks.harness.reliability import FAILURE_HEAVY, failure_heavy
    from mcengine.scenario import load_scenario

    heavy, shipped = failure_heavy(), load_scenario("h100")
    assert CASES["h100-heavy"] == (FAILURE_HEAVY,)
    got = dict(heavy.reliability.components)
    for name, part in shipped.reliability.components:
        if part.per == "gpu":  # die 0.025 -> 0.25 /GPU-yr permanent, 0.044 -> 0.44 transient, ...
            assert got[name].afr.value == pytest.approx(10 * part.afr.value, rel=1e-12)
            assert got[name].transient_afr.value == pytest.approx(10 * part.transient_afr.value, rel=1e-12)
        else:  # the NICs' as shipped
            assert got[name] == part
    assert heavy.reliability.host_afr == shipped.reliability.host_afr
    assert heavy.cluster == shipped.cluster
