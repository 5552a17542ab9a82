"""The step times the per-mode load models read (docs/load.md#chain), per trial, of the
plan each trial serves.

The fast models of serving under load (:func:`mcengine.analytic.queue_static.static_at_load`,
:func:`~mcengine.analytic.queue_continuous.continuous_at_load`,
:func:`~mcengine.analytic.queue_disaggregated.disaggregated_at_load`) take a plan's step times at
batch 1 and at its top batch and are linear between them. These are the same closed
forms the simulator's step tables are made of (:func:`mcengine.standalone.serve.serving_system`),
evaluated for every trial at once, at each trial's own batch:

* static: a decode step of 1 and of ``B`` sequences at the mean context
  (:func:`~mcengine.analytic.roofline.steps.decode_step`) and the TTFT of a pass of 1 and
  of ``B`` prompts (:func:`~mcengine.analytic.roofline.steps.batch_time_to_first_token`);
* continuous: the plan's steady chunk ``c = min(workload.prefill_chunk_tokens, B S / O)``
  and, at ``low = min(pipeline stages, B)`` and at ``B``, a pure decode step, a step
  carrying a whole chunk and one carrying a lone prompt's last chunk, ``S - (ceil(S / c) -
  1) c`` tokens (:func:`mcengine.analytic.serving.continuous_step`);
* disaggregated: the decode instance's decode step at 1 and ``B``, and a prefill pass of 1
  and of ``P`` prompts: its instance time (:func:`~mcengine.analytic.roofline.steps.prefill`),
  its latency and the KV transfer (:func:`mcengine.analytic.serving.kv_transfer_s`), with
  the plan's prefill share.

Each chosen plan is evaluated once for the block (vectorised over trials) and its rows
taken where the trials serve it: never more work with an input's value.
"""

from __future__ import annotations

import functools

import numpy as np

from ...analytic import serving as sv
from ...analytic.queue_spread import tail_chunk_tokens
from ...columns import FLEET_SEARCH_PREFIX, LOAD_STEPS_PREFIX
from ...analytic.roofline import steps as rt
from ...scenario import Scenario
from ...scenario.sampling import TrialInputs, per_trial
from .layout import lengths_of, rates_of
from .serving import kv_rates

#: Prefix of the step-time columns (``load_steps.decode_1_s``), only with a demand.
PREFIX = LOAD_STEPS_PREFIX
#: The terms, in order (every mode writes every term; those a mode does not read are 0).
TERMS = ("mode", "batch", "decode_1_s", "decode_s", "prefill_1_s", "prefill_s", "low_batch", "chunk_tokens", "chunk_step_1_s", "step_s",
         "prefill_batch", "busy_1_s", "busy_s", "transfer_1_s", "transfer_s", "prefill_share", "prompt_tokens", "tail_step_1_s", "tail_step_s")


def plan_steps(scenario: Scenario, e, mode: str, inputs: TrialInputs, kept: dict | None = None) -> dict[str, np.ndarray]:
    """The :data:`TERMS` of the evaluation ``e`` of a plan in serving ``mode`` (module
    docstring), each an (n,) float array. ``kept`` (a dict kept for the plans of one
    candidate table, :func:`row_steps`; every key a pair ``(kind, what)``): the trials' rates
    (``("rates", None)``) and lengths (:func:`kept_lengths`), and a disaggregated plan's decode terms by its
    decode layout (``("decode", layout)``) and prefill terms by its prefill layout
    (``("prefill", layout)``), made for the first pair of each and read by the table's
    other pairs of it (in a table a layout's decode batch and prefill pass are the same in
    every pair)."""
    n, m = inputs.n, scenario.workload.model
    kept = {} if kept is None else kept
    if ("rates", None) not in kept:
        kept["rates", None] = rates_of(scenario, inputs)
    rates, lengths = kept["rates", None], kept_lengths(scenario, inputs, kept)
    s, context = lengths.prompt_tokens, lengths.context_tokens
    one = np.ones(n)
    out = {name: np.zeros(n) for name in TERMS}

    def put(name, x):
        out[name] = per_trial(x, n)

    put("mode", sv.SERVING_MODES.index(mode))  # 0 static, 1 continuous, 2 disaggregated
    put("prompt_tokens", s)
    b = np.asarray(e.batch, float)
    put("batch", b)
    if mode == "continuous":
        low = np.minimum(float(e.layout.pipeline), b)
        chunk = np.minimum(scenario.workload.prefill_chunk_tokens, b * s / sv.decode_steps(lengths.output_tokens, rates))
        put("low_batch", low)
        put("chunk_tokens", chunk)
        put("decode_1_s", rt.decode_step(m, e.layout, low, context, rates).total_s)
        put("decode_s", rt.decode_step(m, e.layout, b, context, rates).total_s)
        put("chunk_step_1_s", sv.continuous_step(m, e.layout, low, s, low * s / chunk, rates, context).total_s)
        put("step_s", sv.continuous_step(m, e.layout, b, s, b * s / chunk, rates, context).total_s)
        tail = tail_chunk_tokens(s, chunk)
        put("tail_step_1_s", sv.continuous_step(m, e.layout, low, s, low * s / tail, rates, context).total_s)
        put("tail_step_s", sv.continuous_step(m, e.layout, b, s, b * s / tail, rates, context).total_s)
        return out
    put("low_batch", one)

    def part(key, terms):  # a disaggregated pair's terms of one of its layouts: kept for the table's other pairs of it
        if mode != "disaggregated":
            return terms()
        if key not in kept:
            kept[key] = terms()
        return kept[key]

    out.update(part(("decode", e.layout), lambda: {"decode_1_s": per_trial(rt.decode_step(m, e.layout, one, context, rates).total_s, n),
                                                   "decode_s": per_trial(rt.decode_step(m, e.layout, b, context, rates).total_s, n)}))
    if mode == "static":
        put("prefill_1_s", rt.batch_time_to_first_token(m, e.layout, one, s, rates).total_s)
        put("prefill_s", rt.batch_time_to_first_token(m, e.layout, b, s, rates).total_s)
        return out

    def prefill_terms() -> dict[str, np.ndarray]:
        got, p, kv = {}, np.asarray(e.prefill_batch, float), kv_rates(scenario, rates)
        for k, end in ((one, "1_s"), (p, "s")):
            busy = rt.prefill(m, e.prefill_layout, k, s, rates)
            got["busy_" + end] = per_trial(busy.total_s, n)
            got["prefill_" + end] = per_trial(rt.batch_time_to_first_token(m, e.prefill_layout, k, s, rates, busy).total_s, n)
            got["transfer_" + end] = per_trial(sv.kv_transfer_s(m, s, scenario.cluster.instance_gpus, kv, k), n)
        got["prefill_batch"] = per_trial(p, n)
        return got

    out.update(part(("prefill", e.prefill_layout), prefill_terms))
    put("prefill_share", e.prefill_share)
    return out


def kept_lengths(scenario: Scenario, inputs: TrialInputs, kept: dict):
    """The trials' request lengths (:func:`~.layout.lengths_of`), made once for a candidate
    table and kept in its ``steps`` (``("lengths", None)``, :func:`plan_steps`' ``kept``):
    the choice under a demand and the step times of its rows read the same."""
    if ("lengths", None) not in kept:
        kept["lengths", None] = lengths_of(scenario, inputs)
    return kept["lengths", None]


def planned_steps(scenario: Scenario, block, inputs: TrialInputs) -> dict[str, np.ndarray]:
    """The ``load_steps.*`` columns of a :class:`~.planner.PlannedBlock`: each trial's own
    plan's :func:`plan_steps`, each plan served in the block evaluated once; with a fleet
    chosen under the demand, its search too (``fleet_search.*``,
    :data:`~mcengine.columns.FLEET_SEARCH_PREFIX`: the fewest up instances and the rates
    the planner searched them at, which the load stage takes where its own rates are those),
    and with a fixed cluster under the demand the capacity at SLO of the plan of most
    goodput (``fleet_search.capacity_tokens_per_s``, 0 where the trial's plan is not that)."""
    n = inputs.n
    out = {PREFIX + name: np.zeros(n) for name in TERMS}
    for k in np.unique(block.index):
        rows = block.index == k
        for name, values in row_steps(scenario, block.table, int(k), inputs).items():
            out[PREFIX + name][rows] = values[rows]
    if block.fleet is not None:
        out |= {FLEET_SEARCH_PREFIX + name: x for name, x in block.fleet.arrays().items()}
    if block.capacity is not None:
        out[FLEET_SEARCH_PREFIX + "capacity_tokens_per_s"] = block.capacity
    return out


def one_plan_steps(scenario: Scenario, e, mode: str, inputs: TrialInputs) -> dict[str, np.ndarray]:
    """The ``load_steps.*`` columns of one plan serving every trial."""
    return {PREFIX + name: values for name, values in plan_steps(scenario, e, mode, inputs).items()}


def row_steps(scenario: Scenario, table, k: int, inputs: TrialInputs) -> dict[str, np.ndarray]:
    """The :func:`plan_steps` of row ``k`` of a :class:`~.planner.CandidateTable` for every
    trial of its block, made when first asked and kept in the table (``table.steps``, by
    ``("row", k)``, beside the terms its disaggregated pairs share, :func:`plan_steps`'
    ``kept``; a pair not yet evaluated read from its block's rows,
    :meth:`~.planner.CandidateTable.steps_plan`): the planner's choice under a demand and
    the columns of the plans chosen read the same rows."""
    if ("row", k) not in table.steps:
        table.steps["row", k] = plan_steps(scenario, table.steps_plan(k), table.plans[k].mode, inputs, table.steps)
    return table.steps["row", k]


def candidate_steps(scenario: Scenario, table, inputs: TrialInputs):
    """``steps_of(k)``: the :func:`plan_steps` of row ``k`` of a
    :class:`~.planner.CandidateTable` for every trial of the block (:func:`row_steps`),
    evaluated when the planner's choice under a demand first asks for that row
    (:mod:`.planner_load`: only the rows its screen leaves to the per-mode model) and kept
    with the table."""
    return functools.partial(row_steps, scenario, table, inputs=inputs)
