"""Atomic file output and JSON that never holds NaN/inf literals.

Every file mcengine writes goes through :func:`write_atomic`: the bytes go to a temporary
file in the same folder, are flushed to disk, then renamed over the target, so a reader
(or an interrupted run) sees either the old file or the whole new one.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: str | os.PathLike, data: bytes | str) -> Path:
    """Write ``data`` to ``path`` atomically; an OSError (a full disk, a read-only folder)
    names the path it could not write."""
    path = Path(path)
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
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is None:
            raise OSError(exc.errno, f"cannot write {path}: {exc.strerror}", str(path)) from None
        raise
    return path


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
