"""Plain functions behind every command: the CLI and notebooks call these.

Each returns plain data (dicts in the docs/interface.md JSON shape, or a Results object);
none prints or exits. Stage modules are imported inside the functions so that importing
this module (and ``mcengine --help``) does not start numba.
"""

from __future__ import annotations

import functools
import inspect
import io
import time
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

from .errors import InputError, Problem
from .io import prepare_folder
from .options import SAMPLE_DEFAULTS, check_seed, positive, seed_of, shared_run
from .outfolder import RUN_FILES, TABLE_FILE, TRIALS_DIR, OutFolder, metric_rows, run_fingerprint, table_csv
from .provenance import command_of_call, provenance, scenario_sha256
from .scenario import Scenario, load_scenario, shipped_scenarios
from .scenario.load import load_targeted, override_texts, toml_literal

#: ``overrides`` of every function: ``--set`` strings ``"KEY=VALUE"`` (VALUE a TOML
#: literal), or a mapping ``{KEY: value}`` of Python values (``{"fab.defect_density_per_cm2":
#: 0.2, "B:econ.gpu_markup": 1.5}``; a dict value is a table, as ``{dist = ...}``).
Overrides = Iterable[str] | Mapping[str, object]


#: The CLI's option for an API argument it does not name with the argument's own name in
#: dashes (``--chunk-trials`` for ``chunk_trials``); None: the CLI has none, and the argument
#: moves no number (a progress callback, drawing figures).
_CLI_OPTIONS = {"overrides": "--set", "arrival_cv": "--cv", "outputs": "--metric", "output": "--metric", "stages": "--stage",
                "map_weights": "--map-weight", "progress": None, "figures": None}
#: Per command, the API arguments its CLI command has no option for: those that move numbers
#: go to the provenance's ``"command_omits"``; ``chunk_trials`` never moves one (the same
#: numbers whatever the chunks), so it is left out alone.
_NO_CLI_OPTION = {"sweep": {"chunk_trials": False}, "tornado": {"chunk_trials": False, "quantiles": True},
                  "sobol": {"chunk_trials": False, "conf_level": True}}
#: The API arguments the CLI takes as its positional arguments.
_CLI_ARGUMENTS = ("scenario", "scenarios", "a", "b", "more")


def _command(words: Sequence[str], arguments: Mapping[str, object], keeps_trials: bool = False) -> tuple[list[str], dict]:
    """The command of an API call's own ``arguments`` (those given, by name, in the
    signature's order), and what it leaves out that moves numbers (``{argument: value}``,
    the provenance's ``"command_omits"``, docs/interface.md). The command is ``mcengine
    WORDS``, the scenarios, then ``--option VALUE`` per other argument the CLI command has an
    option for (a list repeats the option, True is the flag alone; None, False and an empty
    list are left out), as the CLI takes them: ``overrides`` as ``--set KEY=VALUE`` texts, a
    sweep's ``values`` one comma-joined ``--values`` per ``param`` (a text as it is, a Python
    value as its TOML literal), ``resume=True`` as ``--resume OUT``; for a function with
    ``keep_trials`` (``keeps_trials``, given or not), ``--keep-trials`` where the run keeps
    the per-trial table in ``out`` (:func:`_keep_flag`). A Scenario object is written by its
    name; one that is not the shipped scenario of that name is also listed in
    ``"scenario_objects"``."""
    arguments = dict(arguments)
    omitted = {}
    if keeps_trials:
        arguments["keep_trials"], kept = _keep_flag(arguments)
        if kept is not None:
            omitted["keep_trials"] = kept
    if arguments.pop("resume", False):
        arguments["resume"] = arguments.pop("out", None)
    if "overrides" in arguments:
        arguments["overrides"] = override_texts(arguments["overrides"])
    if "values" in arguments:
        param, grid = arguments.get("param"), list(arguments["values"])
        per_key = grid if isinstance(param, (list, tuple)) and len(param) > 1 else [grid]
        arguments["values"] = [",".join(v if isinstance(v, str) else toml_literal(v) for v in values) for values in per_key]
    for name, moves in _NO_CLI_OPTION.get(words[0], {}).items():
        if (value := arguments.pop(name, None)) is not None and moves:
            omitted[name] = list(value) if isinstance(value, (list, tuple)) else value
    positional = [arguments.pop(name, None) for name in _CLI_ARGUMENTS]
    command = ["mcengine", *words, *(text for value in positional for text in _texts(value))]
    if objects := [name for value in positional for name in _python_scenarios(value)]:
        omitted["scenario_objects"] = objects
    for name, value in arguments.items():
        option = _CLI_OPTIONS.get(name, "--" + name.replace("_", "-"))
        if option is None or value is None or value is False:
            continue
        command += [option] if value is True else [text for item in _texts(value) for text in (option, item)]
    return command, omitted


def _keep_flag(arguments: Mapping[str, object]) -> tuple[bool, bool | None]:
    """``keep_trials`` as the CLI's ``--keep-trials`` (whose default is off): on, where the
    run keeps the per-trial table in ``out`` (given True, or None with ``out``; on resume,
    given True); and the value to list in ``"command_omits"``: one given without ``out``
    (the table kept in memory or not: the CLI has no option for it, and the verdict's
    ``drivers`` come from it), else None."""
    keep, out = arguments.get("keep_trials"), arguments.get("out")
    if arguments.get("resume"):
        return keep is True, None
    if out is not None:
        return keep is not False, None
    return False, keep


def _python_scenarios(value) -> list[str]:
    """The names of the Scenario objects in ``value`` that are not the shipped scenario of
    their name (a scenario built or changed in Python: its name alone does not replay it)."""
    objects = [s for s in (value if isinstance(value, (list, tuple)) else [value]) if isinstance(s, Scenario)]
    shipped = {name for name, _ in shipped_scenarios()} if objects else set()
    return [s.name for s in objects if s.name not in shipped or scenario_sha256(s) != scenario_sha256(load_scenario(s.name))]


def _texts(value) -> list[str]:
    """An argument's values as command-line words (none for None)."""
    items = [] if value is None else list(value) if isinstance(value, (list, tuple)) else [value]
    return [item.name if isinstance(item, Scenario) else str(item) for item in items]


def _records(*words: str):
    """Called from Python, the decorated API function records in its provenance the command
    of its own arguments (:func:`_command`, ``mcengine WORDS ...``), not ``sys.argv`` (a host
    script's or a test runner's); under the CLI, or inside another API call, the command line
    recorded already stays (:func:`mcengine.provenance.command_of_call`). An argument given
    as an iterator (``overrides`` a generator) is read once, into the list both get."""

    def decorate(function):
        signature = inspect.signature(function)
        keeps_trials = "keep_trials" in signature.parameters

        @functools.wraps(function)
        def call(*args, **kwargs):
            given = signature.bind(*args, **kwargs)
            for name, value in given.arguments.items():
                if isinstance(value, Iterator):
                    given.arguments[name] = list(value)
            with command_of_call(lambda: _command(words, given.arguments, keeps_trials)):
                return function(*given.args, **given.kwargs)

        return call

    return decorate


def scenarios() -> list[tuple[str, str]]:
    """(name, description) of each shipped scenario."""
    return shipped_scenarios()


def studies() -> list[tuple[str, str]]:
    """(name, description) of each shipped study (``mcengine run NAME``)."""
    from .scenario.study import shipped_studies

    from .paper import DESCRIPTION

    return shipped_studies() + [("paper", DESCRIPTION)]


def keys(section: str | None = None) -> list[dict]:
    """Every scenario key (or those under ``section``): meaning, unit, default, allowed
    range and the bound's reason (:func:`mcengine.scenario.keys.key_rows`)."""
    from .scenario.keys import key_rows

    return key_rows(section)


def override_plan(refs: Sequence[str | Scenario] | None, overrides: Overrides = ()) -> list[dict]:
    """Which scenarios each ``--set`` reaches (``{"set", "scenarios"}`` per override), for
    the scenarios of ``refs`` (a study expanded; none = the shipped case study)."""
    run = _expand(refs)
    plans = load_targeted(run["scenarios"], [*run["set"], *override_texts(overrides)])[1]
    return [o.to_dict() for o in plans[len(run["set"]):]]


def _one(scenario: str | Scenario, overrides: Overrides) -> tuple[Scenario, list]:
    """One validated scenario and the override plan applied to it."""
    overrides = override_texts(overrides)
    if isinstance(scenario, Scenario) and not overrides:
        return scenario, []
    found, plans = load_targeted([scenario], overrides)
    return found[0], plans


def _writes(scenarios) -> list[str]:
    """The names every command writes to its folder (figures aside): summary, table, scenarios."""
    return ["summary.json", TABLE_FILE, *(f"{s.name}.toml" for s in scenarios)]


def run_out_files(names: Sequence[str], verdict_map: bool = False) -> list[str]:
    """The files ``run --out DIR`` writes for scenarios ``names`` (``trials.parquet`` aside,
    written with ``keep_trials``): the summary, the table, the figures (the verdict map's
    with ``verdict_map``), the resolved scenarios."""
    from .report.figures import run_figure_names

    return ["summary.json", TABLE_FILE, *run_figure_names(len(names), verdict_map), *(f"{n}.toml" for n in names)]


def _claim(out, command: str, scenarios, seed, size, params: dict, force: bool) -> OutFolder | None:
    if out is None:
        return None
    return OutFolder.claim(Path(out), command, run_fingerprint(command, scenarios, seed, size, params), force=force,
                           writes=_writes(scenarios))


def _save(folder: OutFolder | None, doc: dict, scenarios, rows: list[dict], figures=None, extra: Sequence[str] = ()) -> None:
    """The ``--out`` contract: figures, resolved scenarios, the table, summary.json, manifest.
    A SIGINT/SIGTERM while they are written waits for the last of them (the work is done:
    the folder is left complete), then stops the command; the Interrupted carries
    ``results`` = (the folder, whether every result is in it)."""
    if folder is None:
        return
    from . import interrupt
    from .errors import Interrupted
    from .io import write_atomic, write_json

    out = folder.path
    written = list(extra)
    try:
        with interrupt.deferred():
            if figures is not None:
                doc["figures"] = [p.name for p in figures(out)]
                written += doc["figures"]
            written += [write_scenario(s, out).name for s in scenarios]
            written.append(write_atomic(out / TABLE_FILE, table_csv(rows)).name)
            written.append(write_json(out / "summary.json", doc).name)
            folder.finish(written)
    except Interrupted as exc:
        exc.results = (out, folder.complete)
        raise


def check(scenario: str | Scenario, overrides: Overrides = ()) -> Scenario:
    """Load and validate a scenario (raises InputError listing every problem)."""
    return scenario if isinstance(scenario, Scenario) else load_scenario(scenario, override_texts(overrides))


def kernels_cold(work: str) -> bool:
    """True when ``work`` (``"fab"``, ``"reliability"``, ``"chain"`` or ``"serve"``) will compile numba
    kernels before it starts: their on-disk cache is empty or stale
    (:func:`mcengine.kernels.cache.cold`)."""
    from .kernels.cache import cold

    return cold(work)


def set_threads(threads: int | None) -> None:
    """Numba threads for the kernels; results never depend on it."""
    if threads is None:
        return
    import numba

    limit = numba.config.NUMBA_NUM_THREADS
    if not 1 <= threads <= limit:
        raise InputError(Problem("--threads", threads, f"allowed: 1 to {limit} (NUMBA_NUM_THREADS)"))
    numba.set_num_threads(threads)


def _document(scenario: Scenario, seed: int | None, size_key: str | None, size: int | None, body: dict, start: float, plans=()) -> dict:
    doc = {"scenario": scenario.name}
    if seed is not None:
        doc["seed"] = seed
    if size_key is not None:
        doc[size_key] = size
    doc.update(body)
    doc["provenance"] = provenance([scenario], seed, size_key, size, plans)
    doc["elapsed_s"] = time.perf_counter() - start
    return doc


def _stage(command: str, study, scenario, size_key: str | None, size: int | None, seed, overrides, out, force) -> dict:
    """One stage alone: validate, claim ``out``, compute, attach provenance, write ``out``
    (with the stage's figures, :mod:`mcengine.report.stages`)."""
    from .report import stages as stage_figures
    start = time.perf_counter()
    if size_key is not None:
        positive(f"--{size_key}", size)
    s, plans = _one(scenario, overrides)
    seed = seed_of(s, seed) if size_key is not None else None
    folder = _claim(out, command, [s], seed, size, {}, force)
    body = study(s, size, seed) if size_key is not None else study(s)
    doc = _document(s, seed, size_key, size, body, start, plans)
    draw = getattr(stage_figures, f"figures_for_{command}")
    _save(folder, doc, [s], metric_rows(body), figures=lambda o: draw(doc, o))
    return doc


@_records("yield")
def yield_(scenario: str | Scenario, wafers: int = SAMPLE_DEFAULTS["yield"].size, seed: int | None = None, overrides: Overrides = (),
           out: str | Path | None = None, force: bool = False) -> dict:
    """`mcengine yield`: the fab stage alone over ``wafers`` wafers. With ``out``, the
    folder gets summary.json, the resolved scenario, table.csv (one row per metric) and
    the stage's figures;
    ``force`` replaces another run's files there."""
    from .standalone.fab import yield_summary as study

    return _stage("yield", study, scenario, "wafers", wafers, seed, overrides, out, force)


@_records("reliability")
def reliability(scenario: str | Scenario, lifetimes: int = SAMPLE_DEFAULTS["reliability"].size, seed: int | None = None, overrides: Overrides = (),
                out: str | Path | None = None, force: bool = False) -> dict:
    """`mcengine reliability`: the reliability stage alone over ``lifetimes`` cluster
    lifetimes (``out``/``force`` as for :func:`yield_`)."""
    from .standalone.reliability import lifetime_summary as study

    return _stage("reliability", study, scenario, "lifetimes", lifetimes, seed, overrides, out, force)


@_records("roofline")
def roofline(scenario: str | Scenario, overrides: Overrides = (), out: str | Path | None = None, force: bool = False) -> dict:
    """`mcengine roofline`: deterministic throughput at the median inputs (``out``/``force``
    as for :func:`yield_`)."""
    from .standalone.roofline import roofline_summary as study

    return _stage("roofline", study, scenario, None, None, None, overrides, out, force)


#: The per-request table ``serve --out DIR`` writes.
SERVE_REQUESTS_FILE = "requests.parquet"


@_records("serve")
def serve(scenario: str | Scenario, demand: float, requests: int = SAMPLE_DEFAULTS["serve"].size, seed: int | None = None, arrival: str = "poisson",
          arrival_cv: float = 1.0, mode: str | None = None, instances: int | None = None, lengths: str = "fixed", warmup: float | str = "mser5",
          overrides: Overrides = (), out: str | Path | None = None, force: bool = False) -> dict:
    """`mcengine serve`: ``requests`` requests arriving at ``demand`` output tokens/s,
    simulated one by one on the plan in use at the median inputs (``mode``: that mode's
    best plan instead) over ``instances`` instances (default ``cluster.instances``;
    :func:`mcengine.standalone.serve.serve_summary`, docs/serve.md). With ``out``, the
    folder also gets the per-request table (requests.parquet) and the latency CDF figure;
    ``force`` as for :func:`yield_`."""
    from .io import write_atomic
    from .report.serve import figures_for_serve
    from .standalone.serve import MAX_REQUESTS, serve_summary, warmup_rule

    start = time.perf_counter()
    positive("--requests", requests, MAX_REQUESTS)
    warmup = warmup_rule(warmup)
    s, plans = _one(scenario, overrides)
    seed = seed_of(s, seed)
    params = {"demand": demand, "arrival": arrival, "arrival_cv": arrival_cv, "mode": mode, "instances": instances, "lengths": lengths,
              "warmup": warmup}
    folder = _claim(out, "serve", [s], seed, requests, params, force)
    body, table = serve_summary(s, demand, requests, seed, arrival, arrival_cv, mode, instances, lengths, warmup)
    doc = _document(s, seed, "requests", requests, body, start, plans)
    extra = []
    if folder is not None:
        buffer = io.BytesIO()
        table.to_parquet(buffer, index=False)
        extra.append(write_atomic(folder.path / SERVE_REQUESTS_FILE, buffer.getvalue()).name)
    _save(folder, doc, [s], metric_rows(body), figures=lambda o: figures_for_serve(doc, table, o), extra=extra)
    return doc


#: `mcengine yield` is the fab stage: both names work.
fab = yield_
#: Names of the first API, kept working.
yield_study, reliability_study, roofline_study = yield_, reliability, roofline


def validate() -> list:
    """Every stage's analytic cross-checks (a list of :class:`~mcengine.validation.Check`)."""
    from .validation import all_checks

    return all_checks()


@_records("validate", "--json")
def validation_report() -> dict:
    """`mcengine validate --json`: every check, whether all required checks passed (a
    known miss is reported, not required), and the provenance."""
    checks = validate()
    return {"checks": [c.to_dict() for c in checks], "passed": all(c.status != "FAIL" for c in checks), "provenance": provenance()}


@_records("bench")
def bench(quick: bool = False, stages: Sequence[str] = (), out: str | Path | None = None, force: bool = False) -> dict:
    """mcengine's own throughput per stage and for the chain (:mod:`mcengine.bench`);
    ``out``/``force`` as for :func:`yield_` (no scenario file: bench has none)."""
    from .bench import run_all

    folder = _claim(out, "bench", (), None, None, {"quick": quick, "stages": list(stages)}, force)
    doc = run_all(quick=quick, stages=tuple(stages))
    elapsed = doc.pop("elapsed_s", None)
    doc["provenance"] = provenance()
    if elapsed is not None:
        doc["elapsed_s"] = elapsed
    _save(folder, doc, (), metric_rows(doc, skip=("provenance",)))
    return doc


def write_scenario(scenario: Scenario, out: Path) -> Path:
    """The resolved scenario next to the results (``<out>/<name>.toml``)."""
    import tomli_w

    from .io import write_atomic

    return write_atomic(Path(out) / f"{scenario.name}.toml", tomli_w.dumps(scenario.to_dict()))


DEFAULT_STUDY = "case-study"


def _expand(refs: Sequence[str | Scenario] | None) -> dict:
    """The scenarios to run: ``refs`` themselves, or the study one of them names (a study
    file or a shipped study; no refs = the shipped case study). A study runs alone."""
    from .scenario.study import load_study, study_path

    refs = list(refs or ())
    if not refs:
        return load_study(DEFAULT_STUDY)
    studies = [r for r in refs if study_path(r) is not None]
    if studies and len(refs) > 1:
        raise InputError(Problem("SCENARIO", studies[0], "a study runs alone: give the study, or scenarios, not both"))
    if studies:
        return load_study(studies[0])
    return {"name": None, "scenarios": refs, "trials": None, "seed": None, "outputs": None, "set": ()}


def resolve_scenarios(refs: Sequence[str | Scenario] | None, overrides: Overrides = ()) -> tuple[str, list[Scenario], int | None]:
    """(label, scenarios, study trials) for `run`/`compare`; a study expanded, no refs = the
    shipped case study. Every scenario is validated before anything runs, and all their
    problems are reported together."""
    study, scenarios, _ = _resolve_run(refs, overrides)
    return study["label"], scenarios, study["trials"]


def _resolve_run(refs, overrides) -> tuple[dict, list[Scenario], list]:
    study = _expand(refs)
    scenarios, plans = load_targeted(study["scenarios"], [*study["set"], *override_texts(overrides)])
    study["label"] = study["name"] or " vs ".join(s.name for s in scenarios)
    if study.get("outputs"):
        from .columns import METRICS

        bad = [m for m in study["outputs"] if m not in METRICS]
        if bad:
            raise InputError(Problem(f"{study.get('source', 'study')}: outputs", bad, "allowed: " + ", ".join(METRICS)))
    return study, scenarios, plans


def _sample(resolved: list[Scenario], study: dict, trials: int | None, seed: int | None) -> tuple[int, int]:
    """(trials, seed) of a run: the options, else the study's, else the scenarios' shared
    ``run.trials`` and ``run.seed``."""
    shared = shared_run(resolved, trials=trials if trials is not None else study["trials"] or None,
                        seed=seed if seed is not None else study["seed"])
    return positive("--trials", shared["trials"]), check_seed(shared["seed"])


@_records("run")
def run(
    scenarios: Sequence[str | Scenario] | None = None,
    trials: int | None = None,
    seed: int | None = None,
    overrides: Overrides = (),
    out: str | Path | None = None,
    keep_trials: bool | None = None,
    chunk_trials: int | None = None,
    scheduler: str | None = None,
    resume: bool = False,
    progress="auto",
    figures: bool = True,
    force: bool = False,
    verdict_map: int | None = None,
    map_weights: Sequence[str] = (),
):
    """The full chain over ``trials`` trials of each scenario (paired: same seed, common
    random numbers); returns a :class:`~mcengine.results.Results`.

    ``scenarios`` are names, paths or Scenario objects, or one study (a study file or a
    shipped study's name; none = the shipped case study), whose trials and seed are the
    defaults. With two or more scenarios the summary also holds ``"paired"``: per metric,
    the distribution of second/first over paired trials and the share of trials where the
    second is below the first (``"paired_all"`` has every later scenario against the first).
    ``out`` writes summary.json, the resolved scenarios, table.csv, figures and (with
    ``keep_trials``) ``trials.parquet``; a folder holding another run is refused unless
    ``force``; ``resume=True`` continues the interrupted run in ``out``.
    ``keep_trials`` defaults to keeping the per-trial table (in memory without ``out``),
    and on resume to what the interrupted run did; a ``seed``, ``trials`` or
    ``keep_trials`` given on resume must match the interrupted run's. ``chunk_trials``
    (a multiple of 1,024) fixes the chunk size; by default chunks grow from 1,024 trials
    to take about five seconds each (at most 16,384), so progress moves every few seconds.
    Neither changes a number.
    ``verdict_map`` (trials per cell) adds ``"verdict_map"`` to a paired run's summary: the
    verdict in each cell of the structural readings' grid (:mod:`mcengine.sensitivity.verdict_map`,
    cells x ``verdict_map`` trials more to run), with a weighted total when ``map_weights``
    (``reading.option=w`` texts) are given.
    ``progress``: ``"auto"`` (default) or ``True`` draws a progress bar in a Jupyter
    notebook (nothing elsewhere), ``None`` none, a callable ``progress(done, total)``
    hears the trials done after each chunk.
    """
    from . import runner
    from .report.progress import progress_for
    from .results import Results, TrialsFile

    start = time.perf_counter()
    out = Path(out) if out is not None else None
    expect, plans, outputs = {}, [], None
    weights = None
    if verdict_map is not None:
        from .sensitivity import verdict_map as vm

        positive("--verdict-map", verdict_map)
        weights = vm.parse_weights(map_weights) if map_weights else None
    if resume:
        if out is None:
            raise InputError(Problem("--resume", None, "needs the folder of the interrupted run"))
        spec = None
        expect = {"seed": None if seed is None else check_seed(seed), "trials": None if trials is None else positive("--trials", trials),
                  "keep_trials": keep_trials, "overrides": override_texts(overrides)}
        if scenarios:
            study, resolved, plans = _resolve_run(scenarios, overrides)
            n, seed = _sample(resolved, study, trials, seed)
            spec = runner.RunSpec(tuple(resolved), seed, n, bool(keep_trials), study["label"])
    else:
        study, resolved, plans = _resolve_run(scenarios, overrides)
        n, seed = _sample(resolved, study, trials, seed)
        keep = True if keep_trials is None else keep_trials
        spec = runner.RunSpec(tuple(resolved), seed, n, keep, study["label"])
        outputs = study["outputs"]
    folder = None
    if out is not None:
        fingerprint = None if spec is None else run_fingerprint("run", spec.scenarios, spec.seed, spec.trials, {"keep_trials": spec.keep_trials})
        folder = OutFolder.claim(out, "run", fingerprint, force=force, resume=resume, owned=RUN_FILES,
                                 writes=_writes(spec.scenarios if spec is not None else ()))
    prov = None if spec is None else provenance(spec.scenarios, spec.seed, "trials", spec.trials, plans)
    progress = progress_for(progress, "mcengine run" if spec is None else spec.label)
    outcome = runner.execute(spec, chunk_trials=chunk_trials, out=out, resume=resume, scheduler=scheduler, progress=progress,
                             expect=expect, provenance=prov)
    spec = outcome.spec
    doc = {"scenario": spec.label, "seed": spec.seed, "trials": spec.trials}
    doc.update(outcome.accumulators.summary())
    if outputs:
        doc["outputs"] = list(outputs)
    doc["provenance"] = provenance(spec.scenarios, spec.seed, "trials", spec.trials, plans)
    if outcome.provenance is not None:  # a resumed run: what started it
        doc["provenance"]["overrides"] = outcome.provenance.get("overrides", [])
        doc["provenance"]["started_by"] = outcome.provenance.get("command_line")
    doc["elapsed_s"] = time.perf_counter() - start
    table = None
    if spec.keep_trials:
        import pandas as pd

        if out is not None:  # read in pieces by the verdict, whole only if the caller asks (Results.table)
            table = TrialsFile(out / TRIALS_DIR)
        elif outcome.frames:
            table = pd.concat(outcome.frames, ignore_index=True)
    if "paired_all" in doc:  # the answer first (docs/interface.md: "verdict")
        from .report.verdict import stored_paper, verdict

        doc = {**{k: doc[k] for k in ("scenario", "seed", "trials")}, "verdict": verdict(doc, table, stored_paper()), **doc}
        if verdict_map is not None:
            doc["verdict_map"] = _verdict_map(scenarios, verdict_map, spec.seed, overrides, weights)
    results = Results(doc, outcome.accumulators, table, plotter=_plot, rows=run_rows)
    if folder is not None:
        fingerprint = run_fingerprint("run", spec.scenarios, spec.seed, spec.trials, {"keep_trials": spec.keep_trials})
        folder.fingerprint = fingerprint
        _write_outputs(results, spec, folder, figures, outputs)
    return results


def _verdict_map(scenarios, trials: int, seed: int, overrides: Overrides, weights) -> dict:
    """The ``verdict_map`` of :func:`run`: one run of ``scenarios`` per cell of the grid,
    ``trials`` each, the cell's overrides after the run's own."""
    from .sensitivity import verdict_map as vm

    grid, verdicts, ratios = vm.cells(), [], []
    for cell in grid:
        r = run(scenarios, trials=trials, seed=seed, overrides=[*override_texts(overrides), *cell["overrides"]], keep_trials=True,
                progress=None, figures=False)
        verdicts.append(vm.cell_verdict(r.doc))
        ratios.append(vm.paired_ratios(r.table, r.doc))
    return vm.document(grid, verdicts, ratios, None if weights is None else vm.cell_weights(grid, weights), trials)


def _plot(results, kind: str):
    """``Results.plot``: one figure of a run (:func:`mcengine.report.figures.run_figure`)
    that a notebook draws as a cell's value."""
    from .report.display import displayable
    from .report.figures import run_figure

    return displayable(run_figure(results, kind))


@_records("compare")
def compare(
    a: str | Scenario,
    b: str | Scenario,
    *more: str | Scenario,
    trials: int | None = None,
    seed: int | None = None,
    overrides: Overrides = (),
    out: str | Path | None = None,
    keep_trials: bool | None = None,
    chunk_trials: int | None = None,
    scheduler: str | None = None,
    resume: bool = False,
    progress="auto",
    figures: bool = True,
    force: bool = False,
):
    """Paired comparison of B (and more) against A: :func:`run` with two or more scenarios
    (same seed, common random numbers); every keyword as for :func:`run`. The result's
    ``to_frame()`` has the paired ratio B / A and P(B better) per metric."""
    return run([a, b, *more], trials=trials, seed=seed, overrides=overrides, out=out, keep_trials=keep_trials,
               chunk_trials=chunk_trials, scheduler=scheduler, resume=resume, progress=progress, figures=figures, force=force)


def run_rows(doc: dict, outputs: Sequence[str] | None = None) -> list[dict]:
    """The table of a `run`/`compare` summary (table.csv, ``Results.to_frame()``): one row
    per (scenario, metric), then one per (pair ``"B / A"``, ``"<metric> ratio"``) with the
    paired ratio's distribution, P(B < A), P(B better) in the metric's direction (ties
    counted as not worse where higher is better, as this column always has) and P(B = A)."""
    from .outfolder import STATS
    from .results import metric_items

    rows = []
    for name, metrics in doc["scenarios"].items():
        for metric, dist in metric_items(metrics):
            if not outputs or metric in outputs:
                rows.append({"scenario": name, "metric": metric, **{k: dist.get(k) for k in STATS}})
    for pair, metrics in doc.get("paired_all", {}).items():
        for metric, paired in metrics.items():
            if not outputs or metric in outputs:
                rows.append({"scenario": pair, "metric": f"{metric} ratio", **{k: paired["ratio"].get(k) for k in STATS},
                             "p_b_below_a": paired["p_b_below_a"], "p_b_better": _p_better(metric, paired["p_b_below_a"]),
                             "p_tie": paired.get("p_tie")})
    return rows


def _p_better(metric: str, p_b_below_a: float) -> float | None:
    """P(B better) in the metric's direction (ties count for higher-is-better metrics:
    P(B ≥ A)); None for a metric without a direction."""
    from .report.metrics import metric as describe, p_better

    return p_better(metric, p_b_below_a)[0] if describe(metric).better else None


def _write_outputs(results, spec, folder: OutFolder, figures: bool, outputs=None) -> None:
    from .report.figures import write_figures

    _save(folder, results.doc, spec.scenarios, run_rows(results.doc, outputs),
          figures=(lambda out: write_figures(results, out)) if figures else None, extra=RUN_FILES)


def _study_refs(scenarios) -> list:
    refs = [scenarios] if isinstance(scenarios, (str, Scenario)) else list(scenarios)
    if not 1 <= len(refs) <= 2:
        raise InputError(Problem("SCENARIO", [getattr(r, "name", r) for r in refs], "allowed: one scenario, or two (A B: the output is the paired ratio B/A)"))
    return refs


def _analysis(command: str, study, scenarios, kwargs: dict, params: dict, rows, out, force) -> dict:
    """A sweep or sensitivity analysis with the ``--out`` contract and provenance."""
    from .report.progress import progress_for
    from .report.sensitivity import write_figures

    resolved, plans = load_targeted(_study_refs(scenarios), override_texts(kwargs.pop("overrides", ())))
    seed = seed_of(resolved, kwargs.get("seed"))
    folder = _claim(out, command, resolved, seed, kwargs.get("trials"), params, force)
    kwargs["progress"] = progress_for(kwargs.get("progress"), command)
    doc = study(resolved if len(resolved) > 1 else resolved[0], **kwargs)
    size = doc.get("trials", kwargs.get("trials"))
    elapsed = doc.pop("elapsed_s", None)
    doc["provenance"] = provenance(resolved, doc.get("seed", seed), "trials", size, plans)
    if elapsed is not None:
        doc["elapsed_s"] = elapsed
    _save(folder, doc, resolved, rows(doc), figures=lambda o: write_figures(doc, o))
    return doc


def sweep_rows(doc: dict) -> list[dict]:
    """The table of a sweep: one row per (value, metric)."""
    from .outfolder import STATS

    rows = []
    for row in doc["rows"]:
        for metric in doc["outputs"]:
            line = {"value": row["value"], "metric": metric, **{k: row[metric].get(k) for k in STATS}}
            if "p_b_below_a" in row:
                line["p_b_below_a"] = row["p_b_below_a"][metric]
            rows.append(line)
    return rows


def sensitivity_rows(doc: dict) -> list[dict]:
    """The table of a sensitivity analysis: one row per input (tornado bars, or Sobol' indices)."""
    if "bars" in doc:
        return [{"input": k, **v} for k, v in doc["bars"].items()]
    return [{"input": k, **v} for k, v in doc.get("indices", {}).items()]


@_records("sweep")
def sweep(
    scenarios,
    param: str | Sequence[str],
    values: Sequence,
    outputs: Sequence[str] | None = None,
    trials: int | None = None,
    seed: int | None = None,
    overrides: Overrides = (),
    chunk_trials: int | None = None,
    scheduler: str | None = None,
    progress="auto",
    out: str | Path | None = None,
    force: bool = False,
) -> dict:
    """`mcengine sweep`: the chain at each value of a key (or on a grid of two keys: two
    ``param``, ``values`` a list per key); ``outputs`` default to cost, availability,
    tokens/s and GPU cost; ``trials`` paired trials per value (default 1,024). One
    scenario, or two (A, B: the outputs become the paired ratio B/A and P(B < A)). See
    :func:`mcengine.sensitivity.methods.sweep`; ``out``/``force`` as for :func:`yield_`."""
    from .sensitivity.methods import DEFAULT_SWEEP_TRIALS, SWEEP_OUTPUTS, sweep as study

    outputs = tuple(outputs or SWEEP_OUTPUTS)
    trials = DEFAULT_SWEEP_TRIALS if trials is None else trials
    kwargs = dict(param=param, values=values, outputs=outputs, trials=trials, seed=seed, overrides=overrides,
                  chunk_trials=chunk_trials, scheduler=scheduler, progress=progress)
    params = {"param": param, "values": [str(v) for v in values], "outputs": list(outputs)}
    return _analysis("sweep", lambda s, **kw: study(s, **kw), scenarios, kwargs, params, sweep_rows, out, force)


def parse_values(text: str) -> list[str]:
    """A `--values` list (``"0.1,0.2"``, TOML literals, tables kept whole) as one literal per value."""
    from .sensitivity.methods import parse_values as parse

    return parse(text)


@_records("tornado")
def tornado(
    scenarios,
    output: str = "cost_per_mtok_usd",
    trials: int | None = None,
    seed: int | None = None,
    overrides: Overrides = (),
    quantiles: tuple[float, float] | None = None,
    chunk_trials: int | None = None,
    progress="auto",
    out: str | Path | None = None,
    force: bool = False,
) -> dict:
    """`mcengine sensitivity --method tornado`: each uncertain input alone at its 5th and
    95th percentile (``quantiles``), ``trials`` per bar
    (:func:`mcengine.sensitivity.methods.tornado`); ``out``/``force`` as for :func:`yield_`."""
    from .sensitivity import methods

    kwargs = _given(output=output, trials=trials, seed=seed, overrides=overrides, quantiles=quantiles,
                    chunk_trials=chunk_trials, progress=progress)
    return _analysis("tornado", methods.tornado, scenarios, kwargs, {"output": output}, sensitivity_rows, out, force)


@_records("sobol")
def sobol(
    scenarios,
    output: str = "cost_per_mtok_usd",
    trials: int | None = None,
    seed: int | None = None,
    overrides: Overrides = (),
    scramblings: int | None = None,
    conf_level: float | None = None,
    chunk_trials: int | None = None,
    progress="auto",
    out: str | Path | None = None,
    force: bool = False,
) -> dict:
    """`mcengine sensitivity --method sobol`: first-order and total Sobol' indices of every
    uncertain input, ``trials`` base samples N (a power of two; N(d+3) trials run),
    ``scramblings`` independent scramblings of the design for the ``conf_level`` intervals
    (:func:`mcengine.sensitivity.methods.sobol`); ``out``/``force`` as for :func:`yield_`."""
    from .sensitivity import methods

    kwargs = _given(output=output, trials=trials, seed=seed, overrides=overrides, scramblings=scramblings,
                    conf_level=conf_level, chunk_trials=chunk_trials, progress=progress)
    return _analysis("sobol", methods.sobol, scenarios, kwargs, {"output": output}, sensitivity_rows, out, force)


def _given(**kwargs) -> dict:
    """The keyword arguments given (not None): the others keep the study's own default."""
    return {k: v for k, v in kwargs.items() if v is not None}


def new_gpu(name: str, fraction: float = 0.25, parent: str = "h100", hbm_generation: str | None = None, io: str | None = None,
            out: str | Path | None = None) -> tuple[Path, Scenario]:
    """Write ``NAME.toml`` (or ``out``): a scenario of a GPU built from ``fraction`` of
    ``parent``'s die by the shipped derivation rules (``[gpu.derive]``, docs/model.md#derive:
    die size and units, HBM stacks from its shoreline, link bandwidth, peak FLOP/s, power,
    and so the fab cost and price), extending ``lite-h100-shoreline`` (the shipped derived
    Lite-GPU: its cluster, reliability and packaging). The file is loaded back and
    validated before it is kept; an existing file is never replaced. Returns (path, scenario)."""
    path = Path(out) if out is not None else Path(f"{name}.toml")
    if path.exists():
        raise InputError(Problem("--out", str(path), "exists: give another path (a file is never replaced)"))
    derive = {"parent": parent, "fraction": fraction, **({"hbm_generation": hbm_generation} if hbm_generation else {}), **({"io": io} if io else {})}
    lines = [f"# {name}: a GPU of {fraction:g} of {parent}'s die, its HBM stacks, links, peak and power derived from",
             "# the die's perimeter by the shipped rules (docs/model.md#derive); `mcengine check` shows each derived value",
             "# and the rule that gave it ([gpu.derive.resolved]). Cluster, reliability and packaging: lite-h100-shoreline's;",
             "# set them below for your part (`mcengine keys fab`, `mcengine keys cluster`).",
             f"name = {toml_literal(name)}", 'extends = "lite-h100-shoreline"', f"description = {toml_literal(f'{fraction:g} of a {parent} die, derived')}",
             "", "[gpu]", f"name = {toml_literal(name)}", "", "[gpu.derive]",
             *(f"{k} = {toml_literal(v)}" for k, v in derive.items()), ""]
    from .io import write_atomic

    write_atomic(path, "\n".join(lines))
    try:
        return path, load_scenario(str(path))
    except InputError:
        path.unlink()
        raise


def report(run_dir: str | Path, output: str | Path | None = None) -> Path:
    """One self-contained HTML page of a ``run``/``compare`` ``--out`` folder (the verdict
    block, the tables, every figure inline, the provenance; it opens offline), written to
    ``output`` (default ``run_dir/report.html``); returns its path."""
    from .report.html import write_report

    return write_report(Path(run_dir), None if output is None else Path(output))


@_records("paper")
def paper(trials: int | None = None, seed: int | None = None, quick: bool = False, out: str | Path | None = None,
          force: bool = False, progress=None) -> dict:
    """`mcengine paper`: the paper's claims one by one (:mod:`mcengine.paper`): per claim
    the paper's figure, mcengine's under the paper's assumptions (configs/paper/) and
    under the shipped scenarios, and where it flips; plus the SLO frontier. ``out``
    gets summary.json, table.csv (one row per claim, in numbers), one figure per claim and the
    frontier figure, and the scenarios of the paper set; ``progress(text)`` hears each step."""
    from .paper import DEFAULT_SEED, DEFAULT_TRIALS, QUICK_TRIALS, study
    from .paper._common import paper_dir
    from .report.paper import claim_number_rows, write_paper_figures

    trials = positive("--trials", trials if trials is not None else (QUICK_TRIALS if quick else DEFAULT_TRIALS))
    seed = check_seed(DEFAULT_SEED if seed is None else seed)
    scenarios = [load_scenario(str(p)) for p in sorted(paper_dir().glob("paper-*.toml"))]
    folder = _claim(out, "paper", scenarios, seed, trials, {"quick": quick}, force)
    doc = study(trials=trials, seed=seed, quick=quick, progress=progress)
    elapsed = doc.pop("elapsed_s")
    doc["provenance"] = provenance(scenarios, doc["seed"], "trials", doc["trials"])
    doc["elapsed_s"] = elapsed
    _save(folder, doc, scenarios, claim_number_rows(doc), figures=lambda o: write_paper_figures(doc, o))
    return doc


__all__ = [
    "bench", "paper", "check", "compare", "fab", "keys", "override_plan", "parse_values", "prepare_folder", "reliability", "roofline", "run",
    "scenarios", "set_threads", "sobol", "studies", "sweep", "tornado", "validate", "validation_report", "write_scenario", "yield_",
]
