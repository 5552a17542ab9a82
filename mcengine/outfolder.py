"""The ``--out`` folder contract, the same for every command.

A command writes ``summary.json``, the resolved scenario(s) as ``<name>.toml``, a table
of the rows it reports (``table.csv``) and its figures, then the manifest
``mcengine.json``: the files it wrote there and the fingerprint of the run (what decides
its numbers: command, scenarios, seed, sample size, parameters; never the provenance).
Each file is listed in the manifest (marked ``"complete": false``) before it is written,
so a folder left by a stop at any instant (a signal, a kill, a full disk) holds only
files the manifest lists: the same command run again (or a run's ``--resume``) finishes it.

mcengine touches only what it wrote. A folder holding anything its manifest does not list
(no manifest at all: anything) is refused before anything is computed (InputError naming
``--out``) unless ``force``; even then mcengine writes beside those entries and never
replaces, follows or deletes them (a name the command would write among them is refused).
A folder whose manifest holds another run is refused unless ``force``, which deletes only
the regular files inside the folder that the manifest lists. The same run may write
again (its files are replaced, and files of its previous write that it no longer makes
are removed), and a run resumes in its own folder. Nothing is ever followed through a
link: a link (or a folder) where mcengine writes or deletes a file, the lock file and
the ``trials.parquet`` parts included, is refused; a file the command read as input
(its scenario, an ``extends`` parent, a study) is never replaced, listed or deleted.
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import io
import json
import os
import re
import stat
from pathlib import Path
from typing import Iterable, Iterator

from .errors import InputError, Problem
from .io import guard, is_input, kind_of, lstat_or_none, prepare_folder, write_json
from .provenance import scenario_sha256, sha256_of

MANIFEST = "mcengine.json"
#: The lock a command holds on its folder from its claim to its finish (fcntl.flock; the OS drops it with the process).
LOCK_FILE = ".mcengine.lock"
MANIFEST_FORMAT = 1
TABLE_FILE = "table.csv"
#: The chain runner's own files (runner.py): run settings, checkpoint, its log of the chunks since, per-trial parts.
RUN_FILES = ("run.json", "checkpoint.json", "checkpoint.log", "trials.parquet")
#: The one entry mcengine writes as a folder (of per-chunk Parquet parts).
TRIALS_DIR = "trials.parquet"
#: A per-chunk part of ``trials.parquet/`` (its first trial, 12 digits).
PART = re.compile(r"part-(\d{12})\.parquet")
#: Leftovers of mcengine's own atomic writes and folder probes (io.py) killed mid-write.
_SCRATCH = re.compile(r"\..+\.[A-Za-z0-9_]{8}\.tmp|\.mcengine-probe\.[A-Za-z0-9_]{8}")
#: Foreign entries named in a refusal (the rest are counted).
_SHOWN = 5


def run_fingerprint(command: str, scenarios: Iterable = (), seed: int | None = None, size=None, params: dict | None = None) -> str:
    """sha256 of what decides a command's numbers (its provenance excluded)."""
    return sha256_of({"command": command, "scenarios": [scenario_sha256(s) for s in scenarios], "seed": seed,
                      "size": size, "params": params or {}})


def _safe(name) -> bool:
    """A manifest entry mcengine may delete: a plain name inside the folder."""
    return isinstance(name, str) and name not in ("", ".", "..", MANIFEST) and "/" not in name and "\\" not in name and "\x00" not in name


def _holder(fd: int) -> str:
    """Who holds a lock, as its file says: ``process PID`` and, when the holder wrote it,
    the command (``mcengine paper, process 1234``)."""
    pid, _, command = os.pread(fd, 64, 0).decode(errors="replace").strip().partition(" ")
    return f"`mcengine {command}`, process {pid or '?'}" if command else f"process {pid or '?'}"


#: The lock descriptor of each folder a command of this process has claimed (its absolute path).
_held: dict[str, int] = {}


def _take(out: Path, command: str) -> int:
    """A descriptor holding ``out``'s lock for ``command`` (an advisory lock the OS drops
    with the process, so a killed command never leaves the folder locked; the file names
    the process and the command, for the message another command gets); a folder another
    command holds is refused (InputError naming ``--out``)."""
    fd = _open_lock(out, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        error = _in_use(out, fd)
        os.close(fd)
        raise error from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()} {command}".encode(), 0)
    return fd


def acquire(out: Path, command: str) -> None:
    """Hold ``out``'s lock for ``command``'s claim until :func:`release` (or the process
    ends); a claim of this process holds it already."""
    key = os.path.abspath(out)
    if key not in _held:
        _held[key] = _take(out, command)


def release(out: Path) -> None:
    """Drop the lock of this process's claim of ``out`` (if it holds one)."""
    fd = _held.pop(os.path.abspath(out), None)
    if fd is not None:
        os.close(fd)


@contextlib.contextmanager
def locked(out: Path, command: str = "run") -> Iterator[None]:
    """Hold ``out``'s lock while ``command`` uses it: the claim's lock if a command of
    this process claimed the folder, else a lock of its own for the block."""
    out.mkdir(parents=True, exist_ok=True)
    if os.path.abspath(out) in _held:
        yield
        return
    fd = _take(out, command)
    try:
        yield
    finally:
        os.close(fd)


def _in_use(out: Path, fd: int) -> InputError:
    return InputError(Problem("--out", str(out), f"is in use by another mcengine command ({_holder(fd)}); wait for it or choose another folder"))


def _open_lock(out: Path, flags: int) -> int:
    """The lock file's descriptor, never through a link (a link, a folder or a file with
    more than one hard link there is InputError naming ``--out``: writing the PID would
    truncate whatever it points to or shares its inode with)."""
    path = out / LOCK_FILE
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        st = lstat_or_none(path)
        if st is None:
            raise
        raise _unsafe(out, LOCK_FILE, st, "the lock") from exc
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        raise _unsafe(out, LOCK_FILE, st, "the lock")
    return fd


def _unsafe(out: Path, name: str, st: os.stat_result, what: str = "a file") -> InputError:
    return InputError(Problem("--out", str(out), f"{name} is {kind_of(st)} where mcengine writes {what}; mcengine never "
                              "follows or replaces it: remove it or choose another folder"))


def check_unlocked(out: Path) -> None:
    """InputError if another command holds ``out``'s lock now (before any of its files is
    touched; a claim of this process, left by a command that stopped, is no other's)."""
    if os.path.abspath(out) in _held or lstat_or_none(out / LOCK_FILE) is None:
        return
    fd = _open_lock(out, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _in_use(out, fd) from None
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def read_manifest(folder: Path) -> dict | None:
    """The folder's manifest (None without one; a link or a folder named like it is no
    manifest, and is never followed)."""
    path = Path(folder) / MANIFEST
    st = lstat_or_none(path)
    if st is None or not stat.S_ISREG(st.st_mode):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            doc = json.loads(fh.read().decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        doc = None
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), list):
        return {"fingerprint": None, "command": "?", "files": []}
    return doc


def _mine(path: Path) -> bool:
    """A file mcengine may delete: a regular file (never a link), never an input."""
    st = lstat_or_none(path)
    return st is not None and stat.S_ISREG(st.st_mode) and not is_input(st)


def remove_parts(folder: Path, first_trial: int = 0) -> None:
    """Delete the per-chunk parts of ``folder/trials.parquet`` from ``first_trial`` on (only
    regular files named like a part; a link there is never followed), then the folder if
    it is left empty."""
    parts = folder / TRIALS_DIR
    st = lstat_or_none(parts)
    if st is None or not stat.S_ISDIR(st.st_mode):
        return
    for name in os.listdir(parts):
        match = PART.fullmatch(name)
        if match and int(match.group(1)) >= first_trial and _mine(parts / name):
            (parts / name).unlink()
    with contextlib.suppress(OSError):  # never leave an empty trials.parquet/ behind
        parts.rmdir()


def remove_listed(folder: Path, names: Iterable[str]) -> None:
    """Delete the listed files that are regular files inside ``folder`` (``trials.parquet``:
    its parts, then the folder if empty); links, folders and inputs are left alone."""
    for name in names:
        if not _safe(name):
            continue
        if name == TRIALS_DIR:
            remove_parts(folder)
        elif _mine(folder / name):
            (folder / name).unlink()


def _foreign(folder: Path, listed: Iterable[str]) -> list[str]:
    """Entries of ``folder`` mcengine did not write: neither listed, nor its manifest or
    lock (as regular files), nor the scratch of its own killed writes."""
    ours = set(listed)
    out = []
    for name in sorted(os.listdir(folder)):
        st = lstat_or_none(folder / name)
        if st is None or _SCRATCH.fullmatch(name):
            continue
        if name in ours or name in (MANIFEST, LOCK_FILE) and stat.S_ISREG(st.st_mode):
            continue
        out.append(name)
    return out


def _shown(folder: Path, names: list[str]) -> str:
    """The first few ``names`` (a folder with a trailing slash, a link marked), then a count."""
    def one(name):
        st = lstat_or_none(folder / name)
        mode = st.st_mode if st is not None else 0
        return name + ("/" if stat.S_ISDIR(mode) else " (a link)" if stat.S_ISLNK(mode) else "")

    more = len(names) - _SHOWN
    return ", ".join(one(n) for n in names[:_SHOWN]) + (f" and {more} more" if more > 0 else "")


def _check_writable(folder: Path, names: Iterable[str], protected: set[str]) -> None:
    """Refuse (InputError naming ``--out``) before any work when a name the command writes
    is protected (not mcengine's, or an input of the command), a link, or a folder where a
    file goes; ``trials.parquet`` must be a real folder holding only parts (and the leftovers
    of a part's atomic write killed mid-way, which nothing reads)."""
    problems = []
    for name in sorted(set(names)):
        path = folder / name
        st = lstat_or_none(path)
        if name in protected:
            why = "an input of this command" if st is not None and is_input(st) else "not mcengine's (no manifest lists it)"
            problems.append(Problem("--out", str(folder), f"{name} is {why} and this command writes a file of that name; mcengine "
                                    "never replaces it: choose another folder"))
        elif st is None:
            continue
        elif name == TRIALS_DIR:
            if not stat.S_ISDIR(st.st_mode):
                problems.append(_unsafe(folder, name, st, "a folder of per-trial parts").problems[0])
                continue
            for part in sorted(os.listdir(path)):
                pst = lstat_or_none(path / part)
                if pst is None or _SCRATCH.fullmatch(part):  # a part's atomic write killed mid-way: never read
                    continue
                if not (PART.fullmatch(part) and stat.S_ISREG(pst.st_mode)):
                    problems.append(Problem("--out", str(folder), f"{name}/{part} is not a part mcengine wrote (a regular file "
                                            "part-<12 digits>.parquet); mcengine never reads, follows or deletes it: remove it or choose another folder"))
        elif not stat.S_ISREG(st.st_mode):
            problems.append(_unsafe(folder, name, st).problems[0])
    if problems:
        raise InputError(problems)


class OutFolder:
    """An output folder claimed for one run (see the module docstring)."""

    def __init__(self, path: Path, command: str, fingerprint: str | None, previous: list[str]):
        self.path, self.command, self.fingerprint = path, command, fingerprint
        #: Every name the manifest lists while the command runs: its previous write's, the
        #: files it owns from the start, and each file listed before it is written.
        self.listed: set[str] = set(previous)
        #: Whether :meth:`finish` recorded the command's files (the manifest complete).
        self.complete = False

    @classmethod
    def claim(cls, path, command: str, fingerprint: str | None, force: bool = False, resume: bool = False,
              owned: Iterable[str] = (), writes: Iterable[str] = ()) -> "OutFolder":
        """Check ``path`` can take this run (before anything is computed) and record the
        claim, holding the folder's lock until :meth:`finish` (a second command on it is
        refused). A resume keeps the folder's claim (the runner checks it is the same run);
        ``owned`` are files the command writes while it runs (listed from the start, so
        that an interrupted run's files are known); ``writes`` the other names it will
        write (checked now, so that a refusal comes before the work)."""
        path = prepare_folder(path)
        check_unlocked(path)  # never touch the files (or the claim) of a folder another run is using
        manifest = read_manifest(path)
        listed = [f for f in (manifest or {}).get("files", []) if _safe(f)]
        inputs = {f for f in os.listdir(path) if (st := lstat_or_none(path / f)) is not None and is_input(st)}
        listed = [f for f in listed if f not in inputs]  # never listed, replaced or deleted
        foreign = _foreign(path, listed)
        same = manifest is not None and (resume or manifest.get("fingerprint") == fingerprint)  # a resume is checked against run.json
        if manifest is not None and not same and not force:
            raise InputError(Problem("--out", str(path), f"holds another run (`{manifest.get('command', '?')}`, {len(listed)} files mcengine wrote); "
                                     "add --force to replace it (deletes only those files), or choose another folder"))
        if foreign and not force:
            raise InputError(Problem("--out", str(path), f"holds {len(foreign)} entr{'y' if len(foreign) == 1 else 'ies'} mcengine did not write "
                                     f"({_shown(path, foreign)}); choose an empty or new folder, or add --force (mcengine then writes "
                                     "beside them, never replacing or deleting them)"))
        protected = set(foreign) | inputs
        _check_writable(path, {MANIFEST, *owned, *writes}, protected)
        acquire(path, command)  # held until finish (or the process ends): no other command writes here meanwhile
        if read_manifest(path) != manifest:  # another command claimed it between the check and the lock
            release(path)
            raise InputError(Problem("--out", str(path), "was claimed by another mcengine command while this one checked it; "
                                     "wait for it or choose another folder"))
        previous: list[str] = []
        if same:
            previous = listed
            fingerprint = manifest.get("fingerprint") if resume else fingerprint
        elif manifest is not None:
            remove_listed(path, listed)
        folder = cls(path, command, fingerprint, previous)
        folder.listed.update(owned)
        guard(path, protected, folder._before_write)
        folder._write(sorted(folder.listed), complete=False)
        return folder

    def _before_write(self, name: str) -> None:
        """List ``name`` in the manifest (the run still incomplete) before it is written,
        so that a stop at any instant leaves no file the manifest does not list."""
        if name != MANIFEST and name not in self.listed:
            self.listed.add(name)
            self._write(sorted(self.listed), complete=False)

    def _write(self, files: list[str], complete: bool) -> None:
        write_json(self.path / MANIFEST, {"format": MANIFEST_FORMAT, "command": self.command, "fingerprint": self.fingerprint,
                                          "complete": complete, "files": files})

    def finish(self, written: Iterable[str], fingerprint: str | None = None) -> list[str]:
        """Record the files this run wrote; remove files of its previous write that it no
        longer makes (and an empty ``trials.parquet/``). Returns the listed files."""
        if fingerprint is not None:
            self.fingerprint = fingerprint
        files = sorted({Path(f).name for f in written if self._present(Path(f).name)})
        remove_listed(self.path, sorted(self.listed - set(files)))
        self.listed = set(files)
        self._write(files, complete=True)
        self.complete = True
        release(self.path)
        return files

    def _present(self, name: str) -> bool:
        path = self.path / name
        st = lstat_or_none(path)
        return st is not None and (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode) and any(path.iterdir()))


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
