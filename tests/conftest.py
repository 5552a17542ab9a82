"""Shared test helpers: run the CLI in-process and capture what it prints."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass

import pytest

from mcengine.cli import main


@dataclass
class CliResult:
    code: int
    out: str
    err: str


def run_cli(*args: str) -> CliResult:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return CliResult(code, out.getvalue(), err.getvalue())


@pytest.fixture
def cli():
    return run_cli
