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


def test_write_atomic_names_the_path_when_the_disk_is_full(tmp_path, monkeypatch):
    import errno

    from mcengine import io

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(io.os, "fsync", full)
    path = tmp_path / "summary.json"
    try:
        write_atomic(path, "x")
    except OSError as exc:
        assert exc.errno == errno.ENOSPC and exc.filename == str(path) and str(path) in exc.strerror
    else:
        raise AssertionError("no error on a full disk")
    assert list(tmp_path.iterdir()) == []  # no temporary file left


def test_prepare_folder_refuses_what_cannot_hold_results(tmp_path):
    import pytest

    from mcengine.errors import InputError
    from mcengine.io import prepare_folder

    (tmp_path / "file").write_text("x")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    for bad in ("file", "file/sub", "dangling"):
        with pytest.raises(InputError, match="--out"):
            prepare_folder(tmp_path / bad)
    assert prepare_folder(tmp_path / "new" / "deep").is_dir()
    if os.geteuid() != 0:  # root writes into read-only folders
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        with pytest.raises(InputError, match="Permission denied"):
            prepare_folder(ro)
