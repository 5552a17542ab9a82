"""`"provenance"` in every JSON document, summary.json and the trials.parquet parts."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from mcengine import __version__, api
from mcengine.provenance import PARQUET_KEY, scenario_sha256, sha256_of
from mcengine.scenario import load_scenario

KEYS = {"mcengine_version", "command_line", "seed", "sample_size", "overrides", "scenarios_sha256", "versions"}


def test_scenario_fingerprint_is_the_sha256_of_its_canonical_dict():
    s = load_scenario("h100")
    assert scenario_sha256(s) == sha256_of(s.to_dict()) and len(scenario_sha256(s)) == 64
    assert scenario_sha256(load_scenario("h100", ["econ.pue=1.4"])) != scenario_sha256(s)


def test_every_json_document_carries_provenance(cli):
    for args in (("yield", "h100", "--wafers", "64"), ("reliability", "h100", "--lifetimes", "4"), ("roofline", "h100"),
                 ("scenarios",), ("keys", "gpu"), ("bench", "--quick", "--stage", "fab")):
        r = cli(*args, "--json")
        assert r.code == 0, (args, r.err)
        prov = json.loads(r.out)["provenance"]
        assert KEYS <= set(prov), args
        assert prov["mcengine_version"] == __version__ and prov["command_line"] == ["mcengine", *args, "--json"]
        assert prov["versions"]["numpy"] and prov["versions"]["numba"] and prov["versions"]["python"]


def test_a_call_from_python_records_the_command_of_its_own_arguments(monkeypatch, tmp_path):
    """Called from Python (no CLI), an API function records the command of the arguments it
    was given, as the CLI takes them, not sys.argv (a host script's or pytest's), and leaves
    sys.argv as it was; inside another call (compare runs run), the outer call's command.
    Overrides given as a generator reach both the command and the run."""
    import sys

    monkeypatch.setattr(sys, "argv", ["host.py", "--out", "elsewhere"])
    roof = api.roofline("h100", {"econ.pue": 1.4})
    assert roof["provenance"]["command_line"] == ["mcengine", "roofline", "h100", "--set", "econ.pue=1.4"]
    once = api.roofline("h100", (text for text in ["econ.pue=1.4"]))  # a generator is read once, for both
    assert once["provenance"]["command_line"] == roof["provenance"]["command_line"] and once["tokens_per_s_per_gpu"] == roof["tokens_per_s_per_gpu"]
    assert once["provenance"]["overrides"] == [{"set": "econ.pue=1.4", "scenarios": ["h100"]}]
    fab = api.yield_(load_scenario("h100"), 64, seed=3, out=tmp_path / "y")
    command = ["mcengine", "yield", "h100", "--wafers", "64", "--seed", "3", "--out", str(tmp_path / "y")]
    assert fab["provenance"]["command_line"] == command
    assert json.loads((tmp_path / "y" / "summary.json").read_text())["provenance"]["command_line"] == command
    pair = api.compare("h100", "lite-h100", trials=1024, seed=5, overrides=["econ.pue=1.3"], progress=None, figures=False).summary()
    assert pair["provenance"]["command_line"] == ["mcengine", "compare", "h100", "lite-h100", "--trials", "1024", "--seed", "5",
                                                  "--set", "econ.pue=1.3"]
    assert sys.argv == ["host.py", "--out", "elsewhere"]


def test_run_provenance_has_seed_size_overrides_and_scenario_hashes(cli):
    r = cli("run", "h100", "--trials", "1024", "--seed", "5", "--json", "--quiet", "--set", "econ.pue=1.4")
    prov = json.loads(r.out)["provenance"]
    assert (prov["seed"], prov["sample_size"]) == (5, {"trials": 1024})
    assert prov["overrides"] == [{"set": "econ.pue=1.4", "scenarios": ["h100"]}]
    assert prov["scenarios_sha256"] == {"h100": scenario_sha256(load_scenario("h100", ["econ.pue=1.4"]))}


def test_provenance_states_the_calibration_of_each_scenario():
    """docs/sources.md#roof-calibration: the precision, its efficiencies and where they come from."""
    from mcengine.provenance import calibration

    assert calibration(load_scenario("h100")) == {
        "precision": "bf16",
        "compute_efficiency": {"dist": "uniform", "low": 0.47, "high": 0.71},
        "memory_efficiency": {"dist": "uniform", "low": 0.82, "high": 0.88},
        "kv_efficiency": {"dist": "uniform", "low": 0.28, "high": 0.4},
        "efficiency_from": {"compute": "table", "memory": "table", "kv": "table"},
        "allreduce_impl": "custom",
    }
    fp8 = calibration(load_scenario("lite-h100", ["workload.bytes_per_param=1", "workload.memory_efficiency=0.6"]))
    assert fp8["precision"] == "fp8" and fp8["compute_efficiency"]["low"] == 0.33
    assert fp8["memory_efficiency"] == 0.6 and fp8["efficiency_from"] == {"compute": "table", "memory": "set", "kv": "memory"}
    assert fp8["kv_efficiency"] == 0.6
    kv_set = calibration(load_scenario("h100", ["workload.kv_efficiency=0.5"]))
    assert (kv_set["kv_efficiency"], kv_set["efficiency_from"]["kv"]) == (0.5, "set")


def test_provenance_never_changes_the_numbers_or_the_run_fingerprint(tmp_path):
    from mcengine.provenance import reset_command_line, set_command_line

    token = set_command_line(["mcengine", "something", "else"])
    try:
        a = api.run(["h100"], trials=1024, out=tmp_path / "a", keep_trials=True, figures=False).summary()
    finally:
        reset_command_line(token)
    b = api.run(["h100"], trials=1024, out=tmp_path / "b", keep_trials=True, figures=False).summary()
    assert a["scenarios"] == b["scenarios"] and a["provenance"]["command_line"] != b["provenance"]["command_line"]
    run_a, run_b = (json.loads((tmp_path / d / "run.json").read_text()) for d in "ab")
    assert run_a["provenance"] != run_b["provenance"] and run_a["fingerprint"] == run_b["fingerprint"]
    manifests = [json.loads((tmp_path / d / "mcengine.json").read_text())["fingerprint"] for d in "ab"]
    assert manifests[0] == manifests[1]


def test_summary_json_and_parquet_parts_carry_provenance(cli, tmp_path):
    out = tmp_path / "r"
    r = cli("run", "h100", "--trials", "2048", "--chunk-trials", "1024", "--out", str(out), "--keep-trials", "--quiet", "--json")
    assert r.code == 0, r.err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["provenance"]["sample_size"] == {"trials": 2048}
    parts = sorted((out / "trials.parquet").glob("part-*.parquet"))
    assert len(parts) == 2
    for part in parts:
        meta = pq.read_schema(part).metadata
        prov = json.loads(meta[PARQUET_KEY])
        assert prov["seed"] == summary["seed"] and prov["scenarios_sha256"] == summary["provenance"]["scenarios_sha256"]


def test_version_option_prints_the_version(cli):
    r = cli("--version")
    assert r.code == 0 and r.out.strip() == f"mcengine {__version__}"
