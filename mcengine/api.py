"""Plain functions behind every command: the CLI and notebooks call these.

Each returns plain data (dicts in the docs/interface.md JSON shape, or a Results object);
none prints or exits. Stage modules are imported inside the functions so that importing
this module (and ``mcengine --help``) does not start numba.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Iterable, Sequence

from .errors import InputError, Problem
from .io import prepare_folder
from .options import check_seed, positive, seed_of
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


def _document(scenario: Scenario, seed: int | None, size_key: str | None, size: int | None, body: dict, start: float) -> dict:
    doc = {"scenario": scenario.name}
    if seed is not None:
        doc["seed"] = seed
    if size_key is not None:
        doc[size_key] = size
    doc.update(body)
    doc["elapsed_s"] = time.perf_counter() - start
    return doc


def yield_(scenario: str | Scenario, wafers: int = 10_000, seed: int | None = None, overrides: Iterable[str] = ()) -> dict:
    """`mcengine yield`: the fab stage alone over ``wafers`` wafers."""
    from .studies.fab import yield_study as study

    start = time.perf_counter()
    positive("--wafers", wafers)
    s = check(scenario, overrides)
    seed = seed_of(s, seed)
    return _document(s, seed, "wafers", wafers, study(s, wafers, seed), start)


def reliability(scenario: str | Scenario, lifetimes: int = 1_000, seed: int | None = None, overrides: Iterable[str] = ()) -> dict:
    """`mcengine reliability`: the reliability stage alone over ``lifetimes`` cluster lifetimes."""
    from .studies.reliability import lifetime_study as study

    start = time.perf_counter()
    positive("--lifetimes", lifetimes)
    s = check(scenario, overrides)
    seed = seed_of(s, seed)
    return _document(s, seed, "lifetimes", lifetimes, study(s, lifetimes, seed), start)


def roofline(scenario: str | Scenario, overrides: Iterable[str] = ()) -> dict:
    """`mcengine roofline`: deterministic throughput at the median inputs."""
    from .studies.roofline import roofline_study as study

    start = time.perf_counter()
    s = check(scenario, overrides)
    return _document(s, None, None, None, study(s), start)


#: `mcengine yield` is the fab stage: both names work.
fab = yield_
#: Names of the first API, kept working.
yield_study, reliability_study, roofline_study = yield_, reliability, roofline


def validate() -> list:
    """Every stage's analytic cross-checks (a list of :class:`~mcengine.validation.Check`)."""
    from .validation import all_checks

    return all_checks()


def bench(quick: bool = False, stages: Sequence[str] = ()) -> dict:
    """mcengine's own throughput per stage and for the chain (:mod:`mcengine.throughput`)."""
    from .throughput import run_all

    return run_all(quick=quick, stages=tuple(stages))


def write_scenario(scenario: Scenario, out: Path) -> Path:
    """The resolved scenario next to the results (``<out>/<name>.toml``)."""
    import tomli_w

    from .io import write_atomic

    return write_atomic(Path(out) / f"{scenario.name}.toml", tomli_w.dumps(scenario.to_dict()))


DEFAULT_STUDY = "case-study"


def resolve_scenarios(refs: Sequence[str | Scenario] | None, overrides: Iterable[str] = ()) -> tuple[str, list[Scenario], int | None]:
    """(label, scenarios, study trials) for `run`/`compare`; no refs = the shipped case study.

    Every scenario is validated before anything runs, and all their problems are
    reported together.
    """
    from .scenario.load import load_scenarios, load_study

    study_trials = None
    if not refs:
        study = load_study(DEFAULT_STUDY)
        refs, label, study_trials = study["scenarios"], study["name"], study.get("trials")
    else:
        label = None
    scenarios = load_scenarios(refs, overrides)
    return label or " vs ".join(s.name for s in scenarios), scenarios, study_trials


def run(
    scenarios: Sequence[str | Scenario] | None = None,
    trials: int | None = None,
    seed: int | None = None,
    overrides: Iterable[str] = (),
    out: str | Path | None = None,
    keep_trials: bool | None = None,
    chunk_trials: int | None = None,
    scheduler: str | None = None,
    resume: bool = False,
    progress=None,
    figures: bool = True,
):
    """The full chain over ``trials`` trials of each scenario (paired: same seed, common
    random numbers); returns a :class:`~mcengine.results.Results`.

    With two or more scenarios the summary also holds ``"paired"``: per metric, the
    distribution of second/first over paired trials and the share of trials where the
    second is below the first (``"paired_all"`` has every later scenario against the first).
    ``out`` writes summary.json, the resolved scenarios, figures and (with ``keep_trials``)
    ``trials.parquet``; ``resume=True`` continues the interrupted run in ``out``.
    ``keep_trials`` defaults to keeping the per-trial table (in memory without ``out``),
    and on resume to what the interrupted run did; a ``seed``, ``trials`` or
    ``keep_trials`` given on resume must match the interrupted run's.
    """
    from . import runner
    from .results import Results

    start = time.perf_counter()
    out = Path(out) if out is not None else None
    chunk_trials = runner.DEFAULT_CHUNK_TRIALS if chunk_trials is None else chunk_trials
    expect = {}
    if resume:
        if out is None:
            raise InputError(Problem("--resume", None, "needs the folder of the interrupted run"))
        spec = None
        if scenarios:
            label, resolved, _ = resolve_scenarios(scenarios, overrides)
            n = trials if trials is not None else resolved[0].run.trials
            spec = runner.RunSpec(tuple(resolved), seed_of(resolved[0], seed), positive("--trials", n), bool(keep_trials), label)
        else:
            expect = {"seed": None if seed is None else check_seed(seed),
                      "trials": None if trials is None else positive("--trials", trials), "keep_trials": keep_trials}
    else:
        label, resolved, study_trials = resolve_scenarios(scenarios, overrides)
        n = trials if trials is not None else (study_trials or resolved[0].run.trials)
        keep = True if keep_trials is None else keep_trials
        spec = runner.RunSpec(tuple(resolved), seed_of(resolved[0], seed), positive("--trials", n), keep, label)
    if out is not None:
        prepare_folder(out)
    outcome = runner.execute(spec, chunk_trials=chunk_trials, out=out, resume=resume, scheduler=scheduler, progress=progress, expect=expect)
    spec = outcome.spec
    doc = {"scenario": spec.label, "seed": spec.seed, "trials": spec.trials}
    doc.update(outcome.accumulators.summary())
    doc["elapsed_s"] = time.perf_counter() - start
    table = None
    if spec.keep_trials:
        import pandas as pd

        if out is not None:
            table = pd.read_parquet(out / runner.TRIALS_DIR)
        elif outcome.frames:
            table = pd.concat(outcome.frames, ignore_index=True)
    from .report.figures import run_figure  # notebook figures: Results.plot(kind=...)

    results = Results(doc, outcome.accumulators, table, plotter=run_figure)
    if out is not None:
        _write_outputs(results, spec, out, figures)
    return results


def compare(a: str | Scenario, b: str | Scenario, *more: str | Scenario, **kwargs):
    """Paired comparison of B (and more) against A: :func:`run` with two or more scenarios."""
    return run([a, b, *more], **kwargs)


def _write_outputs(results, spec, out: Path, figures: bool) -> None:
    from .io import write_json

    for s in spec.scenarios:
        write_scenario(s, out)
    if figures:
        from .report.figures import write_figures

        results.doc["figures"] = [str(p.name) for p in write_figures(results, out)]
    write_json(out / "summary.json", results.doc)


def sweep(scenarios, param, values, outputs: Sequence[str] | None = None, **kwargs) -> dict:
    """`mcengine sweep`: the chain at each value of a key (or on a grid of two keys);
    ``outputs`` default to cost, availability, tokens/s and GPU cost. See
    :func:`mcengine.sensitivity.studies.sweep` for the other keyword arguments."""
    from .sensitivity.studies import SWEEP_OUTPUTS, sweep as study

    return study(scenarios, param, values, outputs=tuple(outputs or SWEEP_OUTPUTS), **kwargs)


def parse_values(text: str) -> list[str]:
    """A `--values` list (``"0.1,0.2"``, TOML literals, tables kept whole) as one literal per value."""
    from .sensitivity.studies import parse_values as parse

    return parse(text)


def tornado(scenarios, **kwargs) -> dict:
    """`mcengine sensitivity --method tornado`: each uncertain input alone at its 5th and
    95th percentile (:func:`mcengine.sensitivity.studies.tornado`)."""
    from .sensitivity.studies import tornado as study

    return study(scenarios, **kwargs)


def sobol(scenarios, **kwargs) -> dict:
    """`mcengine sensitivity --method sobol`: first-order and total Sobol' indices of every
    uncertain input (:func:`mcengine.sensitivity.studies.sobol`)."""
    from .sensitivity.studies import sobol as study

    return study(scenarios, **kwargs)


__all__ = [
    "bench", "check", "compare", "fab", "parse_values", "prepare_folder", "reliability", "roofline", "run", "scenarios", "set_threads",
    "sobol", "sweep", "tornado", "validate", "write_scenario", "yield_",
]
