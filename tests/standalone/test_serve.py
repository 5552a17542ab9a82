"""`mcengine serve`: the simulator on a shipped scenario's plan (its unloaded latency is
the roofline's, it rises with demand), the command's outputs and its errors."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from mcengine.scenario import load_scenario
from mcengine.standalone.roofline import roofline_summary
from mcengine.standalone.serve import correlation_widening, serve_summary, serving_system, warmup_requests


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
    cut = warmup_requests(table, "mser5")  # the default warm-up: MSER-5's
    assert len(table) == 3000 and table.measured.sum() == doc["requests_measured"] == 3000 - cut and cut <= 1500
    assert doc["ttft_ms"]["p99"] == pytest.approx(np.quantile(table.ttft_s[table.measured], 0.99) * 1e3)
    parts = [np.quantile(b, 0.99) for b in np.array_split(table.ttft_s[table.measured].to_numpy(), 20)]
    widen = correlation_widening(doc["batch_correlation"]["ttft"])  # sectioning's error, widened where its batches correlate
    assert doc["ttft_sem_ms"]["p99"] == pytest.approx(np.std(parts, ddof=1) / np.sqrt(20) * widen * 1e3)
    assert 0 < doc["slo_attainment"] <= 1 and doc["goodput_requests_per_s"] <= doc["arrival_rate_per_s"]
    assert (out / "latency_cdf.png").stat().st_size > 0 and json.loads((out / "summary.json").read_text())["seed"] == 5
    again = cli("serve", "h100", "--demand", "20000", "--instances", "8", "--requests", "3000", "--seed", "5", "--json")
    assert json.loads(again.out)["ttft_ms"] == doc["ttft_ms"]
    share = json.loads(cli("serve", "h100", "--demand", "20000", "--instances", "8", "--requests", "3000", "--seed", "5", "--warmup", "0.2", "--json").out)
    assert share["requests_measured"] == 2400
    assert (doc["warmup"], doc["warmup_rule"], share["warmup"], share["warmup_rule"]) == (cut / 3000, "mser5", 0.2, 0.2)
    refused = cli("serve", "h100", "--demand", "20000", "--instances", "8", "--warmup", "mser")
    assert refused.code == 2 and "--warmup" in refused.err and "mser5" in refused.err


def test_serve_reports_the_spread_of_request_lengths(cli, tmp_path):
    """``workload.load.length_cv`` (a scenario key) spreads each simulated request's prompt
    and output; the command reports it and the measured mean lengths, and the per-request
    table holds each request's prompt tokens."""
    out = tmp_path / "spread"
    r = cli("serve", "h100", "--demand", "20000", "--instances", "8", "--requests", "3000", "--out", str(out), "--json",
            "--set", "workload.load.length_cv=0.8")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    table = pd.read_parquet(out / "requests.parquet")
    assert doc["length_cv"] == 0.8 and table.prompt_tokens.nunique() > 100
    measured = table[table.measured]
    assert doc["prompt_tokens_mean"] == pytest.approx(measured.prompt_tokens.mean()) and doc["prompt_tokens_mean"] != 2048
    assert doc["output_tokens_mean"] == pytest.approx(measured.output_tokens.mean())
    assert 0.7 < table.prompt_tokens.std() / table.prompt_tokens.mean() < 0.9
    text = cli("serve", "h100", "--demand", "20000", "--instances", "8", "--requests", "500", "--set", "workload.load.length_cv=0.8")
    assert text.code == 0 and "(CV 0.8)" in text.out


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


def test_the_pages_reading_of_the_load_table_quotes_the_committed_grid():
    """The reading under docs/serve.md's load table quotes docs/serve/load-table.csv: each
    figure it states is recomputed from the table, so a regenerated grid that moves one
    fails here until the reading is rewritten."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    t = pd.read_csv(root / "docs" / "serve" / "load-table.csv")
    page = " ".join((root / "docs" / "serve.md").read_text().split())

    def cells(design, mode, **at):
        rows = t[(t.design == design) & (t["mode"] == mode)]
        for key, value in at.items():
            rows = rows[np.isclose(rows[key], value)] if isinstance(value, float) else rows[rows[key] == value]
        return rows

    h, lite, cont = cells("h100", "disaggregated"), cells("lite-h100", "disaggregated"), t[t["mode"] == "continuous"]
    at_9 = t[(t["mode"] == "disaggregated") & np.isclose(t.load, 0.9)]
    static = t[(t["mode"] == "static") & (t.load >= 0.3)]
    light = {d: cells(d, "static", load=0.1) for d in ("h100", "lite-h100")}
    gamma_9 = cells("lite-h100", "disaggregated", load=0.9, arrival="gamma")
    quoted = [
        f"the P50 TTFT is the unloaded pass at every load ({h.ttft_p50_ms.max():,.0f} ms h100, {lite.ttft_p50_ms.min():,.0f} ms Lite",
        f"P99 TTFT {at_9[at_9.design == 'h100'].ttft_p99_ms.min():,.0f}–{at_9[at_9.design == 'h100'].ttft_p99_ms.max():,.0f} ms on h100 and "
        f"{at_9[at_9.design == 'lite-h100'].ttft_p99_ms.min():,.0f}–{at_9[at_9.design == 'lite-h100'].ttft_p99_ms.max():,.0f} ms on the Lite",
        f"cell has {gamma_9.slo_attainment.iloc[0]:.0%}".replace("%", " %") + " of its requests within both SLOs",
        f"(P99 {h.tpot_p99_ms.min():.1f} → {h.tpot_p99_ms.max():.1f} ms h100, {lite.tpot_p99_ms.min():.1f} → {lite.tpot_p99_ms.max():.1f} ms Lite)",
        f"P99 TTFT {cont.ttft_p99_ms.min():,.0f}–{cont.ttft_p99_ms.max():,.0f} ms, P99 TPOT rising with the running batch from "
        f"{cont.tpot_p99_ms.min():.0f} ms to {cont.tpot_p99_ms.max():.0f} ms",
        f"from 0.3 ({static.ttft_p99_ms.min():,.0f}–{static.ttft_p99_ms.max():,.0f} ms)",
        f"({light['h100'][light['h100'].arrival == 'gamma'].ttft_p99_ms.iloc[0]:,.0f} against {light['h100'][light['h100'].arrival == 'poisson'].ttft_p99_ms.iloc[0]:,.0f} ms on h100, "
        f"{light['lite-h100'][light['lite-h100'].arrival == 'gamma'].ttft_p99_ms.iloc[0]:,.0f} against {light['lite-h100'][light['lite-h100'].arrival == 'poisson'].ttft_p99_ms.iloc[0]:,.0f} ms on the Lite)",
    ]
    for text in quoted:
        assert text in page, text
    assert (cont.slo_attainment == 1.0).all() and (cont.tpot_p99_ms < 50.0).all()  # "both SLOs hold up to 0.9"


CHAT = ["workload.classes.chat.share=0.7", "workload.classes.chat.prompt_tokens=1024", "workload.classes.chat.output_tokens=128"]
CODE = ["workload.classes.code.share=0.3", "workload.classes.code.prompt_tokens=2048", "workload.classes.code.output_tokens=32"]


def test_a_one_class_mix_serves_as_the_scenario_without_classes():
    """One class of the scenario's own lengths takes every instance and every request: the
    same simulation, the same numbers to the bit."""
    from mcengine import api

    plain = api.check("h100")
    mixed = api.check("h100", ["workload.classes.only.share=1", "workload.classes.only.prompt_tokens=2048",
                               "workload.classes.only.output_tokens=256"])
    a, _ = serve_summary(plain, 20_000, requests=3_000, instances=4, mode="continuous", arrival="gamma", arrival_cv=2.0)
    b, table = serve_summary(mixed, 20_000, requests=3_000, instances=4, mode="continuous", arrival="gamma", arrival_cv=2.0)
    for key in ("ttft_ms", "tpot_ms", "slo_attainment", "utilisation", "in_flight_mean"):
        assert a[key] == b[key], key
    assert list(b["classes"]) == ["only"] and set(table.request_class) == {"only"}


def test_a_mix_gives_each_class_its_share_of_requests_instances_and_load():
    """Chat 70 % / code 30 % of the requests at half the mix's capacity on 16 instances: each
    class gets its share of the requests, whole instances in proportion to the instance time
    its tokens need (the chain's split), and runs at the mix's load (utilisation 0.5 each,
    within 0.03); its inter-arrival CV is the thinned stream's, sqrt(r 4 + 1 - r)."""
    from mcengine import api
    from mcengine.analytic import mix as mx
    from mcengine.standalone.serve import mix_systems

    s = api.check("h100", CHAT + CODE)
    classes = mix_systems(s, "continuous", 16)
    assert [(n, r) for n, r, _ in classes] == [("chat", pytest.approx(0.7)), ("code", pytest.approx(0.3))]
    rates = [np.array([c.capacity_tokens_per_s / c.instances]) for _, _, c in classes]
    weights = mx.output_token_weights([np.array([0.7]), np.array([0.3])], [128, 32])
    assert [c.instances for _, _, c in classes] == [int(w[0]) for w in mx.whole_instance_rate(weights, rates, 16)[1]]
    capacity = sum(c.capacity_tokens_per_s for _, _, c in classes)
    body, table = serve_summary(s, 0.5 * capacity, requests=20_000, mode="continuous", instances=16, arrival="gamma", arrival_cv=2.0)
    assert body["instances"] == 16 and body["load"] == pytest.approx(0.5)
    for name, share in (("chat", 0.7), ("code", 0.3)):
        c = body["classes"][name]
        assert (table.request_class == name).sum() == round(20_000 * share)
        assert c["utilisation"] == pytest.approx(0.5, abs=0.03)
        assert c["arrival_cv"] == pytest.approx(np.sqrt(share * 4 + 1 - share))
    assert body["utilisation"] == pytest.approx(0.5, abs=0.03)


def test_the_fast_model_of_a_mix_is_each_class_at_its_share():
    """The fast model of the mix, disaggregated at 0.6 of its capacity (Poisson), against each
    class's simulation within the table's tolerances (10 % on the P99s, 5 % on the means)."""
    from mcengine import api
    from mcengine.standalone.serve import fast_mix_latency, mix_systems

    s = api.check("h100", CHAT + CODE)
    classes = mix_systems(s, "disaggregated", 16)
    capacity = sum(c.capacity_tokens_per_s for _, _, c in classes)
    body, _ = serve_summary(s, 0.6 * capacity, requests=20_000, mode="disaggregated", instances=16)
    rate = body["demand_tokens_per_s"] / sum(r * c.output_tokens for _, r, c in classes)
    fast = fast_mix_latency(classes, rate)
    for name, _, _ in classes:
        sim, f = body["classes"][name], fast[name]
        assert f.ttft_q_s * 1e3 == pytest.approx(sim["ttft_ms"]["p99"], rel=0.10), name
        assert f.ttft_mean_s * 1e3 == pytest.approx(sim["ttft_ms"]["mean"], rel=0.05), name
        assert f.tpot_q_s * 1e3 == pytest.approx(sim["tpot_ms"]["p99"], rel=0.10), name
        assert f.tpot_mean_s * 1e3 == pytest.approx(sim["tpot_ms"]["mean"], rel=0.05), name
