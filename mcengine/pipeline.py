"""One block of trials through the chained stages: inputs → fab → reliability → roofline → load → econ
(→ training, for ``workload.kind = "training"``; the load stage, and the econ stage again on the
fleet sized for the demand, only with a demand, ``workload.load.demand``, docs/load.md).

The stages import no other stage (docs/model.md#stage-handoffs): what one needs from another
is computed here and handed in as arrays or plain values: the roofline's reshard table
to the reliability stage (:func:`reshard_capacity`), the econ stage's planning power
weight to the roofline (:func:`planning_weight`, :func:`ahead_weights`, with the fab
stage's expected package costs), and each stage's columns to the next.

Trial *i* of seed *s* draws every random number from streams keyed by (s, stage, i), so
the same trial of two scenarios shares its inputs wherever the scenarios share a key
(common random numbers), and a block gives the same numbers however the trials are
chunked.
"""

from __future__ import annotations

import hashlib
import queue
import threading
from functools import lru_cache

import numba
import numpy as np

from .columns import FLEET_SEARCH_PREFIX, INPUT_PREFIX, LOAD_PAIRED, MIX_STEPS_PREFIX, may_be_infinite
from .errors import InputError, NumericalError
from .scenario import Scenario
from .scenario.sampling import TrialInputs, draw_inputs, run_sampler


def _check_finite(stage: str, scenario: Scenario, columns: dict[str, np.ndarray], inputs: TrialInputs, no_tokens: np.ndarray | bool = False) -> None:
    """Fail loudly on a non-finite output, naming the stage, the trial and its inputs
    (``+inf`` in the columns :func:`~mcengine.columns.may_be_infinite` names is allowed where ``no_tokens``)."""
    for name, values in columns.items():
        values = np.asarray(values, dtype=float)
        bad = ~np.isfinite(values)
        if may_be_infinite(name):
            bad &= ~(np.isposinf(values) & no_tokens)
        if bad.any():
            i = int(np.argmax(bad))
            drawn = {k: float(v[i]) for k, v in inputs.values.items() if k in scenario.uncertain_inputs()}
            raise NumericalError(
                f"{stage} stage of scenario {scenario.name!r}: {name} = {values[i]} at trial {inputs.trial_start + i}; drawn inputs: {drawn}"
            )


def reliability_key(scenario: Scenario) -> tuple:
    """What the reliability stage reads: two scenarios equal here, with drawn inputs, have
    bit-identical lifetimes (their inputs share keys, so they share their draws)."""
    return ("reliability", scenario.cluster, scenario.reliability, scenario.run.horizon_years)


def fab_key(scenario: Scenario) -> tuple:
    """What the fab stage's production runs read (the ``[fab]`` table, the dies per package
    and the number of packages to build): equal keys, with drawn inputs, give bit-identical
    production runs (their prices, which also read ``[gpu]``, are computed per scenario)."""
    return ("fab", scenario.fab, scenario.gpu.dies_per_package, scenario.total_gpus)


def roofline_key(scenario: Scenario, inputs: TrialInputs) -> tuple:
    """What the roofline stage's plan evaluations read (the served model and plan rule,
    the GPU, the instance, and the trials' ``workload.*`` and ``gpu.*`` inputs, by digest:
    a per-design input is drawn apart): two scenarios equal here share the evaluations of
    every candidate plan (lite-h100-2x and its fast-swap variant differ in reliability
    alone); each chooses its plans with its own costs (:func:`mcengine.stages.econ.plan_power_weight`).
    With the switched fabric (``econ.fabric_model = "fat_tree"``) the scale-out hop reads
    the econ section (its tiers) and ``econ.switch_latency_us`` too, so they join the key."""
    fabric = scenario.econ.fabric_model == "fat_tree"
    prefixes = ("workload.", "gpu.", "econ.") if fabric else ("workload.", "gpu.")
    digest = hashlib.sha256()
    for key in sorted(k for k in inputs.values if k.startswith(prefixes)):
        digest.update(key.encode())
        digest.update(np.ascontiguousarray(inputs[key], dtype=float).tobytes())
    return ("roofline", scenario.workload, scenario.gpu, scenario.cluster, scenario.econ if fabric else None, digest.hexdigest())


def run_block(
    scenario: Scenario,
    seed: int,
    trial_start: int,
    n: int,
    inputs: TrialInputs | None = None,
    memo: dict | None = None,
) -> dict[str, np.ndarray]:
    """All per-trial columns of trials ``trial_start .. trial_start + n - 1`` of one scenario.

    ``inputs`` replaces the drawn uncertain inputs (sensitivity designs); the stages' own
    per-event randomness still comes from the trials' streams. ``memo`` lets the
    scenarios of one chunk share the fab and reliability columns of equal
    :func:`fab_key`, :func:`reliability_key` and :func:`roofline_key` (the dear stages:
    lite-h100, lite-h100-2x and its fast-swap variant build the same packages; the first
    two also share their lifetimes, the last two their plans' evaluations; :func:`run_chunk` fills it). Only the drawn inputs may be shared: pass
    ``memo`` only with them.
    """
    from .stages import econ, fab, load, reliability, roofline, training

    if inputs is None:
        inputs = draw_inputs(scenario, seed, trial_start, n)
    elif inputs.trial_start != trial_start or inputs.n != n:
        inputs = TrialInputs(trial_start, n, inputs.values)
    columns: dict[str, np.ndarray] = {"trial": np.arange(trial_start, trial_start + n, dtype=np.int64)}

    def add(stage: str, produced: dict[str, np.ndarray]) -> None:
        _check_finite(stage, scenario, produced, inputs, produced.get("slo_met", columns.get("slo_met", 1.0)) == 0.0)
        columns.update(produced)

    add("fab", _priced(fab, scenario, inputs, shared_columns(memo, fab_key(scenario), lambda: fab.simulate_production(scenario, inputs, seed))))
    add("reliability", shared_columns(memo, reliability_key(scenario), lambda: reliability.lifetimes(scenario, inputs, seed, reshard_capacity(scenario))))
    availability = econ.served_availability(scenario, columns)  # the planner's demand, the load stage and the fleet's cost read it
    for stage, produce in (
        ("roofline", lambda: roofline.throughput(scenario, inputs, econ.plan_power_weight(scenario, inputs, columns),
                                                 None if memo is None else memo.setdefault(roofline_key(scenario, inputs), {}),
                                                 ahead_weights(scenario), planning_demand(scenario, inputs, availability, columns["instance_availability"])) if training.serves(scenario) else roofline.not_served(scenario, inputs)),
        ("load", lambda: load.load_columns(scenario, inputs, columns, availability) if load.loaded(scenario) else {}),
        ("econ", lambda: econ.economics(scenario, inputs, columns)),
        ("fleet", lambda: fleet_cost(scenario, inputs, columns, availability) if load.loaded(scenario) else {}),
    ):
        add(stage, produce())
        if stage == "load":  # what the roofline stage handed the load stage alone: never written
            for key in [k for k in columns if k.startswith((FLEET_SEARCH_PREFIX, MIX_STEPS_PREFIX))]:
                del columns[key]
    if scenario.workload.kind == "training":
        produced = training_columns(scenario, inputs, columns)
        _check_finite("training", scenario, produced, inputs)
        columns.update(produced)
    columns["tokens_per_s_per_h100_equivalent"] = columns["tokens_per_s_per_gpu"] / scenario.gpu.h100_equivalents.value
    for key in scenario.uncertain_inputs():
        columns[INPUT_PREFIX + key] = inputs[key]
    return columns


def planning_demand(scenario: Scenario, inputs: TrialInputs, availability: np.ndarray, instance_availability: np.ndarray):
    """The load the roofline's per-trial planner chooses under (:class:`mcengine.stages.roofline.planner_load.Demand`,
    docs/load.md#planner): the load stage's demand and arrivals, the reliability stage's
    served ``availability`` (:func:`mcengine.stages.econ.served_availability`), the fixed
    instances (None for ``cluster.instances = "auto"``) and the failure headroom's law, from
    the reliability stage's ``instance_availability`` (its down probability and
    ``cluster.headroom_quantile``: a fleet's cost counts its headroom and the instances the
    fleet's second test adds, docs/load.md#peak); None at saturation."""
    from .stages import load
    from .stages.roofline.planner_load import Demand

    if not load.loaded(scenario):
        return None
    mean, peak_to_mean = load.demand_of(inputs)
    return Demand(mean, peak_to_mean, inputs["workload.slo_quantile"], inputs["workload.ttft_slo_ms"], load.arrival_cv(scenario, inputs), availability,
                  None if load.bought(scenario) else float(scenario.cluster.instances), inputs["workload.tpot_slo_ms"],
                  inputs["workload.load.static_gap_cv2"], inputs["workload.load.length_cv"], inputs["workload.load.static_bunch_cycles"],
                  inputs["workload.load.static_bunch_growth"], inputs["workload.load.refill_births"],
                  1.0 - instance_availability, inputs["cluster.headroom_quantile"])


def fleet_cost(scenario: Scenario, inputs: TrialInputs, columns: dict[str, np.ndarray], availability: np.ndarray) -> dict[str, np.ndarray]:
    """``load.cost_per_mtok_fleet_usd``: the cost per million tokens of the fleet sized for
    the demand, the econ stage run on that fleet (:func:`mcengine.stages.load.fleet_view`:
    its instances, goodput and utilisation at the served ``availability``; docs/load.md#fleet); with ``cluster.instances =
    "auto"`` the cluster costed is that fleet already, so it is ``cost_per_mtok_usd``."""
    from .stages import econ, load

    if load.bought(scenario):
        return {LOAD_PAIRED: columns["cost_per_mtok_usd"].copy()}
    view = load.fleet_view(inputs, columns, availability)
    return {LOAD_PAIRED: econ.economics(scenario, inputs, {**columns, **view})["cost_per_mtok_usd"]}


def training_columns(scenario: Scenario, inputs: TrialInputs, columns: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The training stage's columns (:func:`mcengine.stages.training.training`), handed the
    econ stage's total cost with every GPU busy (``busy_fraction = 1``: a training job
    computes throughout) and the reliability stage's columns (the job's interruptions
    from the life kernel's events)."""
    from .stages import econ, training

    at_full_load = econ.economics(scenario, inputs, {**columns, "busy_fraction": np.ones(inputs.n)})["total_cost_usd"]
    return training.training(scenario, inputs, at_full_load, columns)


def planning_weight(scenario: Scenario, inputs: TrialInputs) -> np.ndarray | None:
    """The roofline's power weight for a plan chosen ahead of the trials at the one trial
    ``inputs`` (docs/model.md#plan): by ``workload.plan_objective = "cost"`` the econ
    stage's planning power weight there (:func:`mcengine.stages.econ.planning_power_weight`)
    with the fab stage's expected package costs at those inputs
    (:func:`mcengine.stages.fab.expected_package_costs`; InputError where those fab inputs
    cannot build the cluster, as the production runs would refuse them); None, the most
    tokens/s, for ``"throughput"``."""
    from .stages import econ, fab

    if scenario.workload.plan_objective != "cost":
        return None
    fab.check_buildable(scenario, inputs)
    return econ.planning_power_weight(scenario, inputs, fab.expected_package_costs(scenario, inputs))


@lru_cache(maxsize=64)
def ahead_weights(scenario: Scenario):
    """The :class:`~mcengine.stages.roofline.AheadWeights` of ``scenario``: the
    :func:`planning_weight` at each point where its plan rule chooses ahead of the trials,
    for its trials' plan and, with ``cluster.on_failure = "reshard"``, its reshard table
    (:func:`mcengine.stages.roofline.ahead_points`); the others None."""
    from .stages import roofline

    def at(point: str) -> float | None:
        weight = planning_weight(scenario, roofline.ahead_inputs(scenario, point))
        return None if weight is None else float(weight[0])

    return roofline.AheadWeights(**{point: at(point) for point in roofline.ahead_points(scenario, scenario.cluster.on_failure == "reshard")})


def reshard_capacity(scenario: Scenario) -> np.ndarray | None:
    """The roofline stage's reshard table of ``scenario`` for its reliability stage
    (:func:`mcengine.stages.roofline.capacity_table`, with :func:`ahead_weights`), None
    unless ``cluster.on_failure = "reshard"``."""
    from .stages import roofline

    return roofline.capacity_table(scenario, ahead_weights(scenario)) if scenario.cluster.on_failure == "reshard" else None


def _priced(fab, scenario: Scenario, inputs: TrialInputs, runs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Production runs with this scenario's package prices (:func:`mcengine.stages.fab.package_costs`)."""
    return {**fab.package_costs(scenario, inputs, runs), **runs}


def shared_columns(memo: dict | None, key: tuple, produce) -> dict[str, np.ndarray]:
    """``produce()``, or a copy of the columns an equal ``key`` produced in this chunk."""
    if memo is None:
        return produce()
    if key not in memo:
        memo[key] = produce()
    return dict(memo[key])


def share_lifetimes(scenarios: tuple[Scenario, ...], inputs: dict[str, TrialInputs], seed: int, memo: dict) -> None:
    """Put the reliability columns of every distinct :func:`reliability_key` into ``memo``,
    from one reliability call: scenarios that differ only in their swap or restart law
    then share a kernel pass (:func:`mcengine.stages.reliability.lifetimes_of`).
    ``inputs`` holds each scenario's drawn inputs, by name."""
    from .stages import reliability

    distinct = {reliability_key(s): s for s in scenarios}
    cols = reliability.lifetimes_of(list(distinct.values()), [inputs[s.name] for s in distinct.values()], seed,
                                    [reshard_capacity(s) for s in distinct.values()])
    memo.update(zip(distinct, cols))


def share_production(scenarios: tuple[Scenario, ...], inputs: dict[str, TrialInputs], seed: int, memo: dict) -> None:
    """Put the production runs of every distinct :func:`fab_key` into ``memo``, as
    :func:`run_block` would make them (``inputs``: each scenario's drawn inputs, by name)."""
    from .stages import fab

    for s in scenarios:
        shared_columns(memo, fab_key(s), lambda s=s: fab.simulate_production(s, inputs[s.name], seed))


#: Trials one pass of the stages holds at once (:func:`run_chunk`): a chunk of more is
#: computed in slices of this many, so that memory is bounded whatever the chunk size (the
#: roofline stage's candidate tables hold about 36 KB per trial in the case study,
#: docs/performance.md#memory). Slicing never changes the numbers (every stage is per trial).
SLICE_TRIALS = 8192


def run_chunk(scenarios: tuple[Scenario, ...], seed: int, trial_start: int, n: int, handoff: dict | None = None,
              then: tuple[int, int] | None = None) -> dict[str, dict[str, np.ndarray]]:
    """One chunk of every scenario (the unit of work of the runner and of Dask workers),
    their inputs drawn by the run's sampler (:func:`~mcengine.scenario.sampling.run_sampler`),
    computed in slices of at most :data:`SLICE_TRIALS` trials (:func:`run_slice`) whose
    columns are written in trial order into the chunk's columns, made at the first slice's
    shapes and types (a column a later slice gives a wider type is widened, as
    ``numpy.concatenate`` would): one slice's columns are alive beside the chunk's, never
    every slice's and a joined copy of them.

    With more than one numba thread, each next slice's inputs are drawn and its
    reliability and fab kernels run (:class:`_Kernels`, GIL-free) while the stages after
    them finish the slice before (:func:`_finished`: the roofline, load and econ stages,
    NumPy on this thread), so that those serial stretches no longer leave a core idle; the
    next slice's plan evaluations start once the slice before is finished, so one slice's
    plan tables are alive at a time. Each slice reads its own inputs alone and its error is
    raised after the slices before it are finished: the same columns, and the same error,
    as slice after slice. ``then``: the first slice ``(first trial, trials)`` of the chunk
    the caller computes next, whose kernels so start beside this chunk's last slice (the
    chunk boundary leaves no core idle either), kept in the caller's ``handoff`` dict for
    the call that computes that chunk; a call whose first slice is another drops them
    (a slice's kernels read its bounds alone: the same columns, and their error is raised
    only by the call that uses them; dropped kernels not yet run are not run, :meth:`_Kernels.drop`)."""
    overlapped = numba.get_num_threads() > 1
    slices = slices_of(trial_start, n)
    kept = (handoff or {}).pop("kernels", None)
    if kept is not None and not (overlapped and [kept[0]] == slices[:1]):
        kept[1].drop()
        kept = None
    if len(slices) <= 1 and not (overlapped and (kept or then)):
        return run_slice(scenarios, seed, trial_start, n)
    chunk: dict[str, dict[str, np.ndarray]] = {}
    kernels = None
    if overlapped:
        kernels = kept[1] if kept is not None else _Kernels(scenarios, seed, *slices[0])
    for j, (start, size) in enumerate(slices):
        if kernels is None:
            part = run_slice(scenarios, seed, start, size)
        else:
            inputs = kernels.inputs()
            ahead = _Ahead(_plan_tables, scenarios, inputs)  # beside the slice's kernels
            memo = kernels.outcome()
            memo.update(ahead.outcome())
            following = slices[j + 1] if j + 1 < len(slices) else then
            kernels = _Kernels(scenarios, seed, *following) if following is not None else None
            if j + 1 == len(slices) and kernels is not None and handoff is not None:
                handoff["kernels"] = (then, kernels)
            part = _finished(scenarios, seed, start, size, inputs, memo)
            del inputs, memo
        for name, columns in part.items():
            _place(chunk.setdefault(name, {}), columns, start - trial_start, n)
        del part  # (freed before the next slice is computed)
    return chunk


def slices_of(trial_start: int, n: int) -> list[tuple[int, int]]:
    """The slices ``(first trial, trials)`` :func:`run_chunk` computes the chunk of ``n``
    trials from ``trial_start`` in: :data:`SLICE_TRIALS` each (read at the call), the last
    the rest."""
    return [(start, min(SLICE_TRIALS, trial_start + n - start)) for start in range(trial_start, trial_start + n, SLICE_TRIALS)]


def _place(into: dict[str, np.ndarray], columns: dict[str, np.ndarray], at: int, n: int) -> None:
    """Write one slice's ``columns`` at row ``at`` of the ``n``-row columns ``into``
    (made at the first slice: ``at`` == 0)."""
    for column, values in columns.items():
        if at == 0:
            into[column] = np.empty((n, *values.shape[1:]), values.dtype)
        elif into[column].dtype != values.dtype:  # a wider type than the slices before
            wider = np.empty(into[column].shape, np.result_type(into[column], values))
            wider[:at] = into[column][:at]
            into[column] = wider
        into[column][at:at + len(values)] = values


def run_slice(scenarios: tuple[Scenario, ...], seed: int, trial_start: int, n: int) -> dict[str, dict[str, np.ndarray]]:
    """:func:`run_chunk` of at most :data:`SLICE_TRIALS` trials, in one pass of the stages.

    With more than one numba thread, the roofline stage's plan evaluations
    (:func:`mcengine.stages.roofline.plan_tables`, NumPy on one Python thread) are made
    while the reliability kernel runs (GIL-free, on the numba threads), so that the core
    the kernel's last blocks leave idle, and the one the single-threaded roofline stage
    would leave idle, take them; the fab stage's production runs (GIL-free kernels too)
    follow the reliability kernel before the plan evaluations are waited for. The plan
    evaluations read the drawn inputs alone, so the columns are the same to the bit. A
    plan evaluation refused for its inputs (:class:`~mcengine.errors.InputError`,
    :class:`~mcengine.errors.NumericalError`) is left to :func:`run_block`, which raises
    it where a serial run would; any other error is raised. The planning thread is a
    daemon and is not waited for when the chunk stops early (an interrupt stops at once)."""
    inputs = _drawn(scenarios, seed, trial_start, n)
    ahead = _Ahead(_plan_tables, scenarios, inputs) if numba.get_num_threads() > 1 else None
    memo = _kernel_columns(scenarios, seed, inputs)
    if ahead is not None:
        memo.update(ahead.outcome())
    return _finished(scenarios, seed, trial_start, n, inputs, memo)


def _drawn(scenarios: tuple[Scenario, ...], seed: int, trial_start: int, n: int) -> dict[str, TrialInputs]:
    """Every scenario's inputs of the trials, drawn by the run's sampler, by name."""
    sampler, shared = run_sampler(scenarios), {}
    return {s.name: draw_inputs(s, seed, trial_start, n, sampler, shared) for s in scenarios}


def _kernel_columns(scenarios: tuple[Scenario, ...], seed: int, inputs: dict[str, TrialInputs]) -> dict:
    """The memo of :func:`run_block` holding the reliability and fab stages' columns
    (:func:`share_lifetimes`, :func:`share_production`)."""
    memo: dict = {}
    share_lifetimes(scenarios, inputs, seed, memo)
    share_production(scenarios, inputs, seed, memo)
    return memo


def _finished(scenarios: tuple[Scenario, ...], seed: int, trial_start: int, n: int, inputs: dict[str, TrialInputs], memo: dict) -> dict:
    """Every scenario's columns (:func:`run_block`) from the drawn ``inputs`` and the
    ``memo`` of the stages computed ahead."""
    return {s.name: run_block(s, seed, trial_start, n, inputs=inputs[s.name], memo=memo) for s in scenarios}


class _Ahead(threading.Thread):
    """``work(*args)`` (a dict) on a daemon thread, started at once."""

    def __init__(self, work, *args):
        super().__init__(daemon=True, name="mcengine-plan-ahead")
        self._work, self._args, self._result, self._error = work, args, {}, None
        self.start()

    def run(self) -> None:
        try:
            self._result = self._work(*self._args)
        except (InputError, NumericalError):
            pass  # refused for its inputs: run_block raises it in order
        except BaseException as error:  # noqa: BLE001 - handed to the caller by outcome()
            self._error = error

    def outcome(self) -> dict:
        """The work's dict, once done ({} when refused for its inputs); its other errors raised."""
        self.join()
        if self._error is not None:
            raise self._error
        return self._result


class _Kernels:
    """The inputs of one slice of trials drawn, then its reliability and fab kernels run
    (:func:`_drawn`, :func:`_kernel_columns`: :meth:`outcome` is their memo), at once, on
    :func:`_kernels_thread` with the numba thread count of the thread that asked (numba's
    count is per thread); every error is raised by the first call that waits for what it
    stopped. :meth:`drop` stops what is not yet started."""

    def __init__(self, scenarios: tuple[Scenario, ...], seed: int, trial_start: int, n: int):
        self._inputs, self._memo, self._error, self._dropped = None, None, None, False
        self._drawn, self._done, threads = threading.Event(), threading.Event(), numba.get_num_threads()
        _kernels_thread().ask(lambda: self._kernels(threads, scenarios, seed, trial_start, n))

    def drop(self) -> None:
        """No longer wanted (never waited for after this): the draw, and the kernels after
        it, are not started if not yet started, and the inputs drawn are let go; a part
        already running runs to its end (the thread's jobs after it wait for it)."""
        self._dropped = True

    def _kernels(self, threads: int, scenarios: tuple[Scenario, ...], seed: int, trial_start: int, n: int) -> None:
        numba.set_num_threads(threads)
        try:
            if not self._dropped:
                self._inputs = _drawn(scenarios, seed, trial_start, n)
            self._drawn.set()
            if not self._dropped:
                self._memo = _kernel_columns(scenarios, seed, self._inputs)
        except BaseException as error:  # noqa: BLE001 - handed to the caller by inputs() or outcome()
            self._error = error
        if self._dropped:
            self._inputs = self._memo = None
        self._drawn.set()
        self._done.set()

    def inputs(self) -> dict[str, TrialInputs]:
        """The slice's inputs by name, once drawn; the draw's error raised."""
        self._drawn.wait()
        if self._inputs is None:
            raise self._error
        return self._inputs

    def outcome(self) -> dict:
        """The memo of the slice's kernel stages, once done; their error raised."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._memo


class _Jobs(threading.Thread):
    """One daemon thread running the jobs asked of it in order, for the life of the process."""

    def __init__(self, name: str):
        super().__init__(daemon=True, name=name)
        self._asked: queue.Queue = queue.Queue()
        self.start()

    def ask(self, job) -> None:
        self._asked.put(job)

    def run(self) -> None:
        while True:
            self._asked.get()()


@lru_cache(maxsize=1)
def _kernels_thread() -> _Jobs:
    """The one thread every slice's kernels computed ahead run on: its malloc arena is reused
    from slice to slice (a new thread per slice may be given a new arena, and the slices'
    memory, spread over several, stays resident)."""
    return _Jobs("mcengine-slice-kernels")


def _plan_tables(scenarios: tuple[Scenario, ...], inputs: dict[str, TrialInputs]) -> dict[tuple, dict]:
    """The roofline stage's ``tables`` of every distinct :func:`roofline_key` among
    ``scenarios`` (``inputs`` by name), as :func:`run_block` keeps them in its ``memo``."""
    from .stages import roofline, training

    tables: dict[tuple, dict] = {}
    for s in (s for s in scenarios if training.serves(s)):
        key = roofline_key(s, inputs[s.name])
        if key not in tables:
            tables[key] = roofline.plan_tables(s, inputs[s.name])
    return tables
