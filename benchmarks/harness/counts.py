"""Work per lifetime of the life kernel: loop iterations and heap operations, counted.

The kernel reports ``events`` (failures, faults, installs, restarts and repair
completions by the horizon, as an event-by-event simulation would count them), not the
work it does for them. This harness counts that work on a copy of the package: it adds
two counters to the lifetime's state record of the copy (loop iterations of the event
loop, operations on the indexed heap of per-unit clocks) and writes them into two output
columns the measurement reads in place of their own (``OUT_PARTED``,
``OUT_MAX_FAILED_GPUS``; the copy's other numbers are unchanged). The shipped kernel
carries no counter. A revision (``python -m benchmarks counts --against REV``, since
8ebb93d) is counted the same way, from ``git archive``.

A clock-heap operation is an arm that pushes (a clock within the horizon) or a removal.
Repair completions (one per repair) go to a list, a heap only above a few dozen pending.
``failures_and_faults`` is the kernel's own count of the failures and faults it accepted
(its events by class, every class summed: superposed and per-unit clocks; a module's
failure is a module swap): loop iterations beyond it are the horizon, the candidates
rejected (a unit still in its swap) and the completions something waited for; the events
beyond it are completions, most settled without an iteration.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from mcengine.errors import InputError, Problem

from .reliability import FAILURE_HEAVY

ROOT = Path(__file__).resolve().parents[2]

#: Lifetimes counted per scenario (counts per lifetime vary by a few percent between lifetimes).
LIFETIMES = 64
SEED = 7

_CHILD = """
import json, sys
import numpy as np
from mcengine.scenario import load_scenario
from mcengine.scenario.sampling import draw_inputs
from mcengine.stages.reliability import _params, group_arguments
from mcengine.kernels import life
HEAVY = %r
out = {}
for name in sys.argv[2:]:
    s = load_scenario(*HEAVY) if name == "h100-heavy" else load_scenario(name)
    a = group_arguments([_params(s, draw_inputs(s, %d, 0, int(sys.argv[1])))])
    _, oi = life.simulate_lifetimes(np.uint64(%d), 0, **a)
    col = lambda k: float(oi[:, 0, k].mean())
    out[name] = {"events": col(life.OUT_EVENTS), "loop_iterations": col(life.OUT_PARTED),
                 "clock_heap_ops": col(life.OUT_MAX_FAILED_GPUS), "repairs": col(life.OUT_REPAIRS),
                 "failures": col(life.OUT_FAILURES), "module_swaps": col(life.OUT_MODULE_SWAPS),
                 "failures_and_faults": float(oi[:, 0, life.N_OUT_I:].sum(axis=1).mean())}
print(json.dumps(out))
""" % (FAILURE_HEAVY, SEED, SEED)


def _layout(kernels: Path) -> tuple[str, dict]:
    """The life kernel's layout in ``kernels``: the name prefix of its workspace helpers and
    handlers, and its files by role (the workspace; the files that arm or remove clocks; the
    loop; the lifetime's start and close): the package ``life/`` by interface, or the
    older single ``life.py`` beside ``_life_workspace.py`` (revisions before it)."""
    if (kernels / "life").is_dir():
        return "", {"ws": "life/workspace.py", "clocks": ("life/handlers.py", "life/units.py"), "loop": "life/loop.py",
                    "ends": "life/handlers.py"}
    return "_", {"ws": "_life_workspace.py", "clocks": ("life.py",), "loop": "life.py", "ends": "life.py"}


def _patch(path: Path, edits: list[tuple[str, str]], regex: bool = False) -> int:
    """Apply ``edits`` (old, new) to the file at ``path``; return how many places changed."""
    s, n = path.read_text(), 0
    for old, new in edits:
        s, k = re.subn(old, new, s) if regex else (s.replace(old, new), s.count(old))
        n += k
    path.write_text(s)
    return n


def instrument(package: Path) -> None:
    """Add the counters to the life kernel of the package copy at ``package``."""
    kernels = package / "kernels"
    p, files = _layout(kernels)
    edits = {
        "ws": [('"module_swaps"', '"module_swaps", "loops", "heap_ops"'),
               (f"@inline_kernel\ndef {p}push_repair(rq, s, when):", f"""@inline_kernel
def {p}arm_count(s, hkeys, hids, hpos, hn, ident, when, horizon):
    if when <= horizon:
        s.heap_ops += 1
    return {p}arm(hkeys, hids, hpos, hn, ident, when, horizon)


@inline_kernel
def {p}push_repair(rq, s, when):""")],
        "loop": [("        kind = {p}next_event(ws, s, c, lf)\n".format(p=p),
                  "        kind = {p}next_event(ws, s, c, lf)\n        s.loops += 1\n".format(p=p))],
        # the lifetime's start: its first loop over the positions, bare or behind the
        # stock-out guard (`if s.lists_moved:`) of the trees that have one
        "ends": [(r"(\n    st = ws\.st\n)(?=(?:    if s\.lists_moved:[^\n]*\n)?\s*for p in range\(c\.positions\):)",
                  r"\1    s.loops, s.heap_ops = 0, 0\n"),
                 (re.escape("        out_i[row, v, OUT_PARTED] = 0\n"), "        out_i[row, v, OUT_PARTED] = s.loops\n"
                  "        out_i[row, v, OUT_MAX_FAILED_GPUS] = s.heap_ops\n")],
    }
    done = {role: _patch(kernels / files[role], e, regex=role == "ends") for role, e in edits.items()}
    arms = 0
    for name in files["clocks"]:
        path = kernels / name
        arms += _patch(path, [(f"s.hn = {p}arm(", f"s.hn = {p}arm_count(s, "), (f"hn = {p}arm(ws.hkeys", f"hn = {p}arm_count(s, ws.hkeys")])
        arms += _patch(path, [(r"(\n(\s*))s\.hn = heap_remove\(", r"\1s.heap_ops += 1\1s.hn = heap_remove(")], regex=True)
        arms += _patch(path, [("    _config, _", "    _config, _arm_count, _")] if p else
                       [("from __future__ import annotations\n", "from __future__ import annotations\n"
                         "from mcengine.kernels.life.workspace import arm_count\n")])
    missing = [role for role, n in done.items() if n < len(edits[role])] + (["clocks"] if arms == 0 else [])
    if missing:
        raise InputError(Problem("counts", str(kernels), f"a life kernel with the places to count at ({', '.join(missing)} not found)"))


def _copy(rev: str | None, dest: Path) -> None:
    if rev is None:
        shutil.copytree(ROOT / "mcengine", dest / "mcengine", ignore=shutil.ignore_patterns("__pycache__"))
        (dest / "configs").symlink_to(ROOT / "configs")
        return
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "mcengine", "configs"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)


def count(rev: str | None = None, scenarios: tuple[str, ...] = ("h100", "lite-h100", "h100-heavy"),
          lifetimes: int = LIFETIMES) -> dict:
    """Per lifetime of each scenario (``h100-heavy``: the failure-heavy cluster,
    :data:`~.reliability.FAILURE_HEAVY`): events, loop iterations, clock-heap operations,
    repairs, failures, module swaps, and failures and faults by class of this tree (``rev`` None) or of git revision ``rev``."""
    with tempfile.TemporaryDirectory() as tmp:
        tree, cache = Path(tmp) / "tree", Path(tmp) / "cache"
        tree.mkdir()
        _copy(rev, tree)
        instrument(tree / "mcengine")
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree), "NUMBA_CACHE_DIR": str(cache), "NUMBA_NUM_THREADS": "1"}
        done = subprocess.run([sys.executable, "-c", _CHILD, str(lifetimes), *scenarios], cwd=tree, env=env,
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise InputError(Problem("--against", rev or "this tree", f"a tree whose instrumented kernel runs ({done.stderr.strip()[-300:]})"))
        return json.loads(done.stdout)


def run(against: str | None = None) -> dict:
    """Counts of this tree, and (``against``) of another revision beside it."""
    out = {"lifetimes": LIFETIMES, "after": count()}
    if against:
        out["before"] = count(against)
    return out
