"""mcengine/api.py: the plain functions behind every command.

Each stage function returns the INTERFACE.md document (``scenario``, ``seed``, size key,
``elapsed_s`` around the study's body) and equals what the CLI prints with ``--json``;
the sensitivity fronts equal :mod:`mcengine.sensitivity.methods`; bad options are
InputErrors naming the option; the first API's names keep working.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from mcengine import api
from mcengine.errors import InputError
from mcengine.io import dumps
from mcengine.columns import paired_of
from mcengine.summaries import SUMMARY_KEYS
from mcengine.scenario import load_scenario
from mcengine.sensitivity import methods
from mcengine.standalone.fab import yield_summary
from mcengine.standalone.reliability import lifetime_summary

from .conftest import reads_in_pieces

SMALL = ["cluster.instances=4", "cluster.spare_gpus=8"]
RUN_METRICS = ("cost_per_mtok_usd", "availability", "tokens_per_s", "gpu_cost_usd")


def _without_elapsed(doc: dict) -> dict:
    """The document as JSON would carry it, without the wall-clock time and the provenance
    (which records the command line: it differs between the API and the CLI)."""
    out = json.loads(dumps(doc))
    out.pop("elapsed_s")
    out.pop("provenance", None)
    return out


def _cli_json(cli, *args) -> dict:
    r = cli(*args, "--json")
    assert r.code == 0, r.err
    return _without_elapsed(json.loads(r.out))


def test_every_exported_name_is_callable():
    assert len(api.__all__) == len(set(api.__all__))
    for name in api.__all__:
        assert callable(getattr(api, name)), name


def test_old_and_alias_names_are_the_same_functions():
    assert api.fab is api.yield_
    assert (api.yield_study, api.reliability_study, api.roofline_study) == (api.yield_, api.reliability, api.roofline)


def test_yield_document_equals_the_cli_and_wraps_the_study(cli):
    doc = api.yield_("h100", wafers=128, seed=3)
    assert list(doc)[:3] == ["scenario", "seed", "wafers"] and list(doc)[-1] == "elapsed_s"
    assert (doc["scenario"], doc["seed"], doc["wafers"]) == ("h100", 3, 128)
    assert doc["elapsed_s"] > 0
    assert {"dies_per_wafer", "die_yield", "good_dies_per_wafer", "cost_per_good_die_usd", "gpu_cost_usd", "analytic"} <= set(doc)
    assert set(doc["analytic"]) >= {"poisson", "murphy", "negative_binomial", "seeds", "moore"}
    assert tuple(doc["die_yield"]) == SUMMARY_KEYS
    assert _without_elapsed(doc) == _cli_json(cli, "yield", "h100", "--wafers", "128", "--seed", "3")
    body = json.loads(dumps(yield_summary(load_scenario("h100"), 128, 3)))
    assert {k: v for k, v in _without_elapsed(doc).items() if k not in ("scenario", "seed", "wafers")} == body
    # the alias and the old name give the same numbers
    assert _without_elapsed(api.fab("h100", wafers=128, seed=3)) == _without_elapsed(doc)
    assert _without_elapsed(api.yield_study("h100", wafers=128, seed=3)) == _without_elapsed(doc)


def test_yield_seed_defaults_to_the_scenario_and_overrides_apply():
    doc = api.yield_("h100", wafers=64, overrides=["run.seed=9", "fab.scribe_mm=0.2"])
    assert doc["seed"] == 9
    assert _without_elapsed(doc) == _without_elapsed(api.yield_("h100", wafers=64, seed=9, overrides=["fab.scribe_mm=0.2"]))
    # a wider scribe line: fewer dies per wafer than the shipped 0.1 mm
    assert doc["dies_per_wafer"] < api.yield_("h100", wafers=64, seed=9)["dies_per_wafer"]


def test_reliability_document_equals_the_cli_and_wraps_the_study(cli):
    doc = api.reliability("h100", lifetimes=32, seed=4, overrides=SMALL)
    assert (doc["scenario"], doc["seed"], doc["lifetimes"]) == ("h100", 4, 32) and list(doc)[-1] == "elapsed_s"
    for key in ("instance_availability", "failures_per_year", "interruptions_per_year", "swaps_per_year", "stockout_hours"):
        assert tuple(doc[key]) == SUMMARY_KEYS, key
    assert isinstance(doc["events"], int) and doc["events"] > 0
    args = ["reliability", "h100", "--lifetimes", "32", "--seed", "4"] + sum((["--set", o] for o in SMALL), [])
    assert _without_elapsed(doc) == _cli_json(cli, *args)
    body = json.loads(dumps(lifetime_summary(load_scenario("h100", SMALL), 32, 4)))
    assert {k: v for k, v in _without_elapsed(doc).items() if k not in ("scenario", "seed", "lifetimes")} == body
    assert _without_elapsed(api.reliability_study("h100", lifetimes=32, seed=4, overrides=SMALL)) == _without_elapsed(doc)


def test_roofline_document_equals_the_cli_and_the_study(cli):
    """Deterministic at the median inputs: no seed and no sample size in the document."""
    from mcengine.scenario import load_scenario
    from mcengine.standalone.roofline import roofline_summary

    h100_body = roofline_summary(load_scenario("h100"))
    doc = api.roofline("h100")
    assert doc["scenario"] == "h100" and "seed" not in doc and list(doc)[-1] == "elapsed_s"
    assert {"prefill", "decode", "tokens_per_s_per_gpu", "parallelism"} <= set(doc)
    assert doc["prefill"]["bound"] in ("compute", "memory", "network")
    assert {k: v for k, v in _without_elapsed(doc).items() if k != "scenario"} == json.loads(dumps(h100_body))
    assert _without_elapsed(doc) == _cli_json(cli, "roofline", "h100")
    assert _without_elapsed(api.roofline_study("h100")) == _without_elapsed(doc)


def test_run_returns_results_with_the_interface_summary():
    res = api.run(["h100"], trials=1024, seed=2, overrides=SMALL)
    doc = res.summary()
    assert (doc["scenario"], doc["seed"], doc["trials"]) == ("h100", 2, 1024) and doc["elapsed_s"] > 0
    assert list(doc["scenarios"]) == ["h100"] and "paired" not in doc
    for metric in RUN_METRICS:
        assert tuple(doc["scenarios"]["h100"][metric]) == SUMMARY_KEYS, metric
    t = res.trials
    assert len(t) == 1024 and t["trial"].tolist() == list(range(1024))
    # the summary is of the per-trial table
    assert doc["scenarios"]["h100"]["cost_per_mtok_usd"]["mean"] == pytest.approx(t["cost_per_mtok_usd"].mean(), rel=1e-12)
    assert doc["scenarios"]["h100"]["gpu_cost_usd"]["max"] == t["gpu_cost_usd"].max()


def test_run_json_carries_the_cost_breakdown_per_mtok_adding_up():
    """Per scenario, ``"cost_breakdown_per_mtok_usd"``: one distribution per part, each
    the summary of its per-trial column; the parts' means add up to the mean cost per
    Mtok; tidy frames and tables name them ``cost_breakdown_per_mtok_usd.<part>``."""
    from mcengine.stages.econ import BREAKDOWN_PARTS

    res = api.compare("h100", "lite-h100-2x", trials=1024, seed=4, overrides=SMALL)
    doc = res.summary()
    t = res.trials
    for name, s in doc["scenarios"].items():
        parts = s["cost_breakdown_per_mtok_usd"]
        assert tuple(parts) == BREAKDOWN_PARTS and all(tuple(d) == SUMMARY_KEYS for d in parts.values())
        assert sum(d["mean"] for d in parts.values()) == pytest.approx(s["cost_per_mtok_usd"]["mean"], rel=1e-12)
        rows = t[t.scenario == name]
        assert parts["energy"]["mean"] == pytest.approx(rows["cost_per_mtok_energy_usd"].mean(), rel=1e-12)
        for metric in ("gpu_price_per_h100_equivalent_usd", "energy_j_per_token", "power_w_per_h100_equivalent"):
            assert tuple(s[metric]) == SUMMARY_KEYS
    assert doc["scenarios"]["h100"]["cost_breakdown_per_mtok_usd"]["optics"]["max"] == 0.0
    assert doc["scenarios"]["lite-h100-2x"]["cost_breakdown_per_mtok_usd"]["optics"]["min"] > 0.0
    frame = res.to_frame()
    assert "cost_breakdown_per_mtok_usd.hbm" in set(frame.metric)
    assert "cost_breakdown_per_mtok_usd.hbm" in {r["metric"] for r in api.run_rows(doc)}


def test_compare_adds_paired_metrics_equal_to_the_trials():
    res = api.compare("h100", "lite-h100", trials=1024, seed=6, overrides=SMALL)
    doc = res.summary()
    assert doc["scenario"] == "h100 vs lite-h100" and list(doc["scenarios"]) == ["h100", "lite-h100"]
    assert set(doc["paired"]) == set(paired_of(False, False))  # two serving scenarios: no training metrics
    t = res.trials
    a = t[t.scenario == "h100"].set_index("trial")
    b = t[t.scenario == "lite-h100"].set_index("trial")
    for metric in paired_of(False, False):
        block = doc["paired"][metric]
        assert tuple(block["ratio"]) == SUMMARY_KEYS
        assert block["p_b_below_a"] == float((b[metric] < a[metric]).mean()), metric
        assert block["ratio"]["mean"] == pytest.approx(float((b[metric] / a[metric]).mean()), rel=1e-12), metric
    # the same call gives the same numbers
    again = api.compare("h100", "lite-h100", trials=1024, seed=6, overrides=SMALL).summary()
    assert _without_elapsed(again) == _without_elapsed(doc)


THROUGHPUT = ('workload.plan_objective="throughput"',)


def test_sweep_tornado_and_sobol_equal_the_methods():
    kw = {"trials": 16, "seed": 1}
    pairs = [
        (api.sweep("h100", "fab.defect_density_per_cm2", ["0.05", "0.2"], **kw),
         methods.sweep("h100", "fab.defect_density_per_cm2", ["0.05", "0.2"], **kw)),
        # the plan of most tokens/s, which the energy price does not move (the least cost per
        # token may serve another plan where energy is dearer)
        (api.sweep("h100", "econ.pue", ["1.1", "1.5"], outputs=["energy_usd"], overrides=THROUGHPUT, **kw),
         methods.sweep("h100", "econ.pue", ["1.1", "1.5"], outputs=("energy_usd",), overrides=THROUGHPUT, **kw)),
        (api.tornado("h100", **kw), methods.tornado("h100", **kw)),
        (api.sobol("h100", **kw), methods.sobol("h100", **kw)),
    ]
    for got, expected in pairs:
        assert _without_elapsed(got) == _without_elapsed(expected)
    sweep_pue = pairs[1][0]
    low, high = (row["energy_usd"]["mean"] for row in sweep_pue["rows"])
    assert high / low == pytest.approx(1.5 / 1.1, rel=1e-12)  # energy is linear in PUE


def test_parse_values_keeps_tables_whole():
    assert api.parse_values('0.1,"inf",{dist="uniform", low=1, high=2}') == ["0.1", '"inf"', '{dist="uniform", low=1, high=2}']


@pytest.mark.parametrize("call, option", [
    (lambda: api.yield_("h100", wafers=0), "--wafers"),
    (lambda: api.yield_("h100", wafers=True), "--wafers"),
    (lambda: api.yield_("h100", wafers=2.5), "--wafers"),
    (lambda: api.reliability("h100", lifetimes=-1), "--lifetimes"),
    (lambda: api.run(["h100"], trials=0), "--trials"),
    (lambda: api.yield_("h100", wafers=8, seed=-1), "--seed"),
    (lambda: api.reliability("h100", lifetimes=8, seed=2**64), "--seed"),
    (lambda: api.run(["h100"], trials=8, seed="1"), "--seed"),
    (lambda: api.set_threads(0), "--threads"),
    (lambda: api.sobol("h100", trials=100), "--trials"),
    (lambda: api.run(resume=True), "--resume"),
])
def test_bad_options_raise_input_errors_naming_the_option(call, option):
    with pytest.raises(InputError) as err:
        call()
    assert [p.key for p in err.value.problems] == [option]


def test_check_lists_every_bad_key_at_once():
    with pytest.raises(InputError) as err:
        api.check("h100", ["fab.scribe_mm=-1", "econ.pue=0.5"])
    assert {p.key for p in err.value.problems} >= {"fab.scribe_mm", "econ.pue"}
    s = api.check("h100")
    assert api.check(s) is s


def test_scenarios_lists_the_shipped_ones():
    names = dict(api.scenarios())
    assert {"h100", "lite-h100", "lite-h100-2x", "lite-h100-2x-fastswap"} <= set(names)


def test_a_run_keeping_its_trials_in_a_folder_never_reads_them_back_whole(tmp_path, monkeypatch):
    """``keep_trials`` with ``out``: after the chunks, the verdict's drivers read
    trials.parquet a few columns at a time (memory flat in the trials, docs/performance.md#memory)
    and ``Results.trials`` reads it whole only when asked for, equal to the file."""
    import pandas as pd

    reads = reads_in_pieces(monkeypatch)
    res = api.run(["h100", "lite-h100"], trials=1024, seed=6, overrides=SMALL, out=tmp_path / "run", keep_trials=True, figures=False,
                  progress=None)
    monkeypatch.undo()
    from mcengine.report.verdict import DRIVER_COLUMNS

    assert reads and max(len(columns) for _, columns in reads) == 1 + DRIVER_COLUMNS and res.summary()["verdict"]["lite-h100 / h100"]["drivers"]["inputs"]
    assert "per-trial table kept" in repr(res)
    table = pd.read_parquet(tmp_path / "run" / "trials.parquet")
    assert res.trials.equals(table) and res.table is res.trials


#: The CLI command of each API function recording its own command (mcengine WORDS).
RECORDED = {"yield_": ("yield",), "reliability": ("reliability",), "roofline": ("roofline",), "serve": ("serve",),
            "validation_report": ("validate", "--json"), "bench": ("bench",), "run": ("run",), "compare": ("compare",),
            "sweep": ("sweep",), "tornado": ("tornado",), "sobol": ("sobol",), "paper": ("paper",)}
#: A value other than the default for every argument of those functions.
GIVEN = {"scenario": "h100", "scenarios": ["h100", "lite-h100"], "a": "h100", "b": "lite-h100", "wafers": 2048, "lifetimes": 8,
         "requests": 4096, "trials": 2048, "seed": 7, "overrides": {"econ.pue": 1.4, "B:econ.gpu_markup": 1.5}, "out": "folder",
         "force": True, "demand": 1000.0, "arrival": "gamma", "arrival_cv": 2.0, "mode": "static", "instances": 2, "lengths": "geometric",
         "warmup": 0.1, "quick": True, "stages": ["fab", "chain"], "keep_trials": True, "chunk_trials": 2048, "scheduler": "tcp://host:8786",
         "resume": True, "progress": None, "figures": False, "verdict_map": 64, "map_weights": ["markup.gpu=2"], "param": "econ.pue",
         "values": [1.3, 1.4], "outputs": ["availability", "tokens_per_s"], "output": "availability", "quantiles": (0.1, 0.9),
         "scramblings": 4, "conf_level": 0.9}


def _parsed(command: list[str]):
    """``command`` parsed by the CLI's own parser (click raises on an option it lacks)."""
    import typer

    from mcengine.cli import app

    assert command[0] == "mcengine"
    group = typer.main.get_command(app)
    with group.make_context("mcengine", [command[1]], resilient_parsing=True) as ctx:
        sub = group.get_command(ctx, command[1])
        return sub.make_context(command[1], list(command[2:]), parent=ctx)


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_every_recorded_command_is_one_the_cli_accepts(name):
    """The command an API call from Python records, with every argument given, parses with
    the CLI (only options it has, in its spelling), and gives the CLI the same values;
    every API function recording its command is checked here."""
    import inspect

    assert {n for n, f in vars(api).items() if hasattr(f, "__wrapped__") and f.__module__ == api.__name__ and not n.endswith("_study")
            and f.__name__ == n} == set(RECORDED)
    function = getattr(api, name)
    parameters = inspect.signature(function).parameters
    variants = [{}, {"resume": False}, {"resume": False, "keep_trials": None}, {"resume": False, "keep_trials": False},
                {"resume": False, "keep_trials": False, "out": None}, {"resume": False, "keep_trials": None, "out": None}]
    for variant in variants if "keep_trials" in parameters else [{}]:
        arguments = {n: variant.get(n, GIVEN[n]) for n in parameters if n != "more"}
        if "more" in parameters:
            arguments["more"] = ("lite-h100-shoreline",)
        command, omitted = api._command(RECORDED[name], arguments, "keep_trials" in parameters)
        ctx = _parsed(command)
        for key in ("seed", "trials", "chunk_trials", "scramblings"):
            if key in ctx.params and key in arguments and key not in omitted and command.count("--" + key.replace("_", "-")):
                assert ctx.params[key] == arguments[key], (name, key)
        if "overrides" in ctx.params:
            assert ctx.params["overrides"] == ["econ.pue=1.4", "B:econ.gpu_markup=1.5"]
        if "keep_trials" in ctx.params:  # the CLI keeps the per-trial table in the folder exactly when the API would
            keeps = arguments["keep_trials"] is True or arguments["keep_trials"] is None and arguments.get("out") is not None
            assert ctx.params["keep_trials"] == keeps, (name, variant)
            assert ("keep_trials" in omitted) == (arguments.get("out") is None and arguments["keep_trials"] is not None)
        assert set(omitted) <= {"quantiles", "conf_level", "keep_trials"}, (name, omitted)


def test_a_sweep_grid_and_the_sensitivity_options_are_recorded_as_the_cli_takes_them():
    """Two --param, one --values each; tornado's quantiles and sobol's confidence level have
    no CLI option and move numbers: listed in "command_omits"; chunk_trials moves none."""
    command, omitted = api._command(("sweep",), {"scenarios": "h100", "param": ["econ.pue", "B:econ.gpu_markup"],
                                                 "values": [[1.3, 1.4], [1.5]], "chunk_trials": 2048})
    assert command == ["mcengine", "sweep", "h100", "--param", "econ.pue", "--param", "B:econ.gpu_markup", "--values", "1.3,1.4",
                       "--values", "1.5"] and omitted == {}
    assert _parsed(command).params["values"] == ["1.3,1.4", "1.5"]
    assert api._command(("sweep",), {"scenarios": "h100", "param": "B:run.flag", "values": [True, "false"]})[0][-2:] == ["--values", "true,false"]
    assert api._command(("tornado",), {"scenarios": "h100", "quantiles": (0.1, 0.9), "chunk_trials": 1024}) == (
        ["mcengine", "tornado", "h100"], {"quantiles": [0.1, 0.9]})
    assert api._command(("sobol",), {"scenarios": "h100", "conf_level": 0.9, "scramblings": 4}) == (
        ["mcengine", "sobol", "h100", "--scramblings", "4"], {"conf_level": 0.9})


def test_a_scenario_changed_in_python_is_listed_beside_the_command(tmp_path):
    """A Scenario object recorded by its name replays only if it is the shipped scenario of
    that name: one changed in Python is also named in the provenance's "command_omits"."""
    import dataclasses

    shipped = api.roofline(load_scenario("h100"))
    assert shipped["provenance"]["command_line"] == ["mcengine", "roofline", "h100"] and "command_omits" not in shipped["provenance"]
    changed = load_scenario("h100", ["econ.pue=1.4"])
    doc = api.roofline(changed, out=tmp_path / "r")
    assert doc["provenance"]["command_line"] == ["mcengine", "roofline", "h100", "--out", str(tmp_path / "r")]
    assert doc["provenance"]["command_omits"] == {"scenario_objects": ["h100"]}
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["provenance"]["command_omits"] == {"scenario_objects": ["h100"]}
    renamed = dataclasses.replace(load_scenario("h100"), name="mine")
    assert api._command(("compare",), {"a": renamed, "b": "lite-h100", "more": (changed,)})[1] == {"scenario_objects": ["mine", "h100"]}


def test_a_sweep_value_given_in_python_is_applied_as_its_recorded_command_replays_it():
    """``inf`` (a float, as toml_literal and the recorded ``--values inf`` write it) and
    numpy scalars: the values a Python call applies equal those of its replayed command."""
    import math

    from mcengine.scenario.load import override_texts, toml_literal

    given = api.sweep("h100", param="reliability.repair_crews", values=[math.inf, np.int64(4)], trials=16)
    command = given["provenance"]["command_line"]
    assert command[command.index("--values") + 1] == "inf,4"
    replayed = api.sweep("h100", param="reliability.repair_crews", values=["inf", "4"], trials=16)
    assert given["values"] == replayed["values"] == [math.inf, 4]
    assert given["rows"] == replayed["rows"]
    assert [toml_literal(v) for v in (np.float64(0.1), np.float32(0.5), np.int64(3), np.bool_(True))] == ["0.1", "0.5", "3", "true"]
    assert override_texts({"econ.pue": np.float64(1.4), "a": {"median": np.float64(0.2)}}) == ["econ.pue=1.4", "a={median = 0.2}"]


def test_numpy_scalars_and_zero_dimensional_arrays_are_literals():
    """A 0-d array is written as its value, as a numpy scalar is, and a sweep takes numpy's
    bool (``np.True_`` is no Python bool) as ``true``."""
    from mcengine.scenario.load import toml_literal
    from mcengine.sensitivity.methods import _literal

    assert [toml_literal(v) for v in (np.array(0.1), np.array(3), np.array(True), np.array(np.inf))] == ["0.1", "3", "true", "inf"]
    assert [_literal(v) for v in (np.True_, np.float32(0.5), np.int64(4))] == ["true", "0.5", "4"]
