"""Peak resident memory of the case study against its trial count: per N, a child
process runs the case study (``mcengine.api.run``, as ``mcengine run --trials N --seed 0``
makes it: the per-trial table kept in memory only for the verdict's drivers of a small
run, two numba threads) and reports its peak RSS, CPU seconds (user + system of the
child alone), wall seconds, the chunks it ran (``chunks``: "size x count", in order) and
its resident memory before the first chunk and after each (``rss_mb``: before, after the
first, the largest and after the last; ``/proc/self/status``), and after the last chunk
what glibc's malloc arenas hold, of it in use and free (``malloc_mb``, ``mallinfo2``:
free memory that malloc keeps for reuse is resident too, and a peak made of it is
fragmentation, not data). By default the chunks are the largest the adaptive rule picks
(:data:`~mcengine.runner.DEFAULT_CHUNK_TRIALS`, its cap; it picks smaller ones when the
machine is slow or busy), so the peak is the worst case whatever the load; ``adaptive``
lets the rule pick them (what a plain ``mcengine run`` does on this machine now);
``keep_trials`` runs as ``mcengine run --out DIR --keep-trials`` does (each chunk's
per-trial table written to a temporary folder, the verdict's drivers read back from it
after the chunks: ``rss_mb.last_chunk`` against the peak shows what that read-back adds).
The peak must stay flat from 10⁴ to 10⁶ trials (docs/performance.md#memory): a chunk's stages
hold at most :data:`mcengine.pipeline.SLICE_TRIALS` trials at once.

``python -m benchmarks memory --against REV`` measures a checkout of git revision REV
too, alternating between the two trees at each trial count (a slow spell of the shared
machine falls on both), and reports the after/before ratios of the peaks. Each tree runs
a small case study first, outside the measurements (``warm_up``: its wall and CPU seconds
and peak), which fills its numba cache: a tree whose cache is cold (a fresh checkout, a
kernel changed) would otherwise have its compile counted in its first measured run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcengine.runner import DEFAULT_CHUNK_TRIALS

from .compile import ROOT, _checkout, _usage

#: Trial counts of a full measurement and of ``--quick``.
TRIALS = (10_000, 100_000, 1_000_000)
QUICK_TRIALS = (2_048, 8_192)


def measured(args: list[str], root: Path = ROOT, env: dict | None = None) -> tuple[bytes, float, dict]:
    """(stdout, wall seconds, CPU seconds and peak MB) of ``python -m mcengine.cli ARGS`` in a
    fresh process importing the tree at ``root`` with two numba threads (and ``env``);
    RuntimeError with the end of its stderr when it fails."""
    return _spawn(["-m", "mcengine.cli", *args], root, env, f"`mcengine {' '.join(args)}`")


def _spawn(args: list[str], root: Path, env: dict | None, what: str) -> tuple[bytes, float, dict]:
    """:func:`measured` of ``python ARGS`` (``what`` names it in an error)."""
    env = {**os.environ, "PYTHONPATH": str(root), "NUMBA_NUM_THREADS": "2", **(env or {})}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, *args], cwd=root, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)  # the child's own CPU time and peak memory
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # (reaped by wait4: tell the Popen object)
        if proc.returncode:
            err.seek(0)
            raise RuntimeError(f"{what} failed in {root}: {err.read().decode()[-2000:]}")
        out.seek(0)
        return out.read(), wall, _usage(usage)


#: The child: the case study's run of argv[1] trials in chunks of argv[2] (0: adaptive),
#: with argv[3] (if given) as ``--out DIR --keep-trials``, printing (trials done, resident MB, malloc's [arenas, in use, free] MB) before the first
#: chunk and after each as JSON.
_CHILD = """
import ctypes, ctypes.util, json, sys
from mcengine import api, cli

trials, chunk = int(sys.argv[1]), int(sys.argv[2]) or None
out = sys.argv[3] if len(sys.argv) > 3 else None
after = []
# what `mcengine run` keeps in memory (a revision without cli._keep kept nothing)
keep = True if out else cli._keep(None, trials, (), False, None) if hasattr(cli, "_keep") else False

def resident_mb():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmRSS:"))

class MallInfo2(ctypes.Structure):  # glibc's struct mallinfo2 (malloc.h), sizes in bytes
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                                                       "fordblks", "keepcost")]

libc = ctypes.CDLL(ctypes.util.find_library("c"))
mallinfo2 = getattr(libc, "mallinfo2", None)  # (glibc 2.33 and later)
if mallinfo2 is not None:
    mallinfo2.restype = MallInfo2

def heap_mb():
    \"\"\"(held by malloc's arenas, in use in them, free in them) in MB, or None without mallinfo2.\"\"\"
    if mallinfo2 is None:
        return None
    info = mallinfo2()
    return [info.arena / 2**20, info.uordblks / 2**20, info.fordblks / 2**20]

api.run(trials=trials, seed=0, chunk_trials=chunk, keep_trials=keep, out=out, figures=False,
        progress=lambda done, total: after.append((done, resident_mb(), heap_mb())))
print(json.dumps(after))
"""


def _runs(sizes: list[int]) -> str:
    """Chunk sizes in order as "size x count" runs: "1024 x 2, 2048 x 5, 16384 x 60"."""
    runs: list[list[int]] = []
    for size in sizes:
        if runs and runs[-1][0] == size:
            runs[-1][1] += 1
        else:
            runs.append([size, 1])
    return ", ".join(f"{size} x {count}" for size, count in runs)


def peak(trials: int, root: Path = ROOT, chunk_trials: int | None = DEFAULT_CHUNK_TRIALS, keep_trials: bool = False) -> dict:
    """Peak MB, CPU and wall seconds, chunks and resident MB after each of the case study's
    run of ``trials`` trials (chunks of ``chunk_trials``; None: adaptive; with
    ``keep_trials`` its per-trial table written to a temporary folder) in a fresh process
    importing the tree at ``root`` (numba's cache as that tree keeps it) with two numba
    threads."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = [str(Path(tmp) / "run")] if keep_trials else []
        out, wall, usage = _spawn(["-c", _CHILD, str(trials), str(chunk_trials or 0), *folder], root, None,
                                  f"the case study's run of {trials} trials")
    heard = json.loads(out.decode().splitlines()[-1])  # (0, MB) before the first chunk, then after each
    if heard[0][0]:  # (a revision whose runner is first heard of after its first chunk)
        heard.insert(0, (0, None, None))
    done, rss, heap = ([row[i] for row in heard] for i in range(3))
    out = {"trials": trials, "wall_s": wall, **usage, "chunks": _runs([b - a for a, b in zip(done, done[1:])]),
           "rss_mb": {"before_chunks": rss[0], "first_chunk": rss[1], "largest": max(rss[1:]), "last_chunk": rss[-1]}}
    if heap[-1] is not None:  # malloc's arenas after the last chunk: what they hold, what is in use, what is free
        out["malloc_mb"] = dict(zip(("arenas", "in_use", "free"), heap[-1]))
    return out


def run(quick: bool = False, against: str | None = None, adaptive: bool = False, keep_trials: bool = False,
        trials: tuple[int, ...] | None = None) -> dict:
    """Peak memory per trial count (``trials``; default :data:`TRIALS`, or
    :data:`QUICK_TRIALS` with ``quick``) of this tree (``after``) and, with ``against``, of
    that revision (``before``) measured alternately, with the ratios of the peaks; chunks
    of :data:`DEFAULT_CHUNK_TRIALS`, or with ``adaptive`` those the adaptive rule picks;
    ``keep_trials``: as ``mcengine run --out DIR --keep-trials``."""
    counts = trials or (QUICK_TRIALS if quick else TRIALS)
    chunk = None if adaptive else DEFAULT_CHUNK_TRIALS
    head = {"chunk_trials": chunk or "adaptive", "keep_trials": keep_trials}
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"after": ROOT} if against is None else {"before": _checkout(against, tmp), "after": ROOT}
        out: dict = {**({"against": against} if against else {}), **head, "warm_up": {side: warmed(root) for side, root in trees.items()}}
        for n in counts:
            for side, root in trees.items():
                out.setdefault(side, []).append(peak(n, root, chunk, keep_trials))
    if against is not None:
        out["peak_ratio"] = [a["peak_mb"] / b["peak_mb"] for a, b in zip(out["after"], out["before"])]
    return out


def warmed(root: Path) -> dict:
    """Wall and CPU seconds and peak MB of a first run of :data:`QUICK_TRIALS` ``[0]`` trials
    of the tree at ``root``, which compiles whatever its numba cache lacks (all of it in a
    fresh checkout or after a kernel changed; little on a warm cache), so that the runs
    measured after it time the run alone, never the compile."""
    _, wall, usage = _spawn(["-c", _CHILD, str(QUICK_TRIALS[0]), "0"], root, None, "the warm-up run")
    return {"trials": QUICK_TRIALS[0], "wall_s": wall, **usage}
