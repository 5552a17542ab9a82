"""Stopping a long computation cleanly on SIGINT or SIGTERM.

The command line installs :func:`on_signal` for both signals. Outside the loops that
run blocks of work it raises :class:`~mcengine.errors.Interrupted` at once (plain
Python code is running). Inside them (:func:`deferred`), where a numba kernel may be
running and an exception raised from a signal handler would surface as a SystemError,
the first signal only records a request; the loop calls :func:`check` between blocks,
after saving what it finished, and stops there, and leaving the region checks again, so
a request that lands in a region's last block (a sweep point, a study step of one
chunk) stops the command before its next unit of work rather than being dropped. A
second signal stops at once. Library callers that install no handler keep Python's
default behaviour.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

from .errors import Interrupted

_pending = 0
_depth = 0


def on_signal(signum: int, frame=None) -> None:
    """Signal handler: a request inside :func:`deferred`, else (or the second time) stop now."""
    global _pending
    if _depth and not _pending:
        _pending = signum
        return
    raise Interrupted(signum)


def pending() -> int:
    """The signal of a recorded request (0 if none)."""
    return _pending


def clear() -> None:
    global _pending
    _pending = 0


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A region whose loop calls :func:`check` between blocks: signals wait for it. A
    request still pending when the outermost region ends stops the caller there
    (Interrupted)."""
    global _depth
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
    if not _depth:
        check()


def check() -> None:
    """Raise :class:`~mcengine.errors.Interrupted` if a stop was requested."""
    if _pending:
        raise Interrupted(_pending)
