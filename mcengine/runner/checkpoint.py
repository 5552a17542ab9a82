"""Checkpoint integrity: what ``checkpoint.json`` holds and the checks a resume makes.

With an output folder, the run's settings go to ``run.json`` and, after every chunk,
the accumulated state to ``checkpoint.json`` (atomically) or what the chunk changed to
``checkpoint.log`` (appended and fsync'd; :class:`~.backends.FolderBackend` says when
which), so a killed run (SIGKILL included) resumes from its last finished chunk to
exactly the straight-run numbers: the log's whole records are folded into the state of
``checkpoint.json`` (:func:`_fold_log`), a torn last record left to be computed again.
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
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from ..columns import BREAKDOWN, GROUP_PREFIXES, PAIRED_GROUP_PREFIXES, metrics_of, paired_of
from ..errors import InputError, Problem
from ..outfolder import PART, TRIALS_DIR
from ..scenario.load import load_targeted
from ..stages.econ import breakdown_parts
from ..state_checks import summary_problem
from ..summaries import BLOCK_TRIALS
from .accumulate import Accumulators, _new_accumulators
from .spec import RUN_FILE, RunSpec

CHECKPOINT_FILE = "checkpoint.json"
#: Version of the checkpoint layout (fingerprint + checksum around the state).
CHECKPOINT_FORMAT = 2
#: The chunks folded since ``checkpoint.json`` was written: one record appended per chunk.
LOG_FILE = "checkpoint.log"
#: What begins each record of the log (its layout's version included).
LOG_MAGIC = b"mcengine-checkpoint-log 1 "


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
    <mcengine.summaries.QuantileSketch.state>`), so it is encoded once, with sorted keys, and
    that text is both hashed and written."""
    state = _state_json(acc.state())
    head = json.dumps({"format": CHECKPOINT_FORMAT, "run_fingerprint": fingerprint, "sha256": _text_sha256(state)})
    return f'{head[:-1]}, "state": {state}}}'


def log_record(acc: "Accumulators", fingerprint: str, start: int) -> bytes:
    """One record of ``checkpoint.log``: what the chunks from trial ``start`` to
    ``acc.trials_done`` changed (:meth:`Accumulators.take_record
    <mcengine.runner.accumulate.Accumulators.take_record>`). A line of JSON (the trials it
    takes the state from and to, the run's fingerprint, the payload's layout and sha256),
    then the payload: the record's document as JSON, its bucket keys and their counts as
    little-endian int64."""
    doc, keys, counts = acc.take_record()
    text = json.dumps(doc).encode()
    payload = b"".join((text, keys.astype("<i8").tobytes(), counts.astype("<i8").tobytes()))
    head = {"from": start, "to": acc.trials_done, "run_fingerprint": fingerprint, "text": len(text), "buckets": int(keys.size),
            "sha256": hashlib.sha256(payload).hexdigest()}
    return LOG_MAGIC + json.dumps(head).encode() + b"\n" + payload


def _log_records(path: Path, fingerprint: str):
    """(head, payload) of each whole record of the log at ``path``, in order, up to the
    first that is torn (a stop mid-append), fails its checksum or belongs to another run:
    the chunks from there are computed again."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    at = 0
    while data.startswith(LOG_MAGIC, at) and (end := data.find(b"\n", at)) >= 0:
        try:
            head = json.loads(data[at + len(LOG_MAGIC) : end])
            size = head["text"] + 16 * head["buckets"]
        except (ValueError, KeyError, TypeError):
            return
        payload = data[end + 1 : end + 1 + size]
        if (len(payload) != size or hashlib.sha256(payload).hexdigest() != head.get("sha256")
                or head.get("run_fingerprint") != fingerprint):
            return
        yield head, payload
        at = end + 1 + size


def _fold_log(acc: "Accumulators", path: Path, fingerprint: str) -> None:
    """Fold into ``acc`` (the state of ``checkpoint.json``) the log's records that carry it
    on, in order: those that end before its trials are left over from before it was
    written; the first that does not begin where the state ends stops the fold."""
    for head, payload in _log_records(path, fingerprint):
        if head["to"] <= acc.trials_done:
            continue
        if head["from"] != acc.trials_done:
            return
        buckets = head["buckets"]
        arrays = np.frombuffer(payload, "<i8", 2 * buckets, head["text"])
        acc.fold_record(json.loads(payload[: head["text"]]), arrays[:buckets], arrays[buckets:])


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
        if not (problem := check_state(acc, spec)):
            _fold_log(acc, path.with_name(LOG_FILE), spec.fingerprint())
            problem = check_state(acc, spec)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        problem = f"its state is malformed ({type(exc).__name__}: {exc})"
    if problem:
        raise InputError(Problem(str(path), "(file)", f"does not describe this run: {problem}; start a new --out folder"))
    return acc


def _training(scenario) -> bool:
    """Whether ``scenario`` is a training job (it then has the training metrics)."""
    return scenario.workload.kind == "training"


def _paired(spec: RunSpec) -> list[tuple[str, str]]:
    """(scenario, metric) of every metric a scenario pairs with the baseline: the
    :data:`~mcengine.columns.PAIRED_METRICS` both produce."""
    base = _training(spec.scenarios[0])
    return [(s.name, m) for s in spec.scenarios[1:] for m in paired_of(base, _training(s))]


def _summaries(acc: "Accumulators", spec: RunSpec) -> dict:
    """Every summary a checkpoint of ``spec`` holds once a chunk is done, by name."""
    names = tuple(s.name for s in spec.scenarios)
    want = {(s.name, m): acc.metrics.get((s.name, m)) for s in spec.scenarios
            for m in (*metrics_of(_training(s)), *(f"{BREAKDOWN}.{p}" for p in breakdown_parts(s)))}
    want.update({(n, m): acc.metrics[(n, m)] for n, m in acc.metrics if m.startswith(GROUP_PREFIXES)})
    want.update({(f"{n}/{names[0]}", m): acc.ratios.get((n, m)) for n, m in _paired(spec)})
    want.update({(f"{n}/{names[0]}", m): acc.ratios[(n, m)] for n, m in acc.ratios if m.startswith(PAIRED_GROUP_PREFIXES)})
    return want


def saved_trials(out: Path | None) -> tuple[int, int | None]:
    """(trials done, the run's trials) that a run folder's checkpoint counts, for a stop
    message ((0, None) without a readable one; a resume checks it in full)."""
    if out is None:
        return 0, None
    try:
        done = _read_json(Path(out) / CHECKPOINT_FILE)["state"]["trials_done"]
        run = _read_json(Path(out) / RUN_FILE)
        total = run["trials"]
        for head, _ in _log_records(Path(out) / LOG_FILE, run["fingerprint"]):
            done = head["to"] if head["from"] == done else done
    except (InputError, KeyError, TypeError):
        return 0, None
    return (done, total) if isinstance(done, int) and isinstance(total, int) else (0, None)


def check_state(acc: "Accumulators", spec: RunSpec) -> str:
    """What is inconsistent in a checkpoint's state for ``spec`` ('' if nothing): its
    scenarios, its trials done (within the run, on a block boundary or at the run's end),
    every summary field by field (:func:`~mcengine.state_checks.summary_problem`: finite,
    ordered, in range), and every count against the trials done (each summary's finite +
    infinite values and its quantile sketch, each scenario's SLO misses, each pair's "B
    below A" and "B equal to A" count)."""
    names = tuple(s.name for s in spec.scenarios)
    done = acc.trials_done
    if acc.names != names:
        return f"its scenarios {list(acc.names)} are not the run's {list(names)}"
    if not isinstance(done, int) or not 0 <= done <= spec.trials:
        return f"{done} trials done of a run of {spec.trials}"
    if done % BLOCK_TRIALS and done != spec.trials:
        return f"{done} trials done is not a chunk boundary (a multiple of {BLOCK_TRIALS}, or the run's {spec.trials})"
    if done == 0:
        return "" if not (acc.metrics or acc.ratios or acc.below or acc.missed) else "summaries without any trial done"
    for (who, metric), summary in _summaries(acc, spec).items():
        if summary is None:
            return f"no summary of {who}.{metric}"
        if problem := summary_problem(summary, f"{who}.{metric}", acc.replicates):
            return problem
        if summary.count + summary.infinite + summary.skipped != done or summary.sketch.count + summary.low.count != summary.count:
            return (f"{who}.{metric} summarises {summary.count + summary.infinite + summary.skipped} trials ({summary.sketch.count + summary.low.count} "
                    f"in its quantiles), not the {done} trials done")
    counts = [(f"{n}: trials that missed an SLO", acc.missed.get(n)) for n in names]
    pairs = _paired(spec) + [(n, m) for n, m in acc.ratios if m.startswith(PAIRED_GROUP_PREFIXES)]
    tallies = [("below", acc.below), *([("equal to", acc.ties)] if acc.ties is not None else [])]
    counts += [(f"{n}/{names[0]}.{m}: trials {word} the baseline", tally.get((n, m))) for word, tally in tallies for n, m in pairs]
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
