"""The ``--out`` folder contract, the same for every command.

A command writes ``summary.json``, the resolved scenario(s) as ``<name>.toml``, a table
of the rows it reports (``table.csv``) and its figures, then the manifest
``mcengine.json``: the files it wrote there and the fingerprint of the run (what decides
its numbers: command, scenarios, seed, sample size, parameters; never the provenance).

A folder whose manifest holds another run is refused (InputError) unless ``force``, which
deletes only the files that manifest lists; the same run may write again (its files are
replaced, and files of its previous write that it no longer makes are removed), and a run
resumes in its own folder. A folder without a manifest is used as it is: only files
mcengine listed are ever deleted.
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import io
import json
import os
from pathlib import Path
from typing import Iterable, Iterator

from .errors import InputError, Problem
from .io import prepare_folder, write_json
from .provenance import scenario_sha256, sha256_of

MANIFEST = "mcengine.json"
#: The lock a chain run holds on its folder while it runs (fcntl.flock; the OS drops it with the process).
LOCK_FILE = ".mcengine.lock"
MANIFEST_FORMAT = 1
TABLE_FILE = "table.csv"
#: The chain runner's own files (runner.py): run settings, checkpoint, per-trial parts.
RUN_FILES = ("run.json", "checkpoint.json", "trials.parquet")


def run_fingerprint(command: str, scenarios: Iterable = (), seed: int | None = None, size=None, params: dict | None = None) -> str:
    """sha256 of what decides a command's numbers (its provenance excluded)."""
    return sha256_of({"command": command, "scenarios": [scenario_sha256(s) for s in scenarios], "seed": seed,
                      "size": size, "params": params or {}})


def _safe(name) -> bool:
    """A manifest entry mcengine may delete: a plain name inside the folder."""
    return isinstance(name, str) and name not in ("", ".", "..", MANIFEST) and "/" not in name and "\\" not in name and "\x00" not in name


def _holder(fd: int) -> str:
    return os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"


@contextlib.contextmanager
def locked(out: Path) -> Iterator[None]:
    """Hold ``out``'s lock for a run (an advisory lock the OS drops with the process, so a
    killed run never leaves the folder locked); a second run on the folder is refused."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _in_use(out, fd) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)


def _in_use(out: Path, fd: int) -> InputError:
    return InputError(Problem("--out", str(out), f"is in use by another mcengine run (process {_holder(fd)}); wait for it or choose another folder"))


def check_unlocked(out: Path) -> None:
    """InputError if a run holds ``out``'s lock now (before any of its files is touched)."""
    path = out / LOCK_FILE
    if not path.is_file():
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _in_use(out, fd) from None
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def read_manifest(folder: Path) -> dict | None:
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        doc = None
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), list):
        return {"fingerprint": None, "command": "?", "files": []}
    return doc


def remove_listed(folder: Path, names: Iterable[str]) -> None:
    """Delete the listed files (a listed folder: its files, then the folder if empty)."""
    for name in names:
        if not _safe(name):
            continue
        path = folder / name
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            for part in path.iterdir():
                if part.is_file() and not part.is_symlink():
                    part.unlink()
            with _ignore_nonempty():
                path.rmdir()


class _ignore_nonempty:
    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        return kind is not None and issubclass(kind, OSError)


class OutFolder:
    """An output folder claimed for one run (see the module docstring)."""

    def __init__(self, path: Path, command: str, fingerprint: str | None, previous: list[str]):
        self.path, self.command, self.fingerprint, self.previous = path, command, fingerprint, previous

    @classmethod
    def claim(cls, path, command: str, fingerprint: str | None, force: bool = False, resume: bool = False,
              owned: Iterable[str] = ()) -> "OutFolder":
        """Check ``path`` can take this run (before anything is computed) and record the
        claim. A resume keeps the folder's claim (the runner checks it is the same run); ``owned`` are files the command writes while it runs (listed from the start,
        so that an interrupted run's files are known)."""
        path = prepare_folder(path)
        check_unlocked(path)  # never touch the files (or the claim) of a folder another run is using
        manifest = read_manifest(path)
        previous: list[str] = []
        if manifest is not None:
            listed = [f for f in manifest.get("files", []) if _safe(f)]
            same = resume or manifest.get("fingerprint") == fingerprint  # a resume is checked against run.json
            if same:
                previous = listed
                fingerprint = manifest.get("fingerprint") if resume else fingerprint
            elif not force:
                raise InputError(Problem("--out", str(path), f"holds another run (`{manifest.get('command', '?')}`, {len(listed)} files mcengine wrote); "
                                         "add --force to replace it (deletes only those files), or choose another folder"))
            else:
                remove_listed(path, listed)
        folder = cls(path, command, fingerprint, previous)
        folder._write(sorted({*previous, *owned}), complete=False)
        return folder

    def _write(self, files: list[str], complete: bool) -> None:
        write_json(self.path / MANIFEST, {"format": MANIFEST_FORMAT, "command": self.command, "fingerprint": self.fingerprint,
                                          "complete": complete, "files": files})

    def finish(self, written: Iterable[str], fingerprint: str | None = None) -> list[str]:
        """Record the files this run wrote; remove files of its previous write that it no
        longer makes (and an empty ``trials.parquet/``). Returns the listed files."""
        if fingerprint is not None:
            self.fingerprint = fingerprint
        files = sorted({Path(f).name for f in written if self._present(Path(f).name)})
        remove_listed(self.path, [f for f in self.previous if f not in files])
        self._write(files, complete=True)
        return files

    def _present(self, name: str) -> bool:
        path = self.path / name
        return path.is_file() or (path.is_dir() and any(path.iterdir()))


def table_csv(rows: list[dict]) -> str:
    """Rows (dicts) as CSV, columns in order of first appearance."""
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(v) for k, v in row.items()})
    return buf.getvalue()


def _cell(value):
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value)
    return value


#: The summary statistics of a distribution (docs/interface.md).
STATS = ("mean", "std", "sem", "p01", "p05", "p50", "p95", "p99", "min", "max")


def is_distribution(value) -> bool:
    return isinstance(value, dict) and {"mean", "p50"} <= set(value)


def metric_rows(body: dict, skip: Iterable[str] = ()) -> list[dict]:
    """One row per metric of a document: a distribution's statistics, or a single value
    (nested objects give dotted metric names)."""
    rows: list[dict] = []
    skip = set(skip)

    def walk(node: dict, prefix: str) -> None:
        for key, value in node.items():
            if not prefix and key in skip:
                continue
            name = prefix + str(key)
            if is_distribution(value):
                rows.append({"metric": name, **{s: value.get(s) for s in STATS}})
            elif isinstance(value, dict):
                walk(value, name + ".")
            elif isinstance(value, (int, float, str, bool)) or value is None:
                rows.append({"metric": name, "value": value})

    walk(body, "")
    return rows


def files_in(folder: Path) -> set[str]:
    return set(os.listdir(folder)) if Path(folder).is_dir() else set()
