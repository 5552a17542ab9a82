"""The median rule of ``workload.plan = "median"`` (docs/model.md#plan): one plan, chosen
at the median inputs, serves every trial.

The rule is the one the engine used before it planned per trial, kept so that
``"median"`` reproduces its numbers to the bit. It is not the per-trial rule of
:mod:`.planner` at the median: it ranks by output tokens/s *per GPU* whatever
``workload.plan_objective``, evaluates the SLO batch searches without the planner's
HBM shortcut, and picks a disaggregated plan's prefill layout (most prompts/s per GPU
within the TTFT SLO) and decode layout (most decode tokens/s per GPU) apart, not as a
pair.

* Static (:func:`choose_layout`): among the candidate layouts
  (:func:`~.layout.candidate_layouts`) that fit a batch in HBM, the most output
  tokens/s per GPU among those that meet the TPOT and TTFT SLOs at batch >= 1; if none
  meets them, the one that misses them by the smallest factor.
* Continuous (:func:`choose_continuous`), disaggregated (:func:`choose_disaggregated`)
  and the mode (:func:`choose_serving`): ``workload.serving``, or for ``"auto"`` the mode
  with the most tokens/s per GPU among those that meet the SLOs (static's choice if none
  does). The disaggregated prefill share is the balanced share at the median.
* The reshard table (:func:`static_capacity`): the best static layout of at most ``m``
  GPUs, one replica.

A real deployment of this kind picks one plan and lives with it, so a trial with unlucky
efficiencies gets a worse throughput, not a different parallelism. Only this module
chooses; :mod:`.layout` and :mod:`.serving` evaluate.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ...analytic.roofline import model as rm, weights as rw
from ...analytic import serving as sv
from ...errors import InputError, Problem
from ...scenario import Scenario
from ...scenario.sampling import quantile_inputs
from ...units import BYTES_PER_GB, MS_PER_S
from .layout import Evaluation, degraded_layouts, candidate_layouts, evaluate, lengths_label, lengths_of, rates_of
from .serving import Continuous, Disaggregated, Plan, PrefillPass, evaluate_continuous, evaluate_disaggregated, kv_rates, prefill_pass, ttft_slo_ms


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
                f"allowed: at most {int(best.batch_memory[0])} sequences (the KV cache of every sequence at the context of "
                f"{lengths_label(scenario)} must fit HBM next to the weights; "
                f"layout tensor {best.layout.tensor} x pipeline {best.layout.pipeline})",
            )
        )
    need_gb = min(rw.weights_bytes_per_gpu(m, e.layout, w.bytes_per_param.value) for e in evaluations) / BYTES_PER_GB
    have_gb = g.hbm_gb.median() * w.hbm_usable_fraction.median()
    if need_gb < have_gb:  # the weights fit: one sequence's KV cache does not
        return InputError(
            Problem(
                "workload.prompt_tokens + workload.output_tokens",
                lengths_label(scenario),
                f"one sequence's KV cache does not fit HBM beside {need_gb:.2f} GB of weights per GPU at best (on layouts "
                f"tensor x pipeline = {layouts} of cluster.instance_gpus = {scenario.cluster.instance_gpus}; gpu.hbm_gb x "
                f"workload.hbm_usable_fraction = {have_gb:.2f} GB); allowed: shorter requests (or a lower "
                "workload.kv_length_quantile with a length law), more GPUs per instance, or more HBM",
            )
        )
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
    return min(fitting, key=lambda e: float(e.slo_excess[0])), evaluations


def _best(evaluations: list):
    """Best of ``evaluations`` at the median (trial 0): the most tokens/s per GPU among those
    that fit and meet the SLOs; else the lowest TPOT among those that fit; None if none fits.
    Ties go to the earlier (larger tensor degree)."""
    fitting = [e for e in evaluations if e.fits[0]]
    if not fitting:
        return None
    meeting = [e for e in fitting if e.slo_met[0]]
    if meeting:
        return max(meeting, key=lambda e: float(e.tokens_per_s_per_gpu[0]))
    return min(fitting, key=lambda e: float(e.tpot_s[0]))


@lru_cache(maxsize=64)
def choose_continuous(scenario: Scenario) -> tuple[Continuous | None, list[Continuous]]:
    """The best continuous-batching layout at the median inputs (None if no layout fits the
    weights, a KV cache and a prefill chunk) and every candidate's evaluation."""
    median = quantile_inputs(scenario, 0.5)
    evaluations = [evaluate_continuous(scenario, layout, median) for layout in candidate_layouts(scenario)]
    return _best(evaluations), evaluations


@lru_cache(maxsize=64)
def choose_disaggregated(scenario: Scenario) -> Disaggregated | None:
    """The best prefill layout (most prompts/s per GPU, ``P/prefill(P)`` capped by its KV
    links, among those that fit a prompt and meet the TTFT SLO, else the lowest TTFT) and
    the best decode layout (the static search's criteria on decode tokens/s per GPU), at
    the median inputs, with the balanced share. None if no layout fits a prompt or a
    decoding batch."""
    median = quantile_inputs(scenario, 0.5)
    layouts = candidate_layouts(scenario)
    decode = _decode_best([evaluate(scenario, layout, median, prefills=False) for layout in layouts])
    w, g = scenario.workload, scenario.cluster.instance_gpus
    kv = kv_rates(scenario, rates_of(scenario, median))
    passes = [(layout, prefill_pass(scenario, layout, median)) for layout in layouts]
    passes = [(layout, x) for layout, x in passes if x.batch_memory[0] >= 1]
    if decode is None or not passes:
        return None
    slo_ms = float(ttft_slo_ms(scenario, median)[0])

    def prompts_per_s_per_gpu(layout: rm.Layout, x: PrefillPass) -> float:
        send = sv.kv_link_prompts_per_s(w.model, lengths_of(scenario, median).prompt_tokens, g, x.prefill, kv)
        return float(np.minimum(x.batch / x.prefill.total_s, send)[0]) / layout.gpus

    within = [(layout, x) for layout, x in passes if float(x.ttft_s[0]) * MS_PER_S <= slo_ms]
    if within:
        layout = max(within, key=lambda lx: prompts_per_s_per_gpu(*lx))[0]
    else:
        layout = min(passes, key=lambda lx: float(lx[1].ttft_s[0]))[0]
    return evaluate_disaggregated(scenario, layout, decode.layout, median)


def _decode_best(evaluations: list[Evaluation]) -> Evaluation | None:
    """The static search's choice ranked on decode tokens/s per GPU (B/TPOT/g)."""
    fitting = [e for e in evaluations if e.fits[0]]
    if not fitting:
        return None
    meeting = [e for e in fitting if e.slo_met[0]]
    if meeting:
        return max(meeting, key=lambda e: float(e.batch[0] / e.decode.total_s[0]) / e.layout.gpus)
    return min(fitting, key=lambda e: float(e.decode.total_s[0]))


@dataclass(frozen=True)
class ServingChoice:
    """The mode the run uses and the best evaluation of each mode at the median inputs
    (None: the mode is infeasible, ``why`` says so)."""

    mode: str
    best: dict
    why: dict


def infeasible_why(scenario: Scenario, mode: str) -> str:
    """Why no layout serves in ``mode`` (for a mode none of whose layouts fits)."""
    w = scenario.workload
    if mode == "continuous":
        lengths = lengths_of(scenario, quantile_inputs(scenario, 0.5))
        per_sequence = float(np.ravel(np.asarray(lengths.prompt_tokens, float) / lengths.output_tokens)[0])
        return (f"no layout fits a prefill chunk of B S/O = {per_sequence:g} tokens per sequence (at the median inputs) within "
                f"workload.prefill_chunk_tokens = {w.prefill_chunk_tokens} next to the weights and KV cache")
    if mode == "disaggregated":
        return "no layout fits the weights and one prompt's KV cache"
    return "no layout fits the weights and one sequence's KV cache"


@lru_cache(maxsize=64)
def choose_serving(scenario: Scenario) -> ServingChoice:
    """Evaluate every serving mode at the median inputs and pick ``workload.serving``'s
    (``"auto"``: the most tokens/s per GPU among the modes meeting the SLOs, static's
    choice if none does). Raises InputError when the requested mode is infeasible."""
    static, _ = choose_layout(scenario)
    continuous, _ = choose_continuous(scenario)
    disaggregated = choose_disaggregated(scenario)
    best = {"static": static, "continuous": continuous, "disaggregated": disaggregated}
    w = scenario.workload
    why = {name: "" if best[name] is not None else infeasible_why(scenario, name) for name in sv.SERVING_MODES}
    mode = w.serving
    if mode == "auto":
        meeting = [name for name in sv.SERVING_MODES if best[name] is not None and best[name].slo_met[0]]
        mode = max(meeting, key=lambda name: float(best[name].tokens_per_s_per_gpu[0])) if meeting else "static"
    if best[mode] is None:
        raise InputError(Problem("workload.serving", w.serving, f"{why[mode]}; allowed: another serving mode or a larger budget"))
    return ServingChoice(mode, best, why)


def chosen_plan(scenario: Scenario) -> tuple[Plan, float | None]:
    """The plan :func:`choose_serving` picks at the median inputs and, disaggregated, its
    prefill share there (None otherwise)."""
    choice = choose_serving(scenario)
    chosen = choice.best[choice.mode]
    if choice.mode == "disaggregated":
        return Plan("disaggregated", chosen.layout, chosen.prefill_layout), float(chosen.prefill_share[0])
    return Plan(choice.mode, chosen.layout), None


@lru_cache(maxsize=64)
def static_capacity(scenario: Scenario) -> np.ndarray:
    """``float64[n + 1]``: the share of an instance's full throughput it keeps with ``k``
    of its ``n = instance_gpus`` GPUs lost and resharded (docs/model.md#reshard).

    ``table[k] = min(1, thr(n - k) / thr(n))``: ``thr(n)`` is the chosen layout's output
    tokens/s (:func:`choose_layout`), ``thr(m)`` the best tokens/s of one instance on a
    shardable ``t x p`` layout of at most ``m`` GPUs whose weights and batch fit HBM (and
    which meets the TPOT SLO if the chosen layout does), 0 if none fits. All at the median
    inputs, as the layout choice. ``thr`` changes only at the sizes of the feasible
    layouts, so the layouts evaluated are those of :func:`degraded_layouts` (at most
    tensor degrees x layers, independent of ``n``) and the table is their running maximum
    over ``m``. ``table[0] = 1``.
    """
    n = scenario.cluster.instance_gpus
    best, _ = choose_layout(scenario)
    median = quantile_inputs(scenario, 0.5)
    full = float(best.tokens_per_s_instance[0])
    by_size = np.zeros(n + 1)  # best tokens/s of a layout of exactly this many GPUs
    for layout in degraded_layouts(scenario):
        e = evaluate(scenario, layout, median)
        if e.fits[0] and (e.slo_met[0] or not best.slo_met[0]):
            by_size[layout.gpus] = max(by_size[layout.gpus], float(e.tokens_per_s_instance[0]))
    thr = np.maximum.accumulate(by_size)  # thr[m]: the best on at most m GPUs
    table = np.minimum(1.0, thr[::-1] / full) if full > 0.0 else np.zeros(n + 1)
    table[0] = 1.0
    table.setflags(write=False)  # cached: every caller shares it
    return table
