"""One rule for every command's default sample size (mcengine/options.py SAMPLE_DEFAULTS,
docs/cli.md#sample-sizes): each command's option, the API, the sensitivity methods, the
paper study, the scenario key run.trials and the shipped case study read the one table."""

from __future__ import annotations

import inspect
import tomllib

import click
import pytest
import typer.main

from mcengine import api
from mcengine.cli import app
from mcengine.options import SAMPLE_DEFAULTS
from mcengine.scenario import load_scenario
from mcengine.scenario.files import configs_dir


def _option(command: str, name: str) -> click.Option:
    root = typer.main.get_command(app)
    return next(p for p in root.commands[command].params if p.name == name)


@pytest.mark.parametrize("command, param, key", [("yield", "wafers", "yield"), ("reliability", "lifetimes", "reliability"),
                                                 ("sweep", "trials", "sweep"), ("serve", "requests", "serve")])
def test_each_command_option_defaults_to_the_table_and_says_so(command, param, key):
    option = _option(command, param)
    assert option.default == SAMPLE_DEFAULTS[key].size
    assert f"{SAMPLE_DEFAULTS[key].size:,}" in option.help and "docs/cli.md#sample-sizes" in option.help


def test_options_without_a_fixed_default_name_the_table_in_their_help():
    for command, keys in (("sensitivity", ("sobol", "tornado")), ("tornado", ("tornado",)), ("sobol", ("sobol",)),
                          ("paper", ("paper", "paper_quick")), ("run", ("study", "scenario")), ("compare", ("study", "scenario"))):
        help_ = _option(command, "trials").help
        assert "docs/cli.md#sample-sizes" in help_, command
        assert all(f"{SAMPLE_DEFAULTS[k].size:,}" in help_ for k in keys), command


def test_the_library_defaults_are_the_table():
    from mcengine import paper
    from mcengine.sensitivity import methods

    assert inspect.signature(api.yield_).parameters["wafers"].default == 10_000 == SAMPLE_DEFAULTS["yield"].size
    assert inspect.signature(api.reliability).parameters["lifetimes"].default == 1_000 == SAMPLE_DEFAULTS["reliability"].size
    assert inspect.signature(api.serve).parameters["requests"].default == 100_000 == SAMPLE_DEFAULTS["serve"].size
    assert inspect.signature(methods.sweep).parameters["trials"].default == 1_024 == SAMPLE_DEFAULTS["sweep"].size
    assert inspect.signature(methods.tornado).parameters["trials"].default == 256 == SAMPLE_DEFAULTS["tornado"].size
    assert inspect.signature(methods.sobol).parameters["trials"].default == 256 == SAMPLE_DEFAULTS["sobol"].size
    assert (paper.DEFAULT_TRIALS, paper.QUICK_TRIALS) == (2_048, 128) == (SAMPLE_DEFAULTS["paper"].size, SAMPLE_DEFAULTS["paper_quick"].size)


def test_the_scenario_key_and_the_shipped_case_study_are_the_table():
    """run.trials of a scenario that does not set it, and the case study `mcengine run`
    runs by default (20,000 paired trials, the README's numbers)."""
    raw = load_scenario("h100").to_dict()
    del raw["run"]["trials"]
    from mcengine.scenario.schema import build

    assert build(raw).run.trials == SAMPLE_DEFAULTS["scenario"].size == 10_000
    study = tomllib.loads((configs_dir() / "studies" / f"{api.DEFAULT_STUDY}.toml").read_text())
    assert study["trials"] == SAMPLE_DEFAULTS["study"].size == 20_000


def test_each_stated_standard_error_is_a_shares_worst_case():
    """0.5 / sqrt(N): 20,000 trials -> 0.0035; the rule's 0.005 bound for a stated result."""
    assert SAMPLE_DEFAULTS["study"].share_sem == pytest.approx(0.0035355, rel=1e-4)
    assert all(SAMPLE_DEFAULTS[k].share_sem <= 0.005 for k in ("study", "scenario", "yield"))
