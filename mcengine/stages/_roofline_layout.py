"""Roofline stage internals: per-trial rates, one layout's evaluation, the layout search.

A layout is ``tensor x pipeline`` GPUs with ``tensor x pipeline = cluster.instance_gpus``.
``"auto"`` degrees search every such layout that an engine can shard (``tensor`` divides
the query heads; KV heads divide evenly or replicate: ``n_kv % t == 0`` or
``t % n_kv == 0``; with expert parallelism ``tensor`` divides the experts; ``pipeline``
at most the layers) and keep the best output tokens/s per GPU among the layouts that
meet the TPOT SLO at batch >= 1; if none meets it, the one with the lowest TPOT.

The layout is chosen **once, at the median inputs**, and kept for every trial: a real
deployment picks one layout and lives with it, so a trial with unlucky efficiencies
gets a worse throughput, not a different parallelism.
"""

from __future__ import annotations

from functools import lru_cache

from dataclasses import dataclass

import numpy as np

from ..analytic import roofline as ra
from ..errors import InputError, Problem
from ..scenario import Scenario
from ..scenario.sampling import TrialInputs, quantile_inputs
from ..units import BYTES_PER_GB, MS_PER_S


def rates_of(scenario: Scenario, inputs: TrialInputs) -> ra.Rates:
    """Effective per-device rates of every trial (``F = peak x compute_efficiency`` ...)."""
    w = scenario.workload
    return ra.Rates.from_peaks(
        peak_tflops=inputs["gpu.peak_tflops"],
        hbm_tbps=inputs["gpu.hbm_tbps"],
        link_gbps=inputs["gpu.link_gbps"],
        compute_efficiency=inputs["workload.compute_efficiency"],
        memory_efficiency=inputs["workload.memory_efficiency"],
        link_efficiency=inputs["workload.link_efficiency"],
        collective_start_us=inputs["workload.collective_start_us"],
        hop_latency_us=inputs["workload.hop_latency_us"],
        step_overhead_ms=inputs["workload.step_overhead_ms"],
        layer_overhead_us=inputs["workload.layer_overhead_us"],
        bytes_per_param=w.bytes_per_param.value,
        kv_bytes=w.kv_bytes.value,
    )


@dataclass(frozen=True)
class Evaluation:
    """One layout over a block of trials (arrays of shape (n,))."""

    layout: ra.Layout
    batch_memory: np.ndarray
    batch_slo: np.ndarray
    batch: np.ndarray
    decode: ra.PhaseTimes
    prefill: ra.PhaseTimes
    ttft: ra.PhaseTimes
    tokens_per_s_instance: np.ndarray
    tpot_slo_ms: np.ndarray

    @property
    def fits(self) -> np.ndarray:
        """The weights and the operating batch's KV cache fit HBM."""
        return (self.batch_memory >= 1) & (self.batch <= self.batch_memory)

    @property
    def slo_met(self) -> np.ndarray:
        return self.decode.total_s * MS_PER_S <= self.tpot_slo_ms

    @property
    def tokens_per_s_per_gpu(self) -> np.ndarray:
        return self.tokens_per_s_instance / self.layout.gpus


def evaluate(scenario: Scenario, layout: ra.Layout, inputs: TrialInputs) -> Evaluation:
    """Batch limits, phase terms and throughput of ``layout`` for every trial.

    ``batch = "auto"`` takes ``max(1, min(B_max, B_SLO))``: at least one sequence is
    served even when the SLO cannot be met (``slo_met`` is then false).
    """
    w, m = scenario.workload, scenario.workload.model
    rates = rates_of(scenario, inputs)
    s, o = w.prompt_tokens, w.output_tokens
    context = ra.mean_context(s, o)
    slo_ms = inputs["workload.tpot_slo_ms"]
    b_mem = ra.batch_limit_memory(m, layout, inputs["gpu.hbm_gb"], inputs["workload.hbm_usable_fraction"], s + o, rates.bytes_per_param, rates.kv_bytes)
    b_slo = ra.batch_limit_slo(m, layout, context, slo_ms / MS_PER_S, rates)
    if w.batch == "auto":
        batch = np.maximum(1, np.minimum(b_mem, b_slo))
    else:
        batch = np.full(inputs.n, w.batch, np.int64)
    decode = ra.decode_step(m, layout, batch, context, rates)
    pre = ra.prefill(m, layout, batch, s, rates)
    ttft = ra.time_to_first_token(m, layout, s, rates)
    per_instance = batch * o / (pre.total_s + o * decode.total_s)
    return Evaluation(layout, b_mem, b_slo, batch, decode, pre, ttft, per_instance, slo_ms)


# --------------------------------------------------------------------------- layouts


def _shard_problem(scenario: Scenario, t: int) -> str:
    """Why an engine cannot shard the model over ``t`` tensor ranks ('' if it can)."""
    m = scenario.workload.model
    if m.heads % t:
        return f"allowed: a divisor of workload.model.heads = {m.heads}"
    if m.kv_heads % t and t % m.kv_heads:
        return f"allowed: a divisor or a multiple of workload.model.kv_heads = {m.kv_heads}"
    if m.experts and scenario.workload.expert_parallel and m.experts % t:
        return f"allowed: a divisor of workload.model.experts = {m.experts} with workload.expert_parallel"
    return ""


def candidate_layouts(scenario: Scenario) -> list[ra.Layout]:
    """The layouts to consider: the fixed one, or every shardable ``t x p = instance_gpus``
    (largest ``t`` first, so exact ties go to the least pipelining)."""
    w, n = scenario.workload, scenario.cluster.instance_gpus
    ep = bool(scenario.workload.model.experts and w.expert_parallel)
    t_fixed, p_fixed = w.tensor_parallel, w.pipeline_parallel
    if t_fixed != "auto" or p_fixed != "auto":
        t = t_fixed if t_fixed != "auto" else n // p_fixed
        p = p_fixed if p_fixed != "auto" else n // t_fixed
        problem = _shard_problem(scenario, t)
        if problem:
            raise InputError(Problem("workload.tensor_parallel", t, problem))
        if p > scenario.workload.model.layers:
            raise InputError(
                Problem("workload.tensor_parallel", t, f"leaves pipeline {p} > workload.model.layers = {scenario.workload.model.layers}; allowed: a larger tensor degree")
            )
        return [ra.Layout(t, p, ep)]
    layouts = [
        ra.Layout(t, n // t, ep)
        for t in range(n, 0, -1)
        if n % t == 0 and n // t <= scenario.workload.model.layers and not _shard_problem(scenario, t)
    ]
    if not layouts:
        raise InputError(
            Problem("cluster.instance_gpus", n, f"no tensor x pipeline layout of {n} GPUs can shard workload.model {scenario.workload.model.name!r}")
        )
    return layouts


def _no_fit(scenario: Scenario, evaluations: list[Evaluation]) -> InputError:
    """The error for a model that fits no layout (weights) or a batch that fits none."""
    w, g, m = scenario.workload, scenario.gpu, scenario.workload.model
    best = max(evaluations, key=lambda e: int(e.batch_memory[0]))
    layouts = ", ".join(f"{e.layout.tensor}x{e.layout.pipeline}" for e in evaluations)
    if int(best.batch_memory[0]) >= 1:
        return InputError(
            Problem(
                "workload.batch",
                w.batch,
                f"allowed: at most {int(best.batch_memory[0])} sequences (the KV cache at "
                f"{w.prompt_tokens + w.output_tokens} tokens of context must fit HBM next to the weights; "
                f"layout tensor {best.layout.tensor} x pipeline {best.layout.pipeline})",
            )
        )
    need_gb = min(ra.weights_bytes_per_gpu(m, e.layout, w.bytes_per_param.value) for e in evaluations) / BYTES_PER_GB
    have_gb = g.hbm_gb.median() * w.hbm_usable_fraction.median()
    return InputError(
        Problem(
            "workload.model",
            m.name,
            f"does not fit: {need_gb:.2f} GB of weights per GPU (+ one sequence's KV cache) at best, on layouts "
            f"tensor x pipeline = {layouts} of cluster.instance_gpus = {scenario.cluster.instance_gpus}, but "
            f"gpu.hbm_gb x workload.hbm_usable_fraction = {have_gb:.2f} GB; allowed: more GPUs per instance, "
            "a smaller workload.bytes_per_param, or more HBM",
        )
    )


@lru_cache(maxsize=64)
def choose_layout(scenario: Scenario) -> tuple[Evaluation, list[Evaluation]]:
    """The chosen layout's evaluation at the median inputs, and every candidate's.

    Cached per (frozen, hashable) scenario: every chunk of a run reuses the choice.

    Raises InputError when the model (or an integer batch) fits no candidate layout.
    """
    median = quantile_inputs(scenario, 0.5)
    evaluations = [evaluate(scenario, layout, median) for layout in candidate_layouts(scenario)]
    fitting = [e for e in evaluations if e.fits[0]]
    if not fitting:
        raise _no_fit(scenario, evaluations)
    meeting = [e for e in fitting if e.slo_met[0]]
    if meeting:
        return max(meeting, key=lambda e: float(e.tokens_per_s_per_gpu[0])), evaluations
    return min(fitting, key=lambda e: float(e.decode.total_s[0])), evaluations


def _degraded_layouts(scenario: Scenario) -> list[ra.Layout]:
    """Every shardable ``t x p`` layout of at most ``instance_gpus`` GPUs (``p`` at most the
    layers): at most (tensor degrees) x layers of them, whatever ``instance_gpus``."""
    w, m, n = scenario.workload, scenario.workload.model, scenario.cluster.instance_gpus
    ep = bool(m.experts and w.expert_parallel)
    return [ra.Layout(t, p, ep) for t in range(1, n + 1) if not _shard_problem(scenario, t)
            for p in range(1, min(m.layers, n // t) + 1)]


@lru_cache(maxsize=64)
def capacity_table(scenario: Scenario) -> np.ndarray:
    """``float64[n + 1]``: the share of an instance's full throughput it keeps with ``k``
    of its ``n = instance_gpus`` GPUs lost and resharded (docs/model.md#reshard).

    ``table[k] = min(1, thr(n - k) / thr(n))``: ``thr(n)`` is the chosen layout's output
    tokens/s (:func:`choose_layout`), ``thr(m)`` the best tokens/s of one instance on a
    shardable ``t x p`` layout of at most ``m`` GPUs whose weights and batch fit HBM (and
    which meets the TPOT SLO if the chosen layout does), 0 if none fits. All at the median
    inputs, as the layout choice. ``thr`` changes only at the sizes of the feasible
    layouts, so the layouts evaluated are those of :func:`_degraded_layouts` (at most
    tensor degrees x layers, independent of ``n``) and the table is their running maximum
    over ``m``. ``table[0] = 1``.
    """
    n = scenario.cluster.instance_gpus
    best, _ = choose_layout(scenario)
    median = quantile_inputs(scenario, 0.5)
    full = float(best.tokens_per_s_instance[0])
    by_size = np.zeros(n + 1)  # best tokens/s of a layout of exactly this many GPUs
    for layout in _degraded_layouts(scenario):
        e = evaluate(scenario, layout, median)
        if e.fits[0] and (e.slo_met[0] or not best.slo_met[0]):
            by_size[layout.gpus] = max(by_size[layout.gpus], float(e.tokens_per_s_instance[0]))
    thr = np.maximum.accumulate(by_size)  # thr[m]: the best on at most m GPUs
    table = np.minimum(1.0, thr[::-1] / full) if full > 0.0 else np.zeros(n + 1)
    table[0] = 1.0
    return table
