"""Shared test helpers: run the CLI in-process and capture what it prints; run a call at a
given numba thread count.

Which mcengine the tests import: the installed one when it is an install of exactly this
checkout (README: ``pip install '.[test]' && pytest``), else the checkout. numba keys its
on-disk cache by the source file's path, so testing the checkout after installing it
compiled every kernel twice (once for the tests, once for the installed ``mcengine``
command); importing the installed copy makes the two share one cache. An editable
install, no install, or an install that differs from the checkout in any module or
shipped scenario leaves the checkout first on ``sys.path`` (the code under test is always
the checkout's code).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _digest(package: Path, configs: Path) -> str:
    """sha256 over every module of ``package`` and every shipped config (path and bytes)."""
    h = hashlib.sha256()
    files = [(package, p) for p in sorted(package.rglob("*.py")) if "__pycache__" not in p.parts]
    files += [(configs, p) for p in sorted(configs.rglob("*.toml"))]
    for base, path in files:
        h.update(str(path.relative_to(base)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def installed_copy() -> Path | None:
    """The installed ``mcengine`` package folder when it is a copy of this checkout (same
    modules, same shipped configs), else None."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        package = Path(str(distribution("mcengine").locate_file("mcengine")))
    except PackageNotFoundError:
        return None
    if not (package / "__init__.py").is_file() or package.resolve() == (ROOT / "mcengine").resolve():
        return None  # an editable install (or the checkout itself)
    if _digest(package, package / "configs") != _digest(ROOT / "mcengine", ROOT / "configs"):
        return None  # installed from other sources: test the checkout
    return package


if "mcengine" not in sys.modules and (_installed := installed_copy()) is not None:
    sys.path.insert(0, str(_installed.parent))

import numba  # noqa: E402
import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

#: Every property draws the same examples on every run and machine (the project's rule of
#: fixed seeds): a failure CI finds is one a developer reproduces, and no example database
#: left in a work tree changes what a test draws. A test's own ``@settings`` adds to this.
settings.register_profile("fixed", derandomize=True, database=None)
settings.load_profile("fixed")

from mcengine.cli import main  # noqa: E402


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


#: The efficiencies every shipped design served bf16 with before the per-precision tables (the FP8
#: fit, docs/sources.md#roof-calibration): tests that pin numbers computed then set them (an explicit
#: workload.compute_efficiency / memory_efficiency wins over the tables).
FP8_FIT_EFFICIENCIES = ('workload.compute_efficiency={dist="uniform", low=0.33, high=0.57}',
                        'workload.memory_efficiency={dist="uniform", low=0.52, high=0.72}')


@pytest.fixture(scope="module")
def h100_body():
    """`mcengine roofline h100`'s body under the calibrated serving choices (deterministic: computed once per module)."""
    from mcengine.scenario import load_scenario
    from mcengine.standalone.roofline import roofline_summary
    from mcengine.validation.roofline import CALIBRATED_SERVING

    return roofline_summary(load_scenario("h100", CALIBRATED_SERVING))


def run_lifetimes(scenario, n: int, seed: int = 1) -> dict:
    """Per-lifetime columns of ``n`` lifetimes of ``scenario`` through the reliability stage
    (with reshard, the roofline's table the pipeline hands it)."""
    from mcengine.pipeline import reshard_capacity
    from mcengine.scenario.sampling import draw_inputs
    from mcengine.stages.reliability import lifetimes

    return lifetimes(scenario, draw_inputs(scenario, seed, 0, n), seed, reshard_capacity(scenario))


def assert_mc(sample, expected: float, k: float = 4.0) -> None:
    """The sample mean within ``k`` standard errors (from the sample) of ``expected``."""
    import math

    import numpy as np

    sample = np.asarray(sample, dtype=float)
    sem = sample.std(ddof=1) / math.sqrt(sample.size)
    assert abs(sample.mean() - expected) <= k * sem, (sample.mean(), expected, sem)


def reads_in_pieces(monkeypatch) -> list[tuple[str, tuple[str, ...]]]:
    """The (scenario, columns) of each read of a :class:`mcengine.results.TrialsFile`, in
    order, with any read of a whole per-trial table (``TrialsFile.frame``,
    ``pandas.read_parquet``) an AssertionError until ``monkeypatch.undo()``."""
    import pandas as pd

    from mcengine.results import TrialsFile

    reads = []
    rows = TrialsFile.rows

    def spy(self, scenario, columns):
        reads.append((scenario, tuple(columns)))
        return rows(self, scenario, columns)

    def whole(*args, **kwargs):
        raise AssertionError("the per-trial table was read whole")

    monkeypatch.setattr(TrialsFile, "rows", spy)
    monkeypatch.setattr(TrialsFile, "frame", whole)
    monkeypatch.setattr(pd, "read_parquet", whole)
    return reads
