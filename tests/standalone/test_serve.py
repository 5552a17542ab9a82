"""`mcengine serve`: the simulator on a shipped scenario's plan (its unloaded latency is
the roofline's, it rises with demand), the command's outputs and its errors."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from mcengine.scenario import load_scenario
from mcengine.standalone.roofline import roofline_summary
from mcengine.standalone.serve import serve_summary, serving_system


@pytest.fixture(scope="module")
def lite():
    return load_scenario("lite-h100")


def test_an_unloaded_disaggregated_request_sees_the_roofline_ttft_and_tpot(lite):
    """At 0.1% load on one prefill and one decode instance most requests meet no other
    (0.1 in flight on average): the median TTFT is the prefill pass's latency plus the KV
    transfer, as the roofline has it (one prompt per pass on the Lite), and the median
    TPOT a decode step of one sequence."""
    system = serving_system(lite, "disaggregated", 2)
    body, _ = serve_summary(lite, 0.001 * system.capacity_tokens_per_s, requests=500, instances=2, mode="disaggregated")
    row = roofline_summary(lite)["serving_modes"]["disaggregated"]
    assert system.prefill_batch_max == row["prefill"]["batch"] == 1
    assert body["ttft_ms"]["p50"] == pytest.approx(row["ttft_ms"], rel=1e-9)
    assert body["tpot_ms"]["p50"] == pytest.approx(system.decode_s[1] * 1e3, rel=1e-9)


@pytest.mark.parametrize("mode", ["static", "continuous", "disaggregated"])
def test_p99_ttft_rises_with_demand(lite, mode):
    system = serving_system(lite, mode, 8)
    p99 = [serve_summary(lite, load * system.capacity_tokens_per_s, requests=4_000, instances=8, mode=mode)[0]["ttft_ms"]["p99"]
           for load in (0.1, 0.8)]
    assert p99[1] > p99[0]


def test_serve_command_writes_requests_and_the_cdf(cli, tmp_path):
    out = tmp_path / "serve"
    r = cli("serve", "h100", "--demand", "20000", "--instances", "8", "--requests", "3000", "--seed", "5", "--out", str(out), "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    table = pd.read_parquet(out / "requests.parquet")
    assert len(table) == 3000 and table.measured.sum() == doc["requests_measured"] == 2400
    assert doc["ttft_ms"]["p99"] == pytest.approx(np.quantile(table.ttft_s[table.measured], 0.99) * 1e3)
    assert 0 < doc["slo_attainment"] <= 1 and doc["goodput_requests_per_s"] <= doc["arrival_rate_per_s"]
    assert (out / "latency_cdf.png").stat().st_size > 0 and json.loads((out / "summary.json").read_text())["seed"] == 5
    again = cli("serve", "h100", "--demand", "20000", "--instances", "8", "--requests", "3000", "--seed", "5", "--json")
    assert json.loads(again.out)["ttft_ms"] == doc["ttft_ms"]


@pytest.mark.parametrize("args, key", [
    (("--demand", "0"), "--demand"),
    (("--demand", "100", "--arrival", "bursty"), "--arrival"),
    (("--demand", "100", "--cv", "3"), "--cv"),
    (("--demand", "100", "--mode", "fancy"), "--mode"),
    (("--demand", "100", "--lengths", "zipf"), "--lengths"),
    (("--demand", "100", "--instances", "0"), "--instances"),
    (("--demand", "100", "--mode", "disaggregated", "--instances", "1"), "--instances"),
])
def test_bad_input_is_a_clear_message_and_exit_2(cli, args, key):
    r = cli("serve", "h100", "--requests", "100", *args)
    assert r.code == 2 and key in r.err and "Traceback" not in r.err


def test_the_load_table_on_the_page_is_the_committed_grid():
    """docs/serve.md's load table is rendered from docs/serve/load-table.csv (regenerated
    together by docs/serve/make_load_table.py), over the whole grid."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "docs" / "serve" / "make_load_table.py"
    spec = importlib.util.spec_from_file_location("make_load_table", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    table = pd.read_csv(module.CSV)
    assert len(table) == len(module.DESIGNS) * len(module.MODES) * len(module.ARRIVALS) * len(module.LOADS)
    text = module.PAGE.read_text()
    block = text[text.index(module.BEGIN) + len(module.BEGIN):text.index(module.END)]
    assert block.strip() == module.render(table)
