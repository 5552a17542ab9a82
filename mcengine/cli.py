"""The ``mcengine`` command line: thin Typer commands over :mod:`mcengine.api`.

Shared options are defined once below. With ``--json`` stdout carries exactly one JSON
document; tables, progress and logs go elsewhere (tables to stdout without ``--json``,
everything else to stderr). Exit status: 0 success, 2 bad input, 1 anything else.
Heavy imports (numba, the stages) happen inside the commands, so ``--help`` is fast.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from . import api
from .errors import InputError
from .options import DEFAULT_SCRAMBLINGS, SAMPLE_DEFAULTS

app = typer.Typer(
    name="mcengine",
    help="Monte Carlo engine: should AI clusters be built from Lite-GPUs or H100s? Cost per token and availability, with error bars.",
    no_args_is_help=True,
    add_completion=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

# ------------------------------------------------------------------ shared options
ScenarioArg = Annotated[str, typer.Argument(metavar="SCENARIO", help="Path to a scenario TOML file, or a shipped scenario name (see `mcengine scenarios`).", show_default=False)]
SeedOpt = Annotated[Optional[int], typer.Option("--seed", metavar="S", help="Master seed (default: the scenario's run.seed). Same seed, same numbers at any thread count.", show_default=False)]
SetOpt = Annotated[Optional[list[str]], typer.Option("--set", metavar="KEY=VALUE", help="KEY=VALUE override of any scenario key (dotted path, TOML literal value); NAME:KEY=VALUE or A:/B:... for one scenario. Repeatable.", show_default=False)]
ThreadsOpt = Annotated[Optional[int], typer.Option("--threads", metavar="T", help="Numba threads (default: all cores); with two or more, a chain also plans on one Python thread while they run, and a run computes its next chunk while it saves the one before.", show_default=False)]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the summary as one JSON document on stdout, nothing else.")]
OutOpt = Annotated[Optional[Path], typer.Option("--out", metavar="DIR", help="Write summary.json, the resolved scenario(s), table.csv and figures to this folder.", show_default=False)]
ForceOpt = Annotated[bool, typer.Option("--force", help="Let --out replace another run's files (only those mcengine wrote there), or write beside files mcengine did not write (never replacing them).")]


#: The one line printed before numba compiles the chain's kernels (stderr, terminal or not).
COMPILE_NOTICE = "compiling kernels, once: about a minute (numba caches them on disk; later runs start at once)"
#: The notice of work whose kernels compile in far less (the fab stage alone: its wafer
#: kernel, a few seconds; the reliability stage shares the chain's life kernel).
COMPILE_NOTICES = {"fab": "compiling the fab stage's kernel, once: a few seconds (numba caches it on disk)",
                   "serve": "compiling the serving simulator's kernel, once: under a minute (numba caches it on disk)"}


def _note_compile(work: str, quiet: bool = False) -> bool:
    """Before a command that runs kernels: tune the collector for numba's compiles
    (:func:`mcengine.jit.tune_compile_gc`: a first run compiles in less CPU time), and say
    on stderr that the kernels ``work`` needs are about to be compiled, when their on-disk
    cache is cold (:func:`mcengine.api.kernels_cold`), with how long that takes for this
    work; silent with ``--quiet``. Returns whether they will compile."""
    from .jit import tune_compile_gc

    tune_compile_gc()
    cold = api.kernels_cold(work)
    if cold and not quiet:
        sys.stderr.write(COMPILE_NOTICES.get(work, COMPILE_NOTICE) + "\n")
        sys.stderr.flush()
    return cold


def _version(value: bool) -> None:
    if value:
        from . import __version__

        sys.stdout.write(f"mcengine {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.", callback=_version, is_eager=True)] = False,
) -> None:
    """Monte Carlo engine: should AI clusters be built from Lite-GPUs or H100s? Cost per token and availability, with error bars."""


def _console():
    from rich.console import Console

    return Console()


def _emit(doc: dict, as_json: bool, render) -> None:
    """Print JSON or the rendered table (the API wrote the --out folder)."""
    from .io import dumps

    if as_json:
        sys.stdout.write(dumps(doc) + "\n")
    else:
        _console().print(render(doc))


@contextlib.contextmanager
def _saves_at_end(command: str, out):
    """A command that writes its results (its --out folder included) only when it
    finishes: an interrupt (between its points or steps) says that nothing was saved."""
    from .errors import Interrupted

    try:
        yield
    except Interrupted as exc:
        exc.hint = _results_hint(exc) or (f"stopped before its next step; nothing saved{f' to {out}' if out is not None else ''} "
                                          f"(`mcengine {command}` reports and writes its results only when it finishes)")
        raise


def _results_hint(exc) -> str:
    """What a stop while the results were being written left ('' if it came before)."""
    if not hasattr(exc, "results"):
        return ""
    out, complete = exc.results
    if complete:
        return f"stopped once every result was written to {out}/ (the command had finished its work)"
    return f"stopped while writing the results to {out}/ (a second signal); run the same command again to finish them"


# ------------------------------------------------------------------ commands
@app.command("scenarios")
def scenarios_cmd(as_json: JsonOpt = False) -> None:
    """List the shipped scenarios and studies (a study runs with `mcengine run NAME`)."""
    rows, studies = api.scenarios(), api.studies()
    if as_json:
        from .io import dumps
        from .provenance import provenance

        sys.stdout.write(dumps({"scenarios": [{"name": n, "description": d} for n, d in rows],
                                "studies": [{"name": n, "description": d, "kind": "study"} for n, d in studies],
                                "provenance": provenance()}) + "\n")
        return
    from .report.tables import render_scenarios

    _console().print(render_scenarios(rows + [(f"{n} (study)", d) for n, d in studies]))


@app.command("keys")
def keys_cmd(
    section: Annotated[Optional[str], typer.Argument(metavar="[SECTION]", help="Only the keys under this table (fab, reliability.components, workload.model, ...).", show_default=False)] = None,
    as_json: JsonOpt = False,
) -> None:
    """Every scenario key: meaning, unit, default, allowed range and why."""
    rows = api.keys(section)
    if as_json:
        from .io import dumps
        from .provenance import provenance

        sys.stdout.write(dumps({"keys": rows, "provenance": provenance()}) + "\n")
        return
    from .scenario.keys import format_keys

    sys.stdout.write(format_keys(rows))


@app.command("check")
def check_cmd(scenario: ScenarioArg, overrides: SetOpt = None, as_json: JsonOpt = False) -> None:
    """Validate a scenario and print it fully resolved (every default filled)."""
    s = api.check(scenario, overrides or ())
    _warn_inconsistent([s])
    if as_json:
        from .io import dumps

        sys.stdout.write(dumps(s.to_dict(with_unset=True)) + "\n")
    else:
        from .report.scenario import resolved_toml

        sys.stdout.write(resolved_toml(s.to_dict(with_unset=True), s.to_dict()))


StageScenariosArg = Annotated[list[str], typer.Argument(metavar="SCENARIO...", help="A scenario (path or shipped name), or several: each alone, one after the other (--set NAME:KEY=VALUE or A:/B: aims at one; --out DIR gives each its folder DIR/NAME).", show_default=False)]


def _each_scenario(one, render, scenarios: list[str], overrides, as_json: bool, out) -> None:
    """A stage alone for each of ``scenarios``: ``one(scenario, overrides, out)`` computes a
    document, ``render`` draws it. One scenario: its document as before; several: each
    table in turn, or one JSON document ``{"scenarios": {name: document}}``."""
    if len(scenarios) == 1:
        _emit(one(scenarios[0], overrides or (), out), as_json, render)
        return
    _note_overrides(scenarios, overrides)
    _, resolved, _ = api.resolve_scenarios(scenarios, overrides or ())
    docs = {s.name: one(s, (), None if out is None else Path(out) / s.name) for s in resolved}
    if as_json:
        from .io import dumps

        sys.stdout.write(dumps({"scenarios": docs}) + "\n")
        return
    for doc in docs.values():
        _console().print(render(doc))


def _sampled_stage(study, render, scenarios, size, seed, overrides, threads, as_json, out, force, work: str) -> None:
    """A stage alone over ``size`` samples of each scenario: ``study`` computes a document, ``render`` draws it."""
    api.set_threads(threads)
    _note_compile(work)
    with _saves_at_end(study.__name__.rstrip("_"), out):
        _each_scenario(lambda s, o, folder: study(s, size, seed, o, out=folder, force=force), render, scenarios, overrides, as_json, out)


@app.command("yield")
def yield_cmd(
    scenario: StageScenariosArg,
    wafers: Annotated[int, typer.Option("--wafers", metavar="N", help=SAMPLE_DEFAULTS["yield"].help("Wafers to sample."))] = SAMPLE_DEFAULTS["yield"].size,
    seed: SeedOpt = None,
    overrides: SetOpt = None,
    threads: ThreadsOpt = None,
    as_json: JsonOpt = False,
    out: OutOpt = None,
    force: ForceOpt = False,
) -> None:
    """Fab stage alone: die yield, good dies per wafer, cost per good GPU."""
    from .report.tables import render_yield

    _sampled_stage(api.yield_, render_yield, scenario, wafers, seed, overrides, threads, as_json, out, force, "fab")


@app.command("reliability")
def reliability_cmd(
    scenario: StageScenariosArg,
    lifetimes: Annotated[int, typer.Option("--lifetimes", metavar="N", help=SAMPLE_DEFAULTS["reliability"].help("Cluster lifetimes to simulate."))] = SAMPLE_DEFAULTS["reliability"].size,
    seed: SeedOpt = None,
    overrides: SetOpt = None,
    threads: ThreadsOpt = None,
    as_json: JsonOpt = False,
    out: OutOpt = None,
    force: ForceOpt = False,
) -> None:
    """Reliability stage alone: availability, failures, swaps, stock-outs."""
    from .report.tables import render_reliability

    _sampled_stage(api.reliability, render_reliability, scenario, lifetimes, seed, overrides, threads, as_json, out, force, "reliability")


@app.command("roofline")
def roofline_cmd(scenario: StageScenariosArg, overrides: SetOpt = None, as_json: JsonOpt = False, out: OutOpt = None, force: ForceOpt = False) -> None:
    """Roofline stage alone (deterministic, at the median inputs)."""
    from .report.tables import render_roofline

    with _saves_at_end("roofline", out):
        _each_scenario(lambda s, o, folder: api.roofline(s, o, out=folder, force=force), render_roofline, scenario, overrides, as_json, out)


@app.command("serve")
def serve_cmd(
    scenario: Annotated[str, typer.Argument(metavar="SCENARIO", help="A scenario (path or shipped name).", show_default=False)],
    demand: Annotated[float, typer.Option("--demand", metavar="X", help="Offered load in output tokens/s for the simulated instances.", show_default=False)],
    arrival: Annotated[str, typer.Option("--arrival", metavar="poisson|gamma", help="Arrival process: Poisson, or a gamma renewal process with --cv.")] = "poisson",
    cv: Annotated[float, typer.Option("--cv", metavar="CV", help="Coefficient of variation of the inter-arrival times (--arrival gamma).")] = 1.0,
    mode: Annotated[Optional[str], typer.Option("--mode", metavar="static|continuous|disaggregated", help="Serving mode (default: the plan in use).", show_default=False)] = None,
    requests: Annotated[int, typer.Option("--requests", metavar="N", help=SAMPLE_DEFAULTS["serve"].help("Requests to simulate."))] = SAMPLE_DEFAULTS["serve"].size,
    instances: Annotated[Optional[int], typer.Option("--instances", metavar="N", help="Instances (default: cluster.instances).", show_default=False)] = None,
    lengths: Annotated[str, typer.Option("--lengths", metavar="fixed|geometric", help="Output tokens per request: workload.output_tokens each, or geometric with that mean.")] = "fixed",
    warmup: Annotated[str, typer.Option("--warmup", metavar="mser5|SHARE", help="The first requests left out of the statistics (the system starts empty): MSER-5's truncation, or this share of them.")] = "mser5",
    seed: SeedOpt = None,
    overrides: SetOpt = None,
    as_json: JsonOpt = False,
    out: OutOpt = None,
    force: ForceOpt = False,
) -> None:
    """Requests arriving at a demand, simulated one by one on the plan at the median inputs:
    TTFT and TPOT quantiles, goodput, SLO attainment, utilisation (with --out: requests.parquet
    and the latency CDF figure)."""
    from .report.serve import render_serve

    _note_compile("serve")
    with _saves_at_end("serve", out):
        _emit(api.serve(scenario, demand, requests, seed, arrival, cv, mode, instances, lengths, warmup, overrides or (), out, force),
              as_json, render_serve)


TrialsOpt = Annotated[Optional[int], typer.Option("--trials", metavar="N", help=f"Trials per scenario (default: the study's, {SAMPLE_DEFAULTS['study'].size:,} in the shipped studies, or the scenarios' run.trials, {SAMPLE_DEFAULTS['scenario'].size:,} unless a file sets it; why: docs/cli.md#sample-sizes).", show_default=False)]
KeepOpt = Annotated[bool, typer.Option("--keep-trials", help="Also write the per-trial table (trials.parquet) to --out.")]
ResumeOpt = Annotated[Optional[Path], typer.Option("--resume", metavar="DIR", help="Continue the interrupted run saved in this folder.", show_default=False)]
SchedulerOpt = Annotated[Optional[str], typer.Option("--scheduler", metavar="ADDR", help="Run chunks on a Dask cluster (tcp://HOST:PORT).", show_default=False)]
QuietOpt = Annotated[bool, typer.Option("--quiet", help="No progress bar.")]
SamplerOpt = Annotated[Optional[str], typer.Option("--sampler", metavar="random|sobol", help="How trials draw their uncertain inputs: random (plain Monte Carlo) or sobol (scrambled Sobol' points, randomised QMC; standard errors from run.scramblings independent scramblings). Default: the scenarios' run.sampler.", show_default=False)]
ChunkOpt = Annotated[Optional[int], typer.Option("--chunk-trials", metavar="N", help="Trials per chunk (a multiple of 1024); never changes the numbers.", show_default=False)]


def _progress_bar(as_json: bool, quiet: bool, compiling: bool = False, clock=None):
    """A rich progress bar on stderr when it is a terminal; silent with --quiet (and in logs).
    While kernels compile (``compiling``: a cold cache) it says so until the first chunk
    is done; its trials/s counts from the end of that chunk, so compiling is not in it."""
    if quiet or not sys.stderr.isatty():
        return None, None
    import time

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    clock = clock or time.perf_counter
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
    )
    task = bar.add_task("compiling kernels, then trials" if compiling else "trials", total=None, rate="")
    seen: dict = {}  # "start": trials done at the first report; "chunk": (time, trials done) when the first chunk ended

    def update(done: int, total: int) -> None:
        now = clock()
        seen.setdefault("start", done)
        if "chunk" not in seen and done > seen["start"]:
            seen["chunk"] = (now, done)
        bar.update(task, completed=done, total=total, **({"description": "trials"} if "chunk" in seen else {}))
        t0, d0 = seen.get("chunk", (now, done))
        rate = (done - d0) / (now - t0) if now > t0 and done > d0 else 0.0
        bar.update(task, rate=f"{rate:,.0f} trials/s" if rate else "")

    return bar, update


def _warn_inconsistent(scenarios) -> None:
    """A line on stderr for each disagreement of precision and weight size, and each key set
    that no model reads (:mod:`mcengine.scenario.consistency`)."""
    from .scenario.consistency import consistency_warnings, unread_warnings

    for s in scenarios:
        for text in consistency_warnings(s) + unread_warnings(s):
            sys.stderr.write(f"warning: {text}\n")


def _note_overrides(refs, overrides) -> None:
    """One line on stderr for each plain --set that reaches several scenarios."""
    if not overrides:
        return
    for plan in api.override_plan(refs, overrides):
        if ":" not in plan["set"].partition("=")[0] and len(plan["scenarios"]) > 1:
            sys.stderr.write(f"--set {plan['set']} applies to {len(plan['scenarios'])} scenarios: {', '.join(plan['scenarios'])}\n")


def _run(scenarios, trials, seed, overrides, threads, as_json, out, keep_trials, resume, scheduler, quiet, chunk_trials, force=False,
         verdict_map=None, map_weights=()) -> None:
    from contextlib import nullcontext

    from .report.tables import render_run

    from .errors import Interrupted, Problem

    api.set_threads(threads)
    if keep_trials and out is None and resume is None:
        raise InputError(Problem("--keep-trials", True, "needs --out DIR (the per-trial table is written there)"))
    if map_weights and verdict_map is None:
        raise InputError(Problem("--map-weight", list(map_weights), "needs --verdict-map TRIALS (the map the weights total)"))
    if verdict_map is not None and resume is not None:
        raise InputError(Problem("--verdict-map", verdict_map, "not with --resume: run the map with the run that starts"))
    if resume is not None and out is not None and Path(out).resolve() != Path(resume).resolve():
        raise InputError(Problem("--out", str(out), f"a resumed run writes to its own folder ({resume}); drop --out, or give the same folder"))
    if resume is None or scenarios:
        _note_overrides(scenarios, overrides)
        _warn_inconsistent(api.resolve_scenarios(scenarios or None, overrides or ())[1])
    compiling = _note_compile("chain", quiet)
    bar, update = _progress_bar(as_json, quiet, compiling)
    folder = resume if resume is not None else out
    try:
        with bar if bar is not None else nullcontext():
            results = api.run(
                scenarios or None, trials=trials, seed=seed, overrides=overrides or (), out=folder,
                keep_trials=_keep(scenarios, trials, overrides, keep_trials, out) if resume is None else (keep_trials or None), chunk_trials=chunk_trials,
                scheduler=scheduler, resume=resume is not None, progress=update, force=force, verdict_map=verdict_map, map_weights=map_weights,
            )
    except Interrupted as exc:
        exc.hint = _results_hint(exc)
        if not exc.hint or not exc.results[1]:  # what the chunks saved, as the run's checkpoint counts them
            from .runner import saved_trials

            saved, total = (exc.trials_saved, exc.trials) if hasattr(exc, "trials_saved") else saved_trials(folder)
            exc.hint = _saved_hint(folder, saved, total)
        raise
    doc = results.summary()
    if as_json:
        from .io import dumps

        sys.stdout.write(dumps(doc) + "\n")
    else:
        _console().print(render_run(doc))
        files = ", ".join(api.run_out_files(list(doc["scenarios"]), "verdict_map" in doc))
        if folder is not None:
            _console().print(f"results in {folder}/: {files}" + (", trials.parquet" if (Path(folder) / "trials.parquet").exists() else ""))
        else:
            _console().print(f"--out DIR writes {files} (and trials.parquet with --keep-trials)")


#: Largest run (trials x scenarios) whose per-trial table `run` keeps in memory, without
#: --keep-trials or --out, for the verdict's quick sensitivity (about 1 kB a trial and
#: scenario: 200 MB at most).
VERDICT_TABLE_TRIALS = 200_000


def _keep(scenarios, trials, overrides, keep_trials: bool, out) -> bool | None:
    """``keep_trials`` for the API: as given, or None (kept in memory) for a run without
    --out small enough for the verdict's drivers (:data:`VERDICT_TABLE_TRIALS`)."""
    if keep_trials or out is not None:
        return keep_trials
    _, resolved, planned = api.resolve_scenarios(scenarios or None, overrides or ())
    n = trials or planned or resolved[0].run.trials
    return None if len(resolved) > 1 and n * len(resolved) <= VERDICT_TABLE_TRIALS else False


def _saved_hint(folder, saved: int, trials: int | None) -> str:
    """What an interrupted run kept: nothing, or N trials and the command that goes on."""
    if folder is None:
        return "nothing saved: run with --out DIR to be able to resume"
    if not saved:
        return "nothing saved yet (no chunk had finished): run the command again"
    of = f" of {trials:,}" if trials else ""
    return f"{saved:,}{of} trials saved in {folder}; continue with: mcengine run --resume {folder}"


ScenariosArg = Annotated[Optional[list[str]], typer.Argument(metavar="[SCENARIO]...", help="Scenarios (paths or shipped names), or one study (file or shipped name); none = the shipped case study.", show_default=False)]
PairedArg = Annotated[Optional[list[str]], typer.Argument(metavar="A B [C]...", help="Scenarios A B [more]: each later one is paired with A.", show_default=False)]


#: `mcengine run paper` is `mcengine paper` (the study is not a list of scenarios).
PAPER_STUDY = "paper"


def _refuse_for_paper(given: dict) -> None:
    """The chain options `mcengine run paper` cannot honour (by flag): each one given is named."""
    from .errors import Problem

    bad = [Problem(flag, v, "not an option of the paper study (`mcengine paper --help`)") for flag, v in given.items() if v]
    if bad:
        raise InputError(bad)


def _with_sampler(overrides: list[str] | None, sampler: str | None) -> list[str] | None:
    """``--set`` overrides plus ``run.sampler`` for every scenario when ``--sampler`` is given."""
    if sampler is None:
        return overrides
    from .errors import Problem
    from .scenario.sampling import SAMPLERS

    if sampler not in SAMPLERS:
        raise InputError(Problem("--sampler", sampler, "allowed: " + ", ".join(SAMPLERS)))
    return [*(overrides or ()), f'run.sampler="{sampler}"']


def _one_study(scenarios) -> bool:
    """``scenarios`` is one study (a file or a shipped name), which names its own scenarios."""
    from .scenario.study import study_path

    return len(scenarios or ()) == 1 and study_path(scenarios[0]) is not None


VerdictMapOpt = Annotated[Optional[int], typer.Option("--verdict-map", metavar="TRIALS", help="Also the verdict in each cell of the structural readings' grid (markup scope x port price x die faults x memory; docs/verdict-map.md), TRIALS paired trials per cell: cells x TRIALS more trials to run.", show_default=False)]
MapWeightOpt = Annotated[Optional[list[str]], typer.Option("--map-weight", metavar="READING.OPTION=W", help="Weight of a reading's option in the map's total (repeatable; an option not given weighs 1); with --verdict-map.", show_default=False)]
FormatOpt = Annotated[str, typer.Option("--format", metavar="png|svg|pdf", help="File format of the figures --out writes.")]
DpiOpt = Annotated[int, typer.Option("--dpi", metavar="N", help="Resolution of PNG figures (dots per inch).")]


def _chain_command(min_scenarios: int, scenarios_arg, help_text: str):
    """A command over the full chain (``run``, ``compare``): one signature for both, so
    their options are declared once; ``compare`` needs at least two scenarios."""

    def command(
        scenarios: ScenariosArg = None,
        trials: TrialsOpt = None,
        seed: SeedOpt = None,
        overrides: SetOpt = None,
        threads: ThreadsOpt = None,
        as_json: JsonOpt = False,
        out: OutOpt = None,
        keep_trials: KeepOpt = False,
        resume: ResumeOpt = None,
        scheduler: SchedulerOpt = None,
        quiet: QuietOpt = False,
        chunk_trials: ChunkOpt = None,
        force: ForceOpt = False,
        sampler: SamplerOpt = None,
        figure_format: FormatOpt = "png",
        dpi: DpiOpt = 120,
        verdict_map: VerdictMapOpt = None,
        map_weight: MapWeightOpt = None,
    ) -> None:
        from .report.figures import figure_format as formatted

        with formatted(figure_format, dpi):
            _chain(scenarios, trials, seed, overrides, threads, as_json, out, keep_trials, resume, scheduler, quiet, chunk_trials, force, sampler,
                   {"verdict_map": verdict_map, "map_weights": tuple(map_weight or ())})

    def _chain(scenarios, trials, seed, overrides, threads, as_json, out, keep_trials, resume, scheduler, quiet, chunk_trials, force, sampler,
               readings) -> None:
        if len(scenarios or ()) < min_scenarios and not _one_study(scenarios):
            from .errors import Problem

            raise InputError(Problem("SCENARIO", scenarios or [], f"allowed: at least {min_scenarios} scenarios (A B [more]), or a study"))
        if min_scenarios == 0 and scenarios == [PAPER_STUDY]:
            _refuse_for_paper({"--set": overrides, "--resume": resume, "--keep-trials": keep_trials, "--scheduler": scheduler,
                               "--chunk-trials": chunk_trials, "--sampler": sampler, "--verdict-map": readings["verdict_map"],
                               "--map-weight": readings["map_weights"]})
            return paper_cmd(trials=trials, seed=seed, quick=False, threads=threads, as_json=as_json, out=out, force=force, quiet=quiet)
        _run(scenarios, trials, seed, _with_sampler(overrides, sampler), threads, as_json, out, keep_trials, resume, scheduler, quiet,
             chunk_trials, force, **readings)

    command.__doc__ = help_text
    command.__annotations__["scenarios"] = scenarios_arg
    return command


app.command("run")(_chain_command(0, ScenariosArg, "Full chain: cost per token and availability distributions (a study file or name runs its scenarios; no argument = the case study)."))
app.command("compare")(_chain_command(2, PairedArg, "Paired comparison of B (and more) against A: same seed, common random numbers (a study: its scenarios, the first as A)."))


@app.command("sweep")
def sweep_cmd(
    scenarios: Annotated[list[str], typer.Argument(metavar="SCENARIO", help="A scenario, or two (A B: the outputs become the paired ratio B/A and P(B < A)).", show_default=False)],
    param: Annotated[list[str], typer.Option("--param", metavar="KEY", help="Dotted key to sweep (B:KEY or A:KEY for one side only); twice for a 2-D grid.", show_default=False)],
    values: Annotated[list[str], typer.Option("--values", metavar="V1,V2,...", help="Comma-separated TOML values, one --values per --param.", show_default=False)],
    output: Annotated[Optional[list[str]], typer.Option("--metric", "--output", metavar="METRIC", help="Metric to report (repeatable; default: cost, availability, tokens/s, GPU cost). --output is the same option.", show_default=False)] = None,
    trials: Annotated[int, typer.Option("--trials", metavar="N", help=SAMPLE_DEFAULTS["sweep"].help("Paired trials per value."))] = SAMPLE_DEFAULTS["sweep"].size,
    seed: SeedOpt = None,
    overrides: SetOpt = None,
    threads: ThreadsOpt = None,
    as_json: JsonOpt = False,
    out: OutOpt = None,
    scheduler: SchedulerOpt = None,
    quiet: QuietOpt = False,
    force: ForceOpt = False,
    sampler: SamplerOpt = None,
) -> None:
    """Run the chain at each value of a key (or a grid of two): where does the verdict flip?"""
    from .errors import Problem
    from .report.sensitivity import render

    api.set_threads(threads)
    overrides = _with_sampler(overrides, sampler)
    if len(scenarios) > 2:
        raise InputError(Problem("SCENARIO", scenarios, "allowed: one scenario, or two (A B)"))
    if not 1 <= len(param) <= 2 or len(values) != len(param):
        raise InputError(Problem("--param/--values", f"{len(param)} --param, {len(values)} --values", "allowed: one or two --param, each with its own --values"))
    grid = [api.parse_values(v) for v in values]
    _note_overrides(scenarios, overrides)
    compiling = _note_compile("chain", quiet)
    bar, update = _progress_bar(as_json, quiet, compiling)
    from contextlib import nullcontext

    with bar if bar is not None else nullcontext(), _saves_at_end("sweep", out):
        doc = api.sweep(scenarios if len(scenarios) > 1 else scenarios[0], param[0] if len(param) == 1 else param, grid[0] if len(param) == 1 else grid,
                    outputs=tuple(output) if output else None, trials=trials, seed=seed, overrides=overrides or (), scheduler=scheduler, progress=update,
                    out=out, force=force)
    for text in doc["warnings"]:
        sys.stderr.write(f"warning: {text}\n")
    _emit(doc, as_json, render)


@app.command("sensitivity")
def sensitivity_cmd(
    scenarios: Annotated[list[str], typer.Argument(metavar="SCENARIO", help="A scenario, or two (A B: the output becomes the paired ratio B/A).", show_default=False)],
    method: Annotated[str, typer.Option("--method", metavar="sobol|tornado", help="sobol (variance-based indices) or tornado (one at a time, 5th/95th percentile).")] = "sobol",
    output: Annotated[str, typer.Option("--metric", "--output", metavar="METRIC", help="Metric analysed (cost_per_mtok_usd, availability, tokens_per_s, gpu_cost_usd, ...). --output is the same option.")] = "cost_per_mtok_usd",
    trials: Annotated[Optional[int], typer.Option("--trials", metavar="N", help="Sobol: base samples N (a power of two; N(d+3) trials run); tornado: trials per bar. Default "
                                                                      f"{SAMPLE_DEFAULTS['sobol'].size:,} and {SAMPLE_DEFAULTS['tornado'].size:,} (why: docs/cli.md#sample-sizes).", show_default=False)] = None,
    seed: SeedOpt = None,
    scramblings: Annotated[Optional[int], typer.Option("--scramblings", metavar="R", help="Sobol: independent scramblings of the design behind the intervals (a power of two, 2 to N; default "
                                                       f"{DEFAULT_SCRAMBLINGS}; 32 for an output with kinks at N >= 1,024: docs/sensitivity.md#scramblings).", show_default=False)] = None,
    overrides: SetOpt = None,
    threads: ThreadsOpt = None,
    as_json: JsonOpt = False,
    out: OutOpt = None,
    quiet: QuietOpt = False,
    force: ForceOpt = False,
) -> None:
    """Which uncertain inputs drive an output: Sobol indices or a tornado chart."""
    from contextlib import nullcontext

    from .errors import Problem
    from .report.sensitivity import render, tornado_empty_note

    api.set_threads(threads)
    methods = {"sobol": api.sobol, "tornado": api.tornado}
    if method not in methods:
        raise InputError(Problem("--method", method, "allowed: sobol, tornado"))
    if len(scenarios) > 2:
        raise InputError(Problem("SCENARIO", scenarios, "allowed: one scenario, or two (A B)"))
    _note_overrides(scenarios, overrides)
    kwargs = {"output": output, "seed": seed, "overrides": overrides or (), "out": out, "force": force}
    if trials is not None:
        kwargs["trials"] = trials
    if scramblings is not None:
        if method != "sobol":
            raise InputError(Problem("--scramblings", scramblings, "allowed only with --method sobol (a tornado has no design to scramble)"))
        kwargs["scramblings"] = scramblings
    compiling = _note_compile("chain", quiet)
    bar, update = _progress_bar(as_json, quiet, compiling)
    with bar if bar is not None else nullcontext(), _saves_at_end("sensitivity", out):
        doc = methods[method](scenarios if len(scenarios) > 1 else scenarios[0], progress=update, **kwargs)
    if method == "tornado" and (note := tornado_empty_note(doc)):
        sys.stderr.write(f"note: {note}\n")
    _emit(doc, as_json, render)


def _sensitivity_alias(method: str):
    """``mcengine METHOD ...``: ``mcengine sensitivity --method METHOD ...`` (the same options, less ``--method``)."""
    import inspect

    def command(**kwargs) -> None:
        sensitivity_cmd(method=method, **kwargs)

    signature = inspect.signature(sensitivity_cmd, eval_str=True)
    command.__signature__ = signature.replace(parameters=[p for p in signature.parameters.values() if p.name != "method"])
    command.__doc__ = f"The same as `mcengine sensitivity --method {method}`."
    return command


app.command("tornado")(_sensitivity_alias("tornado"))
app.command("sobol")(_sensitivity_alias("sobol"))


@app.command("paper")
def paper_cmd(
    trials: Annotated[Optional[int], typer.Option("--trials", metavar="N", help=f"Paired trials per scenario (default {SAMPLE_DEFAULTS['paper'].size:,}; {SAMPLE_DEFAULTS['paper_quick'].size:,} with --quick; why: docs/cli.md#sample-sizes).", show_default=False)] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", metavar="S", help="Master seed (default 0). Same seed, same numbers at any thread count.", show_default=False)] = None,
    quick: Annotated[bool, typer.Option("--quick", help="Seconds-long smoke run: few trials, three points per sweep (not a result).")] = False,
    threads: ThreadsOpt = None,
    as_json: JsonOpt = False,
    out: Annotated[Optional[Path], typer.Option("--out", metavar="DIR", help="Write summary.json, table.csv (one row per claim), one figure per claim and the SLO frontier, and the paper's scenarios.", show_default=False)] = None,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """The paper's claims one by one: the paper's figure, mcengine's under the paper's assumptions and under the shipped ones, and where each flips."""
    from .report.paper import render_paper

    api.set_threads(threads)
    note = None if quiet or as_json and not sys.stderr.isatty() else (lambda text: sys.stderr.write(text + "\n"))
    _note_compile("chain", quiet)
    with _saves_at_end("paper", out):
        doc = api.paper(trials=trials, seed=seed, quick=quick, out=out, force=force, progress=note)
    _emit(doc, as_json, render_paper)
    if out is not None and not as_json:
        _console().print(f"results in {out}/ (summary.json, table.csv, one figure per claim, slo-frontier.png)")


@app.command("new-gpu")
def new_gpu_cmd(
    name: Annotated[str, typer.Argument(metavar="NAME", help="Name of the new GPU (and of the scenario; the file is NAME.toml).", show_default=False)],
    fraction: Annotated[float, typer.Option("--fraction", metavar="F", help="Share of the parent's die area (1/2, 1/4, 1/8 ...).")] = 0.25,
    parent: Annotated[str, typer.Option("--parent", metavar="SCENARIO", help="Scenario whose die, units and peak FLOP/s the GPU is a fraction of.")] = "h100",
    hbm_generation: Annotated[Optional[str], typer.Option("--hbm-generation", metavar="GEN", help="HBM generation of each stack (`mcengine keys gpu.derive`); default: the parent's.", show_default=False)] = None,
    io: Annotated[Optional[str], typer.Option("--io", metavar="TECH", help="I/O technology of the links (electrical, cpo, ...); default: electrical.", show_default=False)] = None,
    out: Annotated[Optional[Path], typer.Option("--out", metavar="FILE", help="Write here instead of NAME.toml (never replacing a file).", show_default=False)] = None,
) -> None:
    """Write a scenario of your own GPU whose die, HBM stacks, links, power and price follow the shipped derivation rules."""
    path, s = api.new_gpu(name, fraction, parent, hbm_generation, io, out)
    sys.stdout.write(f"wrote {path}: {s.fab.die_width_mm.median():.2f} x {s.fab.die_height_mm.median():.2f} mm die, {s.fab.hbm_stacks} HBM stacks, "
                     f"{s.gpu.hbm_gb.median():g} GB at {s.gpu.hbm_tbps.median():g} TB/s, {s.peak_in_use().median():g} TFLOP/s, "
                     f"TDP {s.gpu.tdp_w.median():.0f} W (each derived value with its rule: mcengine check {path})\n")


@app.command("report")
def report_cmd(
    run_dir: Annotated[Path, typer.Argument(metavar="RUN_DIR", help="The --out folder of `mcengine run` or `compare`.", show_default=False)],
    output: Annotated[Optional[Path], typer.Option("--output", metavar="FILE", help="Write the page here (default: RUN_DIR/report.html).", show_default=False)] = None,
) -> None:
    """One self-contained HTML page of a run folder (verdict, tables, figures inline, provenance) that opens offline."""
    path = api.report(run_dir, output)
    sys.stdout.write(f"{path}\n")


@app.command("validate")
def validate_cmd(
    as_json: JsonOpt = False,
    every: Annotated[bool, typer.Option("--all", help="Every check in full (default: counts per stage, and the checks that did not pass).")] = False,
) -> None:
    """Run the analytic cross-checks; exit 1 if any fails."""
    from .report.tables import render_validate

    _note_compile("chain")
    with _saves_at_end("validate", None):
        doc = api.validation_report()
    _emit(doc, as_json, lambda d: render_validate(d, every))
    if not doc["passed"]:
        raise typer.Exit(1)


@app.command("bench")
def bench_cmd(
    quick: Annotated[bool, typer.Option("--quick", help="Seconds-long version (smoke test).")] = False,
    stage: Annotated[Optional[list[str]], typer.Option("--stage", metavar="STAGE", help="Only these stages (fab, reliability, chain). Repeatable.")] = None,
    as_json: JsonOpt = False,
    out: OutOpt = None,
    force: ForceOpt = False,
) -> None:
    """Throughput of each stage and of the whole chain on this machine (peers: benchmarks/)."""
    from .report.tables import render_bench

    _note_compile("chain")
    with _saves_at_end("bench", out):
        doc = api.bench(quick=quick, stages=stage or (), out=out, force=force)
    _emit(doc, as_json, render_bench)


# ------------------------------------------------------------------ entry point
def main(argv: list[str] | None = None) -> int:
    """Run one command; maps exceptions to exit codes: 2 bad input, 128 + signal number
    after SIGINT/SIGTERM (with what was saved), 1 anything else (one line)."""
    from . import interrupt, provenance
    from .errors import ExecutionError, Interrupted

    token = provenance.set_command_line(["mcengine", *(sys.argv[1:] if argv is None else argv)])
    try:
        rv = app(args=argv, standalone_mode=False, prog_name="mcengine")
    except typer.Exit as exc:
        return exc.exit_code
    except (Interrupted, KeyboardInterrupt, typer.Abort) as exc:
        return _interrupted(getattr(exc, "signum", 2), getattr(exc, "hint", ""))
    except InputError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    except Exception as exc:  # noqa: BLE001 - the one place that maps every failure
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):  # Click usage errors: exit 2
            _suggest_sample_option(exc)
            exc.show()
            return exc.exit_code
        if interrupt.pending() or isinstance(exc.__context__, (Interrupted, KeyboardInterrupt)):
            return _interrupted(interrupt.pending() or 2, "")  # a second signal that landed in a kernel
        if os.environ.get("MCENGINE_DEBUG"):
            raise
        if isinstance(exc, ExecutionError):
            sys.stderr.write(f"error: {exc}\n")
        elif isinstance(exc, MemoryError):
            sys.stderr.write("error: out of memory; use a smaller sample, a smaller --chunk-trials or a smaller cluster\n")
        elif isinstance(exc, OSError):
            sys.stderr.write(f"error: {exc.strerror or exc}" + (f": {exc.filename}" if exc.filename and str(exc.filename) not in str(exc.strerror) else "") + "\n")
        else:
            sys.stderr.write(f"error: {type(exc).__name__}: {exc}\n(set MCENGINE_DEBUG=1 for the traceback)\n")
        return 1
    finally:
        interrupt.clear()
        provenance.reset_command_line(token)
    return rv if isinstance(rv, int) else 0


#: Each command's sample-size option where it is not ``--trials`` (docs/interface.md#commands).
SAMPLE_OPTIONS = {"yield": "--wafers", "reliability": "--lifetimes"}


def _suggest_sample_option(exc) -> None:
    """An unknown sample-size option (``yield --trials``) suggests the command's own
    (``--wafers``), not the option spelled most alike (``--threads``)."""
    if not hasattr(exc, "option_name") or not hasattr(exc, "possibilities") or exc.ctx is None:
        return  # not Click's (Typer's copy of Click's) NoSuchOption
    sizes = {"--trials", *SAMPLE_OPTIONS.values()}
    own = SAMPLE_OPTIONS.get(exc.ctx.info_name, "--trials")
    takes = {o for param in exc.ctx.command.params for o in getattr(param, "opts", ())}
    if exc.option_name in sizes and own != exc.option_name and own in takes:
        exc.possibilities = None
        exc.message = f"No such option: {exc.option_name} (the sample size of `mcengine {exc.ctx.info_name}` is {own} N)"


def _interrupted(signum: int, hint: str) -> int:
    """The one line printed after SIGINT/SIGTERM; the exit status 128 + signum."""
    sys.stderr.write("interrupted" + (f": {hint}" if hint else "") + "\n")
    return 128 + signum


if __name__ == "__main__":
    sys.exit(main())
