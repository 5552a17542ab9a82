"""Plain functions behind every command: the CLI and notebooks call these.

Each returns plain data (dicts in the INTERFACE.md JSON shape, or a Results object);
none prints or exits. Stage modules are imported inside the functions so that importing
this module (and ``mcengine --help``) does not start numba.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Iterable, Sequence

from .errors import InputError, Problem
from .scenario import Scenario, load_scenario, shipped_scenarios


def scenarios() -> list[tuple[str, str]]:
    """(name, description) of each shipped scenario."""
    return shipped_scenarios()


def check(scenario: str | Scenario, overrides: Iterable[str] = ()) -> Scenario:
    """Load and validate a scenario (raises InputError listing every problem)."""
    return scenario if isinstance(scenario, Scenario) else load_scenario(scenario, overrides)


def set_threads(threads: int | None) -> None:
    """Numba threads for the kernels; results never depend on it."""
    if threads is None:
        return
    import numba

    limit = numba.config.NUMBA_NUM_THREADS
    if not 1 <= threads <= limit:
        raise InputError(Problem("--threads", threads, f"allowed: 1 to {limit} (NUMBA_NUM_THREADS)"))
    numba.set_num_threads(threads)


def positive(option: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(Problem(option, value, "allowed: a positive integer"))
    return value


def seed_of(scenario: Scenario, seed: int | None) -> int:
    seed = scenario.run.seed if seed is None else seed
    if not 0 <= seed < 2**64:
        raise InputError(Problem("--seed", seed, "allowed: an integer in [0, 2**64 - 1]"))
    return seed


def _document(scenario: Scenario, seed: int | None, size_key: str | None, size: int | None, body: dict, start: float) -> dict:
    doc = {"scenario": scenario.name}
    if seed is not None:
        doc["seed"] = seed
    if size_key is not None:
        doc[size_key] = size
    doc.update(body)
    doc["elapsed_s"] = time.perf_counter() - start
    return doc


def yield_study(scenario: str | Scenario, wafers: int = 10_000, seed: int | None = None, overrides: Iterable[str] = ()) -> dict:
    """`mcengine yield`: the fab stage alone over ``wafers`` wafers."""
    start = time.perf_counter()
    positive("--wafers", wafers)
    s = check(scenario, overrides)
    seed = seed_of(s, seed)
    from .stages import fab

    body = fab.yield_study(s, wafers, seed)
    return _document(s, seed, "wafers", wafers, body, start)


def reliability_study(scenario: str | Scenario, lifetimes: int = 1_000, seed: int | None = None, overrides: Iterable[str] = ()) -> dict:
    """`mcengine reliability`: the reliability stage alone over ``lifetimes`` cluster lifetimes."""
    start = time.perf_counter()
    positive("--lifetimes", lifetimes)
    s = check(scenario, overrides)
    seed = seed_of(s, seed)
    from .stages import reliability

    body = reliability.lifetime_study(s, lifetimes, seed)
    return _document(s, seed, "lifetimes", lifetimes, body, start)


def roofline_study(scenario: str | Scenario, overrides: Iterable[str] = ()) -> dict:
    """`mcengine roofline`: deterministic throughput at the median inputs."""
    from .stages import roofline

    start = time.perf_counter()
    s = check(scenario, overrides)
    return _document(s, None, None, None, roofline.roofline_study(s), start)


def validate() -> list:
    """Every stage's analytic cross-checks."""
    from .validation import all_checks

    return all_checks()


def bench(quick: bool = False, stages: Sequence[str] = ()) -> dict:
    """Kernel and end-to-end throughput next to their peers."""
    from .bench import run_all

    return run_all(quick=quick, stages=tuple(stages))


def write_scenario(scenario: Scenario, out: Path) -> Path:
    """The resolved scenario next to the results (``<out>/<name>.toml``)."""
    import tomli_w

    from .io import write_atomic

    return write_atomic(Path(out) / f"{scenario.name}.toml", tomli_w.dumps(scenario.to_dict()))
