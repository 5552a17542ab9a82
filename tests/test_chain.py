"""The full chain: paired comparisons, the economics identity, outputs on disk."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from mcengine import api
from mcengine.units import HOURS_PER_YEAR

SMALL = ["cluster.instances=4", "cluster.spare_gpus=8"]


def test_scenario_compared_with_itself_gives_ratio_exactly_one():
    res = api.compare("lite-h100", "lite-h100", trials=1024, seed=5, overrides=SMALL)
    paired = res.summary()["paired"]
    for metric, block in paired.items():
        ratio = block["ratio"]
        assert ratio["min"] == ratio["max"] == 1.0, metric
        assert block["p_b_below_a"] == 0.0
    assert set(res.summary()["scenarios"]) == {"lite-h100", "lite-h100#2"}


FAILURE_FREE = [
    "reliability.host_afr=0",
    "reliability.host_transient_afr=0",
    "reliability.components={die={afr=0.0}}",
    "fab.defect_density_per_cm2=0.1",
    "fab.defect_clustering=3.0",
    "fab.wafer_cost_usd=17000",
    "workload.compute_efficiency=0.45",
    "workload.memory_efficiency=0.65",
    "workload.collective_start_us=5",
    "workload.hop_latency_us=1",
    "econ.gpu_markup=7.5",
    "econ.power_usd_per_kwh=0.08",
    "gpu.idle_w=80",
    "workload.comm_overlap=0",  # one overlap (the shipped one is a dist): one tokens/s in every trial
]


def test_economics_identity_on_a_failure_free_cluster():
    res = api.run(["h100"], trials=1024, seed=2, overrides=FAILURE_FREE)
    t = res.trials
    s = api.check("h100", FAILURE_FREE)
    assert (t["availability"] == 1.0).all()
    assert (t["repairs"] == 0).all()
    horizon_h = 5 * HOURS_PER_YEAR
    # the markup on the die, packaging and test; HBM and optics at cost; 130 hosts of 8 and
    # 2 in the host pool at $32,000; scale-out $1,500 and an NVLink port per GPU slot, its
    # trial's price per GB/s x 450 GB/s ($2,375-2,875)
    price = (t["gpu_cost_die_usd"] + t["gpu_cost_packaging_usd"] + t["gpu_cost_test_usd"]) * 7.5 + t["gpu_cost_hbm_usd"] + t["gpu_cost_optics_usd"]
    port = t["input.econ.scale_up_port_cost_per_gbps_usd"] * 450
    assert port.between(2375, 2875).all() and port.nunique() > 1
    capex = 1040 * price + (130 + 2) * 32000 + 1040 * (1500 + port)
    power_w = 80 + (700 - 80) * t["busy_fraction"]  # always up: utilisation x availability 1
    energy = 1024 * power_w / 1000 * 1.3 * horizon_h * 0.08
    tokens = t["tokens_per_s_instance"] * 128 * horizon_h * 3600
    np.testing.assert_allclose(t["cost_per_mtok_usd"], (capex + energy) / (tokens / 1e6), rtol=1e-12)
    assert s.total_gpus == 1040
    # fixed roofline inputs: the same throughput in every trial
    assert t["tokens_per_s_instance"].nunique() == 1


def test_outputs_written_and_readable(tmp_path):
    out = tmp_path / "run"
    res = api.compare("h100", "lite-h100", trials=2048, seed=1, overrides=SMALL, out=out, chunk_trials=1024)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["trials"] == 2048 and summary["seed"] == 1
    for name in ("h100", "lite-h100"):
        assert (out / f"{name}.toml").is_file()
        block = summary["scenarios"][name]
        for metric in ("cost_per_mtok_usd", "availability", "tokens_per_s", "gpu_cost_usd"):
            assert set(block[metric]) == {"mean", "std", "sem", "p01", "p05", "p50", "p95", "p99", "min", "max"}
    for fig in ("cost_per_mtok_cdf.png", "availability.png", "cost_breakdown.png", "paired_ratio.png"):
        assert (out / fig).read_bytes()[:4] == b"\x89PNG"
    table = pd.read_parquet(out / "trials.parquet")
    assert len(table) == 2 * 2048
    assert {"scenario", "trial", "cost_per_mtok_usd", "gpu_cost_usd", "input.fab.defect_density_per_cm2"} <= set(table.columns)
    assert table.equals(res.trials)
    cheaper = summary["paired"]["cost_per_mtok_usd"]["p_b_below_a"]
    h = table[table.scenario == "h100"].set_index("trial")["cost_per_mtok_usd"]
    lite = table[table.scenario == "lite-h100"].set_index("trial")["cost_per_mtok_usd"]
    assert cheaper == pytest.approx(float((lite < h).mean()), abs=1e-12)


def test_cli_run_json_is_one_document(cli):
    r = cli("compare", "h100", "lite-h100", "--trials", "1024", "--json", "--quiet", *sum((["--set", o] for o in SMALL), []))
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["scenario"] == "h100 vs lite-h100" and doc["trials"] == 1024
    assert "paired" in doc


def test_default_run_is_the_case_study(cli):
    r = cli("run", "--trials", "1024", "--quiet", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["scenario"] == "case-study"
    assert list(doc["scenarios"]) == ["h100", "lite-h100", "lite-h100-2x", "lite-h100-2x-fastswap"]
    assert set(doc["paired_all"]) == {f"{n} / h100" for n in ("lite-h100", "lite-h100-2x", "lite-h100-2x-fastswap")}
    assert 0.0 <= doc["paired"]["cost_per_mtok_usd"]["p_b_below_a"] <= 1.0
