"""The per-trial plan tables' CPU (docs/performance.md#plan-searches): the case study's
candidate tables (:func:`mcengine.stages.roofline.planner.evaluate_candidates`, one per
distinct plan key, as the chain shares them: :func:`mcengine.pipeline.roofline_key`)
over one chunk's block of trials, in CPU seconds per 10⁵ trials, with the share their
batch-limit searches take (:func:`mcengine.analytic.roofline.limits.largest_batch` and
:func:`mcengine.analytic.serving.largest_batch_within_ttft`, timed by wrapping them for
the measurement), the searches they make per trial (one per trial a batch-limit search
call settles, compiled or NumPy, all tables) and their CPU per search, the step times
the NumPy searches evaluate per trial (one per probe; 0 where every search runs
compiled); the CPU of each scenario's choice from
its table and of the chosen plans' columns (``choice``: a table keeps the rows the choice
reads, and the chosen plans' evaluations are made again); and the NumPy cost per trial of one probe of each step-time formula the
searches evaluate (nanoseconds per element, every candidate layout of lite-h100 at a
per-trial batch), the unit of work a compiled search would replace. The tables are made
on this thread (NumPy): the figures are this process's CPU seconds, best of the repeats.

``python -m benchmarks plans --against REV`` measures a checkout of git revision REV too:
each round runs this harness in a fresh process on each tree in turn (a slow spell of
the shared machine falls on both), and reports the best of each and the after/before
ratios of the CPU seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from mcengine.analytic import serving as sv
from mcengine.analytic.roofline import limits as rl, steps as rt
from mcengine.pipeline import roofline_key
from mcengine.runner import DEFAULT_CHUNK_TRIALS
from mcengine.scenario import load_scenario
from mcengine.scenario.load import load_study
from mcengine.scenario.sampling import draw_inputs
from mcengine.stages.roofline.layout import candidate_layouts, lengths_of, rates_of
from mcengine.stages.roofline.columns import planned_columns
from mcengine.stages.roofline.planner import _common_across_trials, evaluate_candidates, plan_per_trial

SEED = 1
#: The batch each trial's probe is timed at (per-element costs barely depend on it).
PROBE_BATCH = 64
#: The functions timed as the batch-limit searches: (module, name) patched for the measurement.
SEARCHES = ((rl, "largest_batch"), (sv, "largest_batch_within_ttft"))
#: The compiled searches and the static searches' tables (timed too, their step times not counted; absent from older trees).
COMPILED_SEARCHES = ((sv, "compiled_batch_limits"), (rl, "search_table"), (rl, "compiled_largest_batch"))


@contextmanager
def _timed_searches(spent: list):
    """Within the block, every call of :data:`SEARCHES` and :data:`COMPILED_SEARCHES` adds
    its CPU seconds to ``spent[0]`` (none calls another) and the trials whose batch limits
    it returns to ``spent[2]`` (each array it returns, one element per trial and limit:
    a compiled search's table returns none); a call of :data:`SEARCHES` also adds the
    trials its step-time function (its first argument) is evaluated at to ``spent[1]``
    (the step times a compiled search evaluates are not counted)."""
    saved = [(mod, name, getattr(mod, name)) for mod, name in SEARCHES]
    compiled = [(mod, name, getattr(mod, name)) for mod, name in COMPILED_SEARCHES if hasattr(mod, name)]

    def counted(step):
        def evaluated(batch, *args):
            spent[1] += np.size(batch)
            return step(batch, *args)
        return evaluated

    def searched(out) -> int:
        return sum(np.size(x) for x in (out if isinstance(out, tuple) else (out,)) if isinstance(x, np.ndarray))

    def timer(f):
        return lambda step, *args, **kwargs: cpu(f)(counted(step), *args, **kwargs)

    def cpu(f):
        def timed(*args, **kwargs):
            t0 = time.process_time()
            out = f(*args, **kwargs)
            spent[0] += time.process_time() - t0
            spent[2] += searched(out)
            return out
        return timed

    for mod, name, f in saved:
        setattr(mod, name, timer(f))
    for mod, name, f in compiled:
        setattr(mod, name, cpu(f))
    try:
        yield
    finally:
        for mod, name, f in saved + compiled:
            setattr(mod, name, f)


def _tables_cpu(scenarios: tuple, drawn: dict) -> tuple[float, float, int, int, float]:
    """CPU seconds of the distinct candidate tables of ``scenarios`` and of their searches,
    the step times the NumPy searches evaluate (one per trial and probe), the searches
    made (one per trial and batch limit), and the CPU seconds of
    each scenario's choice from its table and the chosen plans' columns
    (:func:`plan_per_trial`, :func:`planned_columns`: the chosen plans' evaluations made
    again, since a table keeps only the rows the choice reads)."""
    spent, tables = [0.0, 0, 0], {}
    t0 = time.process_time()
    with _timed_searches(spent):
        for s in scenarios:
            key = roofline_key(s, drawn[s.name])
            if key not in tables:
                tables[key] = evaluate_candidates(s, drawn[s.name])
    made = time.process_time() - t0
    t0 = time.process_time()
    for s in scenarios:
        planned_columns(plan_per_trial(s, drawn[s.name], None, tables[roofline_key(s, drawn[s.name])]), drawn[s.name])
    return made, spent[0], spent[1], spent[2], time.process_time() - t0


def _probe_ns(trials: int, repeats: int) -> dict[str, float]:
    """NumPy nanoseconds per trial of one call of each step-time formula the searches
    evaluate, over every candidate layout of lite-h100 (mean over layouts, best of
    ``repeats`` per layout)."""
    s = load_scenario("lite-h100")
    inputs = draw_inputs(s, SEED, 0, trials)
    m, lengths = s.workload.model, lengths_of(s, inputs)
    r = _common_across_trials(rates_of(s, inputs))
    batch = np.full(trials, PROBE_BATCH, np.int64)
    formulas = {
        "continuous_step": lambda lay: sv.continuous_step(m, lay, batch, lengths.prompt_tokens, lengths.output_tokens, r, lengths.context_tokens).total_s,
        "decode_step": lambda lay: rt.decode_step(m, lay, batch, lengths.context_tokens, r).total_s,
        "batch_time_to_first_token": lambda lay: rt.batch_time_to_first_token(m, lay, batch, lengths.prompt_tokens, r).total_s,
    }
    layouts = candidate_layouts(s)
    out = {}
    for name, f in formulas.items():
        best = []
        for lay in layouts:
            f(lay)
            seconds = float("inf")
            for _ in range(repeats):
                t0 = time.process_time()
                f(lay)
                seconds = min(seconds, time.process_time() - t0)
            best.append(seconds)
        out[name] = float(np.mean(best)) / trials * 1e9
    return out


def run(quick: bool = False) -> dict:
    """CPU seconds per 10⁵ trials of the case study's plan tables and of their batch-limit
    searches (best of the repeats, after a warm-up), and the per-element cost of a probe."""
    trials, repeats = (1024, 1) if quick else (DEFAULT_CHUNK_TRIALS, 3)
    refs = list(load_study("case-study")["scenarios"])
    scenarios = tuple(load_scenario(ref) for ref in refs)
    drawn = {s.name: draw_inputs(s, SEED, 0, trials) for s in scenarios}
    _tables_cpu(scenarios, drawn)  # warm-up (imports, caches)
    tables = searches = choice = float("inf")
    for _ in range(repeats):
        total, spent, evaluated, searched, chose = _tables_cpu(scenarios, drawn)
        if total < tables:
            tables, searches = total, spent
        choice = min(choice, chose)
    per = 1e5 / trials
    return {
        "scenarios": refs,
        "trials": trials,
        "repeats": repeats,
        "tables": len({roofline_key(s, drawn[s.name]) for s in scenarios}),
        "cpu_s_per_1e5_trials": {"tables": tables * per, "searches": searches * per, "rest": (tables - searches) * per, "choice": choice * per},
        "search_share": searches / tables,
        "searches_per_trial": searched / trials,
        "search_ns_per_search": searches / searched * 1e9 if searched else None,  # (None: no search ran)
        "numpy_step_times_per_trial": evaluated / trials,
        "probe_ns_per_trial": _probe_ns(trials, repeats),
    }


def _in_child(root: Path, quick: bool) -> dict:
    """:func:`run` in a fresh process importing the tree at ``root`` (one round, one thread)."""
    env = {**os.environ, "PYTHONPATH": str(root), "NUMBA_NUM_THREADS": "1"}
    code = f"import runpy, sys; sys.argv = ['plans', {'--quick' if quick else ''!r}]; runpy.run_path({str(Path(__file__).resolve())!r}, run_name='__main__')"
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"the plans harness failed in {root}: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def side_by_side(against: str, quick: bool = False) -> dict:
    """:func:`run` on this tree (``after``) and on a checkout of ``against`` (``before``),
    alternately, ``rounds`` fresh processes each; the best CPU seconds of each and their
    after/before ratios."""
    from .compile import ROOT, _checkout

    rounds = 1 if quick else 3
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"before": _checkout(against, tmp), "after": ROOT}
        best: dict = {}
        for _ in range(rounds):
            for side, root in trees.items():
                doc = _in_child(root, quick)
                if side not in best or doc["cpu_s_per_1e5_trials"]["tables"] < best[side]["cpu_s_per_1e5_trials"]["tables"]:
                    best[side] = doc
    ratio = {k: best["after"]["cpu_s_per_1e5_trials"][k] / best["before"]["cpu_s_per_1e5_trials"][k] for k in ("tables", "searches", "choice")}
    return {"against": against, "rounds": rounds, **best, "cpu_ratio": ratio}


if __name__ == "__main__":  # the child of side_by_side: this harness on the tree PYTHONPATH names
    print(json.dumps(run("--quick" in sys.argv)))
