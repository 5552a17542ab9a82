"""Where a run keeps what it saves: in memory, or in its output folder, behind one interface.

The execution loop (:mod:`.execution`) makes the same calls on either backend, in this
order: :meth:`Backend.locked` around the run; :meth:`Backend.start` for a new run or
:meth:`Backend.resume` for an interrupted one; after each chunk :meth:`Backend.save_trials`
(with ``keep_trials``: the chunk's per-trial table) and then :meth:`Backend.save_state`
(the summaries so far). :class:`MemoryBackend` keeps the per-trial tables in a list and
saves no state, so nothing survives the process. :class:`FolderBackend` writes
``run.json`` at the start, each chunk's per-trial table as its own Parquet part under
``trials.parquet/`` (a Parquet dataset that pandas and pyarrow read as one table) and
the summaries to ``checkpoint.json`` (atomically, :mod:`.checkpoint`), so a killed run
resumes from its last finished chunk to exactly the straight-run numbers.
"""

from __future__ import annotations

import contextlib
import io
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError, Problem
from ..io import append_durable, write_atomic, write_json
from ..outfolder import TRIALS_DIR, locked, remove_parts
from ..provenance import parquet_metadata
from .accumulate import Accumulators
from .checkpoint import CHECKPOINT_FILE, LOG_FILE, _load_resume, _read_json, checkpoint_text, log_record
from .spec import RUN_FILE, RunSpec

if TYPE_CHECKING:  # (pandas is imported where a table is made: a run that keeps no trials needs none)
    import pandas as pd


#: ``checkpoint.json`` is written whole again once the log since has grown to this many
#: times its size (a resume reads at most that much log; the whole state is encoded about
#: once per this many chunks' worth of records).
LOG_REWRITE = 8


class Backend(ABC):
    """What a run saves, and where (module text)."""

    def __init__(self) -> None:
        #: Per-chunk tables kept in memory (keep_trials without a folder).
        self.frames: list[pd.DataFrame] = []

    @abstractmethod
    def locked(self) -> contextlib.AbstractContextManager:
        """Held for the whole run: no other run may save beside it."""

    @abstractmethod
    def start(self, spec: RunSpec, provenance: dict | None) -> None:
        """A new run of ``spec`` begins (after its summaries are made)."""

    @abstractmethod
    def resume(self, spec: RunSpec | None, expect: dict) -> tuple[RunSpec, Accumulators, object]:
        """(the saved run, its summaries so far, the provenance of its start) of an
        interrupted run; ``spec`` and ``expect``: what the caller asked for (each given
        setting must equal the saved run's)."""

    @abstractmethod
    def save_trials(self, start: int, chunk: dict[str, dict[str, np.ndarray]], provenance: dict | None) -> None:
        """Keep the per-trial table of the chunk from trial ``start`` (its columns per
        scenario, as :func:`mcengine.pipeline.run_chunk` makes them)."""

    @abstractmethod
    def save_state(self, acc: Accumulators, fingerprint: str) -> None:
        """Save the summaries after a chunk is folded into them."""

    @abstractmethod
    def trials_saved(self, acc: Accumulators) -> int:
        """The trials a resume would find done."""


class MemoryBackend(Backend):
    """A run without a folder: per-trial tables in :attr:`frames`, nothing saved."""

    def locked(self) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()

    def start(self, spec: RunSpec, provenance: dict | None) -> None:
        pass

    def resume(self, spec: RunSpec | None, expect: dict) -> tuple[RunSpec, Accumulators, object]:
        raise InputError(Problem("--resume", None, "needs the folder of the interrupted run"))

    def save_trials(self, start: int, chunk: dict[str, dict[str, np.ndarray]], provenance: dict | None) -> None:
        self.frames.append(trials_frame(chunk))

    def save_state(self, acc: Accumulators, fingerprint: str) -> None:
        pass

    def trials_saved(self, acc: Accumulators) -> int:
        return 0


class FolderBackend(Backend):
    """A run in the output folder ``out`` (module text), locked while it runs. After each
    chunk the state is saved whole to ``checkpoint.json`` (atomically) at the run's first
    and last chunk and whenever the log since has grown to :data:`LOG_REWRITE` times its
    size; after every other chunk a record of what the chunk changed is appended to
    ``checkpoint.log`` and fsync'd (:func:`~.checkpoint.log_record`), which a resume folds
    into the state of ``checkpoint.json`` (:func:`~.checkpoint._fold_log`): every
    finished chunk is saved, and the state is not encoded whole after each."""

    def __init__(self, out: Path) -> None:
        super().__init__()
        self.out = out
        self._trials = self._saved = 0
        self._full_bytes = self._log_bytes = None

    def locked(self) -> contextlib.AbstractContextManager:
        return locked(self.out)

    def start(self, spec: RunSpec, provenance: dict | None) -> None:
        _start_fresh(self.out)
        write_json(self.out / RUN_FILE, {**spec.to_dict(), **({"provenance": provenance} if provenance else {})})
        self._trials = spec.trials

    def resume(self, spec: RunSpec | None, expect: dict) -> tuple[RunSpec, Accumulators, object]:
        spec, acc = _load_resume(self.out, spec, expect)
        saved = _read_json(self.out / RUN_FILE).get("provenance")
        remove_parts(self.out, acc.trials_done)  # parts the checkpoint does not count (killed between the two writes)
        self._trials, self._saved = spec.trials, acc.trials_done
        return spec, acc, saved

    def save_trials(self, start: int, chunk: dict[str, dict[str, np.ndarray]], provenance: dict | None) -> None:
        write_atomic(self.out / TRIALS_DIR / f"part-{start:012d}.parquet", parquet_bytes(chunk, provenance))

    def save_state(self, acc: Accumulators, fingerprint: str) -> None:
        if self._full_bytes is None or acc.trials_done >= self._trials or self._log_bytes >= LOG_REWRITE * self._full_bytes:
            text = checkpoint_text(acc, fingerprint)
            write_atomic(self.out / CHECKPOINT_FILE, text)
            (self.out / LOG_FILE).unlink(missing_ok=True)  # its records end before the state does: left over if a stop lands before
            acc.start_journal()
            self._full_bytes, self._log_bytes = len(text), 0
        else:
            record = log_record(acc, fingerprint, self._saved)
            append_durable(self.out / LOG_FILE, record)
            self._log_bytes += len(record)
        self._saved = acc.trials_done

    def trials_saved(self, acc: Accumulators) -> int:
        return acc.trials_done


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
    (out / LOG_FILE).unlink(missing_ok=True)


def trials_frame(chunk: dict[str, dict[str, np.ndarray]]) -> pd.DataFrame:
    """Long per-trial table of one chunk: one row per (scenario, trial)."""
    import pandas as pd

    frames = [pd.DataFrame({"scenario": name, **cols}) for name, cols in chunk.items()]
    return pd.concat(frames, ignore_index=True)


def parquet_bytes(chunk: dict[str, dict[str, np.ndarray]], provenance: dict | None = None) -> bytes:
    """One Parquet part of a chunk: the table :func:`trials_frame` makes, as
    ``pyarrow.Table.from_pandas`` converts it (the same schema and pandas metadata, a NaN
    of a float column stored as null, a column a scenario lacks all null) in the row
    groups ``pyarrow.parquet.write_table`` makes of it, made from each scenario's NumPy
    columns (Arrow arrays over their memory, not copies), so that the chunk's joined
    DataFrame is never made; ``provenance`` goes to the schema metadata (key
    :data:`mcengine.provenance.PARQUET_KEY`). The schema is that of a table of each
    scenario's first row (a type depends on the columns' types alone); a scenario's column
    of another type than the joined column's (an integer column another scenario lacks:
    float, as ``pandas.concat`` makes it) is converted as pandas would."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    head = trials_frame({name: {column: values[:1] for column, values in columns.items()} for name, columns in chunk.items()})
    schema = pa.Schema.from_pandas(head, preserve_index=False)
    schema = schema.with_metadata({**(schema.metadata or {}), **parquet_metadata(provenance)})
    tables = []
    for name, columns in chunk.items():
        n = len(next(iter(columns.values())))
        tables.append(pa.Table.from_arrays(
            [pa.array(np.full(n, name, dtype=object), type=field.type) if field.name == "scenario"
             else pa.nulls(n, field.type) if field.name not in columns
             else pa.array(columns[field.name].astype(head[field.name].dtype, copy=False), type=field.type, from_pandas=True)
             for field in schema], schema=schema))
    table = pa.concat_tables(tables)
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()
