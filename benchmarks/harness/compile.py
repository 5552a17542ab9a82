"""Cold start: the first command after a fresh install, and the same code side by side
with another revision.

A fresh process with an empty ``NUMBA_CACHE_DIR`` runs the first call of a command and
reports its wall seconds, CPU seconds (user + system, of the child alone: on a shared
machine the wall time also holds other people's work) and peak resident MB:

* ``run``: `mcengine run lite-h100` on a few trials (every kernel of the chain: inputs,
  fab, reliability, the roofline stage's choice of plan and disaggregated pairs; the rest of the roofline and
  econ stages is NumPy);
* ``reliability``: the reliability kernels alone (the toy scenario of the
  ``reliability`` harness);
* ``fab``: the input draws and the fab stage alone (`lite-h100`'s production runs and
  wafer map).

Each cold start also reports where its compile goes (``kernels``): the CPU seconds each
compiled function took on its own (numba's ``numba:compile`` events, a function's time
less that of the functions compiled inside it: its typing, its lowering, the LLVM passes
over its module with every callee linked in, and its machine code), the largest first,
each with its compiles (one per specialisation) and the kB of LLVM IR of its final modules;
and by stage (``stages``): the CPU seconds spent inside LLVM (numba's ``numba:llvm_lock``
events: every call into LLVM, its parsing, passes, linking and machine code) and in each of
numba's own compiler passes less the LLVM calls and passes inside it (``numba:run_pass``:
typing, inlining, lowering to LLVM IR, ...), the front end.

The rates (:func:`side_by_side`) are lifetimes per CPU second on one numba thread of
``h100``, ``lite-h100`` and the failure-heavy cluster
(``h100-heavy``, :data:`~.reliability.FAILURE_HEAVY`: h100 with its GPUs' rates ten times
the shipped ones).

:func:`side_by_side` runs the same probes and the life-kernel rates on this tree and on
another checkout (``python -m benchmarks compile --against REV``), alternating between
them so that a slow spell of the machine falls on both, and reports the ratios.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .reliability import FAILURE_HEAVY

ROOT = Path(__file__).resolve().parents[2]

_PROBES = {
    "run": """
from mcengine import jit
getattr(jit, "tune_compile_gc", lambda: None)()  # as the mcengine command does (a revision without it tunes at import)
from mcengine.api import run
run(["lite-h100"], trials=16, keep_trials=False, figures=False)
""",
    "reliability": """
from mcengine.validation.reliability import toy_scenario
from mcengine.scenario.sampling import draw_inputs
from mcengine.stages.reliability import lifetimes
s = toy_scenario(instances=2, afr=1.0)
lifetimes(s, draw_inputs(s, 0, 0, 2), 0)
""",
    "fab": """
from mcengine.scenario import load_scenario
from mcengine.scenario.sampling import draw_inputs
from mcengine.stages.fab import production_runs
s = load_scenario("lite-h100")
production_runs(s, draw_inputs(s, 0, 0, 16), 0)
""",
}

_RATES = """
import json, sys, time
from mcengine.scenario import load_scenario
from mcengine.scenario.sampling import draw_inputs
from mcengine.stages.reliability import lifetimes
HEAVY = %r
n_h100, min_cpu = int(sys.argv[1]), float(sys.argv[2])
out = {}
for name, n in (("h100", n_h100), ("lite-h100", n_h100 // 4), ("h100-heavy", n_h100 // 4)):
    s = load_scenario(*HEAVY) if name == "h100-heavy" else load_scenario(name)
    inputs = draw_inputs(s, 11, 0, n)
    lifetimes(s, draw_inputs(s, 11, 0, 2), 11)
    calls, cpu0, wall0 = 0, time.process_time(), time.perf_counter()
    while calls == 0 or time.process_time() - cpu0 < min_cpu:
        cols = lifetimes(s, inputs, 11)
        calls += 1
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    out[name] = {"lifetimes_per_cpu_s": calls * n / cpu, "lifetimes_per_s": calls * n / wall, "calls": calls,
                 "events_per_lifetime": float(cols["events"].sum()) / n}
print(json.dumps(out))
""" % (FAILURE_HEAVY,)

#: The rate probe of :func:`side_by_side`: h100 lifetimes per call (lite-h100 and the
#: failure-heavy cluster a quarter of it), and the CPU seconds each cluster's calls run
#: for at least, per round (``--quick``: 200 and 0.2). A call of 2,000 h100 lifetimes
#: (about 70 ms) read 0.80x where alternated runs of 20,000 read 1.02-1.09x: a short call
#: is dominated by its fixed costs and by the moment's machine.
RATE_LIFETIMES, RATE_MIN_CPU_S = 20000, 3.0


#: Run ahead of a probe: records each compile's own CPU seconds (numba's compile events
#: nest: a kernel's callees compile inside its typing) and, per function, its compiles
#: (one per specialisation: each distinct signature, literal arguments included) and the
#: size of their final LLVM IR (each module with its linked callees); and the stages: the
#: CPU seconds inside LLVM (the outermost ``numba:llvm_lock`` events: llvmlite takes the
#: lock around every call into LLVM, and again inside a callback that calls back in) and
#: in each numba compiler pass, less the passes and LLVM calls inside it; prints them as
#: JSON at exit.
_PROFILER = """
import atexit, json, time
from numba.core import event
_own, _open, _seen = {}, [], {}
_stages, _passes, _llvm = {"llvm": 0.0}, [], [0, 0.0]
def _close(opened):
    # the innermost open event's own seconds (less those of the events inside it), its
    # seconds added to the event around it
    t0, inner = opened.pop()
    took = time.process_time() - t0
    if opened:
        opened[-1][1] += took
    return took - inner
class _Pass(event.Listener):
    def on_start(self, ev):
        _passes.append([time.process_time(), 0.0])
    def on_end(self, ev):
        name = "numba " + ev.data["name"].split(" [")[0]
        _stages[name] = _stages.get(name, 0.0) + _close(_passes)
class _Llvm(event.Listener):
    def on_start(self, ev):
        _llvm[0] += 1
        if _llvm[0] == 1:
            _llvm[1] = time.process_time()
    def on_end(self, ev):
        _llvm[0] -= 1
        if _llvm[0] == 0:
            took = time.process_time() - _llvm[1]
            _stages["llvm"] += took
            if _passes:
                _passes[-1][1] += took
class _Profile(event.Listener):
    def on_start(self, ev):
        _open.append([time.process_time(), 0.0])
    def on_end(self, ev):
        own = _close(_open)
        d = ev.data.get("dispatcher")
        f = getattr(d, "py_func", None)
        name = f"{f.__module__}.{f.__qualname__}" if f is not None else "?"
        row = _own.setdefault(name, {"own_s": 0.0, "compiles": 0})
        row["own_s"] += own
        row["compiles"] += 1
        if d is not None:
            _seen[id(d)] = (name, d)
def _report():
    for name, d in _seen.values():
        try:
            ir = sum(len(cres.library.get_llvm_str()) for cres in getattr(d, "overloads", {}).values())
        except Exception:
            continue
        _own[name]["ir_kb"] = _own[name].get("ir_kb", 0) + ir / 1000
    print(json.dumps({"functions": _own, "stages": _stages}))
event.register("numba:compile", _Profile())
event.register("numba:run_pass", _Pass())
event.register("numba:llvm_lock", _Llvm())
atexit.register(_report)
"""

#: Functions listed per cold start in ``kernels`` (the rest summed in ``other``).
PROFILE_TOP = 15


def _kernels(own: dict) -> dict:
    """The :data:`PROFILE_TOP` functions of most own compile CPU seconds (each with its
    compiles and their LLVM IR in kB), then ``other`` (their seconds, compiles and
    functions)."""
    ranked = sorted(own.items(), key=lambda kv: -kv[1]["own_s"])
    top = {name.removeprefix("mcengine."): {"own_s": round(r["own_s"], 2), "compiles": r["compiles"],
                                            "ir_kb": round(r.get("ir_kb", 0.0))} for name, r in ranked[:PROFILE_TOP]}
    rest = ranked[PROFILE_TOP:]
    return {**top, "other": {"own_s": round(sum(r["own_s"] for _, r in rest), 2),
                             "compiles": sum(r["compiles"] for _, r in rest), "functions": len(rest)}}


#: numba passes listed per cold start in ``stages`` (the rest summed in ``numba other passes``).
STAGES_TOP = 8


def _stages(seconds: dict) -> dict:
    """The CPU seconds inside LLVM, in numba's front end (every compiler pass less the LLVM
    calls inside it), and in the :data:`STAGES_TOP` passes of most seconds, then the rest."""
    passes = sorted(((k, v) for k, v in seconds.items() if k != "llvm"), key=lambda kv: -kv[1])
    return {"llvm": round(seconds["llvm"], 2), "numba front end": round(sum(v for _, v in passes), 2),
            **{k: round(v, 2) for k, v in passes[:STAGES_TOP]},
            "numba other passes": round(sum(v for _, v in passes[STAGES_TOP:]), 2)}


def _usage(usage) -> dict:
    return {"cpu_s": usage.ru_utime + usage.ru_stime, "peak_mb": usage.ru_maxrss / 1024}


def cold_start(probe: str, root: Path = ROOT) -> dict:
    """Wall and CPU seconds and peak MB of ``probe`` in a fresh process, empty cache, and
    each function's own compile CPU seconds (``kernels``)."""
    code = _PROFILER + _PROBES[probe]
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as out:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": str(root)}
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", code], cwd=root, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)  # (wait4: the child's own CPU time and peak memory)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            err.seek(0)
            raise RuntimeError(f"cold start of {probe!r} failed in {root}: {err.read().decode()[-2000:]}")
        out.seek(0)
        profile = json.loads(out.read().decode().strip().splitlines()[-1])
    return {"wall_s": wall, **_usage(usage), "kernels": _kernels(profile["functions"]), "stages": _stages(profile["stages"])}


def _rates(root: Path, cache: str, lifetimes: int, min_cpu: float) -> dict:
    """The life kernel's rates in a fresh process on one numba thread (so that its CPU
    seconds are the kernel's work, whatever else the machine runs)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": str(root), "NUMBA_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", _RATES, str(lifetimes), str(min_cpu)], cwd=root, env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def _checkout(rev: str, into: str) -> Path:
    """The tree of ``rev`` (a git revision of this repository) exported into ``into``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)
    return Path(into)


def side_by_side(rev: str, quick: bool = False) -> dict:
    """This tree (``after``) against revision ``rev`` (``before``): cold starts, then the
    life kernel's lifetimes per CPU second (one numba thread, :data:`RATE_LIFETIMES` a call,
    calls for at least :data:`RATE_MIN_CPU_S` each) and events per lifetime on warm caches,
    best of alternated repeats, and the after/before ratios."""
    (lifetimes, min_cpu), repeats = ((200, 0.2), 1) if quick else ((RATE_LIFETIMES, RATE_MIN_CPU_S), 3)
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"before": _checkout(rev, tempfile.mkdtemp(dir=tmp)), "after": ROOT}
        caches = {side: tempfile.mkdtemp(dir=tmp) for side in trees}
        out: dict = {"against": rev, "lifetimes_h100": lifetimes, "min_cpu_s": min_cpu, "repeats": repeats,
                     "rate_probe": f"one numba thread; {lifetimes} h100 lifetimes a call ({lifetimes // 4} lite-h100, "
                                   f"{lifetimes // 4} h100-heavy), calls for at least {min_cpu} CPU s per cluster; "
                                   f"lifetimes per CPU second, best of {repeats} alternated rounds"}
        for probe in _PROBES:
            for side, root in trees.items():
                out.setdefault(side, {})[f"cold_{probe}"] = cold_start(probe, root)
        for side, root in trees.items():  # warm the caches (compile outside the timers)
            _rates(root, caches[side], 8, 0.0)
        best: dict = {side: {} for side in trees}
        for _ in range(repeats):
            for side, root in trees.items():
                for name, r in _rates(root, caches[side], lifetimes, min_cpu).items():
                    b = best[side].setdefault(name, r)
                    if r["lifetimes_per_cpu_s"] > b["lifetimes_per_cpu_s"]:
                        best[side][name] = r
        for side in trees:
            out[side]["rates"] = best[side]
    a, b = out["after"], out["before"]
    out["ratios"] = {
        **{f"{name} lifetimes/cpu_s": a["rates"][name]["lifetimes_per_cpu_s"] / b["rates"][name]["lifetimes_per_cpu_s"]
           for name in a["rates"]},
        **{f"cold {p} cpu_s": a[f"cold_{p}"]["cpu_s"] / b[f"cold_{p}"]["cpu_s"] for p in _PROBES},
        **{f"cold {p} peak_mb": a[f"cold_{p}"]["peak_mb"] / b[f"cold_{p}"]["peak_mb"] for p in _PROBES},
    }
    return out


def run(quick: bool = False) -> dict:
    """Cold starts of this tree (the first `mcengine run`, the reliability kernels, the fab stage)."""
    return {probe: cold_start(probe) for probe in (("reliability",) if quick else _PROBES)}
