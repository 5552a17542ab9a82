"""Tests for :mod:`mcengine._pointer`: a named tuple passed by reference reads as the tuple."""

from __future__ import annotations

from collections import namedtuple

import numba
import numpy as np
import pytest

from mcengine._pointer import by_reference
from mcengine.jit import event_kernel

Inner = namedtuple("Inner", ["counts", "flag"])
Outer = namedtuple("Outer", ["values", "scale", "inner", "grid"])


@event_kernel
def _reads(outer, i):
    """What a callee reads of ``outer`` (by value or by reference): an array element, a
    float, a nested tuple's array and bool, a 2-D array's shape and element."""
    inner = outer.inner
    return (outer.values[i] * outer.scale + inner.counts[i] + (100.0 if inner.flag else 0.0)
            + outer.grid.shape[1] + outer.grid[1, i])


@event_kernel
def _writes(outer, i, x):
    """A callee writing through ``outer`` (the caller's arrays, not copies)."""
    outer.values[i] = x
    outer.inner.counts[i] += 1


@event_kernel
def _through_reference(outer, i, x):
    """Reads and writes of callees given ``outer`` by reference, then what they read by value."""
    ref = by_reference(outer)
    before = _reads(ref, i)
    _writes(ref, i, x)
    return before, _reads(ref, i), _reads(outer, i)


def _outer(flag):
    return Outer(np.array([1.5, 2.5, 3.5]), 2.0, Inner(np.array([10, 20, 30]), flag), np.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize("flag", [False, True])
def test_a_reference_reads_and_writes_like_the_tuple(flag):
    outer = _outer(flag)
    expected_before = _reads.py_func(_outer(flag), 1)
    before, after, by_value = _through_reference(outer, 1, 7.0)
    assert before == expected_before
    assert outer.values.tolist() == [1.5, 7.0, 3.5]
    assert outer.inner.counts.tolist() == [10, 21, 30]
    assert after == by_value == _reads.py_func(outer, 1)


def test_only_a_named_tuple_is_passed_by_reference():
    @event_kernel
    def _refer(value):
        return by_reference(value)

    with pytest.raises(numba.core.errors.TypingError):
        _refer(np.zeros(3))
