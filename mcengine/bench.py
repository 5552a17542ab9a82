"""`mcengine bench`: how fast mcengine itself runs on this machine.

Measured per shipped scenario (and the case study for the chain), with a warm-up call
first so that numba's compile or cache load is reported apart (``warmup_and_compile_s``):

* ``fab``: wafers/s of the yield stage alone (:func:`mcengine.standalone.fab.yield_summary`);
* ``reliability``: cluster lifetimes/s of the reliability stage;
* ``chain``: trials/s of the whole chain (inputs → fab → reliability → roofline → econ,
  chunked runner with streaming summaries) at 1 thread and at every thread, the
  speed-up, the wall seconds of the stages alone on the same trials at every thread
  (``stage_seconds``) and so the orchestration overhead ``chain / sum(stages) − 1`` in
  wall seconds at every thread (``orchestration_overhead``: negative where the chain
  overlaps stages), the same in CPU seconds at 1 thread, the inputs' draw a stage
  (``stage_cpu_s``, ``orchestration_overhead_cpu_1_thread``: the chain overlaps
  nothing there, so it is the work done outside the stages; CPU seconds, as a busy
  machine stretches wall seconds unevenly); at every thread, the share of the cores the
  chain keeps busy (``core_use_all_threads``: its process CPU seconds over threads x
  wall).

Each timing is the best of :data:`REPEATS` runs (1 with ``quick``), the repeats going
round all the cases so that a slow spell of a shared machine spreads over every case
(the ``timeit`` convention: noise only ever slows a run). Side-by-side comparisons with
peers (NumPy, SimPy), instruction counts and the memory probe are in the repository's
``benchmarks/`` folder, which uses these functions for mcengine's side.
"""

from __future__ import annotations

import os
import platform
import time
from contextlib import contextmanager
from typing import Callable

import numba

from . import interrupt
from .errors import InputError, Problem
from .pipeline import ahead_weights, fab_key, reliability_key, reshard_capacity, roofline_key, share_lifetimes, shared_columns
from .runner import DEFAULT_CHUNK_TRIALS, RunSpec, execute
from .scenario import load_scenario
from .scenario.load import load_study
from .scenario.sampling import draw_inputs
from .stages import econ, fab as fab_stage, roofline
from .stages.reliability import lifetimes
from .standalone.fab import yield_summary

#: Timed runs per case and thread count (the best counts).
REPEATS = 5
#: The shipped designs every harness times.
SHIPPED = ("h100", "lite-h100", "lite-h100-2x", "lite-h100-2x-fastswap")
SEED = 1


def machine() -> dict:
    """What the figures were measured on."""
    return {
        "python": platform.python_version(),
        "numba": numba.__version__,
        "cpus": os.cpu_count(),
        "numba_threads": numba.config.NUMBA_NUM_THREADS,
        "machine": platform.machine(),
    }


def _best_rates(cases: dict[str, Callable[[], int]], repeats: int) -> dict[str, float]:
    """Items per second of each case (``case()`` returns the items it made), best of ``repeats``."""
    best = {label: float("inf") for label in cases}
    count = {}
    for _ in range(repeats):
        for label, case in cases.items():
            start = time.perf_counter()
            count[label] = case()
            best[label] = min(best[label], time.perf_counter() - start)
            interrupt.check()  # a SIGINT/SIGTERM stops between two timed cases
    return {label: count[label] / best[label] for label in cases}


def fab(quick: bool = False) -> dict:
    """Wafers/s of the yield stage alone for each shipped design."""
    wafers = 2048 if quick else 32_768
    scenarios = {name: load_scenario(name) for name in SHIPPED[:2]}
    t0 = time.perf_counter()
    for s in scenarios.values():
        yield_summary(s, 64, SEED)
    compile_s = time.perf_counter() - t0

    def case(scenario) -> int:
        yield_summary(scenario, wafers, SEED)
        return wafers

    cases = {name: (lambda s=s: case(s)) for name, s in scenarios.items()}
    rates = _best_rates(cases, 1 if quick else REPEATS)
    return {"warmup_and_compile_s": compile_s, "wafers": wafers,
            "cases": {name: {"wafers_per_s": rate} for name, rate in rates.items()}}


def reliability(quick: bool = False) -> dict:
    """Cluster lifetimes/s of the reliability stage for each shipped design."""
    n = 256 if quick else 2048
    scenarios = {name: load_scenario(name) for name in SHIPPED}
    inputs = {name: draw_inputs(s, SEED, 0, n) for name, s in scenarios.items()}
    t0 = time.perf_counter()
    for name, s in scenarios.items():
        lifetimes(s, draw_inputs(s, SEED, 0, 2), SEED, reshard_capacity(s))
    compile_s = time.perf_counter() - t0
    events: dict[str, int] = {}

    def case(name: str) -> int:
        events[name] = int(lifetimes(scenarios[name], inputs[name], SEED, reshard_capacity(scenarios[name]))["events"].sum())
        return n

    rates = _best_rates({name: (lambda name=name: case(name)) for name in scenarios}, 1 if quick else REPEATS)
    return {"warmup_and_compile_s": compile_s, "lifetimes": n,
            "cases": {name: {"lifetimes_per_s": rate, "events_per_s": rate * events[name] / n} for name, rate in rates.items()}}


def _chain_seconds(refs: list[str], trials: int, threads: int, overrides: tuple[str, ...] = ()) -> float:
    """Seconds of one run of ``refs`` (each with ``overrides``) over ``trials`` trials at ``threads`` threads."""
    return _chain_times(refs, trials, threads, overrides)[0]


def _chain_times(refs: list[str], trials: int, threads: int, overrides: tuple[str, ...] = ()) -> tuple[float, float]:
    """Wall seconds and this process's CPU seconds of one run of :func:`_chain_seconds`."""
    with _threads(threads):
        spec = RunSpec(tuple(load_scenario(ref, overrides) for ref in refs), SEED, trials)
        start, cpu = time.perf_counter(), time.process_time()
        execute(spec, chunk_trials=DEFAULT_CHUNK_TRIALS)
        return time.perf_counter() - start, time.process_time() - cpu


@contextmanager
def _threads(threads: int):
    """Within the block, numba runs ``threads`` threads on this thread."""
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        yield
    finally:
        numba.set_num_threads(before)


def _stage_times(refs: list[str], trials: int) -> dict[str, dict[str, float]]:
    """Wall (``"wall"``) and CPU (``"cpu"``) seconds of the stages alone on the chain's
    trials (the inputs' draw one of them), sharing columns and plan evaluations as the
    chain does, each timed on its own."""
    out: dict[str, dict[str, float]] = {"wall": {}, "cpu": {}}
    clocks = {"wall": time.perf_counter, "cpu": time.process_time}

    @contextmanager
    def timed(stage: str):
        t0 = {k: clock() for k, clock in clocks.items()}
        yield
        for k, clock in clocks.items():
            out[k][stage] = out[k].get(stage, 0.0) + clock() - t0[k]

    memo: dict = {}
    scenarios = tuple(load_scenario(ref) for ref in refs)
    with timed("inputs"):
        drawn = {s.name: draw_inputs(s, SEED, 0, trials) for s in scenarios}
    with timed("reliability"):
        share_lifetimes(scenarios, drawn, SEED, memo)
    for s in scenarios:
        inputs = drawn[s.name]
        with timed("fab"):
            cols = shared_columns(memo, fab_key(s), lambda: fab_stage.simulate_production(s, inputs, SEED))
            cols.update(fab_stage.package_costs(s, inputs, cols))
        cols.update(memo[reliability_key(s)])
        with timed("roofline"):
            cols.update(roofline.throughput(s, inputs, econ.plan_power_weight(s, inputs, cols), memo.setdefault(roofline_key(s, inputs), {}),
                                           ahead_weights(s)))
        with timed("econ"):
            econ.economics(s, inputs, cols)
    return out


def chain(quick: bool = False) -> dict:
    """Trials/s of the whole chain at 1 and at all threads, per design and the case study."""
    trials = 1024 if quick else 8192
    threads = numba.config.NUMBA_NUM_THREADS
    t0 = time.perf_counter()
    _chain_seconds(["h100", "lite-h100"], 1024, threads)
    compile_s = time.perf_counter() - t0
    cases = {name: [name] for name in SHIPPED}
    cases["case-study"] = list(load_study("case-study")["scenarios"])
    if quick:
        cases = {"case-study": cases["case-study"]}
    repeats = 1 if quick else REPEATS
    one = {label: float("inf") for label in cases}
    many, one_cpu, busy = dict(one), dict(one), {}
    stages: dict[str, dict[str, dict[str, float]]] = {label: {"wall": {}, "cpu": {}} for label in cases}
    for _ in range(repeats):
        for label, refs in cases.items():
            wall, cpu = _chain_times(refs, trials, 1)
            one[label], one_cpu[label] = min(one[label], wall), min(one_cpu[label], cpu)
            wall, cpu = _chain_times(refs, trials, threads)
            if wall < many[label]:
                many[label], busy[label] = wall, cpu / (threads * wall)
            with _threads(threads):
                walls = _stage_times(refs, trials)["wall"]
            with _threads(1):  # (as the one-thread chain, which overlaps nothing)
                cpus = _stage_times(refs, trials)["cpu"]
            for clock, times in (("wall", walls), ("cpu", cpus)):
                for stage, seconds in times.items():
                    stages[label][clock][stage] = min(stages[label][clock].get(stage, float("inf")), seconds)
            interrupt.check()
    rows = {}
    for label, refs in cases.items():
        rows[label] = {
            "scenarios": len(refs),
            "trials": trials,
            "repeats": repeats,
            "threads": threads,
            "trials_per_s_1_thread": trials / one[label],
            "trials_per_s_all_threads": trials / many[label],
            "speedup": one[label] / many[label],
            "cpu_s_1_thread": one_cpu[label],
            "stage_seconds": {stage: seconds for stage, seconds in stages[label]["wall"].items() if stage != "inputs"},
            "stage_cpu_s": stages[label]["cpu"],
            "orchestration_overhead": many[label] / sum(s for k, s in stages[label]["wall"].items() if k != "inputs") - 1.0,
            "orchestration_overhead_cpu_1_thread": one_cpu[label] / sum(stages[label]["cpu"].values()) - 1.0,
            "core_use_all_threads": busy[label],
            "projected_s_for_1e6_trials": many[label] * 1e6 / trials,
        }
    return {"warmup_and_compile_s": compile_s, "cases": rows}


#: What turns a scenario into a training job of its own cluster (docs/training.md).
TRAINING = ('workload.kind="training"',)


def training_chain(quick: bool = False) -> dict:
    """Trials/s of the case study's h100 and lite-h100 as training jobs of their own
    clusters (``workload.kind = "training"``, the training stage after econ) against the
    same scenarios serving, at all threads (best of the repeats)."""
    trials = 1024 if quick else 8192
    threads = numba.config.NUMBA_NUM_THREADS
    refs = ["h100", "lite-h100"]
    _chain_seconds(refs, 256, threads)
    _chain_seconds(refs, 256, threads, TRAINING)
    inference = training = float("inf")
    for _ in range(1 if quick else REPEATS):
        inference = min(inference, _chain_seconds(refs, trials, threads))
        training = min(training, _chain_seconds(refs, trials, threads, TRAINING))
        interrupt.check()
    return {"scenarios": refs, "trials": trials, "threads": threads, "inference_trials_per_s": trials / inference,
            "training_trials_per_s": trials / training, "training_over_inference": inference / training}


#: The harnesses of `mcengine bench --stage`, in report order.
HARNESSES: dict[str, Callable[[bool], dict]] = {"fab": fab, "reliability": reliability, "chain": chain}


def run_all(quick: bool = False, stages: tuple[str, ...] = (), harnesses: dict[str, Callable[[bool], dict]] = HARNESSES) -> dict:
    """Every harness of ``harnesses`` (or those named), with the machine they ran on."""
    unknown = [s for s in stages if s not in harnesses]
    if unknown:
        raise InputError([Problem("--stage", s, "allowed: " + ", ".join(harnesses)) for s in unknown])
    out = {"machine": machine(), "quick": quick}
    with interrupt.deferred():  # kernels run here: a signal stops between cases (mcengine.interrupt)
        for name in stages or tuple(harnesses):
            out[name] = harnesses[name](quick)
    return out
