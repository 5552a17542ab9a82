"""Freed memory given back to the operating system after each chunk of a run.

A chunk's stages allocate and free hundreds of MB (the plan tables of a slice, the
drawn inputs, the kernels' outputs), and glibc's malloc keeps what they free in its
arenas for reuse: resident, though no data. Scattered between the blocks still in use
it cannot shrink an arena from its top, so without this a run's resident memory grows
with free memory, not with data (docs/performance.md#memory). :func:`release` asks glibc's ``malloc_trim(0)`` to
give every arena's free pages back (it walks each arena's free blocks and returns their
whole pages with ``madvise``) and pyarrow's memory pool to release what it keeps unused
(a kept run's Parquet parts are encoded through it), after each chunk is folded and
saved. ``malloc_trim`` is glibc's alone: where the C library has none (musl, macOS,
Windows) that part is a no-op.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import cache


@cache
def _malloc_trim():
    """glibc's ``int malloc_trim(size_t pad)``, or None where the C library has none."""
    name = ctypes.util.find_library("c")
    if name is None:  # no C library to find (Windows' find_library("c") gives none)
        return None
    try:
        libc = ctypes.CDLL(name)
    except OSError:  # a C library by that name that does not load
        return None
    trim = getattr(libc, "malloc_trim", None)
    if trim is not None:
        trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def release() -> bool:
    """Give the free memory malloc's arenas and pyarrow's pool keep back to the operating
    system (module text); True if ``malloc_trim`` returned any, False if none or where
    there is no ``malloc_trim``. pyarrow's pool is released only where pyarrow is
    imported already (a run that writes no Parquet never imports it)."""
    pyarrow = sys.modules.get("pyarrow")
    if pyarrow is not None:
        pyarrow.default_memory_pool().release_unused()
    trim = _malloc_trim()
    return bool(trim(0)) if trim is not None else False
