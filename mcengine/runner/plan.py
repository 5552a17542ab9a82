"""Chunk plans: the (first trial, trials) of each chunk of a run.

A chunk is a whole number of :data:`~mcengine.summaries.BLOCK_TRIALS` (the last one
aside), so the summaries, merged block by block in trial order, do not depend on it.
"""

from __future__ import annotations

import time
from typing import Callable, Iterator

from ..errors import InputError, Problem
from ..summaries import BLOCK_TRIALS

DEFAULT_CHUNK_TRIALS = 16 * BLOCK_TRIALS
#: Seconds a chunk of a run without ``chunk_trials`` aims to take, so that its progress
#: moves every few seconds (:func:`chunk_plan`); never changes the numbers.
TARGET_CHUNK_S = 5.0
#: A chunk of such a run grows at most this many times over the one before it.
CHUNK_GROWTH = 4


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
    (the serving plan, the summaries, the checkpoint: a sizeable part of a second for the
    case study, docs/performance.md), so the target is seconds, not less. Chunk sizes never
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
