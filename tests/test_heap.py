"""mcengine.runner.heap: freed memory given back after each chunk, where glibc can."""

from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np
import pytest

from mcengine.runner import heap


def _glibc() -> bool:
    return hasattr(ctypes.CDLL(ctypes.util.find_library("c")), "malloc_trim")


def test_release_returns_freed_memory_where_glibc_has_malloc_trim():
    """Many blocks freed below one still in use leave free pages inside the arena (its
    top cannot shrink): ``malloc_trim`` returns them, which it reports (1) on glibc."""
    blocks = [np.ones(4096) for _ in range(4096)]  # 32 KiB each, below malloc's mmap threshold
    kept = np.ones(4096)
    del blocks
    assert heap.release() is _glibc()
    assert kept.sum() == 4096.0


def test_release_is_a_no_op_without_malloc_trim(monkeypatch):
    """Where the C library has no ``malloc_trim`` (musl, macOS, Windows) or none loads,
    nothing is called and nothing is returned."""
    heap._malloc_trim.cache_clear()
    monkeypatch.setattr(ctypes, "CDLL", lambda name: object())  # a C library without malloc_trim
    assert heap._malloc_trim() is None and heap.release() is False

    def unloadable(name):
        raise OSError(name)

    heap._malloc_trim.cache_clear()
    monkeypatch.setattr(ctypes, "CDLL", unloadable)
    assert heap._malloc_trim() is None and heap.release() is False

    heap._malloc_trim.cache_clear()  # no C library found at all (Windows): CDLL(None) is never asked
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: None)
    monkeypatch.setattr(ctypes, "CDLL", lambda name: pytest.fail(f"CDLL({name!r}) asked"))
    assert heap._malloc_trim() is None and heap.release() is False
    heap._malloc_trim.cache_clear()


def test_release_frees_pyarrow_pool_only_where_pyarrow_is_imported(monkeypatch):
    """A run that writes no Parquet does not import pyarrow to release its pool."""
    import sys

    released = []

    class Pool:
        def release_unused(self):
            released.append(True)

    class Arrow:
        @staticmethod
        def default_memory_pool():
            return Pool()

    monkeypatch.delitem(sys.modules, "pyarrow", raising=False)
    heap.release()
    assert released == [] and "pyarrow" not in sys.modules
    monkeypatch.setitem(sys.modules, "pyarrow", Arrow)
    heap.release()
    assert released == [True]
