"""``mcengine serve``: requests arriving at a demand, simulated one by one on the plan the
roofline serves at the median inputs (docs/serve.md).

:func:`serving_system` turns a scenario's plan in one serving mode into the step-time
tables of the request-level simulator (:func:`mcengine.kernels.serve.simulate`), built with
the roofline's own step functions at the median inputs, so the simulator and the chain
time the same machine; :func:`simulate_requests` validates a :class:`ServingSystem` and
runs it; :func:`serve_summary` is the command's body (latency quantiles, goodput, SLO
attainment, utilisation) and its per-request table.
"""

from __future__ import annotations

import dataclasses
import math
from statistics import NormalDist

import numpy as np
import pandas as pd

from ..analytic import mix as mx
from ..analytic import queueing as qu
from ..analytic import queue_continuous as qc
from ..analytic import queue_disaggregated as qd
from ..analytic import queue_spread as ql
from ..analytic import queue_static as qs
from ..analytic import serving as sv
from ..analytic.roofline import steps as rt
from ..errors import InputError, Problem
from ..kernels import serve as ks
from ..pipeline import ahead_weights
from ..scenario import Scenario
from ..scenario.sampling import quantile_inputs
from ..stages.roofline import at_trial, class_keys, class_scenario, rule_of
from ..stages.roofline.layout import lengths_of, rates_of
from ..stages.roofline.serving import Plan, kv_rates
from ..units import MS_PER_S
from .roofline import plan_weight

ARRIVALS = {"poisson": ks.ARRIVAL_POISSON, "gamma": ks.ARRIVAL_GAMMA}
LENGTH_LAWS = {"fixed": ks.LENGTH_FIXED, "geometric": ks.LENGTH_GEOMETRIC}
MODES = {"static": ks.MODE_STATIC, "continuous": ks.MODE_CONTINUOUS, "disaggregated": ks.MODE_DISAGGREGATED}
#: Chunk sizes the continuous step is tabulated at (``G``: ``0, C/G, .., C`` tokens of the
#: step budget ``C``; the kernel interpolates linearly between them).
CHUNK_GRID = 16
#: The most requests one simulation takes (about 200 bytes each).
MAX_REQUESTS = 10_000_000
#: Quantiles of TTFT and TPOT the command reports.
QUANTILES = (0.5, 0.9, 0.99)


@dataclasses.dataclass(frozen=True)
class ServingSystem:
    """What the simulator serves: ``instances`` instances in ``mode`` (disaggregated: the
    first ``prefill_instances`` prefill), requests of ``prompt_tokens`` and (mean)
    ``output_tokens``, and the step-time tables (seconds; arguments of
    :func:`mcengine.kernels.serve.simulate`; ``mixed_s`` None: ``decode_s`` at every chunk,
    ``prefill_busy_s`` None: ``prefill_s``). ``capacity_tokens_per_s``: the roofline's
    saturated output tokens/s of the instances; ``tpot_slo_s``, ``ttft_slo_s``: the SLOs;
    ``length_cv``: the spread of prompt and output lengths across requests
    (``workload.load.length_cv``; 0: every request is ``prompt_tokens`` / ``output_tokens``);
    ``tail_steps_s``: continuous, the roofline's step carrying a lone prompt's last chunk at
    the plan's micro-batch count and at ``batch_max`` (the fast model's; None: the model's
    step linear in the chunk)."""

    mode: str
    instances: int
    prompt_tokens: int
    output_tokens: int
    batch_max: int
    decode_s: np.ndarray
    prefill_s: np.ndarray
    mixed_s: np.ndarray | None = None
    prefill_busy_s: np.ndarray | None = None
    transfer_s: np.ndarray | None = None
    prefill_instances: int = 0
    prefill_batch_max: int = 0
    chunk_tokens: float = 1.0
    kv_capacity_tokens: float = math.inf
    capacity_tokens_per_s: float = math.nan
    tpot_slo_s: float = math.inf
    ttft_slo_s: float = math.inf
    plan: str = ""
    pipeline: int = 1
    length_cv: float = 0.0
    tail_steps_s: tuple[float, float] | None = None


def queue_system(servers: int, service_s: float, exponential: bool) -> tuple[ServingSystem, str]:
    """A plain FIFO queue with ``servers`` servers of mean service time ``service_s``: static
    batches of one request whose prefill takes no time and whose ``O - 1`` decode steps take
    ``service_s / (O - 1)`` each. Deterministic service: ``O = 2`` fixed; exponential: ``O``
    geometric with mean ``10^6 + 1`` (``O - 1`` geometric with mean ``10^6``: the service's
    second moment is ``2 service_s^2 (1 + 5 10^-7)``, exponential's to 5e-7). Returns the
    system and the output-length law to simulate it with."""
    steps = 10**6 if exponential else 1
    system = ServingSystem("static", servers, 1, steps + 1, 1, np.array([0.0, service_s / steps]), np.zeros(2))
    return system, ("geometric" if exponential else "fixed")


#: Events of the simulator per admission of a request to an instance (its first, and one
#: more after each preemption), the arrival aside: the end of the prefill pass or chunked
#: prefill that takes it, one step whose chunk is the stream's last partial one (or one
#: step more where a fractional chunk's sum rounds a hair short of the prompt's end), its
#: KV transfer landing (disaggregated), and its finish or preemption.
EVENTS_PER_ADMISSION = 5


def event_bound(requests, preemptions):
    """The most events :func:`mcengine.kernels.serve.simulate` processes for ``requests``
    requests preempted ``preemptions`` times in all: one arrival each and
    :data:`EVENTS_PER_ADMISSION` per admission. It grows with the sample size only: no
    event waits on a step that changes nothing, whatever the prompt, chunk, batch, rate or
    times (tests/kernels/test_serve_events.py draws them over their legal ranges)."""
    return requests + EVENTS_PER_ADMISSION * (requests + preemptions)


def simulate_requests(system: ServingSystem, rate_per_s: float, n_requests: int, seed: int = 0, replication: int = 0,
                      arrival: str = "poisson", arrival_cv: float = 1.0, lengths: str = "fixed") -> tuple[pd.DataFrame, np.ndarray]:
    """Simulate ``n_requests`` requests arriving at ``rate_per_s`` on ``system``.

    Returns the per-request table (``arrival_s``, ``first_token_s``, ``finish_s``,
    ``ttft_s``, ``tpot_s`` (0 for a one-token request), ``output_tokens``, ``prompt_tokens``,
    ``preemptions``, ``instance``; ``attrs["events"]``: the events simulated, at most
    :func:`event_bound`) and each instance's busy seconds. The numbers are a pure function
    of the arguments (``seed``, ``replication``: the random streams)."""
    problems = []
    if arrival not in ARRIVALS:
        problems.append(Problem("--arrival", arrival, f"allowed: {' | '.join(ARRIVALS)}"))
    if lengths not in LENGTH_LAWS:
        problems.append(Problem("--lengths", lengths, f"allowed: {' | '.join(LENGTH_LAWS)}"))
    if isinstance(n_requests, bool) or not (isinstance(n_requests, (int, np.integer)) and 1 <= n_requests <= MAX_REQUESTS):
        problems.append(Problem("--requests", n_requests, f"allowed: a whole number from 1 to {MAX_REQUESTS:,} (memory grows with it)"))
    if not (np.isfinite(rate_per_s) and rate_per_s > 0):
        problems.append(Problem("--demand", rate_per_s, "allowed: a finite demand > 0"))
    if not (np.isfinite(arrival_cv) and 0.05 <= arrival_cv <= 20):
        problems.append(Problem("--cv", arrival_cv, "allowed: 0.05 .. 20 (the inter-arrival times' coefficient of variation)"))
    if problems:
        raise InputError(problems)
    s = system
    width = max(s.batch_max, s.prefill_batch_max) + 1

    def table(x) -> np.ndarray:
        out = np.zeros(width)
        if x is not None:
            out[: len(x)] = x
        return out

    decode = table(s.decode_s)
    mixed = np.zeros((width, s.mixed_s.shape[1])) if s.mixed_s is not None else np.c_[decode, decode]
    if s.mixed_s is not None:
        mixed[: len(s.mixed_s)] = s.mixed_s

    n = int(n_requests)
    rows = {name: np.empty(n) for name in ("arrival_s", "first_token_s", "finish_s")}
    ints = {name: np.empty(n, np.int64) for name in ("output_tokens", "preemptions", "instance")}
    prompts = np.empty(n)
    busy = np.empty(s.instances)
    events = ks.simulate(int(seed), int(replication), n, float(rate_per_s), ARRIVALS[arrival], float(arrival_cv), int(s.output_tokens),
                LENGTH_LAWS[lengths], float(s.length_cv), MODES[s.mode], int(s.instances), int(s.prefill_instances), int(s.prompt_tokens), int(s.batch_max),
                int(s.prefill_batch_max), float(s.chunk_tokens), float(s.kv_capacity_tokens), decode, mixed,
                table(s.prefill_s), table(s.prefill_s if s.prefill_busy_s is None else s.prefill_busy_s), table(s.transfer_s), rows["arrival_s"], rows["first_token_s"], rows["finish_s"],
                ints["output_tokens"], prompts, ints["preemptions"], ints["instance"], busy)
    df = pd.DataFrame({**rows, **ints, "prompt_tokens": prompts.astype(np.int64)})
    df["ttft_s"] = df.first_token_s - df.arrival_s
    steps = (df.output_tokens - 1).to_numpy()
    df["tpot_s"] = np.where(steps > 0, (df.finish_s - df.first_token_s).to_numpy() / np.maximum(steps, 1), 0.0)
    df.attrs["events"] = int(events)
    return df, busy


# --------------------------------------------------------------------------- the scenario's machine


def _batches(n: int) -> np.ndarray:
    return np.arange(1, n + 1, dtype=float)


def serving_system(scenario: Scenario, mode: str | None = None, instances: int | None = None) -> ServingSystem:
    """The plan the roofline serves in ``mode`` (None: the plan in use) at the median
    inputs, as step-time tables for ``instances`` instances (None: ``cluster.instances``).

    * decode step of ``b`` sequences: :func:`mcengine.analytic.roofline.steps.decode_step`
      at the mean context (static, disaggregated decode, continuous without a chunk);
    * static pass of ``k`` prompts, disaggregated prefill pass: the batch's TTFT
      (:func:`~mcengine.analytic.roofline.steps.batch_time_to_first_token`); the KV
      transfer of ``k`` prompts: :func:`mcengine.analytic.serving.kv_transfer_s`;
    * continuous step of ``b`` sequences and a chunk of ``c`` tokens, at :data:`CHUNK_GRID`
      chunks up to the step's prefill budget, the plan's steady chunk ``B S / O`` (at most
      ``workload.prefill_chunk_tokens``: the scheduler's token budget set to the plan, so the
      simulated instance saturates at the roofline's ``B / tau``; docs/load.md#capacity):
      :func:`mcengine.analytic.serving.continuous_step` at that chunk (a chunk alone: one
      prompt of ``c`` tokens prefilled); the kernel interpolates between them;
    * a prefill pass keeps its instance for :func:`~mcengine.analytic.roofline.steps.prefill`'s
      instance time (pipeline stages kept full), shorter than its latency when ``p > 1``;
    * KV capacity: the memory batch limit times the KV context it is sized for.
    """
    if scenario.workload.classes:
        raise InputError(Problem("workload.classes", len(scenario.workload.classes),
                                 "one serving system plans one request class; allowed: a scenario without a workload mix "
                                 "(a mix is simulated class by class: mix_systems)"))
    w, m = scenario.workload, scenario.workload.model
    n = scenario.cluster.simulated() if instances is None else instances
    if not (isinstance(n, (int, np.integer)) and 1 <= n <= 100_000):
        raise InputError(Problem("--instances", n, "allowed: a whole number from 1 to 100,000"))
    median = quantile_inputs(scenario, 0.5)
    weight = plan_weight(scenario, median)
    if mode is None:
        plan, e = rule_of(scenario).plan(scenario, median, weight, ahead_weights(scenario))
        mode, label = plan.mode, plan.describe()
    else:
        if mode not in MODES:
            raise InputError(Problem("--mode", mode, f"allowed: {' | '.join(MODES)} (or leave it out: the plan in use)"))
        best, why = rule_of(scenario).modes(scenario, median, weight)
        e = best[mode]
        if e is None:
            raise InputError(Problem("--mode", mode, f"this scenario has no {mode} plan ({why[mode]}); allowed: "
                                     + ", ".join(k for k, v in best.items() if v is not None)))
        label = Plan(mode, e.layout, e.prefill_layout if mode == "disaggregated" else None).describe()
    rates = rates_of(scenario, median)
    lengths = lengths_of(scenario, median)
    s, o = (int(round(float(at_trial(x)))) for x in (lengths.prompt_tokens, lengths.output_tokens))
    context, kv_context = (float(at_trial(x)) for x in (lengths.context_tokens, lengths.kv_context_tokens))
    common = dict(instances=int(n), prompt_tokens=s, output_tokens=o, capacity_tokens_per_s=float(n * at_trial(e.tokens_per_s_instance)),
                  tpot_slo_s=float(at_trial(median["workload.tpot_slo_ms"])) / MS_PER_S, plan=label,
                  ttft_slo_s=float(at_trial(median["workload.ttft_slo_ms"])) / MS_PER_S,
                  length_cv=float(at_trial(median["workload.load.length_cv"])))
    if mode == "disaggregated":
        if n < 2:
            raise InputError(Problem("--instances", n, "allowed: at least 2 with --mode disaggregated (a prefill and a decode instance)"))
        d, p = int(e.decode.batch[0]), int(e.prefill_batch[0])
        k = _batches(p)
        decode = rt.decode_step(m, e.layout, _batches(d), context, rates).total_s
        busy = rt.prefill(m, e.prefill_layout, k, s, rates)
        prefill = rt.batch_time_to_first_token(m, e.prefill_layout, k, s, rates, busy).total_s
        transfer = np.broadcast_to(sv.kv_transfer_s(m, s, scenario.cluster.instance_gpus, kv_rates(scenario, rates), k), k.shape)
        share = int(min(max(round(float(e.prefill_share[0]) * n), 1), n - 1))
        return ServingSystem("disaggregated", batch_max=d, decode_s=np.r_[0.0, decode], prefill_s=np.r_[0.0, prefill],
                             prefill_busy_s=np.r_[0.0, busy.total_s], transfer_s=np.r_[0.0, transfer], prefill_instances=share, prefill_batch_max=p,
                             kv_capacity_tokens=float(e.decode.batch_memory[0]) * kv_context, **common)
    b = int(e.batch[0])
    batch = _batches(b)
    decode = rt.decode_step(m, e.layout, batch, context, rates).total_s
    if mode == "static":
        prefill = rt.batch_time_to_first_token(m, e.layout, batch, s, rates).total_s
        return ServingSystem("static", batch_max=b, decode_s=np.r_[0.0, decode], prefill_s=np.r_[0.0, prefill], **common)
    chunk = float(min(w.prefill_chunk_tokens, b * s / float(at_trial(sv.decode_steps(o, rates)))))
    mixed = np.zeros((b + 1, CHUNK_GRID + 1))
    mixed[1:, 0] = decode
    for j in range(1, CHUNK_GRID + 1):
        c = chunk * j / CHUNK_GRID
        mixed[1:, j] = sv.continuous_step(m, e.layout, batch, s, batch * s / c, rates, context).total_s  # (c over the step's micro-batches)
        mixed[0, j] = float(at_trial(rt.prefill(m, e.layout, 1.0, c, rates).total_s))
    tail = float(ql.tail_chunk_tokens(s, chunk))
    tails = tuple(float(at_trial(sv.continuous_step(m, e.layout, k, s, k * s / tail, rates, context).total_s)) for k in (min(float(e.layout.pipeline), b), b))
    return ServingSystem("continuous", batch_max=b, pipeline=int(e.layout.pipeline), decode_s=np.r_[0.0, decode], prefill_s=np.zeros(b + 1), mixed_s=mixed,
                         chunk_tokens=chunk, kv_capacity_tokens=float(e.batch_memory[0]) * kv_context, tail_steps_s=tails, **common)


def mix_systems(scenario: Scenario, mode: str | None = None, instances: int | None = None) -> list[tuple[str, float, ServingSystem]]:
    """A workload mix's request classes as the chain serves them (docs/model.md#mix): each
    class on whole instances of its own, planned alone (:func:`~mcengine.stages.roofline.class_scenario`,
    its plan in use or its best plan of ``mode``), the ``instances`` (None:
    ``cluster.instances``) split as :func:`mcengine.analytic.mix.whole_instance_rate` splits
    them at the median inputs (the classes' output-token shares over their instances'
    rates). Returns ``(name, request share, system)`` per class, in file order."""
    n = scenario.cluster.instances if instances is None else instances
    median = quantile_inputs(scenario, 0.5)
    names = [name for name, _ in scenario.workload.classes]
    shares = mx.normalised_shares([np.atleast_1d(float(at_trial(median[f"workload.classes.{c}.share"]))) for c in names])
    own = {c: class_scenario(scenario, c) for c in names}
    probes = {}
    for c in names:
        with class_keys(scenario, c):
            probes[c] = serving_system(own[c], mode, 2)
    rates = [np.atleast_1d(probes[c].capacity_tokens_per_s / probes[c].instances) for c in names]
    _, whole = mx.whole_instance_rate(mx.output_token_weights(shares, [probes[c].output_tokens for c in names]), rates, int(n))
    if not all(int(w[0]) >= 1 for w in whole):
        raise InputError(Problem("--instances", n, f"allowed: enough instances to give each of the mix's {len(names)} request classes "
                                 "whole instances of its own (and a class its plan serves)"))
    out = []
    for c, r, w in zip(names, shares, whole):
        with class_keys(scenario, c):
            out.append((c, float(r[0]), serving_system(own[c], mode, int(w[0]))))
    return out


def thinned_cv(arrival_cv: float, share: float) -> float:
    """The inter-arrival CV of the requests of one class drawn with probability ``share``
    from a renewal stream of CV ``arrival_cv``: the gaps are geometric sums of the stream's,
    ``c^2 = share c_a^2 + 1 - share`` (Poisson stays Poisson)."""
    return math.sqrt(share * arrival_cv**2 + 1.0 - share)


def _mix_summary(scenario: Scenario, demand_tokens_per_s: float, requests: int, seed: int, arrival: str, arrival_cv: float,
                 mode: str | None, instances: int | None, lengths: str, warmup: float | str) -> tuple[dict, pd.DataFrame]:
    """:func:`serve_summary` of a workload mix: each class's requests (its share of the
    requests and of the request rate ``demand / sum_c r_c O_c``) simulated on its own
    instances (:func:`mix_systems`; replication = the class's index, so its streams are
    its own), arriving as the class's thinning of the stream (Poisson, or gamma with the
    thinned CV, :func:`thinned_cv`). The body's latency, attainment (each request against
    its class's SLOs), goodput and utilisation are the mix's; ``classes`` holds each class's."""
    classes = mix_systems(scenario, mode, instances)
    rate = demand_tokens_per_s / sum(r * s.output_tokens for _, r, s in classes)
    frames, per_class, busy_s, open_s = [], {}, 0.0, 0.0
    for j, (name, share, system) in enumerate(classes):
        cv = thinned_cv(arrival_cv, share) if arrival == "gamma" else 1.0
        df, busy = simulate_requests(system, share * rate, max(int(round(requests * share)), 2), seed, j, arrival, cv, lengths)
        summary = latency_summary(df, busy, system, warmup)
        df["measured"] = np.arange(len(df)) >= len(df) - summary["requests_measured"]
        df["request_class"] = name
        df["ttft_slo_s"], df["tpot_slo_s"] = system.ttft_slo_s, system.tpot_slo_s
        frames.append(df)
        busy_s, open_s = busy_s + float(busy.sum()), open_s + float(df.finish_s.max()) * len(busy)
        per_class[name] = {"share": share, "plan": system.plan, "serving": system.mode, "instances": system.instances,
                           "demand_tokens_per_s": share * rate * system.output_tokens, "capacity_tokens_per_s": system.capacity_tokens_per_s,
                           "arrival_cv": cv, "length_cv": system.length_cv, "ttft_slo_ms": system.ttft_slo_s * MS_PER_S, "tpot_slo_ms": system.tpot_slo_s * MS_PER_S, **summary}
    table = pd.concat(frames, ignore_index=True)
    kept = table[table.measured].sort_values("arrival_s", kind="stable")
    capacity = sum(s.capacity_tokens_per_s for _, _, s in classes)
    served = sum(c["served_tokens_per_s"] for c in per_class.values())

    def common(key):
        values = {c[key] for c in per_class.values()}
        return values.pop() if len(values) == 1 else None

    body = {
        "plan": "; ".join(f"{name}: {c['plan']} x{c['instances']}" for name, c in per_class.items()),
        "serving": common("serving") or "mix",
        "instances": sum(c["instances"] for c in per_class.values()),
        "demand_tokens_per_s": demand_tokens_per_s,
        "capacity_tokens_per_s": capacity,
        "load": demand_tokens_per_s / capacity,
        "arrival": arrival, "arrival_cv": arrival_cv, "lengths": lengths, "length_cv": common("length_cv"), "requests": requests, **_warmup_fields(warmup, len(table), len(kept)),
        "ttft_slo_ms": common("ttft_slo_ms"), "tpot_slo_ms": common("tpot_slo_ms"),
        "requests_measured": len(kept),
        **_latency_stats(kept, kept.ttft_slo_s, kept.tpot_slo_s),
        "goodput_requests_per_s": sum(c["goodput_requests_per_s"] for c in per_class.values()),
        "arrival_rate_per_s": sum(c["arrival_rate_per_s"] for c in per_class.values()),
        "served_tokens_per_s": served,
        "utilisation": served / capacity,
        "busy_share": busy_s / open_s,
        "preemptions_per_request": float(table.preemptions.mean()),
        "in_flight_mean": sum(c["in_flight_mean"] for c in per_class.values()),
        "prompt_tokens_mean": float(kept.prompt_tokens.mean()),
        "output_tokens_mean": float(kept.output_tokens.mean()),
        "classes": per_class,
    }
    return body, table


# --------------------------------------------------------------------------- the command


#: The warm-up rule (``--warmup mser5``): MSER-5 (White, Cobb and Spratt 2000; Law and
#: Kelton, *Simulation Modeling and Analysis*, 5th ed., section 9.5.1; docs/load.md#estimates).
MSER = "mser5"
#: MSER-5's batch: the series is read as means of this many consecutive requests.
MSER_BATCH = 5
#: Consecutive batches the measured requests are cut into for a statistic's standard error
#: (sectioning: the statistic over all of them, its spread from the batches'; Law and Kelton
#: section 9.5.3 ask for 10 to 30 batches).
SEM_BATCHES = 20
#: The ``steadiness`` of a summary (:func:`_latency_stats`): its batches pass the test, fail
#: it, or it has fewer than two requests a batch (``2 x`` :data:`SEM_BATCHES`) to test.
STEADY, UNSTEADY, TOO_FEW = "steady", "unsteady", "too_few_requests"
#: One-sided level of the steadiness test of each of the TTFT and TPOT series
#: (:func:`steady_limit`): a run whose batches are independent is called unsteady by one
#: series with at most this probability (0.8 % at 20 batches, normal ones).
STEADY_LEVEL = 0.01


def batch_correlation(z: np.ndarray | None) -> float | None:
    """Von Neumann's ratio statistic of the means ``Z_j`` of the :data:`SEM_BATCHES`
    consecutive batches of a series (those the mean's standard error is made of,
    :func:`_with_sem`), ``C = 1 - sum_j (Z_{j+1} - Z_j)^2 / (2 sum_j (Z_j - mean Z)^2)``: about
    their lag-1 autocorrelation (von Neumann 1941; Young 1941; the check of batch means'
    independence, Law and Kelton section 9.5.3).
    Under independent, identically distributed normal batch means it has mean 0 and
    variance ``(k - 2) / (k^2 - 1)`` (``k`` batches), exactly. A drift left in the run (a
    transient not over) or a state mixing more slowly than a batch both correlate
    consecutive batches. None without batch means (fewer than two values a batch); 0
    where every batch mean is the same."""
    if z is None:
        return None
    if z.min() == z.max():  # (their mean can round an ulp away from them: no spread to divide by)
        return 0.0
    return 1.0 - float((np.diff(z) ** 2).sum()) / (2.0 * float(((z - z.mean()) ** 2).sum()))


def steady_limit() -> float:
    """The :func:`batch_correlation` above which a series' batches are called correlated:
    the one-sided :data:`STEADY_LEVEL` quantile of its normal approximation under
    independence, ``z_{1 - level} sqrt((k - 2) / (k^2 - 1))`` over the ``k =``
    :data:`SEM_BATCHES` batches (0.494)."""
    k = SEM_BATCHES
    return float(NormalDist().inv_cdf(1.0 - STEADY_LEVEL) * math.sqrt((k - 2) / (k * k - 1)))


def mser_truncation(x: np.ndarray) -> int:
    """MSER-5's warm-up: the requests to leave out of the front of the series ``x`` (one
    value per request in arrival order). ``x`` is cut into means ``Z_j`` of
    :data:`MSER_BATCH` consecutive values; the truncation ``d`` (at most half of them) is
    the one minimising ``sum_{j>d} (Z_j - mean_{j>d} Z)^2 / (m - d)^2``, the squared
    standard error of the mean of what is left as if its batches were independent: cutting
    more pays only while the front it cuts sits away from the rest."""
    m = len(x) // MSER_BATCH
    if m < 2:
        return 0
    z = np.asarray(x[: m * MSER_BATCH], float).reshape(m, MSER_BATCH).mean(axis=1)
    z = z - z.mean()
    left = np.arange(m, 0, -1, dtype=float)  # batches kept when d are cut
    s1, s2 = np.cumsum(z[::-1])[::-1], np.cumsum((z * z)[::-1])[::-1]
    half = m // 2 + 1
    stat = (s2[:half] - s1[:half] ** 2 / left[:half]) / left[:half] ** 2
    return MSER_BATCH * int(np.argmin(stat))


def _sections(x: np.ndarray) -> list[np.ndarray] | None:
    """The :data:`SEM_BATCHES` consecutive batches of the series ``x`` (float64), None with
    fewer than two values a batch."""
    x = np.asarray(x, float)
    return None if len(x) < 2 * SEM_BATCHES else np.array_split(x, SEM_BATCHES)


def _sectioned(x: np.ndarray, parts: list[np.ndarray] | None, stat) -> tuple[float, float | None, np.ndarray | None]:
    """``stat`` of the series ``x``, its standard error by sectioning: the spread of ``stat``
    over the batches ``parts`` of ``x`` (:func:`_sections`), over the root of their number
    (None without batches), and ``stat`` of each batch."""
    whole = float(stat(x))
    if parts is None:
        return whole, None, None
    each = np.array([stat(b) for b in parts])
    return whole, float(each.std(ddof=1) / math.sqrt(SEM_BATCHES)), each


def correlation_widening(c: float | None) -> float:
    """The factor sectioning's standard error takes where its batches are correlated:
    ``sqrt((1 + C) / (1 - C))`` at the series' :func:`batch_correlation` ``C`` when positive
    (the standard error of the mean of an AR(1) series of lag-1 correlation ``C``, over that
    of independent values: its sum of autocorrelations ``1 + 2 C / (1 - C)``), 1 where ``C``
    is none, zero or negative (never narrowed). An assumed law: a state that mixes more
    slowly than an AR(1) one, with ``C`` read off 20 batches, is still under-stated
    (docs/serve.md#statistics)."""
    if c is None or c <= 0.0:
        return 1.0
    return math.sqrt((1.0 + c) / (1.0 - c))


def _with_sem(x: np.ndarray) -> tuple[dict, dict, float | None]:
    """Quantiles (:data:`QUANTILES`) and mean of ``x`` in ms, their standard errors
    (sectioning's, :func:`_sectioned`, widened by :func:`correlation_widening`) and the
    series' batch correlation (:func:`batch_correlation` of the batch means the mean's
    standard error is made of)."""
    value, sem, each, parts = {}, {}, {}, _sections(x)
    stats = {f"p{round(q * 100)}": (lambda v, q=q: np.quantile(v, q)) for q in QUANTILES} | {"mean": np.mean}
    for k, f in stats.items():
        value[k], sem[k], each[k] = _sectioned(x, parts, f)
        value[k] *= MS_PER_S
    correlation = batch_correlation(each["mean"])
    widen = correlation_widening(correlation)
    return value, {k: None if e is None else e * widen * MS_PER_S for k, e in sem.items()}, correlation


def _latency_stats(kept: pd.DataFrame, ttft_slo_s, tpot_slo_s) -> dict:
    """Quantiles and means of TTFT and TPOT (ms) of the requests ``kept``, their standard
    errors (``*_sem_ms``: sectioning, :func:`_sectioned`, in arrival order, widened where
    the batches are correlated, :func:`correlation_widening`), whether the
    run is steady (``steady``: neither series' sectioning batches correlated,
    ``batch_correlation`` of each at most ``batch_correlation_limit``,
    :func:`batch_correlation`, :func:`steady_limit`; where they are, the standard errors
    under-state even widened and the estimates may still drift; ``steadiness`` says which of
    :data:`STEADY`, :data:`UNSTEADY` and :data:`TOO_FEW`, fewer than ``2 x``
    :data:`SEM_BATCHES` requests measured: no test, and ``steady`` false) and their
    attainment of the SLOs (s; numbers, or one per request)."""
    ttft_ok, tpot_ok = kept.ttft_s <= ttft_slo_s, kept.tpot_s <= tpot_slo_s
    ttft, ttft_sem, ttft_correlation = _with_sem(kept.ttft_s.to_numpy())
    tpot, tpot_sem, tpot_correlation = _with_sem(kept.tpot_s.to_numpy())
    correlation = {"ttft": ttft_correlation, "tpot": tpot_correlation}
    limit = steady_limit()
    return {
        "ttft_ms": ttft,
        "tpot_ms": tpot,
        "ttft_sem_ms": ttft_sem,
        "tpot_sem_ms": tpot_sem,
        "batch_correlation": correlation,
        "batch_correlation_limit": limit,
        "steady": all(c is not None and c <= limit for c in correlation.values()),
        "steadiness": TOO_FEW if None in correlation.values() else STEADY if all(c <= limit for c in correlation.values()) else UNSTEADY,
        "slo_attainment": float((ttft_ok & tpot_ok).mean()),
        "ttft_attainment": float(ttft_ok.mean()),
        "tpot_attainment": float(tpot_ok.mean()),
    }


def warmup_rule(warmup: float | str) -> float | str:
    """``--warmup`` as given on the command line: :data:`MSER`, or a share (a number, or
    its text) from 0 to 0.9; anything else is refused naming what is allowed."""
    if warmup == MSER:
        return MSER
    try:
        share = float(warmup)
    except (TypeError, ValueError):
        share = math.nan
    if not 0.0 <= share < 0.9:
        raise InputError(Problem("--warmup", warmup, f"allowed: {MSER} (MSER-5's truncation) or a share 0 <= warmup < 0.9 (of the first "
                                 "requests left out of the statistics)"))
    return share


def _warmup_fields(warmup: float | str, requests: int, measured: int) -> dict:
    """The summary's warm-up: ``warmup``, the share of the ``requests`` left out (a number,
    whatever the rule), and ``warmup_rule``, the rule as given (:data:`MSER` or the share)."""
    return {"warmup": (requests - measured) / requests if requests else 0.0, "warmup_rule": warmup}


def warmup_requests(df: pd.DataFrame, warmup: float | str) -> int:
    """The first requests left out of the statistics (the system starts empty): the
    ``warmup`` share of them, or with ``warmup = "mser5"`` (:data:`MSER`) the larger of
    MSER-5's truncations of the TTFT and the TPOT series (:func:`mser_truncation`)."""
    if warmup == MSER:
        return max(mser_truncation(df.ttft_s.to_numpy()), mser_truncation(df.tpot_s.to_numpy()))
    return int(len(df) * warmup)


def latency_summary(df: pd.DataFrame, busy: np.ndarray, system: ServingSystem, warmup: float | str) -> dict:
    """Quantiles of TTFT and TPOT (ms) with their standard errors, SLO attainment, goodput
    and utilisation over the requests after the warm-up (:func:`warmup_requests`). ``served_tokens_per_s``:
    output tokens of the requests finishing between the first and last measured arrival,
    per second of that window; ``utilisation``: that over the roofline's capacity;
    ``busy_share``: the instances' time with a request running, over the whole run;
    ``in_flight_mean``: requests in the system (Little's law), against which
    ``requests_measured`` says how many times the system turned over; the measured requests'
    mean prompt and output tokens (``workload.load.length_cv`` spreads them)."""
    kept = df.iloc[warmup_requests(df, warmup):]
    met = (kept.ttft_s <= system.ttft_slo_s) & (kept.tpot_s <= system.tpot_slo_s)
    span = kept.arrival_s.iloc[-1] - kept.arrival_s.iloc[0]
    rate = (len(kept) - 1) / span if span > 0 else math.nan
    start, end = kept.arrival_s.iloc[0], kept.arrival_s.iloc[-1]
    window = (df.finish_s >= start) & (df.finish_s <= end)
    served = float(df.output_tokens[window].sum()) / (end - start) if end > start else math.nan
    return {
        "requests_measured": len(kept),
        **_latency_stats(kept, system.ttft_slo_s, system.tpot_slo_s),
        "goodput_requests_per_s": float(met.mean()) * rate,
        "arrival_rate_per_s": rate,
        "served_tokens_per_s": served,
        "utilisation": served / system.capacity_tokens_per_s,
        "busy_share": float(busy.sum() / (float(df.finish_s.max()) * len(busy))),
        "preemptions_per_request": float(df.preemptions.mean()),
        "in_flight_mean": rate * float((kept.finish_s - kept.arrival_s).mean()),
        "prompt_tokens_mean": float(kept.prompt_tokens.mean()),
        "output_tokens_mean": float(kept.output_tokens.mean()),
    }


def serve_summary(scenario: Scenario, demand_tokens_per_s: float, requests: int = 100_000, seed: int = 0, arrival: str = "poisson",
                  arrival_cv: float = 1.0, mode: str | None = None, instances: int | None = None, lengths: str = "fixed",
                  warmup: float | str = MSER) -> tuple[dict, pd.DataFrame]:
    """The body of ``mcengine serve`` and its per-request table: ``requests`` requests at
    ``demand_tokens_per_s`` output tokens/s (``demand / workload.output_tokens`` requests/s)
    on :func:`serving_system`; statistics after the warm-up (:func:`warmup_requests`: MSER-5,
    or the first ``warmup`` share) of requests
    (the table's ``measured`` column). A workload mix: :func:`_mix_summary`."""
    if arrival == "poisson" and arrival_cv != 1.0:
        raise InputError(Problem("--cv", arrival_cv, "allowed: 1 with --arrival poisson (a coefficient of variation needs --arrival gamma)"))
    warmup = warmup_rule(warmup)
    if not (np.isfinite(demand_tokens_per_s) and demand_tokens_per_s > 0):
        raise InputError(Problem("--demand", demand_tokens_per_s, "allowed: a finite number of output tokens/s > 0"))
    if scenario.workload.classes:
        return _mix_summary(scenario, demand_tokens_per_s, requests, seed, arrival, arrival_cv, mode, instances, lengths, warmup)
    system = serving_system(scenario, mode, instances)
    rate = demand_tokens_per_s / system.output_tokens
    df, busy = simulate_requests(system, rate, requests, seed, 0, arrival, arrival_cv, lengths)
    summary = latency_summary(df, busy, system, warmup)
    df["measured"] = np.arange(len(df)) >= len(df) - summary["requests_measured"]
    body = {
        "plan": system.plan,
        "serving": system.mode,
        "instances": system.instances,
        **({"prefill_instances": system.prefill_instances} if system.mode == "disaggregated" else {}),
        "demand_tokens_per_s": demand_tokens_per_s,
        "capacity_tokens_per_s": system.capacity_tokens_per_s,
        "load": demand_tokens_per_s / system.capacity_tokens_per_s,
        "arrival": arrival,
        "arrival_cv": arrival_cv,
        "lengths": lengths,
        "length_cv": system.length_cv,
        "requests": requests,
        **_warmup_fields(warmup, requests, summary["requests_measured"]),
        "prompt_tokens": system.prompt_tokens,
        "output_tokens": system.output_tokens,
        "batch_max": system.batch_max,
        "ttft_slo_ms": system.ttft_slo_s * MS_PER_S,
        "tpot_slo_ms": system.tpot_slo_s * MS_PER_S,
        **summary,
    }
    return body, df


def fast_latency(system: ServingSystem, rate_per_s: float, arrival_cv: float = 1.0, q: float = 0.99) -> qu.LoadLatency:
    """The chain's fast model (:mod:`mcengine.analytic.queueing`, docs/load.md#modes) of
    ``system`` at ``rate_per_s`` requests/s: its step-time tables read at batch 1 (continuous:
    at the plan's micro-batch count) and at the top batch (the model is linear between
    them), the continuous step at a whole chunk and at a lone prompt's last chunk
    (``tail_steps_s``). The static model takes its bunching constants' defaults
    (``workload.load.static_gap_cv2``, ``static_bunch_cycles``, ``static_bunch_growth``) and
    the continuous one its births' share's (``workload.load.refill_births``), not a
    scenario's: the simulator it is checked against has no such keys."""
    s = system
    common = dict(instances=s.instances, batch=s.batch_max, output_tokens=s.output_tokens, decode_1_s=s.decode_s[1], decode_s=s.decode_s[s.batch_max],
                  length_cv=s.length_cv)
    if s.mode == "static":
        return qs.static_at_load(q, rate_per_s, arrival_cv, prefill_1_s=s.prefill_s[1], prefill_s=s.prefill_s[s.batch_max], **common)
    if s.mode == "continuous":
        low = min(s.pipeline, s.batch_max)
        common |= dict(decode_1_s=s.mixed_s[low, 0], low_batch=low)
        tail = s.tail_steps_s or (None, None)
        return qc.continuous_at_load(q, rate_per_s, arrival_cv, prompt_tokens=s.prompt_tokens, chunk_tokens=s.chunk_tokens,
                                     step_s=s.mixed_s[s.batch_max, -1], chunk_step_1_s=s.mixed_s[low, -1], tail_step_1_s=tail[0],
                                     tail_step_s=tail[1], **common)
    p = s.prefill_batch_max
    return qd.disaggregated_at_load(q, rate_per_s, arrival_cv, prefill_instances=s.prefill_instances, prefill_batch=p,
                                    prefill_1_s=s.prefill_s[1], prefill_s=s.prefill_s[p], busy_1_s=s.prefill_busy_s[1], busy_s=s.prefill_busy_s[p],
                                    transfer_1_s=s.transfer_s[1], transfer_s=s.transfer_s[p], **common)


def fast_mix_latency(classes: list[tuple[str, float, ServingSystem]], rate_per_s: float, arrival_cv: float = 1.0,
                     q: float = 0.99) -> dict[str, qu.LoadLatency]:
    """The fast model of a mix (:func:`mix_systems`'s classes) at ``rate_per_s`` requests/s in
    all: each class at its share of the rate on its own instances, arriving with the
    thinned CV (:func:`thinned_cv`), as :func:`_mix_summary` simulates it."""
    return {name: fast_latency(system, share * rate_per_s, thinned_cv(arrival_cv, share), q) for name, share, system in classes}
