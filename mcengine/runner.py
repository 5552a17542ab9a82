"""Chunked, resumable, optionally distributed execution of the trial pipeline.

Trials stream through chunks of ``chunk_trials`` (a whole number of
:data:`~mcengine.results.BLOCK_TRIALS`); each chunk's columns fold into streaming
summaries in chunk order, so memory does not grow with the trial count. Because every
random number is keyed by (seed, stage, trial) and summaries merge block by block in
trial order, the result is bit-identical whatever the chunk size, thread count, Dask
workers or resume point.

With an output folder, the run's settings go to ``run.json`` and, after every chunk,
the accumulated state to ``checkpoint.json`` (atomically), so a killed run (SIGKILL
included) resumes from its last finished chunk to exactly the straight-run numbers.
With ``keep_trials`` each chunk's per-trial table is written as its own Parquet part
under ``trials.parquet/`` (a Parquet dataset that pandas and pyarrow read as one table).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from .errors import InputError, Problem
from .io import write_atomic, write_json
from .pipeline import METRICS, PAIRED_METRICS, run_chunk
from .results import BLOCK_TRIALS, Summary
from .scenario import Scenario, scenario_from_dict

DEFAULT_CHUNK_TRIALS = 16 * BLOCK_TRIALS
RUN_FILE = "run.json"
#: Metrics that crowd just below 1: summarised as their distance from 1.
NEAR_ONE = ("availability",)
CHECKPOINT_FILE = "checkpoint.json"
TRIALS_DIR = "trials.parquet"


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
    trials_done: int = 0

    def add(self, chunk: dict[str, dict[str, np.ndarray]]) -> None:
        base = self.names[0]
        for name in self.names:
            cols = chunk[name]
            for metric in METRICS:
                offset = 1.0 if metric in NEAR_ONE else 0.0
                self.metrics.setdefault((name, metric), Summary(offset=offset)).add(cols[metric], f"{name}.{metric}")
            if name == base:
                continue
            for metric in PAIRED_METRICS:
                a, b = chunk[base][metric], cols[metric]
                with np.errstate(divide="ignore", invalid="ignore"):
                    ratio = np.where(a == b, 1.0, b / a)  # exactly 1 for identical trials (0/0 included)
                self.ratios.setdefault((name, metric), Summary(offset=1.0)).add(ratio, f"{name}/{base}.{metric}")
                self.below[(name, metric)] = self.below.get((name, metric), 0) + int(np.count_nonzero(b < a))
        self.trials_done += len(chunk[base]["trial"])

    def summary(self) -> dict:
        base = self.names[0]
        scenarios = {name: {metric: self.metrics[(name, metric)].to_dict() for metric in METRICS} for name in self.names}
        doc: dict = {"scenarios": scenarios}
        pairs = {}
        for name in self.names[1:]:
            pairs[f"{name} / {base}"] = {
                metric: {
                    "ratio": self.ratios[(name, metric)].to_dict(),
                    "p_b_below_a": self.below[(name, metric)] / self.trials_done,
                }
                for metric in PAIRED_METRICS
            }
        if pairs:
            doc["baseline"] = base
            doc["paired"] = pairs[f"{self.names[1]} / {base}"]
            doc["paired_all"] = pairs
        return doc

    def state(self) -> dict:
        return {
            "names": list(self.names),
            "trials_done": self.trials_done,
            "metrics": [[n, m, s.state()] for (n, m), s in self.metrics.items()],
            "ratios": [[n, m, s.state()] for (n, m), s in self.ratios.items()],
            "below": [[n, m, c] for (n, m), c in self.below.items()],
        }

    @classmethod
    def from_state(cls, state: dict) -> "Accumulators":
        acc = cls(tuple(state["names"]), trials_done=int(state["trials_done"]))
        acc.metrics = {(n, m): Summary.from_state(s) for n, m, s in state["metrics"]}
        acc.ratios = {(n, m): Summary.from_state(s) for n, m, s in state["ratios"]}
        acc.below = {(n, m): int(c) for n, m, c in state["below"]}
        return acc


def trials_frame(chunk: dict[str, dict[str, np.ndarray]]) -> pd.DataFrame:
    """Long per-trial table of one chunk: one row per (scenario, trial)."""
    frames = [pd.DataFrame({"scenario": name, **cols}) for name, cols in chunk.items()]
    return pd.concat(frames, ignore_index=True)


def _parquet_bytes(frame: pd.DataFrame) -> bytes:
    import io

    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()


def chunk_bounds(trials: int, chunk_trials: int, start: int = 0) -> list[tuple[int, int]]:
    return [(s, min(chunk_trials, trials - s)) for s in range(start, trials, chunk_trials)]


def check_chunk_trials(chunk_trials: int) -> int:
    if chunk_trials < 1 or chunk_trials % BLOCK_TRIALS:
        raise InputError(Problem("--chunk-trials", chunk_trials, f"allowed: a positive multiple of {BLOCK_TRIALS}"))
    return chunk_trials


@dataclass
class RunOutcome:
    spec: RunSpec
    accumulators: Accumulators
    frames: list[pd.DataFrame]  # per-chunk tables kept in memory (keep_trials without a folder)


def _load_resume(out: Path, spec: RunSpec | None) -> tuple[RunSpec, Accumulators]:
    run_path = out / RUN_FILE
    if not run_path.is_file():
        raise InputError(Problem("--resume", str(out), f"no {RUN_FILE} here: not an mcengine run folder"))
    saved = json.loads(run_path.read_text())
    saved_spec = RunSpec.from_dict(saved)
    if spec is not None and spec.fingerprint() != saved["fingerprint"]:
        raise InputError(
            Problem(
                "--resume",
                str(out),
                "the scenarios, seed, trials or --keep-trials differ from the interrupted run's; "
                "resume with the same arguments (or none: `mcengine run --resume DIR`), or start a new --out folder",
            )
        )
    ck = out / CHECKPOINT_FILE
    acc = Accumulators.from_state(json.loads(ck.read_text())) if ck.is_file() else Accumulators(tuple(s.name for s in saved_spec.scenarios))
    return saved_spec, acc


def execute(
    spec: RunSpec | None,
    chunk_trials: int = DEFAULT_CHUNK_TRIALS,
    out: Path | None = None,
    resume: bool = False,
    scheduler: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> RunOutcome:
    """Run (or resume) ``spec`` and return its accumulated summaries."""
    check_chunk_trials(chunk_trials)
    if resume:
        spec, acc = _load_resume(out, spec)
    else:
        acc = Accumulators(tuple(s.name for s in spec.scenarios))
        if out is not None:
            _start_fresh(out)
            write_json(out / RUN_FILE, spec.to_dict())
    frames: list[pd.DataFrame] = []
    if resume and out is not None:
        _drop_unfinished_parts(out, acc.trials_done)
    bounds = chunk_bounds(spec.trials, chunk_trials, acc.trials_done)
    if progress:
        progress(acc.trials_done, spec.trials)
    for start, chunk in _chunks(spec, bounds, scheduler):
        if spec.keep_trials:
            frame = trials_frame(chunk)
            if out is not None:
                write_atomic(out / TRIALS_DIR / f"part-{start:012d}.parquet", _parquet_bytes(frame))
            else:
                frames.append(frame)
        acc.add(chunk)
        if out is not None:
            write_atomic(out / CHECKPOINT_FILE, json.dumps(acc.state()))
        if progress:
            progress(acc.trials_done, spec.trials)
    return RunOutcome(spec, acc, frames)


def _start_fresh(out: Path) -> None:
    """A new run may reuse a finished run's folder, never an unfinished one's."""
    ck, run_path = out / CHECKPOINT_FILE, out / RUN_FILE
    if ck.is_file() and run_path.is_file():
        done = json.loads(ck.read_text())["trials_done"]
        if done < json.loads(run_path.read_text())["trials"]:
            raise InputError(Problem("--out", str(out), "holds an unfinished run: continue it with --resume, or choose another folder"))
    _drop_unfinished_parts(out, 0)
    ck.unlink(missing_ok=True)


def _drop_unfinished_parts(out: Path, trials_done: int) -> None:
    """Parts of chunks the checkpoint does not count (killed between the two writes)."""
    for part in (out / TRIALS_DIR).glob("part-*.parquet"):
        if int(part.stem.split("-")[1]) >= trials_done:
            part.unlink()


def _chunks(spec: RunSpec, bounds: list[tuple[int, int]], scheduler: str | None):
    """Yield (start, chunk result) in chunk order, computed here or on a Dask cluster."""
    if scheduler is None:
        for start, n in bounds:
            yield start, run_chunk(spec.scenarios, spec.seed, start, n)
        return
    from .distributed import map_chunks

    yield from map_chunks(scheduler, spec, bounds)
