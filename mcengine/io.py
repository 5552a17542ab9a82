"""Atomic file output and JSON that never holds NaN/inf literals.

Every file mcengine writes goes through :func:`write_atomic`: the bytes go to a temporary
file in the same folder, are flushed to disk, then renamed over the target, so a reader
(or an interrupted run) sees either the old file or the whole new one. In a claimed
output folder the file's name is first listed in the folder's manifest (:func:`guard`),
so a stop at any instant (a kill, a full disk) leaves only files the manifest lists.

:func:`write_atomic` never replaces what is not a plain file of mcengine's: a link or a
folder at the target, a file of this process's input (:func:`note_input`: every scenario,
study and model file read), a name an output folder's claim protects (:func:`guard`: the
files mcengine did not write there), or a file in a sub-folder of a claimed folder that is
a link (it would be written wherever the link points). Each is an InputError naming
``--out``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import stat
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: (device, inode, modification time) of every file this process read as input (scenarios,
#: studies, model cards): the time keeps a later file that reuses a deleted input's inode apart.
_inputs: set[tuple[int, int, int]] = set()
#: Per claimed output folder (its absolute path): the names mcengine must not write there.
_guarded: dict[str, frozenset[str]] = {}
#: Per claimed output folder: what records a name in its manifest before it is written.
_listers: dict[str, Callable[[str], None]] = {}
#: Fault injection for the tests of stops at any instant (tests/robustness/test_stops.py):
#: ``K:TERM``, ``K:KILL`` or ``K:ENOSPC`` stops this process by SIGTERM or SIGKILL, or
#: fails with a full disk, at its K-th file write (1-based; or at its write of the file
#: named K), once the bytes are in the temporary file and before it replaces the target.
FAULT_ENV = "MCENGINE_FAULT_AT_WRITE"
#: File writes of this process so far (the count :data:`FAULT_ENV` names one of).
_writes = 0


def note_input(path: str | os.PathLike) -> None:
    """Record ``path`` as an input of this process: no output ever replaces or deletes it."""
    with contextlib.suppress(OSError):
        st = os.stat(path)
        _inputs.add((st.st_dev, st.st_ino, st.st_mtime_ns))


def is_input(st: os.stat_result) -> bool:
    """Whether the file of ``st`` (an ``os.lstat`` result) was read as an input."""
    return (st.st_dev, st.st_ino, st.st_mtime_ns) in _inputs


def guard(folder: str | os.PathLike, names, lister: Callable[[str], None] | None = None) -> None:
    """Claim ``folder`` for output: ``names`` there (files mcengine did not write) are never
    written, and its sub-folders must be real folders, not links; ``lister(name)`` is
    called before each file is written there (its manifest lists it first)."""
    _guarded[os.path.abspath(folder)] = frozenset(names)
    if lister is not None:
        _listers[os.path.abspath(folder)] = lister


def lstat_or_none(path: str | os.PathLike) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def kind_of(st: os.stat_result) -> str:
    """What an entry mcengine will not write through is, in words (a non-regular entry, or
    a regular file that shares its inode with another name)."""
    if stat.S_ISLNK(st.st_mode):
        return "a link"
    if stat.S_ISDIR(st.st_mode):
        return "a folder"
    if stat.S_ISREG(st.st_mode):
        return f"a hard link ({st.st_nlink} names share the file)"
    return "not a regular file"


def refused_target(path: Path) -> str | None:
    """Why mcengine must not write ``path`` (None: it may)."""
    parent = os.path.abspath(path.parent)
    if path.name in _guarded.get(parent, ()):
        return f"{path.name} is not mcengine's (no manifest lists it); mcengine never replaces it"
    if os.path.dirname(parent) in _guarded:
        up = lstat_or_none(parent)
        if up is not None and not stat.S_ISDIR(up.st_mode):
            return f"{path.parent.name} is {kind_of(up)} where mcengine writes a folder; mcengine never follows it"
    st = lstat_or_none(path)
    if st is None:
        return None
    if is_input(st):
        return f"{path.name} is an input of this command; mcengine never replaces it"
    if not stat.S_ISREG(st.st_mode):
        return f"{path.name} is {kind_of(st)} where mcengine writes a file; mcengine never follows or replaces it"
    return None


def _claimed(path: Path) -> Path:
    """``path``, once mcengine may write it (else InputError naming ``--out``) and its
    folder's manifest lists it."""
    from .errors import InputError, Problem

    why = refused_target(path)
    if why is not None:
        raise InputError(Problem("--out", str(path.parent), f"{why}: remove it or choose another folder"))
    lister = _listers.get(os.path.abspath(path.parent))
    if lister is not None:
        lister(path.name)
    return path


def write_atomic(path: str | os.PathLike, data: bytes | str) -> Path:
    """Write ``data`` to ``path`` atomically; an OSError (a full disk, a read-only folder)
    names the path it could not write; a target mcengine must not replace
    (:func:`refused_target`) is an InputError naming ``--out``."""
    path = _claimed(Path(path))
    payload = data.encode("utf-8") if isinstance(data, str) else data
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
        _fault_point(path.name)
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is None:
            raise OSError(exc.errno, f"cannot write {path}: {exc.strerror}", str(path)) from None
        raise
    return path



def append_durable(path: str | os.PathLike, data: bytes) -> Path:
    """Append ``data`` to the file at ``path`` (made if missing) and fsync it before
    returning: a record a later read finds whole, or (a stop mid-append) a torn tail the
    reader must detect; the same refusals, manifest listing and injected faults as
    :func:`write_atomic` (a fault lands with half the bytes appended)."""
    path = _claimed(Path(path))
    try:
        with open(path, "ab") as fh:
            fh.write(data[: len(data) // 2])
            fh.flush()
            _fault_point(path.name)
            fh.write(data[len(data) // 2 :])
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        if exc.filename is None:
            raise OSError(exc.errno, f"cannot write {path}: {exc.strerror}", str(path)) from None
        raise
    return path


def write_block(path: str | os.PathLike, begin: str, end: str, body: str) -> Path:
    """Replace the text between the markers ``begin`` and ``end`` of the file at ``path``
    with ``body`` (on lines of its own), atomically (:func:`write_atomic`): a generated
    block of a hand-written page."""
    path = Path(path)
    text = path.read_text()
    start, stop = text.index(begin) + len(begin), text.index(end)
    return write_atomic(path, text[:start] + "\n" + body + "\n" + text[stop:])


def _fault_point(name: str) -> None:
    """The injected fault of :data:`FAULT_ENV` at this write (of file ``name``), if it is
    the one named."""
    global _writes
    _writes += 1
    fault = os.environ.get(FAULT_ENV)
    if not fault:
        return
    at, _, kind = fault.rpartition(":")
    if at != (str(_writes) if at.isdigit() else name):
        return
    if kind == "ENOSPC":
        import errno

        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    import signal

    os.kill(os.getpid(), signal.SIGKILL if kind == "KILL" else signal.SIGTERM)


def prepare_folder(folder: str | os.PathLike) -> Path:
    """Make sure results can be written to ``folder`` before anything is computed: create
    it (and its parents), then write and remove a probe file. InputError names ``--out``,
    the folder and why it cannot be used (a file in the way, a dangling link, no
    permission, a read-only or full disk)."""
    from .errors import InputError, Problem

    folder = Path(folder)
    try:
        if folder.is_symlink() and not folder.exists():
            raise OSError(f"{folder} is a link to {os.readlink(folder)}, which does not exist")
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".mcengine-probe.", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise InputError(Problem("--out", str(folder), f"cannot be used as an output folder: {reason}")) from None
    return folder


def plain(value: Any) -> Any:
    """JSON-safe copy: numpy scalars/arrays to Python, non-finite floats to the strings
    ``"inf"``, ``"-inf"``, ``"nan"`` (the convention docs/interface.md#json-summaries states)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return [plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def dumps(doc: Any) -> str:
    return json.dumps(plain(doc), indent=2, allow_nan=False)


def write_json(path: str | os.PathLike, doc: Any) -> Path:
    return write_atomic(path, dumps(doc) + "\n")
