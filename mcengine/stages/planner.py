"""The planner: which plan each trial serves (docs/model.md#plan).

A :class:`~._roofline_serving.Plan` is a serving mode with its layout(s) (tensor x
pipeline, attention mode, all-reduce algorithm; disaggregated: a prefill and a decode
layout). Its batch is set inside the evaluators (the largest the memory, chunk and SLO
limits allow with ``workload.batch = "auto"``). This module only chooses; the closed
forms that time one plan are :mod:`._roofline_layout` and :mod:`._roofline_serving`
(which also hold the median choice of ``workload.plan = "median"``).

``workload.plan`` says when the plan is chosen:

* ``"per_trial"``: in every trial, the plan with the most output tokens/s of the instance
  among the candidates that fit HBM and meet that trial's TPOT and TTFT SLOs. Exact ties
  go to the earlier candidate (:func:`candidates` order). A trial where no candidate
  meets them is *infeasible*: it serves no tokens (``slo_met`` 0) and its columns
  describe the fitting candidate with the lowest TPOT.
* ``"median"``: one plan chosen at the median inputs
  (:func:`~._roofline_serving.choose_serving`) serves every trial.
* ``"quantile"``: one plan, chosen by the per-trial rule at pessimistic inputs
  (:func:`pessimistic_inputs`), serves every trial, disaggregated with the prefill share
  it was planned with: a plan provisioned in advance.

Cost: the candidates are the searched serving modes x the candidate layouts (pairs of
them for disaggregated serving), and the layouts are at most the tensor degrees that
divide the model's dimensions x the attention modes (``pipeline`` at most the layers):
never more with the instance size or an input's value. Each layout is evaluated once per
block of trials (vectorised); a disaggregated pair only combines its prefill pass and its
decode evaluation.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..analytic import serving as sv
from ..errors import InputError, Problem
from ..scenario import Scenario
from ..scenario.sampling import TrialInputs, quantile_inputs
from ._roofline_layout import candidate_layouts, _degraded_layouts, evaluate, rates_of
from ._roofline_layout import capacity_table as _static_capacity_table
from ._roofline_serving import Disaggregated, Plan, chosen_plan, disaggregated_of, evaluate_continuous, evaluate_plan, prefill_pass

#: Roofline inputs whose larger value lowers throughput (latencies and overheads): the
#: pessimistic side of ``workload.plan = "quantile"`` is their upper quantile. Every other
#: roofline input (efficiencies, peaks, bandwidths, HBM, SLOs) is taken at its lower one.
HIGHER_IS_SLOWER = ("workload.collective_start_us", "workload.hop_latency_us", "workload.scale_out_hop_us", "workload.nccl_start_us", "workload.step_overhead_ms", "workload.layer_overhead_us")

def serving_modes(scenario: Scenario) -> tuple[str, ...]:
    """The modes searched: ``workload.serving``, or all of them for "auto"."""
    mode = scenario.workload.serving
    return sv.SERVING_MODES if mode == "auto" else (mode,)


@lru_cache(maxsize=64)
def candidates(scenario: Scenario) -> tuple[Plan, ...]:
    """Every plan searched, in tie-break order: modes in :data:`~mcengine.analytic.serving.SERVING_MODES`
    order, layouts in :func:`~._roofline_layout.candidate_layouts` order (disaggregated:
    decode layout, then prefill layout)."""
    layouts = candidate_layouts(scenario)
    plans: list[Plan] = []
    for mode in serving_modes(scenario):
        if mode == "disaggregated":
            plans += [Plan(mode, decode, pre) for decode in layouts for pre in layouts]
        else:
            plans += [Plan(mode, layout) for layout in layouts]
    return tuple(plans)


def evaluate_candidates(scenario: Scenario, inputs: TrialInputs) -> list:
    """The evaluation of every plan of :func:`candidates` for every trial of ``inputs``
    (disaggregated at each trial's balanced prefill share)."""
    layouts = candidate_layouts(scenario)
    modes = serving_modes(scenario)
    statics = [evaluate(scenario, layout, inputs, within_memory=True) for layout in layouts] if "static" in modes else [None] * len(layouts)
    out: list = []
    for mode in modes:
        if mode == "static":
            out += statics
        elif mode == "continuous":
            out += [evaluate_continuous(scenario, layout, inputs, within_memory=True) for layout in layouts]
        else:  # a decode instance's memory and TPOT limits are the static evaluation's
            decodes = [evaluate(scenario, layout, inputs, prefills=False, within_memory=True, limits_of=e) for layout, e in zip(layouts, statics)]
            passes = [prefill_pass(scenario, layout, inputs) for layout in layouts]
            rates = rates_of(scenario, inputs)
            out += [disaggregated_of(scenario, pre_layout, x, decode, inputs, rates=rates) for decode in decodes for pre_layout, x in zip(layouts, passes)]
    return out


def served_tokens(e) -> np.ndarray:
    """Output tokens/s of the instance where the evaluation ``e`` fits and meets both SLOs,
    ``-inf`` where it does not (so that any serving plan beats it)."""
    return np.where(e.fits & e.slo_met, e.tokens_per_s_instance, -np.inf)


@dataclass(frozen=True)
class PlannedBlock:
    """The plan each trial of a block serves: ``index`` (int64, (n,)) into ``plans``,
    ``feasible`` (bool, (n,): some plan meets the trial's SLOs), and every candidate's
    evaluation (the chosen one is gathered per trial by :meth:`column`)."""

    plans: tuple[Plan, ...]
    index: np.ndarray
    feasible: np.ndarray
    evaluations: list

    def column(self, name: str) -> np.ndarray:
        """Per-trial ``name`` of each trial's plan: a property every evaluation type has
        (``tokens_per_s_instance``, ``tokens_per_s_per_gpu``, ``ttft_s``, ``tpot_s``,
        ``batch``, ``slo_met``, ``busy_fraction``, ``fits``)."""
        n = self.index.size
        dtype = np.asarray(getattr(self.evaluations[int(self.index[0])], name)).dtype
        out = np.empty(n, dtype=dtype)
        for k in np.unique(self.index):
            rows = self.index == k
            out[rows] = np.broadcast_to(np.asarray(getattr(self.evaluations[int(k)], name)), (n,))[rows]
        return out

    def plan_of(self, trial: int) -> Plan:
        return self.plans[int(self.index[trial])]


def plan_per_trial(scenario: Scenario, inputs: TrialInputs) -> PlannedBlock:
    """Each trial's best plan (module docstring). Raises InputError when in some trial no
    candidate fits the weights and a batch in HBM."""
    plans = candidates(scenario)
    evaluations = evaluate_candidates(scenario, inputs)
    tokens = np.stack([np.broadcast_to(served_tokens(e), (inputs.n,)) for e in evaluations])
    best = np.argmax(tokens, axis=0)
    feasible = np.isfinite(tokens[best, np.arange(inputs.n)])
    if not feasible.all():
        fits = np.stack([np.broadcast_to(e.fits, (inputs.n,)) for e in evaluations])
        if not fits.any(axis=0).all():
            i = int(np.argmin(fits.any(axis=0)))
            room = max(int(np.broadcast_to(_sequences_that_fit(e), (inputs.n,))[i]) for e in evaluations)
            if scenario.workload.batch != "auto" and room >= 1:  # the weights fit: the fixed batch does not
                raise InputError(Problem(
                    "workload.batch", scenario.workload.batch,
                    f"in trial {inputs.trial_start + i} at most {room} sequences fit HBM beside the weights in any plan "
                    f"(cluster.instance_gpus = {scenario.cluster.instance_gpus}); allowed: a batch every trial fits, or \"auto\""))
            raise InputError(Problem(
                "gpu.hbm_gb", float(np.broadcast_to(inputs["gpu.hbm_gb"], (inputs.n,))[i]),
                f"in trial {inputs.trial_start + i} no plan fits the weights, a batch's KV cache and a prefill chunk in HBM "
                f"(workload.hbm_usable_fraction, workload.prefill_chunk_tokens, cluster.instance_gpus = {scenario.cluster.instance_gpus}); "
                "allowed: inputs whose whole range fits them"))
        tpot = np.stack([np.where(f, np.broadcast_to(e.tpot_s, (inputs.n,)), np.inf) for f, e in zip(fits, evaluations)])
        best = np.where(feasible, best, np.argmin(tpot, axis=0))
    return PlannedBlock(plans, best.astype(np.int64), feasible, evaluations)


def _sequences_that_fit(evaluation) -> np.ndarray:
    """Per trial, the sequences whose KV cache fits HBM beside the weights in an evaluated
    plan (a disaggregated plan's decode instances hold the sequences)."""
    holder = evaluation.decode if isinstance(evaluation, Disaggregated) else evaluation
    return holder.batch_memory


def pessimistic_inputs(scenario: Scenario, q: float) -> TrialInputs:
    """One trial with every input at its ``q`` quantile, those of :data:`HIGHER_IS_SLOWER`
    at ``1 - q`` (``q`` < 0.5: a slower world than the median)."""
    inputs = scenario.inputs()
    return quantile_inputs(scenario, q, {key: 1.0 - q for key in HIGHER_IS_SLOWER if key in inputs})


@lru_cache(maxsize=64)
def quantile_plan(scenario: Scenario) -> tuple[Plan, float | None]:
    """``workload.plan = "quantile"``: the per-trial rule's plan at
    :func:`pessimistic_inputs` (``workload.plan_quantile``) and, disaggregated, its prefill
    share there (None otherwise). Raises InputError when the model fits no plan there."""
    at = pessimistic_inputs(scenario, scenario.workload.plan_quantile.value)
    block = plan_per_trial(scenario, at)
    plan = block.plan_of(0)
    share = float(block.evaluations[int(block.index[0])].prefill_share[0]) if plan.mode == "disaggregated" else None
    return plan, share


def plan_at(scenario: Scenario, inputs: TrialInputs) -> tuple[Plan, object]:
    """The plan in use at the one trial ``inputs`` (e.g. the median, for ``mcengine
    roofline``) under ``workload.plan``, with its evaluation there."""
    mode = scenario.workload.plan
    if mode == "per_trial":
        plan = plan_per_trial(scenario, inputs).plan_of(0)
        return plan, evaluate_plan(scenario, plan, inputs)
    plan, share = chosen_plan(scenario) if mode == "median" else quantile_plan(scenario)
    return plan, evaluate_plan(scenario, plan, inputs, share)


def best_by_mode(scenario: Scenario, inputs: TrialInputs) -> dict[str, tuple[Plan, object] | None]:
    """At the one trial ``inputs``: each searched mode's best plan by the per-trial rule
    (the most tokens/s among the plans that fit and meet the SLOs, else the fitting one
    with the lowest TPOT) with its evaluation (every batch limit searched in full); None
    for a mode where no plan fits."""
    plans, evaluations = candidates(scenario), evaluate_candidates(scenario, inputs)
    out: dict[str, tuple[Plan, object] | None] = {}
    for mode in serving_modes(scenario):
        ours = [(p, e) for p, e in zip(plans, evaluations) if p.mode == mode and bool(np.ravel(e.fits)[0])]
        serving = [(p, e) for p, e in ours if bool(np.ravel(e.slo_met)[0])]
        if serving:
            best = max(serving, key=lambda pe: float(np.ravel(pe[1].tokens_per_s_instance)[0]))[0]
        elif ours:
            best = min(ours, key=lambda pe: float(np.ravel(pe[1].tpot_s)[0]))[0]
        out[mode] = (best, evaluate_plan(scenario, best, inputs)) if ours else None
    return out


def _resized(scenario: Scenario, gpus: int) -> Scenario:
    """``scenario`` with instances of ``gpus`` GPUs whose layout is searched ("auto"
    degrees: a degraded instance re-plans whatever degrees the full one fixes)."""
    w = dataclasses.replace(scenario.workload, tensor_parallel="auto", pipeline_parallel="auto")
    return dataclasses.replace(scenario, cluster=dataclasses.replace(scenario.cluster, instance_gpus=gpus), workload=w)


def layout_sizes(scenario: Scenario) -> list[int]:
    """The instance sizes ``t x p <= instance_gpus`` on which some layout can shard the model
    (:func:`~._roofline_layout._degraded_layouts`): at most (tensor degrees) x layers of
    them, whatever ``instance_gpus``."""
    return sorted({layout.gpus for layout in _degraded_layouts(scenario)})


def best_tokens(scenario: Scenario, inputs: TrialInputs) -> float:
    """The most output tokens/s of one instance (``cluster.instance_gpus`` GPUs) at the one
    trial ``inputs`` by the per-trial rule; 0 where no plan meets the SLOs or fits."""
    tokens = max(float(np.ravel(served_tokens(e))[0]) for e in evaluate_candidates(scenario, inputs))
    return max(tokens, 0.0)


@lru_cache(maxsize=64)
def capacity_table(scenario: Scenario) -> np.ndarray:
    """``float64[n + 1]``: the share of an instance's full throughput it keeps with ``k`` of
    its ``n = instance_gpus`` GPUs lost and resharded (docs/model.md#reshard), at the median
    inputs (one table per scenario, whatever ``workload.plan``; "median" keeps the static
    layout table of :func:`~._roofline_layout.capacity_table`).

    ``table[k] = min(1, thr(n - k) / full)``: ``full`` is the output tokens/s of the plan in
    use (:func:`plan_at`); ``r(g)`` the best tokens/s by the per-trial rule of an instance of
    exactly ``g`` GPUs, in the same searched serving modes (0 if no plan meets the SLOs);
    ``thr(m)`` the best set of replicas that fits ``m`` GPUs: ``q = floor(m / g)`` replicas of
    one size ``g`` plus the best single instance on the ``m - q g`` GPUs left over. The
    sizes ``g`` are :func:`layout_sizes` (independent of ``n``), so the cost is bounded
    by the model's divisors and layers. ``table[0] = 1``.
    """
    if scenario.workload.plan == "median":
        return _static_capacity_table(scenario)
    n = scenario.cluster.instance_gpus
    median = quantile_inputs(scenario, 0.5)
    _, e = plan_at(scenario, median)
    full = float(np.ravel(served_tokens(e))[0])
    if not full > 0.0:
        return np.concatenate([[1.0], np.zeros(n)])
    single = np.zeros(n + 1)  # r(g) at the sizes with a layout
    for g in layout_sizes(scenario):
        single[g] = best_tokens(_resized(scenario, g), median) if g != n else full
    best_single = np.maximum.accumulate(single)  # the best single instance on at most m GPUs
    m = np.arange(n + 1)
    thr = best_single.copy()
    for g in np.flatnonzero(single > 0.0):
        thr = np.maximum(thr, (m // g) * single[g] + best_single[m % g])
    table = np.minimum(1.0, thr[::-1] / full)
    table[0] = 1.0
    return table
