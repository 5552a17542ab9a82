"""The execution loop of a run: chunks computed (here, on a second thread beside the
caller's work, or on a Dask cluster), folded into the summaries in chunk order and saved
by the run's backend after each; a signal stops the loop after the chunk it lands in is
saved."""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

import numba

from .. import interrupt, pipeline
from ..errors import Interrupted
from ..pipeline import run_chunk, slices_of
from . import heap
from .accumulate import Accumulators, _new_accumulators
from .backends import FolderBackend, MemoryBackend
from .plan import DEFAULT_CHUNK_TRIALS, check_chunk_trials, chunk_bounds, chunk_plan
from .spec import RunSpec

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class RunOutcome:
    spec: RunSpec
    accumulators: Accumulators
    frames: list[pd.DataFrame]  # per-chunk tables kept in memory (keep_trials without a folder)
    provenance: dict | None = None  # on resume: the provenance run.json kept of the run's start


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
    sizes the chunks to take about :data:`~.plan.TARGET_CHUNK_S` each (:func:`~.plan.chunk_plan`; on a
    Dask cluster: :data:`DEFAULT_CHUNK_TRIALS`).

    With ``out`` the run is saved there (:class:`~.backends.FolderBackend`, locked for the run),
    else kept in memory (:class:`~.backends.MemoryBackend`). On resume, ``expect`` may hold the
    ``seed``, ``trials``, ``keep_trials`` and ``overrides`` the caller asked for, and
    ``spec`` the scenarios: each given one must equal the interrupted run's (InputError
    naming it, before any work).
    ``provenance`` is written into each Parquet part's schema metadata (never into the
    run's fingerprint).
    """
    if chunk_trials is not None:
        check_chunk_trials(chunk_trials)
    backend = MemoryBackend() if out is None else FolderBackend(out)
    with backend.locked():
        return _execute(spec, chunk_trials, backend, resume, scheduler, progress, expect or {}, provenance)


def _execute(spec, chunk_trials, backend, resume, scheduler, progress, expect, provenance=None) -> RunOutcome:
    saved = None
    if resume:
        spec, acc, saved = backend.resume(spec, expect)
        provenance = provenance or saved
    else:
        acc = _new_accumulators(spec)
        backend.start(spec, provenance)
    if chunk_trials is None and scheduler is None:
        bounds = chunk_plan(spec.trials, acc.trials_done)
    else:
        bounds = chunk_bounds(spec.trials, chunk_trials or DEFAULT_CHUNK_TRIALS, acc.trials_done)
    try:
        if progress:
            progress(acc.trials_done, spec.trials)
        _run_chunks(spec, bounds, scheduler, backend, acc, progress, provenance)
    except Interrupted as exc:  # say what is saved: the trials of the checkpoint (none without a folder)
        exc.trials_saved, exc.trials = backend.trials_saved(acc), spec.trials
        raise
    return RunOutcome(spec, acc, backend.frames, saved if isinstance(saved, dict) else None)


def _run_chunks(spec, bounds, scheduler, backend, acc, progress, provenance) -> None:
    """Each chunk: computed, its per-trial table saved by ``backend``, folded into ``acc``,
    its state saved, the memory it freed given back to the operating system
    (:func:`.heap.release`); a signal stops the loop after the chunk it lands in is saved."""
    fingerprint = spec.fingerprint()
    with interrupt.deferred():
        for start, chunk in _chunks(spec, bounds, scheduler):
            if spec.keep_trials:
                backend.save_trials(start, chunk, provenance)
            acc.add(chunk)
            backend.save_state(acc, fingerprint)
            heap.release()
            if progress:
                progress(acc.trials_done, spec.trials)
            interrupt.check()


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
    from ..distributed import map_chunks

    yield from map_chunks(scheduler, spec, bounds)


def _overlapped(spec: RunSpec, bounds) -> Iterator[tuple[int, dict]]:
    """:func:`_chunks` of a local run on more than one numba thread: the chunks are computed
    on one daemon thread (:class:`_ChunkWorker`), each next one while the caller folds,
    writes and checkpoints the one before, so that the caller's serial work (summaries,
    Parquet part, checkpoint) and the chunk's own serial stretches (input draws, kernel
    tables, the stages' NumPy tails) fill the core the other leaves idle. The chunks are
    yielded in order, each once its computation is done, and at most one is computed
    beyond the one yielded (memory stays bounded), with the kernels of the first slice of
    the one after it (:func:`_next_slice`). An error of a chunk's computation is
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
        handoff: dict = {}  # the next chunk's first slice's kernels, started beside this chunk's last slice
        while (bounds := self._asked.get()) is not None:
            try:
                self._done.put((run_chunk(self._spec.scenarios, self._spec.seed, *bounds, handoff, _next_slice(self._spec.trials, *bounds)), None))
            except BaseException as error:  # noqa: BLE001 - raised in the caller's thread by outcome()
                self._done.put((None, error))
        if "kernels" in handoff:  # started for a chunk never asked for
            handoff.pop("kernels")[1].drop()

    def outcome(self) -> dict:
        """The columns of the earliest chunk asked for and not yet taken, once computed; an
        error of its computation raised here."""
        chunk, error = self._done.get()
        if error is not None:
            raise error
        return chunk


def _next_slice(trials: int, start: int, n: int) -> tuple[int, int] | None:
    """The first slice of the chunk after the chunk of ``n`` trials from ``start`` in a run
    of ``trials``, as :func:`~mcengine.pipeline.run_chunk` makes it where that chunk has a
    slice's trials or the run's rest (a fixed chunk size of at least
    :data:`~mcengine.pipeline.SLICE_TRIALS`, or the adaptive rule's chunks once grown);
    None after the last chunk, or after a chunk smaller than a slice (the adaptive rule's
    first chunks: the next may be as small)."""
    after = start + n
    if after >= trials or n < pipeline.SLICE_TRIALS:
        return None
    return slices_of(after, trials - after)[0]
