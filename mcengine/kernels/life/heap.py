"""An indexed binary min-heap of timers, in plain arrays (for the event kernels), and a
plain one of bare times (:func:`times_push`, :func:`times_pop`: entries without ids).

Each timer has a fixed integer id in ``[0, n_ids)`` and at most one entry in the heap,
so a heap never holds more than ``n_ids`` entries (memory is bounded by the model, not
by the number of events) and a timer can be moved or cancelled in ``O(log n)`` without
leaving stale entries behind.

Storage (all owned by the caller):

* ``keys`` float64[n_ids]: event times of the heap entries, heap-ordered;
* ``ids`` int64[n_ids]: the timer id of each entry;
* ``pos`` int64[n_ids]: where timer ``id`` sits in the heap, ``-1`` if it is not armed;
* ``n``: the number of entries, passed in and returned by every mutating call.

The top (earliest) entry is ``keys[0], ids[0]`` when ``n > 0``. Ties are broken by the
deterministic sift order, so a run never depends on anything but its inputs.

Speed note: the heap runs inside the lifetime loop, a :data:`~mcengine.jit.linked_kernel`
compiled without reference counting, so its calls cost no ``NRT_incref``/``NRT_decref``
pair per array.

Reference: the array heap of J. W. J. Williams (1964), "Algorithm 232: Heapsort",
CACM 7(6):347-348, with a position index (Cormen et al., *Introduction to Algorithms*,
3rd ed., §6.5 "Priority queues", handles to elements).
"""

from __future__ import annotations

import numpy as np

from mcengine.jit import kernel, linked_kernel

@linked_kernel
def _sift_up(keys, ids, pos, j):
    """Move entry ``j`` towards the root until its parent is not later."""
    key = keys[j]
    ident = ids[j]
    while j > 0:
        parent = (j - 1) >> 1
        if keys[parent] <= key:
            break
        keys[j] = keys[parent]
        ids[j] = ids[parent]
        pos[ids[j]] = j
        j = parent
    keys[j] = key
    ids[j] = ident
    pos[ident] = j


@linked_kernel
def _sift_down(keys, ids, pos, n, j):
    """Move entry ``j`` towards the leaves until no child is earlier."""
    key = keys[j]
    ident = ids[j]
    while True:
        child = 2 * j + 1
        if child >= n:
            break
        if child + 1 < n and keys[child + 1] < keys[child]:
            child += 1
        if keys[child] >= key:
            break
        keys[j] = keys[child]
        ids[j] = ids[child]
        pos[ids[j]] = j
        j = child
    keys[j] = key
    ids[j] = ident
    pos[ident] = j


@kernel
def heap_set(keys, ids, pos, n, ident, key):
    """Arm timer ``ident`` at time ``key`` (insert, or move it if already armed).

    Returns
    -------
    int
        The new number of entries.
    """
    j = pos[ident]
    if j < 0:
        keys[n] = key
        ids[n] = ident
        _sift_up(keys, ids, pos, n)
        n += 1
    else:
        old = keys[j]
        keys[j] = key
        if key < old:
            _sift_up(keys, ids, pos, j)
        else:
            _sift_down(keys, ids, pos, n, j)
    return n


@kernel
def heap_remove(keys, ids, pos, n, ident):
    """Disarm timer ``ident`` (no-op if it is not armed); pop = remove ``ids[0]``.

    Returns
    -------
    int
        The new number of entries.
    """
    j = pos[ident]
    if j >= 0:
        pos[ident] = -1
        n -= 1
        if j < n:
            keys[j] = keys[n]
            ids[j] = ids[n]
            pos[ids[j]] = j
            if j > 0 and keys[j] < keys[(j - 1) >> 1]:
                _sift_up(keys, ids, pos, j)
            else:
                _sift_down(keys, ids, pos, n, j)
    return n


@kernel
def times_push(keys, n, key):
    """Insert time ``key`` into the min-heap ``keys[:n]`` of bare times; returns ``n + 1``."""
    j = n
    while j > 0:
        parent = (j - 1) >> 1
        if keys[parent] <= key:
            break
        keys[j] = keys[parent]
        j = parent
    keys[j] = key
    return n + 1


@linked_kernel
def _times_sift_down(keys, n, j, key):
    """Place ``key`` at hole ``j`` of the min-heap ``keys[:n]``, moving it down past
    smaller children."""
    while True:
        child = 2 * j + 1
        if child >= n:
            break
        if child + 1 < n and keys[child + 1] < keys[child]:
            child += 1
        if keys[child] >= key:
            break
        keys[j] = keys[child]
        j = child
    keys[j] = key


@kernel
def times_pop(keys, n):
    """Remove the earliest time of the min-heap ``keys[:n]`` (``n > 0``); returns it and
    ``n - 1``. The top is then ``keys[0]`` if any is left."""
    top = keys[0]
    n -= 1
    if n > 0:
        _times_sift_down(keys, n, np.int64(0), keys[n])  # (an int64 position)
    return top, n


@kernel
def times_heapify(keys, n):
    """Make ``keys[:n]`` (bare times in any order) a min-heap in place, ``O(n)`` (Floyd):
    each parent from the last one up sifts down."""
    for start in range(n // 2 - 1, -1, -1):
        _times_sift_down(keys, n, start, keys[start])
