"""Atomic writes: whole files only, usual permissions, no temp files left behind."""

from __future__ import annotations

import os
import stat

from mcengine.io import dumps, write_atomic


def test_write_atomic_replaces_whole_file_with_umask_permissions(tmp_path):
    path = tmp_path / "sub" / "summary.json"
    write_atomic(path, "old")
    write_atomic(path, b"new")
    assert path.read_bytes() == b"new"
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask
    assert [p.name for p in path.parent.iterdir()] == ["summary.json"]


def test_json_never_holds_nan_literals():
    import numpy as np

    text = dumps({"a": float("inf"), "b": np.float64(1.5), "c": np.arange(2)})
    assert text.replace(" ", "").replace("\n", "") == '{"a":"inf","b":1.5,"c":[0,1]}'
