"""The benchmark harnesses run and report throughputs (speed itself is never asserted)."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow
def test_bench_quick_reports_every_harness(cli):
    r = cli("bench", "--quick", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert {"machine", "fab", "reliability", "chain"} <= set(doc)
    case = doc["chain"]["cases"]["case-study"]
    assert case["trials_per_s_2_threads"] > 0 and case["speedup_1_to_2_threads"] > 0
    assert doc["chain"]["memory"]["peak_rss_mb"] > 0
