"""Chunked, resumable, optionally distributed execution of the trial pipeline.

Trials stream through chunks of ``chunk_trials`` (a whole number of
:data:`~mcengine.results.BLOCK_TRIALS`); each chunk's columns fold into streaming
summaries in chunk order, so memory does not grow with the trial count. Because every
random number is keyed by (seed, stage, trial) and summaries merge block by block in
trial order, the result is bit-identical whatever the chunk size, thread count, Dask
workers or resume point. A local run on two or more numba threads computes each next
chunk while the one before is folded and saved (:func:`_overlapped`), in the same order.

With an output folder, the run's settings go to ``run.json`` and, after every chunk,
the accumulated state to ``checkpoint.json`` (atomically), so a killed run (SIGKILL
included) resumes from its last finished chunk to exactly the straight-run numbers.
The folder is locked while a run uses it (a second run on it is refused, naming the
holder). ``run.json`` carries the fingerprint (sha256) of the run's settings, and
``checkpoint.json`` carries that fingerprint and the sha256 of its own state: a resume
verifies both and refuses a file that was edited, truncated or written by another run.
The checksums are not signatures (no secret): they catch accidents (a partial write, an
edit by hand, a file copied from another run's folder), not a forgery that recomputes
them. A resume therefore also checks the state's counts against each other and against
the run (:func:`check_state`): every summary holds exactly the trials done, each
scenario's and pair's counts are within them, the trials done end on a block boundary
(or at the run's end), and the kept Parquet parts cover exactly those trials. A state
whose statistics were changed consistently (a mean edited, its checksum recomputed) is
beyond what any check can see. A resume honours the saved run or refuses: an option
that would change its numbers (a scenario, ``--set``, ``--seed``, ``--trials``,
``--keep-trials``) and differs from the saved run is InputError naming it.
With ``keep_trials`` each chunk's per-trial table is written as its own Parquet part
under ``trials.parquet/`` (a Parquet dataset that pandas and pyarrow read as one table).
"""

from __future__ import annotations

import hashlib
import math
import json
import os
import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import numba
import numpy as np
import pandas as pd

from . import interrupt
from .errors import InputError, Interrupted, Problem
from .io import write_atomic, write_json
from .outfolder import PART, TRIALS_DIR, locked, remove_parts
from .provenance import parquet_metadata
from .pipeline import BREAKDOWN, CLASS_COST, METRICS, PAIRED_METRICS, run_chunk
from .stages.econ import BREAKDOWN_COLUMN, BREAKDOWN_PARTS
from .stages.roofline import MIX_PREFIX
from .results import BLOCK_TRIALS, CLASS_PREFIX, QUANTILES, Summary
from .scenario import Scenario, scenario_from_dict
from .scenario.load import load_targeted
from .scenario.sampling import run_sampler

DEFAULT_CHUNK_TRIALS = 16 * BLOCK_TRIALS
#: Seconds a chunk of a run without ``chunk_trials`` aims to take, so that its progress
#: moves every few seconds (:func:`chunk_plan`); never changes the numbers.
TARGET_CHUNK_S = 5.0
#: A chunk of such a run grows at most this many times over the one before it.
CHUNK_GROWTH = 4
RUN_FILE = "run.json"
#: Metrics that crowd just below 1: summarised as their distance from 1.
NEAR_ONE = ("availability", "instance_availability", "capacity_availability")
CHECKPOINT_FILE = "checkpoint.json"
#: Version of the checkpoint layout (fingerprint + checksum around the state).
CHECKPOINT_FORMAT = 2


@dataclass(frozen=True)
class RunSpec:
    """Everything that decides a run's numbers (the chunk size does not)."""

    scenarios: tuple[Scenario, ...]
    seed: int
    trials: int
    keep_trials: bool = False
    label: str = ""  # the run's name in its summary; not part of the fingerprint

    def fingerprint(self) -> str:
        doc = {"scenarios": [s.to_dict() for s in self.scenarios], "seed": self.seed, "trials": self.trials, "keep_trials": self.keep_trials}
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()

    def to_dict(self) -> dict:
        return {
            "scenarios": [s.to_dict() for s in self.scenarios],
            "seed": self.seed,
            "trials": self.trials,
            "keep_trials": self.keep_trials,
            "label": self.label,
            "fingerprint": self.fingerprint(),
        }

    @classmethod
    def from_dict(cls, doc: dict) -> "RunSpec":
        scenarios = tuple(scenario_from_dict(d, f"{RUN_FILE} scenario {d.get('name')!r}") for d in doc["scenarios"])
        return cls(scenarios, int(doc["seed"]), int(doc["trials"]), bool(doc["keep_trials"]), str(doc.get("label", "")))


@dataclass
class Accumulators:
    """Streaming summaries of every metric of every scenario, and of the paired ratios
    of each later scenario to the first (the baseline)."""

    names: tuple[str, ...]
    metrics: dict = field(default_factory=dict)  # (scenario, metric) -> Summary
    ratios: dict = field(default_factory=dict)  # (b, metric) -> Summary of b / baseline
    below: dict = field(default_factory=dict)  # (b, metric) -> trials where b < baseline
    #: (b, metric) -> trials where b == baseline; None for a run resumed from a checkpoint
    #: written before ties were counted (its ``p_tie`` is then left out).
    ties: dict | None = field(default_factory=dict)
    trials_done: int = 0
    missed: dict = field(default_factory=dict)  # scenario -> trials that missed an SLO (no tokens)
    #: Scramblings of a Sobol'-sampled run (0: pseudo-random): every summary's sem comes
    #: from their means (:class:`~mcengine.results.Summary`).
    replicates: int = 0
    sides: dict = field(default_factory=dict)  # (b, "both" | "only_a" | "only_b") -> trials in which those serve tokens

    def _summary(self, offset: float = 0.0) -> Summary:
        return Summary(offset=offset, replicates=self.replicates)

    def add(self, chunk: dict[str, dict[str, np.ndarray]]) -> None:
        base = self.names[0]
        for name in self.names:
            cols = chunk[name]
            self.missed[name] = self.missed.get(name, 0) + int(np.count_nonzero(cols["slo_met"] == 0.0))
            for metric in METRICS:
                offset = 1.0 if metric in NEAR_ONE else 0.0
                self.metrics.setdefault((name, metric), self._summary(offset)).add(cols[metric], f"{name}.{metric}")
            for part in BREAKDOWN_PARTS:
                key = f"{BREAKDOWN}.{part}"
                self.metrics.setdefault((name, key), self._summary()).add(cols[BREAKDOWN_COLUMN.format(part)], f"{name}.{key}")
            for column in cols:  # failures by component class, and the request classes of a mix
                if column.startswith((CLASS_PREFIX, MIX_PREFIX)):
                    self.metrics.setdefault((name, column), self._summary()).add(cols[column], f"{name}.{column}")
            if name == base:
                continue
            serves_a, serves_b = chunk[base]["tokens_per_s"] > 0.0, cols["tokens_per_s"] > 0.0
            for side, count in (("both", serves_a & serves_b), ("only_a", serves_a & ~serves_b), ("only_b", ~serves_a & serves_b)):
                self.sides[(name, side)] = self.sides.get((name, side), 0) + int(np.count_nonzero(count))
            for metric in paired_metrics(chunk[base], cols):
                a, b = chunk[base][metric], cols[metric]
                with np.errstate(divide="ignore", invalid="ignore"):
                    ratio = np.where(a == b, 1.0, b / a)  # exactly 1 for identical trials (0/0 included)
                self.ratios.setdefault((name, metric), self._summary(1.0)).add(ratio, f"{name}/{base}.{metric}", keep=serves_a & serves_b)
                self.below[(name, metric)] = self.below.get((name, metric), 0) + int(np.count_nonzero(b < a))
                if self.ties is not None:
                    self.ties[(name, metric)] = self.ties.get((name, metric), 0) + int(np.count_nonzero(b == a))
        self.trials_done += len(chunk[base]["trial"])

    def summary(self) -> dict:
        base = self.names[0]
        scenarios = {name: {**{metric: self.metrics[(name, metric)].to_dict() for metric in METRICS},
                            BREAKDOWN: {part: self.metrics[(name, f"{BREAKDOWN}.{part}")].to_dict() for part in BREAKDOWN_PARTS}}
                     for name in self.names}
        for (name, column), summary in self.metrics.items():
            if column.startswith(CLASS_PREFIX):  # "failures_by_class": {class: {kind: summary}}
                cls, kind = column[len(CLASS_PREFIX):].rsplit(".", 1)
                scenarios[name].setdefault("failures_by_class", {}).setdefault(cls, {})[kind] = summary.to_dict()
            elif column.startswith(MIX_PREFIX):  # "mix": {request class: {metric: summary}}
                cls, metric = column[len(MIX_PREFIX):].split(".", 1)
                scenarios[name].setdefault("mix", {}).setdefault(cls, {})[metric] = summary.to_dict()
        infeasible = {name: self.missed.get(name, 0) / self.trials_done for name in self.names}
        doc: dict = {"scenarios": scenarios, "slo_infeasible_share": infeasible, "slo_missed_share": dict(infeasible)}
        if self.replicates:  # randomised QMC: how many independent estimates each sem rests on
            doc.update({"sampler": "sobol", "scramblings": self.replicates})
        pairs = {}
        for name in self.names[1:]:
            serving = {side: self.sides.get((name, side), 0) / self.trials_done for side in ("both", "only_a", "only_b")}
            pairs[f"{name} / {base}"] = {
                metric: {
                    "ratio": self._ratio(name, metric),
                    "p_b_below_a": self.below[(name, metric)] / self.trials_done,
                    **({"p_tie": self.ties[(name, metric)] / self.trials_done} if self.ties is not None else {}),
                    "serving": serving,
                }
                for metric in (*PAIRED_METRICS, *sorted(m for n, m in self.ratios if n == name and m.startswith(MIX_PREFIX)))
            }
        if pairs:
            doc["baseline"] = base
            doc["paired"] = pairs[f"{self.names[1]} / {base}"]
            doc["paired_all"] = pairs
        return doc

    def _ratio(self, name: str, metric: str) -> dict:
        """The paired ratio's summary over the trials in which both serve tokens (every
        entry NaN-free: ``inf`` when there are none)."""
        summary = self.ratios[(name, metric)]
        if summary.count + summary.infinite:
            return summary.to_dict()
        return {**{key: math.inf for key in ("mean", "std", "sem", "min", "max")}, **{key: math.inf for key, _ in QUANTILES}}

    def state(self) -> dict:
        return {
            "names": list(self.names),
            "trials_done": self.trials_done,
            "metrics": [[n, m, s.state()] for (n, m), s in self.metrics.items()],
            "ratios": [[n, m, s.state()] for (n, m), s in self.ratios.items()],
            "below": [[n, m, c] for (n, m), c in self.below.items()],
            **({"ties": [[n, m, c] for (n, m), c in self.ties.items()]} if self.ties is not None else {}),
            "missed": dict(self.missed),
            **({"replicates": self.replicates} if self.replicates else {}),
            "sides": [[n, side, c] for (n, side), c in self.sides.items()],
        }

    @classmethod
    def from_state(cls, state: dict) -> "Accumulators":
        acc = cls(tuple(state["names"]), trials_done=int(state["trials_done"]), replicates=int(state.get("replicates", 0)))
        acc.metrics = {(n, m): Summary.from_state(s) for n, m, s in state["metrics"]}
        acc.ratios = {(n, m): Summary.from_state(s) for n, m, s in state["ratios"]}
        acc.below = {(n, m): int(c) for n, m, c in state["below"]}
        acc.ties = {(n, m): int(c) for n, m, c in state["ties"]} if "ties" in state else None
        acc.missed = {n: int(c) for n, c in state.get("missed", {}).items()}
        acc.sides = {(n, side): int(c) for n, side, c in state.get("sides", [])}
        return acc


def _new_accumulators(spec: RunSpec) -> Accumulators:
    """Empty summaries of ``spec``'s run, with the standard errors of its sampler."""
    sampler = run_sampler(spec.scenarios)
    if sampler.replicates > spec.trials:
        raise InputError(Problem("--trials", spec.trials, f"allowed: at least run.scramblings = {sampler.replicates} "
                                 "with run.sampler = \"sobol\" (one trial per scrambling at least)"))
    return Accumulators(tuple(s.name for s in spec.scenarios), replicates=sampler.replicates)


def paired_metrics(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> tuple[str, ...]:
    """The metrics compared as paired ratios B/A: :data:`PAIRED_METRICS`, and each request
    class's cost per token (``mix.NAME.cost_per_mtok_usd``) that both sides serve."""
    return (*PAIRED_METRICS, *(c for c in b if CLASS_COST.fullmatch(c) and c in a))


def trials_frame(chunk: dict[str, dict[str, np.ndarray]]) -> pd.DataFrame:
    """Long per-trial table of one chunk: one row per (scenario, trial)."""
    frames = [pd.DataFrame({"scenario": name, **cols}) for name, cols in chunk.items()]
    return pd.concat(frames, ignore_index=True)


def _parquet_bytes(frame: pd.DataFrame, provenance: dict | None = None) -> bytes:
    """One Parquet part; ``provenance`` goes to the schema metadata (key
    :data:`mcengine.provenance.PARQUET_KEY`)."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), **parquet_metadata(provenance)})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def chunk_bounds(trials: int, chunk_trials: int, start: int = 0) -> Iterator[tuple[int, int]]:
    """(first trial, trials) of each chunk, made as they are needed (memory does not grow
    with the trial count)."""
    return ((s, min(chunk_trials, trials - s)) for s in range(start, trials, chunk_trials))


def chunk_plan(trials: int, start: int = 0, max_trials: int = DEFAULT_CHUNK_TRIALS, target_s: float = TARGET_CHUNK_S,
               clock: Callable[[], float] = time.perf_counter) -> Iterator[tuple[int, int]]:
    """(first trial, trials) of each chunk of a run without ``chunk_trials``: the first
    chunk one block (progress shows after ~a thousand trials, and the kernels compile on a
    small chunk), each next one sized from the time the one before took (from its yield
    to the request for the next: compute, summaries, checkpoint) to take about
    ``target_s`` (to the nearest whole block), at most :data:`CHUNK_GROWTH` times the one
    before and at most ``max_trials`` (memory stays bounded). A chunk has a fixed cost
    (the serving plan, the summaries, the checkpoint; measured ~0.3-0.9 s for the case
    study on two loaded cores), so the target is seconds, not less. Chunk sizes never
    change the numbers."""
    size, first = BLOCK_TRIALS, start
    while first < trials:
        n = min(size, trials - first)
        began = clock()
        yield first, n
        took = clock() - began
        first += n
        wanted = n * target_s / took if took > 0 else max_trials
        size = max(BLOCK_TRIALS, round(min(max_trials, CHUNK_GROWTH * n, wanted) / BLOCK_TRIALS) * BLOCK_TRIALS)


def check_chunk_trials(chunk_trials: int) -> int:
    if chunk_trials < 1 or chunk_trials % BLOCK_TRIALS:
        raise InputError(Problem("--chunk-trials", chunk_trials, f"allowed: a positive multiple of {BLOCK_TRIALS}"))
    return chunk_trials


@dataclass
class RunOutcome:
    spec: RunSpec
    accumulators: Accumulators
    frames: list[pd.DataFrame]  # per-chunk tables kept in memory (keep_trials without a folder)
    provenance: dict | None = None  # on resume: the provenance run.json kept of the run's start


def _read_json(path: Path) -> dict:
    """A JSON object from ``path``; a missing, unreadable or malformed file is InputError naming it."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(Problem(str(path), "(file)", f"cannot be read as mcengine JSON ({exc}); start a new --out folder")) from None
    if not isinstance(doc, dict):
        raise InputError(Problem(str(path), "(file)", "is not an mcengine run file (a JSON object); start a new --out folder"))
    return doc


def _state_json(state: dict) -> str:
    """The state as its checksum reads it: JSON with sorted keys."""
    return json.dumps(state, sort_keys=True)


def _text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _state_sha256(state: dict) -> str:
    return _text_sha256(_state_json(state))


def checkpoint_text(acc: "Accumulators", fingerprint: str) -> str:
    """What ``checkpoint.json`` holds, as JSON: the state, tied to its run and to itself
    (the checksum is :func:`_state_sha256` of the state as JSON reads it back). The state
    holds JSON's types already (its keys are strings: :meth:`QuantileSketch.state
    <mcengine.results.QuantileSketch.state>`), so it is encoded once, with sorted keys, and
    that text is both hashed and written."""
    state = _state_json(acc.state())
    head = json.dumps({"format": CHECKPOINT_FORMAT, "run_fingerprint": fingerprint, "sha256": _text_sha256(state)})
    return f'{head[:-1]}, "state": {state}}}'


def _saved_spec(run_path: Path) -> RunSpec:
    """The RunSpec of ``run.json``, refused if its settings no longer match their fingerprint."""
    saved = _read_json(run_path)
    try:
        spec = RunSpec.from_dict(saved)
        fingerprint = saved["fingerprint"]
    except (KeyError, TypeError, ValueError, InputError) as exc:
        raise InputError(Problem(str(run_path), "(file)", f"is not a valid mcengine run file ({exc}); start a new --out folder")) from None
    if spec.fingerprint() != fingerprint:
        raise InputError(Problem(str(run_path), "(file)", "its settings do not match their fingerprint (the file was edited); "
                                 "start a new --out folder"))
    return spec


def _saved_accumulators(path: Path, spec: RunSpec) -> "Accumulators":
    """The accumulated state of ``checkpoint.json``, verified against its checksum and run."""
    doc = _read_json(path)
    if doc.get("format") != CHECKPOINT_FORMAT:
        raise InputError(Problem(str(path), "(file)", f"checkpoint format {doc.get('format')!r} is not {CHECKPOINT_FORMAT} "
                                 "(written by another mcengine version); start a new --out folder"))
    state = doc.get("state")
    if not isinstance(state, dict) or _state_sha256(state) != doc.get("sha256"):
        raise InputError(Problem(str(path), "(file)", "its state does not match its checksum (edited or truncated); start a new --out folder"))
    if doc.get("run_fingerprint") != spec.fingerprint():
        raise InputError(Problem(str(path), "(file)", f"belongs to another run than {RUN_FILE} beside it; start a new --out folder"))
    try:
        acc = Accumulators.from_state(state)
        problem = check_state(acc, spec)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        problem = f"its state is malformed ({type(exc).__name__}: {exc})"
    if problem:
        raise InputError(Problem(str(path), "(file)", f"does not describe this run: {problem}; start a new --out folder"))
    return acc


def _summaries(acc: "Accumulators", spec: RunSpec) -> dict:
    """Every summary a checkpoint of ``spec`` holds once a chunk is done, by name."""
    names = tuple(s.name for s in spec.scenarios)
    want = {(n, m): acc.metrics.get((n, m)) for n in names for m in (*METRICS, *(f"{BREAKDOWN}.{p}" for p in BREAKDOWN_PARTS))}
    want.update({(n, m): acc.metrics[(n, m)] for n, m in acc.metrics if m.startswith((CLASS_PREFIX, MIX_PREFIX))})
    want.update({(f"{n}/{names[0]}", m): acc.ratios.get((n, m)) for n in names[1:] for m in PAIRED_METRICS})
    want.update({(f"{n}/{names[0]}", m): acc.ratios[(n, m)] for n, m in acc.ratios if m.startswith(MIX_PREFIX)})
    return want


def check_state(acc: "Accumulators", spec: RunSpec) -> str:
    """What is inconsistent in a checkpoint's state for ``spec`` ('' if nothing): its
    scenarios, its trials done (within the run, on a block boundary or at the run's end),
    and every count against the trials done (each summary's finite + infinite values and
    its quantile sketch, each scenario's SLO misses, each pair's "B below A" count)."""
    names = tuple(s.name for s in spec.scenarios)
    done = acc.trials_done
    if acc.names != names:
        return f"its scenarios {list(acc.names)} are not the run's {list(names)}"
    if not 0 <= done <= spec.trials:
        return f"{done} trials done of a run of {spec.trials}"
    if done % BLOCK_TRIALS and done != spec.trials:
        return f"{done} trials done is not a chunk boundary (a multiple of {BLOCK_TRIALS}, or the run's {spec.trials})"
    if done == 0:
        return "" if not (acc.metrics or acc.ratios or acc.below or acc.missed) else "summaries without any trial done"
    for (who, metric), summary in _summaries(acc, spec).items():
        if summary is None:
            return f"no summary of {who}.{metric}"
        if summary.count + summary.infinite + summary.skipped != done or summary.sketch.count + summary.low.count != summary.count:
            return (f"{who}.{metric} summarises {summary.count + summary.infinite + summary.skipped} trials ({summary.sketch.count + summary.low.count} "
                    f"in its quantiles), not the {done} trials done")
    counts = [(f"{n}: trials that missed an SLO", acc.missed.get(n)) for n in names]
    counts += [(f"{n}/{names[0]}.{m}: trials below the baseline", acc.below.get((n, m))) for n in names[1:] for m in PAIRED_METRICS]
    counts += [(f"{n}/{names[0]}.{m}: trials below the baseline", acc.below.get((n, m))) for n, m in acc.ratios if m.startswith(MIX_PREFIX)]
    for what, count in counts:
        if not isinstance(count, int) or not 0 <= count <= done:
            return f"{what} is {count!r}, not a count within the {done} trials done"
    return ""


def _check_parts(out: Path, spec: RunSpec, done: int) -> None:
    """The kept Parquet parts before ``done`` follow each other from trial 0 to ``done``
    (their names' first trials and their row counts), or the resume is refused."""
    if not spec.keep_trials:
        return
    import pyarrow.parquet as pq

    folder = out / TRIALS_DIR
    starts = sorted(int(m.group(1)) for name in (os.listdir(folder) if folder.is_dir() else ())
                    if (m := PART.fullmatch(name)) and int(m.group(1)) < done)
    end = 0
    for start in starts:
        try:
            rows = pq.read_metadata(folder / f"part-{start:012d}.parquet").num_rows
        except (OSError, ValueError):  # not a Parquet file (pyarrow's errors derive from these)
            break
        if start != end or rows % len(spec.scenarios):
            break
        end = start + rows // len(spec.scenarios)
    if end != done:
        raise InputError(Problem(str(folder), "(parts)", f"hold trials 0 to {end}, not the {done} trials the checkpoint counts "
                                 "(a part missing, added or cut); start a new --out folder"))


def _load_resume(out: Path, spec: RunSpec | None, expect: dict) -> tuple[RunSpec, Accumulators]:
    run_path = out / RUN_FILE
    if not run_path.is_file():
        raise InputError(Problem("--resume", str(out), f"no {RUN_FILE} here: not an mcengine run folder"))
    saved_spec = _saved_spec(run_path)
    given = {"--seed": expect.get("seed"), "--trials": expect.get("trials"), "--keep-trials": expect.get("keep_trials")}
    if spec is not None:
        given.update({"--seed": spec.seed, "--trials": spec.trials})
    changed = [Problem(option, value, f"the interrupted run used {was}; resume with the same value or without the option")
               for option, value, was in ((o, v, getattr(saved_spec, o[2:].replace("-", "_"))) for o, v in given.items())
               if value is not None and value != was]
    changed += _changed_scenarios(saved_spec, spec, expect.get("overrides") or ())
    if changed:
        raise InputError(changed)
    ck = out / CHECKPOINT_FILE
    acc = _saved_accumulators(ck, saved_spec) if ck.is_file() else _new_accumulators(saved_spec)
    _check_parts(out, saved_spec, acc.trials_done)
    return saved_spec, acc


def _changed_scenarios(saved: RunSpec, spec: RunSpec | None, overrides) -> list[Problem]:
    """The scenarios or ``--set`` overrides of a resume that differ from the saved run's.
    Without scenarios each override is applied to the saved scenarios and named if it
    changes them; with scenarios (their overrides applied) they are compared whole."""
    def same(scenarios) -> bool:
        return [s.to_dict() for s in scenarios] == [s.to_dict() for s in saved.scenarios]

    keep = "resume without it (the saved run's settings are kept), or start a new --out folder"
    if spec is None:
        return [Problem(f"--set {o}", o.partition("=")[2], f"changes the interrupted run's scenarios; {keep}")
                for o in overrides if not same(load_targeted(list(saved.scenarios), [o])[0])]
    if same(spec.scenarios):
        return []
    given = [s.name for s in spec.scenarios]
    return [Problem("SCENARIO" + (" with --set " + " --set ".join(overrides) if overrides else ""), given,
                    f"differs from the interrupted run's scenarios {[s.name for s in saved.scenarios]} and their settings; resume with "
                    "the same scenarios and --set (or none: `mcengine run --resume DIR`), or start a new --out folder")]


def execute(
    spec: RunSpec | None,
    chunk_trials: int | None = DEFAULT_CHUNK_TRIALS,
    out: Path | None = None,
    resume: bool = False,
    scheduler: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    expect: dict | None = None,
    provenance: dict | None = None,
) -> RunOutcome:
    """Run (or resume) ``spec`` and return its accumulated summaries; ``chunk_trials=None``
    sizes the chunks to take about :data:`TARGET_CHUNK_S` each (:func:`chunk_plan`; on a
    Dask cluster: :data:`DEFAULT_CHUNK_TRIALS`).

    With ``out`` the folder is locked for the run. On resume, ``expect`` may hold the
    ``seed``, ``trials``, ``keep_trials`` and ``overrides`` the caller asked for, and
    ``spec`` the scenarios: each given one must equal the interrupted run's (InputError
    naming it, before any work).
    ``provenance`` is written into each Parquet part's schema metadata (never into the
    run's fingerprint).
    """
    if chunk_trials is not None:
        check_chunk_trials(chunk_trials)
    if out is None:
        return _execute(spec, chunk_trials, None, resume, scheduler, progress, expect or {}, provenance)
    with locked(out):
        return _execute(spec, chunk_trials, out, resume, scheduler, progress, expect or {}, provenance)


def _execute(spec, chunk_trials, out, resume, scheduler, progress, expect, provenance=None) -> RunOutcome:
    saved = None
    if resume:
        spec, acc = _load_resume(out, spec, expect)
        saved = _read_json(out / RUN_FILE).get("provenance")
        provenance = provenance or saved
    else:
        acc = _new_accumulators(spec)
        if out is not None:
            _start_fresh(out)
            write_json(out / RUN_FILE, {**spec.to_dict(), **({"provenance": provenance} if provenance else {})})
    frames: list[pd.DataFrame] = []
    if resume and out is not None:
        remove_parts(out, acc.trials_done)  # parts the checkpoint does not count (killed between the two writes)
    if chunk_trials is None and scheduler is None:
        bounds = chunk_plan(spec.trials, acc.trials_done)
    else:
        bounds = chunk_bounds(spec.trials, chunk_trials or DEFAULT_CHUNK_TRIALS, acc.trials_done)
    try:
        if progress:
            progress(acc.trials_done, spec.trials)
        _run_chunks(spec, bounds, scheduler, out, acc, frames, progress, provenance)
    except Interrupted as exc:  # say what is saved: the trials of the checkpoint (none without a folder)
        exc.trials_saved, exc.trials = (acc.trials_done if out is not None else 0), spec.trials
        raise
    return RunOutcome(spec, acc, frames, saved if isinstance(saved, dict) else None)


def _run_chunks(spec, bounds, scheduler, out, acc, frames, progress, provenance) -> None:
    """Each chunk: computed, its per-trial part written or kept, folded into ``acc``,
    checkpointed; a signal stops the loop after the chunk it lands in is saved."""
    fingerprint = spec.fingerprint()
    with interrupt.deferred():
        for start, chunk in _chunks(spec, bounds, scheduler):
            if spec.keep_trials:
                frame = trials_frame(chunk)
                if out is not None:
                    write_atomic(out / TRIALS_DIR / f"part-{start:012d}.parquet", _parquet_bytes(frame, provenance))
                else:
                    frames.append(frame)
            acc.add(chunk)
            if out is not None:
                write_atomic(out / CHECKPOINT_FILE, checkpoint_text(acc, fingerprint))
            if progress:
                progress(acc.trials_done, spec.trials)
            interrupt.check()


def _start_fresh(out: Path) -> None:
    """A new run may reuse a finished run's folder, never an unfinished one's."""
    ck, run_path = out / CHECKPOINT_FILE, out / RUN_FILE
    if ck.is_file() and run_path.is_file():
        doc = _read_json(ck)
        state = doc.get("state", doc)
        done, trials = state.get("trials_done"), _read_json(run_path).get("trials")
        if not (isinstance(done, int) and isinstance(trials, int) and done >= trials):
            raise InputError(Problem("--out", str(out), "holds an unfinished run: continue it with --resume, or choose another folder"))
    remove_parts(out)
    ck.unlink(missing_ok=True)


def _chunks(spec: RunSpec, bounds: list[tuple[int, int]], scheduler: str | None):
    """Yield (start, chunk result) in chunk order, computed here (the next chunk beside
    the caller's work on this one with more than one numba thread: :func:`_overlapped`)
    or on a Dask cluster."""
    if scheduler is None and numba.get_num_threads() > 1:
        yield from _overlapped(spec, bounds)
        return
    if scheduler is None:
        for start, n in bounds:
            yield start, run_chunk(spec.scenarios, spec.seed, start, n)
        return
    from .distributed import map_chunks

    yield from map_chunks(scheduler, spec, bounds)


def _overlapped(spec: RunSpec, bounds) -> Iterator[tuple[int, dict]]:
    """:func:`_chunks` of a local run on more than one numba thread: the chunks are computed
    on one daemon thread (:class:`_ChunkWorker`), each next one while the caller folds,
    writes and checkpoints the one before, so that the caller's serial work (summaries,
    Parquet part, checkpoint) and the chunk's own serial stretches (input draws, kernel
    tables, the stages' NumPy tails) fill the core the other leaves idle. The chunks are
    yielded in order, each once its computation is done, and at most one is computed
    beyond the one yielded (memory stays bounded). An error of a chunk's computation is
    raised when that chunk is asked for, after the chunks before it were yielded: where
    the serial loop raises it. The next bounds are asked for when the chunk before is
    done, so :func:`chunk_plan` times a chunk as the period between two chunks, the
    caller's work included."""
    bounds = iter(bounds)
    first = next(bounds, None)
    if first is None:
        return
    worker = _ChunkWorker(spec)
    try:
        worker.ask(*first)
        start = first[0]
        while True:
            chunk = worker.outcome()
            later = next(bounds, None)
            if later is None:
                yield start, chunk
                return
            worker.ask(*later)
            yield start, chunk
            del chunk  # (folded: freed before the chunk after the next is started)
            start = later[0]
    finally:
        worker.stop()


class _ChunkWorker(threading.Thread):
    """``run_chunk`` of each chunk asked for, in order, on one daemon thread (started at
    once), with the numba thread count of the thread that made it (numba's count is per
    thread: a new thread would have ``NUMBA_NUM_THREADS``). One thread for every chunk:
    the chunks' temporaries reuse its malloc arena, as those of a serial run reuse the
    main thread's (a new thread may be given a new arena). A daemon: a run that stops (a
    signal, an error) drops the chunk it computes without waiting for it; :meth:`stop`
    ends it after that chunk."""

    def __init__(self, spec: RunSpec):
        super().__init__(daemon=True, name="mcengine-chunks")
        self._spec, self._threads = spec, numba.get_num_threads()
        self._asked: queue.Queue = queue.Queue()
        self._done: queue.Queue = queue.Queue()
        self.start()

    def ask(self, start: int, n: int) -> None:
        """Compute the chunk of ``n`` trials from ``start`` after those asked for before."""
        self._asked.put((start, n))

    def stop(self) -> None:
        """End the thread once the chunk it computes (if any) is done."""
        self._asked.put(None)

    def run(self) -> None:
        numba.set_num_threads(self._threads)
        while (bounds := self._asked.get()) is not None:
            try:
                self._done.put((run_chunk(self._spec.scenarios, self._spec.seed, *bounds), None))
            except BaseException as error:  # noqa: BLE001 - raised in the caller's thread by outcome()
                self._done.put((None, error))

    def outcome(self) -> dict:
        """The columns of the earliest chunk asked for and not yet taken, once computed; an
        error of its computation raised here."""
        chunk, error = self._done.get()
        if error is not None:
            raise error
        return chunk
