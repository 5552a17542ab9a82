"""Shared test helpers: run the CLI in-process and capture what it prints; run a call at a
given numba thread count."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass

import numba
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


def with_threads(threads: int, fn, *args):
    """``fn(*args)`` with ``threads`` numba threads, restoring the previous count."""
    previous = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        return fn(*args)
    finally:
        numba.set_num_threads(previous)


@pytest.fixture(scope="module")
def h100_body():
    """`mcengine roofline h100`'s body under the calibrated serving choices (deterministic: computed once per module)."""
    from mcengine.scenario import load_scenario
    from mcengine.studies.roofline import roofline_study
    from mcengine.validation.roofline import CALIBRATED_SERVING

    return roofline_study(load_scenario("h100", CALIBRATED_SERVING))


def run_lifetimes(scenario, n: int, seed: int = 1) -> dict:
    """Per-lifetime columns of ``n`` lifetimes of ``scenario`` through the reliability stage."""
    from mcengine.scenario.sampling import draw_inputs
    from mcengine.stages.reliability import lifetimes

    return lifetimes(scenario, draw_inputs(scenario, seed, 0, n), seed)


def assert_mc(sample, expected: float, k: float = 4.0) -> None:
    """The sample mean within ``k`` standard errors (from the sample) of ``expected``."""
    import math

    import numpy as np

    sample = np.asarray(sample, dtype=float)
    sem = sample.std(ddof=1) / math.sqrt(sample.size)
    assert abs(sample.mean() - expected) <= k * sem, (sample.mean(), expected, sem)
