"""Command-line conventions (mcengine/cli.py): ``-h``, shell completion, metavars that say
what to type, ``--metric`` beside the old ``--output``; none of these start numba."""

from __future__ import annotations

import subprocess
from pathlib import Path

import click
import pytest
import typer

from mcengine.cli import app
from tests import procs

ROOT = Path(__file__).resolve().parents[1]


def _command(name: str) -> click.Command:
    return typer.main.get_command(app).commands[name]


@pytest.mark.parametrize("args", [["-h"], ["run", "-h"], ["sweep", "-h"], ["check", "-h"]])
def test_dash_h_is_help(cli, args):
    r = cli(*args)
    assert r.code == 0 and r.out.startswith("Usage: mcengine") and "-h, --help" in r.out


@pytest.mark.parametrize("command", ["run", "compare", "sweep", "sensitivity", "yield", "reliability", "roofline", "check"])
def test_set_metavar_is_key_value(cli, command):
    text = cli(command, "--help").out
    assert "--set KEY=VALUE" in text and "list[str]" not in text.split("Options:")[1]


@pytest.mark.parametrize("command", ["sweep", "sensitivity"])
def test_metric_is_the_output_option_under_both_names(command):
    """``--metric`` and the old ``--output`` are one option: the parsed value is the same."""
    cmd = _command(command)
    base = ["h100", "--param", "fab.scribe_mm", "--values", "0.1"] if command == "sweep" else ["h100"]
    got = []
    for flag in ("--metric", "--output"):
        ctx = cmd.make_context(command, [*base, flag, "availability"])
        got.append(ctx.params["output"])
    assert got[0] == got[1] and got[0] in (["availability"], ("availability",), "availability")


def _complete(words: str, cword: int) -> list[str]:
    env = procs.env(_MCENGINE_COMPLETE="complete_bash", COMP_WORDS=words, COMP_CWORD=str(cword))
    done = subprocess.run(procs.python("-m", "mcengine"), env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_shell_completion_completes_commands_and_options(cli):
    assert _complete("mcengine sw", 1) == ["sweep"]
    assert "--metric" in _complete("mcengine sweep h100 --met", 3)
    assert "--install-completion" in cli("--help").out


def test_json_infinity_convention_is_stated_and_kept():
    """JSON has no infinity: documents write the string ``"inf"``, and the contract says so."""
    import json
    import math

    from mcengine.io import dumps

    assert json.loads(dumps({"x": math.inf, "y": -math.inf, "z": math.nan})) == {"x": "inf", "y": "-inf", "z": "nan"}
    text = (ROOT / "docs" / "interface.md").read_text(encoding="utf-8")
    assert 'writes them as the strings `"inf"`, `"-inf"` and `"nan"`' in text
