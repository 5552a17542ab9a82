"""The command line (mcengine/cli.py): one test per command, each printing one JSON
document with the INTERFACE.md keys and a number recomputed without the CLI; bad input
is exit 2 with the key named on stderr and nothing on stdout."""

from __future__ import annotations

import json
import math
import tomllib

import numpy as np
import pytest


def test_scenarios_lists_shipped_with_descriptions(cli):
    r = cli("scenarios", "--json")
    assert r.code == 0
    rows = {row["name"]: row["description"] for row in json.loads(r.out)["scenarios"]}
    assert {"h100", "lite-h100", "lite-h100-2x", "lite-h100-2x-fastswap"} <= set(rows)
    assert all(rows.values())


def test_check_prints_resolved_toml_and_json(cli):
    toml_out = cli("check", "lite-h100", "--set", "fab.scribe_mm=0.2")
    json_out = cli("check", "lite-h100", "--set", "fab.scribe_mm=0.2", "--json")
    assert toml_out.code == json_out.code == 0
    doc = json.loads(json_out.out)
    assert doc["fab"]["scribe_mm"] == 0.2 and doc["reliability"]["repair_crews"] == "inf"
    assert tomllib.loads(toml_out.out)["fab"] == doc["fab"]


def test_validate_passes_every_closed_form(cli):
    r = cli("validate", "--json")
    assert r.code == 0, r.out[-2000:]
    doc = json.loads(r.out)
    stages = {c["stage"] for c in doc["checks"]}
    assert doc["passed"] and {"fab", "reliability", "roofline", "sensitivity"} <= stages
    # each row's verdict recomputed from its own printed numbers (mcengine/validation/check.py)
    for c in doc["checks"]:
        assert c["passed"] is (abs(c["got"] - c["expected"]) <= c["tolerance"]), c["name"]
        assert c["tolerance"] >= 0.0, c["name"]


def test_stage_command_writes_summary_and_scenario(cli, tmp_path):
    r = cli("reliability", "h100", "--lifetimes", "64", "--json", "--out", str(tmp_path))
    assert r.code == 0, r.err
    assert json.loads((tmp_path / "summary.json").read_text()) == json.loads(r.out)
    assert tomllib.loads((tmp_path / "h100.toml").read_text())["name"] == "h100"


# ----------------------------------------------------------------------------- one test per command
# Each: exit 0, stdout is exactly one JSON document with the INTERFACE.md keys, and one
# number recomputed independently of the command.

SMALL = ["--set", "cluster.instances=4", "--set", "cluster.spare_gpus=8"]
#: A GPU drawing its 700 W TDP whatever the load: energy then reads the power price alone.
IDLE_IS_TDP = ["--set", "gpu.idle_w=700"]
DISTRIBUTION = {"mean", "std", "sem", "p01", "p05", "p50", "p95", "p99", "min", "max"}


def one_document(r) -> dict:
    """The single JSON document on stdout (json.loads rejects any extra data after it)."""
    assert r.code == 0, r.err
    assert r.out.endswith("\n")
    return json.loads(r.out)


def test_cli_yield(cli):
    from mcengine.stages.fab.geometry import wafer_map

    doc = one_document(cli("yield", "h100", "--wafers", "256", "--seed", "2", "--json"))
    assert (doc["scenario"], doc["seed"], doc["wafers"]) == ("h100", 2, 256) and doc["elapsed_s"] > 0
    for key in ("die_yield", "good_dies_per_wafer", "cost_per_good_die_usd", "gpu_cost_usd"):
        assert set(doc[key]) == DISTRIBUTION, key
    assert {"poisson", "murphy", "negative_binomial", "seeds", "moore"} <= set(doc["analytic"])
    # configs/h100.toml geometry: 300 mm wafer, 3 mm edge, 25.9 x 31.4 mm die, 0.1 mm scribe
    assert isinstance(doc["dies_per_wafer"], int)
    assert doc["dies_per_wafer"] == wafer_map(300, 3, 25.9, 31.4, 0.1).dies
    # Poisson yield at the median defect density (0.1 /cm2 over 25.9 x 31.4 mm)
    assert doc["analytic"]["poisson"] == pytest.approx(math.exp(-0.1 * 2.59 * 3.14), rel=1e-12)


def test_cli_reliability(cli):
    from mcengine.scenario import load_scenario
    from mcengine.scenario.sampling import draw_inputs
    from mcengine.stages.reliability import lifetimes

    doc = one_document(cli("reliability", "h100", "--lifetimes", "48", "--seed", "5", "--json", *SMALL))
    assert (doc["scenario"], doc["seed"], doc["lifetimes"]) == ("h100", 5, 48) and doc["elapsed_s"] > 0
    for key in ("instance_availability", "failures_per_year", "interruptions_per_year", "swaps_per_year", "stockout_hours"):
        assert set(doc[key]) == DISTRIBUTION, key
    # the stage called directly on lifetimes 0..47 of seed 5
    s = load_scenario("h100", ["cluster.instances=4", "cluster.spare_gpus=8"])
    cols = lifetimes(s, draw_inputs(s, 5, 0, 48), 5)
    assert doc["events"] == int(cols["events"].sum())
    assert doc["instance_availability"]["mean"] == pytest.approx(float(cols["instance_availability"].mean()), rel=1e-12)


def test_cli_roofline(cli):
    from mcengine.scenario import load_scenario
    from mcengine.standalone.roofline import roofline_summary

    shipped = roofline_summary(load_scenario("h100"))
    doc = one_document(cli("roofline", "h100", "--json"))
    assert doc["scenario"] == "h100" and doc["elapsed_s"] > 0
    assert set(doc["prefill"]) >= {"ttft_ms", "tokens_per_s", "bound"}
    assert set(doc["decode"]) >= {"batch", "tpot_ms", "tokens_per_s", "bound"}
    assert {doc["prefill"]["bound"], doc["decode"]["bound"]} <= {"compute", "memory", "network"}
    assert doc["parallelism"]["tensor"] * doc["parallelism"]["pipeline"] == 8  # one 8-GPU instance
    # the study, computed in-process without the CLI
    assert doc["tokens_per_s_per_gpu"] == shipped["tokens_per_s_per_gpu"]
    assert doc["decode"] == json.loads(json.dumps(shipped["decode"]))


def test_cli_run(cli):
    from mcengine import api

    doc = one_document(cli("run", "h100", "--trials", "1024", "--seed", "3", "--quiet", "--json", *SMALL))
    assert (doc["scenario"], doc["seed"], doc["trials"]) == ("h100", 3, 1024) and doc["elapsed_s"] > 0
    block = doc["scenarios"]["h100"]
    for metric in ("cost_per_mtok_usd", "availability", "tokens_per_s", "gpu_cost_usd"):
        assert set(block[metric]) == DISTRIBUTION, metric
    # the API with the same seed: the per-trial table's median, an even count's two middle
    # trials (the CLI's is streamed with 0.1% relative accuracy on the value at its rank,
    # summaries.py QuantileSketch)
    t = api.run(["h100"], trials=1024, seed=3, overrides=["cluster.instances=4", "cluster.spare_gpus=8"]).trials
    middle = np.sort(t["cost_per_mtok_usd"].to_numpy())[511:513]
    assert middle[0] * (1 - 1e-3) <= block["cost_per_mtok_usd"]["p50"] <= middle[1] * (1 + 1e-3)
    assert block["cost_per_mtok_usd"]["mean"] == pytest.approx(float(t["cost_per_mtok_usd"].mean()), rel=1e-12)


def test_cli_compare(cli):
    from mcengine import api

    doc = one_document(cli("compare", "h100", "lite-h100", "--trials", "1024", "--seed", "4", "--quiet", "--json", *SMALL))
    assert doc["scenario"] == "h100 vs lite-h100" and list(doc["scenarios"]) == ["h100", "lite-h100"]
    p = doc["paired"]["cost_per_mtok_usd"]["p_b_below_a"]
    assert 0.0 <= p <= 1.0
    assert set(doc["paired"]["cost_per_mtok_usd"]["ratio"]) == DISTRIBUTION
    res = api.compare("h100", "lite-h100", trials=1024, seed=4, overrides=["cluster.instances=4", "cluster.spare_gpus=8"])
    t = res.trials
    a = t[t.scenario == "h100"].set_index("trial")["cost_per_mtok_usd"]
    b = t[t.scenario == "lite-h100"].set_index("trial")["cost_per_mtok_usd"]
    assert p == float((b < a).mean()) == res.summary()["paired"]["cost_per_mtok_usd"]["p_b_below_a"]


def test_cli_sweep(cli):
    from mcengine.scenario import load_scenario
    from mcengine.scenario.sampling import draw_inputs
    from mcengine.units import HOURS_PER_YEAR

    doc = one_document(cli("sweep", "h100", "--param", "econ.pue", "--values", "1.1,1.5", "--output", "energy_usd",
                           "--trials", "16", "--seed", "1", "--quiet", "--json", *SMALL, *IDLE_IS_TDP))
    assert doc["param"] == "econ.pue" and [row["value"] for row in doc["rows"]] == [1.1, 1.5]
    assert (doc["scenario"], doc["seed"], doc["trials"]) == ("h100", 1, 16)
    # energy = 32 active GPUs x 0.7 kW (idle = TDP: whatever the load) x PUE x 5 years x
    # the drawn power price of each trial
    price = draw_inputs(load_scenario("h100"), 1, 0, 16)["econ.power_usd_per_kwh"]
    for row in doc["rows"]:
        assert set(row) == {"value", "energy_usd"} and set(row["energy_usd"]) == DISTRIBUTION
        expected = 32 * 0.7 * row["value"] * 5 * HOURS_PER_YEAR * price
        assert row["energy_usd"]["mean"] == pytest.approx(float(expected.mean()), rel=1e-12)
        assert row["energy_usd"]["max"] == pytest.approx(float(expected.max()), rel=1e-12)


def test_cli_sensitivity_tornado(cli):
    from mcengine.scenario import load_scenario
    from mcengine.units import HOURS_PER_YEAR

    doc = one_document(cli("sensitivity", "h100", "--method", "tornado", "--output", "energy_usd", "--trials", "8",
                           "--seed", "1", "--quiet", "--json", *SMALL, *IDLE_IS_TDP))
    assert (doc["method"], doc["output"]) == ("tornado", "energy_usd")
    s = load_scenario("h100", ["gpu.idle_w=700"])
    assert set(doc["bars"]) == set(s.uncertain_inputs())
    # energy reads one uncertain input: its bar is the energy at the 5th and 95th
    # percentile of U(0.05, 0.12) $/kWh; every other bar is flat at the baseline
    per_usd = 32 * 0.7 * 1.3 * 5 * HOURS_PER_YEAR
    bar = doc["bars"]["econ.power_usd_per_kwh"]
    assert bar["low"] == pytest.approx(per_usd * (0.05 + 0.05 * 0.07), rel=1e-12)
    assert bar["high"] == pytest.approx(per_usd * (0.05 + 0.95 * 0.07), rel=1e-12)
    assert list(doc["bars"])[0] == "econ.power_usd_per_kwh"
    for key, other in doc["bars"].items():
        if key != "econ.power_usd_per_kwh":
            assert other["low"] == other["high"] == doc["baseline"], key


def test_cli_sensitivity_sobol(cli):
    from scipy import stats

    doc = one_document(cli("sensitivity", "h100", "--method", "sobol", "--output", "energy_usd", "--trials", "16",
                           "--seed", "2", "--quiet", "--json", *SMALL, *IDLE_IS_TDP))
    assert (doc["method"], doc["output"], doc["trials"]) == ("sobol", "energy_usd", 16)
    for key, ix in doc["indices"].items():
        assert set(ix) >= {"S1", "S1_conf", "ST", "ST_conf"}, key
    # energy reads only the power price: every other index (model noise included) is exactly 0
    for key, ix in doc["indices"].items():
        if key != "econ.power_usd_per_kwh":
            assert (ix["S1"], ix["ST"]) == (0.0, 0.0), key
    power = doc["indices"]["econ.power_usd_per_kwh"]
    z = stats.t.ppf(0.5 + doc["conf_level"] / 2, doc["scramblings"] - 1)  # *_conf are half-widths of t standard errors
    assert abs(power["ST"] - 1.0) <= 4 * power["ST_conf"] / z
    assert abs(power["S1"] - 1.0) <= 4 * power["S1_conf"] / z


def test_cli_sensitivity_scramblings_sets_the_designs_groups(cli):
    """``--scramblings R`` reaches the design (its R groups, t with R - 1 degrees of
    freedom); a value that is not a power of two from 2 to N, or the option with a
    tornado, is refused naming the option (exit 2)."""
    doc = one_document(cli("sensitivity", "h100", "--method", "sobol", "--output", "energy_usd", "--trials", "16",
                           "--scramblings", "4", "--seed", "2", "--quiet", "--json", *SMALL, *IDLE_IS_TDP))
    assert doc["scramblings"] == 4
    for bad, method in (("3", "sobol"), ("32", "sobol"), ("4", "tornado")):
        r = cli("sensitivity", "h100", "--method", method, "--trials", "16", "--scramblings", bad, "--quiet", *SMALL)
        assert r.code == 2 and "scramblings" in r.err and bad in r.err and "Traceback" not in r.err, (bad, method, r.err)


def test_cli_bench_quick_fab(cli):
    doc = one_document(cli("bench", "--quick", "--stage", "fab", "--json"))
    assert doc["quick"] is True and set(doc) == {"machine", "quick", "fab", "provenance"}
    assert doc["fab"]["wafers"] == 2048 and set(doc["fab"]["cases"]) == {"h100", "lite-h100"}
    assert all(row["wafers_per_s"] > 0 for row in doc["fab"]["cases"].values())
    import numba

    assert doc["machine"]["numba_threads"] == numba.config.NUMBA_NUM_THREADS


def test_cli_scenarios_and_check_json_are_single_documents(cli):
    from mcengine import api

    listed = one_document(cli("scenarios", "--json"))
    assert [row["name"] for row in listed["scenarios"]] == [n for n, _ in api.scenarios()]
    resolved = one_document(cli("check", "h100", "--json"))
    assert resolved["cluster"]["instances"] == 128 and resolved == api.check("h100").to_dict(with_unset=True)
    assert resolved["econ"]["gpu_price_usd"] is None  # an optional key left unset is shown, as null


def test_check_toml_shows_unset_keys_as_comments_and_reads_back(cli):
    import tomllib

    from mcengine import api

    text = cli("check", "h100").out
    assert "# gpu_price_usd: not set (optional)" in text.split("[econ]")[1].split("\n[")[0]
    back = tomllib.loads(text)
    for comp in back["reliability"]["components"].values():  # each law stated every way (derived)
        assert comp.pop("resolved")["mttf_hours"] > 0
    assert back == api.check("h100").to_dict()


def test_set_reaches_one_number_of_a_shipped_model_card(cli):
    """workload.model names a shipped card: --set workload.model.layers changes that card's
    layer count only, and the card's name says so (the shipped name would label a different model)."""
    import json

    doc = json.loads(cli("check", "h100", "--set", "workload.model.layers=40", "--json").out)
    card = json.loads(cli("check", "h100", "--json").out)["workload"]["model"]
    assert doc["workload"]["model"] == {**card, "layers": 40, "name": "llama-3-70b (layers=40)"}
    again = ["--set", "workload.model.heads=32", "--set", "workload.model.layers=41"]
    doc = json.loads(cli("check", "h100", "--set", "workload.model.layers=40", *again, "--json").out)
    assert doc["workload"]["model"]["name"] == "llama-3-70b (heads=32, layers=41)"


def test_set_reaches_one_number_of_a_request_classes_model_card(cli):
    """Issue 51 case 6: a class without a model serves workload.model, so
    --set workload.classes.a.model.layers=40 edits that card (it gave class a a 'custom'
    card with the defaults' hidden size and heads); a class naming a card edits that one."""
    import json

    mix = [a for kv in ("workload.classes.a.share=1", "workload.classes.a.prompt_tokens=1000", "workload.classes.a.output_tokens=200")
           for a in ("--set", kv)]
    small = ["--set", 'workload.model="llama-3-8b"', *mix]
    card = json.loads(cli("check", "h100", *small, "--json").out)["workload"]["model"]
    doc = json.loads(cli("check", "h100", *small, "--set", "workload.classes.a.model.layers=40", "--json").out)
    assert doc["workload"]["classes"]["a"]["model"] == {**card, "layers": 40, "name": "llama-3-8b (layers=40)"}
    assert doc["workload"]["model"] == card
    named = ["--set", 'workload.classes.a.model="mixtral-8x7b"', "--set", "workload.classes.a.model.layers=8"]
    doc = json.loads(cli("check", "h100", *small, *named, "--json").out)
    assert doc["workload"]["classes"]["a"]["model"]["name"] == "mixtral-8x7b (layers=8)"


# ----------------------------------------------------------------------------- bad input: exit 2


@pytest.mark.parametrize("args, key", [
    (["yield", "h100", "--wafers", "0"], "--wafers"),
    (["reliability", "h100", "--lifetimes", "-3"], "--lifetimes"),
    (["yield", "h100", "--seed", "-1"], "--seed"),
    (["run", "h100", "--trials", "1024", "--set", "fab.scribe_mm=-1"], "fab.scribe_mm"),
    (["roofline", "h100", "--set", "gpu.hbm_gb=0"], "gpu.hbm_gb"),
    (["check", "h100", "--set", "econ.pue=0.5"], "econ.pue"),
    (["check", "h100", "--set", "econ.puee=1.2"], "econ.puee"),
    (["sweep", "h100", "--param", "econ.nope", "--values", "1,2"], "econ.nope"),
    (["sensitivity", "h100", "--method", "morris"], "--method"),
    (["sensitivity", "h100", "--trials", "100"], "--trials"),
    (["bench", "--quick", "--stage", "gpu"], "--stage"),
    (["compare", "h100"], "SCENARIO"),
    (["run", "no-such-scenario"], "no-such-scenario"),
    (["run", "h100", "--sampler", "halton"], "--sampler"),
    (["run", "h100", "--sampler", "sobol", "--trials", "8"], "--trials"),
])
def test_bad_input_is_exit_2_naming_the_key_with_nothing_on_stdout(cli, args, key):
    r = cli(*args, "--json")
    assert r.code == 2, (r.code, r.err)
    assert r.out == ""
    assert key in r.err


def test_cli_sampler_sobol_reports_its_scramblings(cli):
    doc = one_document(cli("compare", "h100", "lite-h100", "--trials", "64", "--seed", "2", "--sampler", "sobol", "--quiet",
                           "--json", *SMALL))
    assert (doc["sampler"], doc["scramblings"]) == ("sobol", 16)
    plain = one_document(cli("compare", "h100", "lite-h100", "--trials", "64", "--seed", "2", "--quiet", "--json", *SMALL))
    assert "sampler" not in plain
    assert doc["scenarios"]["h100"]["cost_per_mtok_usd"]["mean"] != plain["scenarios"]["h100"]["cost_per_mtok_usd"]["mean"]
