"""The per-trial search: the best plan of each trial (docs/model.md#plan).

A :class:`~.serving.Plan` is a serving mode with its layout(s) (tensor x
pipeline, attention mode, all-reduce algorithm; disaggregated: a prefill and a decode
layout). Its batch is set inside the evaluators (the largest the memory, chunk and SLO
limits allow with ``workload.batch = "auto"``). This module only chooses; the closed
forms that time one plan are :mod:`.layout` and :mod:`.serving`; the plan rules of
``workload.plan`` that call it (in every trial, or once at pessimistic inputs) and the
median rule's own search are :mod:`.rules` and :mod:`.median_plan`.

In a block of trials, each trial's plan is the best by :func:`objective` among the
candidates that fit HBM and meet that trial's TPOT and TTFT SLOs: the least cost per
token (``workload.plan_objective = "cost"``, given the trial's econ weight) or the most
output tokens/s of the instance. Exact ties go to the earlier candidate
(:func:`candidates` order). A trial where no candidate meets them is *infeasible*: it
serves no tokens (``slo_met`` 0) and its columns describe the fitting candidate with the
lowest TPOT. A choice made ahead of the trials (the quantile plan, ``mcengine roofline``,
the reshard table) takes the same objective, with the econ weight at its own inputs,
which the pipeline computes and hands in (:class:`~.rules.AheadWeights`).

Cost: the candidates are the searched serving modes x the candidate layouts (pairs of
them for disaggregated serving), and the layouts are at most the tensor degrees that
divide the model's dimensions x the attention modes (``pipeline`` at most the layers):
never more with the instance size or an input's value. Each layout is evaluated once per
block of trials (vectorised); a disaggregated pair only combines its prefill pass and its
decode evaluation, for every prefill layout at once (:class:`CandidateTable`).
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ...analytic import serving as sv
from ...analytic.roofline import limits as rl
from ...errors import InputError, Problem
from ...kernels.plan import disaggregated_rows, fold_best
from ...scenario import Scenario
from ...scenario.sampling import TrialInputs, quantile_inputs
from ...scenario.sections.workload import SATURATE
from ...units import MS_PER_S
from .layout import candidate_layouts, degraded_layouts, evaluate, lengths_label, lengths_of, rates_of
from .load_steps import candidate_steps, kept_lengths
from .planner_load import FleetSearch, choose_jointly, most_goodput
from .serving import Disaggregated, Plan, disaggregated_of, evaluate_continuous, evaluate_plan, kv_rates, prefill_pass, ttft_slo_ms

#: Roofline inputs whose larger value lowers throughput (latencies and overheads): the
#: pessimistic side of ``workload.plan = "quantile"`` is their upper quantile. Every other
#: roofline input (efficiencies, peaks, bandwidths, HBM, SLOs) is taken at its lower one.
HIGHER_IS_SLOWER = ("workload.collective_start_us", "workload.hop_latency_us", "workload.scale_out_hop_us", "econ.switch_latency_us", "workload.nccl_start_us", "workload.step_overhead_ms", "workload.layer_overhead_us")

def serving_modes(scenario: Scenario) -> tuple[str, ...]:
    """The modes searched: ``workload.serving``, or all of them for "auto"."""
    mode = scenario.workload.serving
    return sv.SERVING_MODES if mode == "auto" else (mode,)


@lru_cache(maxsize=64)
def candidates(scenario: Scenario) -> tuple[Plan, ...]:
    """Every plan searched, in tie-break order: modes in :data:`~mcengine.analytic.serving.SERVING_MODES`
    order, layouts in :func:`~.layout.candidate_layouts` order (disaggregated:
    decode layout, then prefill layout)."""
    layouts = candidate_layouts(scenario)
    plans: list[Plan] = []
    for mode in serving_modes(scenario):
        if mode == "disaggregated":
            plans += [Plan(mode, decode, pre) for decode in layouts for pre in layouts]
        else:
            plans += [Plan(mode, layout) for layout in layouts]
    return tuple(plans)


@dataclass(frozen=True)
class CandidateTable:
    """Every plan of :func:`candidates` evaluated for a block of ``n`` trials: per plan
    and trial the ``served`` output tokens/s of the instance (``-inf`` where the plan does
    not fit or misses an SLO, :func:`served_tokens`), the ``busy`` fraction of the power
    model, ``fits`` and ``tpot_s``, kept as ``blocks`` of rows ((r, n) arrays of those
    four, a disaggregated block as the terms they are made of, :class:`PairRows`, and under a demand each plan's ``ttft_s`` and ``batch``, rows in :func:`candidates` order: one per static or continuous layout, one per
    decode layout's disaggregated pairs; ``busy`` None where no plan of the block serves
    any trial, ``served`` then all ``-inf``); every plan's whole evaluation on demand
    (:meth:`evaluation`: made again by ``builders`` when first asked for, then kept in
    ``built``).
    ``holders``: the sequences that fit beside the weights per evaluated layout
    (:func:`_sequences_that_fit`), for the error naming a block no plan fits.
    ``steps``: the step times of the load models, kept when first asked, keyed by pairs
    ``(kind, what)`` (:func:`.load_steps.row_steps`: ``("row", k)``; the terms they share,
    :func:`.load_steps.plan_steps`: the trials' rates and lengths (``("rates", None)``,
    ``("lengths", None)``), a disaggregated plan's
    terms by ``("decode", layout)`` and ``("prefill", layout)``)."""

    plans: tuple[Plan, ...]
    blocks: list
    holders: list
    builders: list
    built: dict = dataclasses.field(default_factory=dict)
    steps: dict = dataclasses.field(default_factory=dict)

    def stacked(self, field: int) -> np.ndarray:
        """One of the (c, n) arrays (0 ``served``, 2 ``fits``, 3 ``tpot_s``; under a demand 4
        ``ttft_s``, 5 ``batch``), from the blocks
        of rows the table keeps (the choice reads them block by block). Not ``busy`` (1): a
        block that serves no trial keeps None there, and only the choice reads it."""
        return np.concatenate([block[field] for block in self.blocks])

    @property
    def served(self) -> np.ndarray:
        return self.stacked(0)

    @property
    def fits(self) -> np.ndarray:
        return self.stacked(2)

    @property
    def tpot_s(self) -> np.ndarray:
        return self.stacked(3)

    def evaluation(self, k: int):
        """Plan ``k``'s evaluation over the block (built once, when first asked for)."""
        if k not in self.built:
            self.built[k] = self.builders[k]()
        return self.built[k]

    def steps_plan(self, k: int):
        """What the load models' step times read of plan ``k`` (:func:`.load_steps.plan_steps`)
        not yet evaluated, from its block's rows under a demand: a disaggregated pair of a
        block keeping its prefill batches (:class:`PairSteps`: its balanced share from the
        same rates as its evaluation's), a static or continuous plan from the batch its
        block keeps (:class:`BatchSteps`: its evaluation's, without the batch searches made
        again); any other plan its :meth:`evaluation`."""
        start = 0
        for block in self.blocks:
            rows = block_rows(block)
            if k < start + rows:
                break
            start += rows
        j, plan = k - start, self.plans[k]
        if k in self.built:
            return self.evaluation(k)
        if not isinstance(block, PairRows):
            return BatchSteps(plan.layout, block[5][j]) if len(block) > 5 and plan.mode != "disaggregated" else self.evaluation(k)
        if block.prefill_batch is None:
            return self.evaluation(k)
        return PairSteps(plan.layout, plan.prefill_layout, block.rest[3][j], block.prefill_batch[j], sv.prefill_share(block.prefill[0][j], block.decode[0]))


@dataclass(frozen=True)
class BatchSteps:
    """A static or continuous plan as the load models' step times read it
    (:meth:`CandidateTable.steps_plan`): its ``layout`` and its ``batch`` per trial."""

    layout: object
    batch: np.ndarray


@dataclass(frozen=True)
class PairSteps:
    """A disaggregated pair as the load models' step times read it
    (:meth:`CandidateTable.steps_plan`): its decode ``layout`` and ``prefill_layout``, its
    decode instance's ``batch``, its prefill pass's ``prefill_batch`` and its balanced
    ``prefill_share`` ``f = r_d / (r_p + r_d)`` (:func:`~mcengine.analytic.serving.prefill_share`),
    per trial."""

    layout: object
    prefill_layout: object
    batch: np.ndarray
    prefill_batch: np.ndarray
    prefill_share: np.ndarray


def evaluate_candidates(scenario: Scenario, inputs: TrialInputs, screen: bool = True) -> CandidateTable:
    """The :class:`CandidateTable` of ``inputs`` (disaggregated at each trial's balanced
    prefill share). Each layout is evaluated once per mode; the disaggregated pairs of a
    decode layout with every prefill layout are combined in one kernel pass per decode
    layout (:func:`~.serving.disaggregated_of`'s formulas, elementwise, so its
    numbers to the bit). The table keeps the rows the choice reads, not the evaluations
    they come from: a plan's whole evaluation is made again when first asked for (the
    same functions of the same inputs, so the same numbers), which in a block is only
    the few plans its trials choose (docs/performance.md#memory).

    ``screen``: at saturation, with every mode searched, a static plan that
    :func:`_beaten` proves loses to a continuous plan in every trial, whatever the cost
    weight, is not evaluated: its row serves no trial (``served`` ``-inf``, ``busy``
    None, its ``fits`` those of its layout's decode instance, the same since both fit
    where ``B_max >= 1`` and the static batch is at most the decode instance's, its
    ``tpot_s`` ``+inf``: read only in a trial no plan serves, and each trial has a plan
    that serves beating it). Every choice of the
    largest :func:`objective` is then the same (:func:`_best_rows`); a caller reading
    a static plan's rows themselves (:func:`best_by_mode`) asks for ``screen = False``."""
    layouts = candidate_layouts(scenario)
    modes = serving_modes(scenario)
    n = inputs.n
    rates = _common_across_trials(rates_of(scenario, inputs))

    def rows(x) -> np.ndarray:  # (an array of the trials kept as it is: the choice's kernels read it without a copy)
        return x if isinstance(x, np.ndarray) and x.shape == (n,) else np.broadcast_to(x, (n,))

    shared = {kind: rl.SharedColumns(rates, n) for kind in ("static", "decode", "continuous", "pass")}  # each kind of search's tables share their layout-free columns

    def static(layout, limits=None):
        return evaluate(scenario, layout, inputs, within_memory=True, limits_of=limits, rates=rates, shared=shared["static"])

    def continuous(layout):
        return evaluate_continuous(scenario, layout, inputs, within_memory=True, rates=rates, shared=shared["continuous"])

    def decode(layout):  # a decode instance's memory and TPOT limits, which the static plan of its layout reuses
        return evaluate(scenario, layout, inputs, prefills=False, within_memory=True, rates=rates, shared=shared["decode"])

    def passed(layout):
        return prefill_pass(scenario, layout, inputs, rates, shared["pass"])

    remade: dict = {}  # a disaggregated plan's parts made again, by (part, layout): the pairs chosen share them

    def disaggregated(prefill_layout, decode_layout):
        if ("pass", prefill_layout) not in remade:
            remade["pass", prefill_layout] = passed(prefill_layout)
        if ("decode", decode_layout) not in remade:
            remade["decode", decode_layout] = decode(decode_layout)
        return disaggregated_of(scenario, prefill_layout, remade["pass", prefill_layout], remade["decode", decode_layout], inputs, rates=rates)

    under_load = scenario.workload.load.demand != SATURATE  # the choice under a demand reads each plan's TTFT and batch too
    decodes = [decode(layout) for layout in layouts] if "disaggregated" in modes else None
    parts: dict = {mode: ([], [], []) for mode in modes}  # each mode's blocks, holders and builders

    def add(mode: str, e, build, block=None) -> None:
        """A row of ``mode``: evaluation ``e``'s columns, or the ``block`` given (a screened
        static plan's, holding its layout's decode instance ``e``), and how to rebuild it."""
        if block is None:
            block = (rows(served_tokens(e))[None], rows(e.busy_fraction)[None], rows(e.fits)[None], rows(e.tpot_s)[None])
            block = (*block, rows(e.ttft_s)[None], rows(e.batch)[None]) if under_load else block
        blocks, holders, builders = parts[mode]
        blocks.append(block)
        holders.append(_sequences_that_fit(e))
        builders.append(build)

    if "continuous" in modes:
        for layout in layouts:
            add("continuous", continuous(layout), lambda lay=layout: continuous(lay))
    if "static" in modes:
        rivals = _rivals(parts["continuous"][0]) if screen and "continuous" in modes and decodes is not None and not under_load else []
        for i, layout in enumerate(layouts):
            limits = None if decodes is None else decodes[i]
            if rivals and _beaten(scenario, limits, rivals):  # (at saturation: no TTFT or batch columns)
                screened = (np.broadcast_to(-np.inf, (1, n)), None, rows(limits.fits)[None], np.broadcast_to(np.inf, (1, n)))
                add("static", limits, lambda lay=layout: static(lay), screened)
            else:
                add("static", static(layout, limits), lambda lay=layout: static(lay))
    if decodes is not None:
        passes = [passed(layout) for layout in layouts]
        blocks, holders, builders = parts["disaggregated"]
        blocks += _disaggregated_pairs(scenario, passes, decodes, inputs, rates, under_load)
        for layout, d in zip(layouts, decodes):
            holders.append(_sequences_that_fit(d))
            builders += [lambda dec=layout, pre=pre: disaggregated(pre, dec) for pre in layouts]
        del decodes, passes
    for kept in shared.values():  # (the table keeps no search's table: a plan made again makes its own)
        kept.clear()
    blocks, holders, builders = ([x for mode in modes for x in parts[mode][j]] for j in range(3))
    return CandidateTable(candidates(scenario), blocks, holders, builders)


#: The relative margin by which :func:`_beaten` asks a plan to beat a static plan's
#: bounds: far above the rounding of the few float operations behind either side
#: (about 1e-15 each), so that what is proved in real numbers holds for the floats the
#: choice compares.
SCREEN_MARGIN = 1e-9


def _beaten(scenario: Scenario, decode, rivals: list) -> bool:
    """Whether in every trial some plan of ``rivals`` (:func:`_rivals`) beats every static
    plan of the layout of ``decode`` by :func:`objective` for every cost weight ``k >= 0`` (the tables are made
    before the weight is known; :func:`mcengine.stages.econ.plan_power_weight` is the
    dynamic energy over the fixed costs, never negative), and for ``"throughput"`` (``k
    = 0``): a plan serving ``s`` tokens/s at busy fraction ``u`` with ``s > U (1 + ε)``
    and ``s/u > V (1 + ε)`` (``U``, ``V`` :func:`static_bounds`, ``ε``
    :data:`SCREEN_MARGIN`) beats the static plan (``s' <= U``, ``s'/u' <= V``) for every
    ``k``: ``1/objective = 1/s + k u/s``, and ``1/s < 1/(s' (1 + ε))``, ``u/s < u'/(s' (1
    + ε))``, so its objective exceeds the static plan's by a factor above ``1 + ε``:
    strictly, also for the floats compared, so the static plan's earlier place in the
    tie-break order never matters. False for a mixture of experts (unbounded here)."""
    if scenario.workload.model.experts:
        return False
    bound, per_busy = (x * (1.0 + SCREEN_MARGIN) for x in static_bounds(decode))
    open_ = np.ones(np.shape(bound), bool)
    for served, ratio in rivals:
        open_ &= ~((served > bound) & (ratio > per_busy))
        if not open_.any():
            return True
    return False


def _rivals(blocks: list) -> list[tuple[np.ndarray, np.ndarray]]:
    """The rows of ``blocks`` (of a :class:`CandidateTable`) that serve some trial, as
    ``(served tokens/s, served / busy fraction)`` per trial, the most tokens/s on average
    first (:func:`_beaten` stops at the first rows that beat a plan in every trial)."""
    rows = [(block[0][0], block[0][0] / block[1][0]) for block in blocks if block[1] is not None]
    return sorted(rows, key=lambda row: -float(np.mean(np.where(np.isfinite(row[0]), row[0], 0.0))))


def static_bounds(decode) -> tuple[np.ndarray, np.ndarray]:
    """Per trial, ``(U, V)``: bounds on the output tokens/s and on the tokens per busy
    second (served over busy fraction) of the static plan of the layout of ``decode``
    (its decode-only evaluation, :func:`~.layout.evaluate` with ``prefills = False``
    and ``within_memory``), for a dense model (docs/performance.md#static-screen).

    Write ``T(B)`` for a phase's time of a batch ``B``
    (:func:`~mcengine.analytic.roofline.steps.prefill`,
    :func:`~mcengine.analytic.roofline.steps.decode_step`, ``total_s`` or ``busy_s``)
    in one trial. Call ``f`` *star-shaped* when ``f(λb) >= λ f(b)`` for ``0 <= λ <= 1``:
    constants ``>= 0``, linear terms, and sums, non-negative multiples, maxima and
    minima of star-shaped terms are star-shaped. On a dense model every term of a pass
    over ``b`` sequences per micro-batch is star-shaped once the busiest attention
    group's ``ceil(b/g)`` sequences (``g`` :attr:`~mcengine.analytic.roofline.model.Layout.groups`;
    with the heads sharded there is no ceiling, but with data-parallel attention at
    ``t = 1`` there is one, ``ceil(b)``, as ``b = B/p`` is fractional when pipelined)
    are read as ``b/g``: the FLOPs
    and KV bytes are linear in ``b`` and ``b/g``, the weights streamed do not depend on
    ``b``, every collective is ``α + k h + c M/W`` with ``M`` linear in them (the fastest
    of several is their minimum), the overheads are constants, and ``total =
    max(max(compute, memory), o comm) + (1 - o) comm + overhead``, ``busy = max(compute,
    memory)``. Pipelined over ``p`` stages, ``b = B/min(B, p)``: up to ``B = p`` the
    decode step is that of ``b = 1`` and the prefill's terms are ``B/p`` times those of
    ``b = 1`` (its step overhead a constant), from ``p`` on they are the star-shaped
    terms at ``b = B/p``; both pieces meet at ``B = p``. So that reading, ``L(B)``, is
    at most ``T(B)`` (every term rises with the sequences), ``L(B)/B`` never rises with
    ``B``, and ``L(B*) = T(B*)`` at a batch ``B*`` whose ``B*/p`` is a multiple of ``g``;
    and ``T`` itself never falls as ``B`` grows (each term rises with ``b``, ``ceil(b/g)``
    and the share ``min(B, p)/p``).

    The static plan's batch ``B = max(1, min(B_max, B_SLO, B_TTFT))`` (or the fixed
    batch) is at most the decode instance's ``C = max(1, min(B_max, B_SLO))`` (or the
    same fixed batch), whose phases ``decode`` holds. With ``B*`` the least multiple of
    ``g p`` at least ``C`` (``C`` itself with the heads sharded, where ``L = T`` at every
    batch), the static plan's tokens/s is

    ``B O / (T_pre(B) + O T_dec(B)) <= B* O / (L_pre(B*) + O L_dec(B*)) = B* O / (T_pre(B*) + O T_dec(B*))
    <= (B*/C) C O / (T_pre(C) + O T_dec(C)) = U``

    (``O`` output tokens; ``L/B`` falls from ``B`` to ``B*``, ``T`` rises from ``C`` to
    ``B*``), and by the same steps with ``busy`` its tokens per busy second (served over
    busy fraction) is at most ``V = (B*/C) C O / (busy_pre(C) + O busy_dec(C))``; where
    it serves no tokens its objective is ``-inf``."""
    layout, o = decode.layout, decode.output_tokens
    unit = layout.groups * layout.pipeline
    stretch = 1.0 if layout.attention == "tensor" else -(-decode.batch // unit) * unit / decode.batch
    return (stretch * (decode.batch * o) / (decode.prefill.total_s + o * decode.decode.total_s),
            stretch * (decode.batch * o) / (decode.prefill.busy_s + o * decode.decode.busy_s))


def _common_across_trials(rates):
    """``rates`` with each per-trial field whose value is the same in every trial (bit for
    bit: a fixed input) as one 0-d value: every formula then gives the same numbers,
    broadcast, without repeating that field's arithmetic per trial or indexing it in
    each batch search's step."""
    def common(v):
        if np.ndim(v) != 1 or v.size == 0:
            return v
        bits = np.ascontiguousarray(v, np.float64).view(np.int64)
        return v[0:1].reshape(()) if np.all(bits == bits[0]) else v

    return dataclasses.replace(rates, **{f: common(getattr(rates, f)) for f in rates.__dataclass_fields__})


def _disaggregated_pairs(scenario: Scenario, passes: list, decodes: list, inputs: TrialInputs, rates, under_load: bool = False) -> list:
    """Per decode evaluation in ``decodes``, the block of its pairs with every prefill
    pass of ``passes`` (rows: prefill layouts): :class:`~.serving.Disaggregated`'s
    properties at the balanced share, as a :class:`PairRows` (served tokens and busy
    fraction made from its prefill and decode terms when read, or by the choice into
    buffers it reuses for every block). A decode evaluation that serves no trial (it misses HBM or the
    TPOT SLO in every one) serves none in any pair: its block is a tuple whose served
    tokens are ``-inf`` without the pairs' arithmetic, its busy fraction None.
    ``under_load``: each pair's TTFT (the prefill pass's and the KV transfer) and batch
    (the decode instance's) too, for the choice under a demand (:mod:`.planner_load`)."""
    w, n, lengths = scenario.workload, inputs.n, lengths_of(scenario, inputs)
    s, g, o = lengths.prompt_tokens, scenario.cluster.instance_gpus, lengths.output_tokens

    def stack(xs) -> np.ndarray:
        return np.stack([np.broadcast_to(x, (n,)) for x in xs])

    kv = kv_rates(scenario, rates)
    send = stack([sv.kv_link_prompts_per_s(w.model, s, g, x.prefill, kv) for x in passes])
    r_p = np.minimum(stack([x.batch / x.prefill.total_s for x in passes]), send)
    pre_fits = stack([x.batch_memory >= 1 for x in passes])
    ttft_met = stack([x.ttft_s for x in passes]) * MS_PER_S <= ttft_slo_ms(scenario, inputs)
    pre_busy, pre_total = stack([x.prefill.busy_s for x in passes]), stack([x.prefill.total_s for x in passes])
    pre_ok = pre_fits & ttft_met
    prefill = tuple(_kernel_rows(x, (len(passes), n), x.dtype) for x in (r_p, pre_ok, pre_busy, pre_total))
    pair_ttft = stack([x.ttft.total_s + x.kv_transfer_s for x in passes]) if under_load else None
    pre_batch = stack([x.batch for x in passes]) if under_load else None
    out_tokens = _kernel_rows(o, (n,))
    out: list = []
    for decode in decodes:
        fits = np.broadcast_to(decode.fits, (len(passes), n)) & pre_fits
        tpot = np.broadcast_to(decode.decode.total_s, (len(passes), n))
        serves = np.broadcast_to(decode.fits & decode.slo_met, (n,))
        extra = (pair_ttft, np.broadcast_to(decode.batch, (len(passes), n))) if under_load else ()
        if not np.any(serves):
            out.append((np.broadcast_to(-np.inf, (len(passes), n)), None, fits, tpot, *extra))
            continue
        receive = np.broadcast_to(sv.kv_link_prompts_per_s(w.model, s, g, decode.decode, kv), (n,))
        r_d = np.minimum(decode.batch / decode.decode.total_s / o, receive)
        terms = (_kernel_rows(r_d, (n,)), out_tokens, _kernel_rows(serves, (n,), np.bool_), _kernel_rows(decode.decode.busy_s, (n,)),
                 _kernel_rows(decode.decode.total_s, (n,)))
        out.append(PairRows(prefill, terms, (fits, tpot, *extra), pre_batch))
    return out


class PairRows:
    """One decode layout's disaggregated pairs with every prefill layout, a block of a
    :class:`CandidateTable` kept as the terms of its served tokens and busy fraction:
    ``prefill`` (r_p, pre_ok, pre_busy, pre_total; (prefill layouts, n), shared by every
    decode layout's block) and ``decode`` (r_d, O, serves, decode busy and total seconds;
    (n,)), the arguments of :func:`mcengine.kernels.plan.disaggregated_rows`. Indexed as
    the other blocks' tuples: 0 ``served`` and 1 ``busy`` made from them when first read
    and kept (under a demand), then ``rest``: fits, TPOT and, under a demand, TTFT and
    batch, and ``prefill_batch``, each prefill pass's batch ((prefill layouts, n); None at
    saturation). The choice at saturation makes them into buffers it reuses for every block
    (:meth:`fill`), so that the (layouts)² pairs' rows are never all held at once."""

    def __init__(self, prefill: tuple, decode: tuple, rest: tuple, prefill_batch: np.ndarray | None = None):
        self.prefill, self.decode, self.rest, self.prefill_batch = prefill, decode, rest, prefill_batch
        self.rows = prefill[0].shape[0]
        self._made: tuple | None = None

    def __getitem__(self, field: int) -> np.ndarray:
        if field >= 2:
            return self.rest[field - 2]
        if self._made is None:
            self._made = self.fill(np.empty(self.prefill[0].shape), np.empty(self.prefill[0].shape))
        return self._made[field]

    def fill(self, served: np.ndarray, busy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The pairs' served tokens/s and busy fraction written into ``served`` and ``busy``
        (float64, (prefill layouts, n)), and returned."""
        r_p, pre_ok, pre_busy, pre_total = self.prefill
        r_d, o, serves, decode_busy, decode_total = self.decode
        disaggregated_rows(r_p, r_d, o, pre_ok, serves, pre_busy, pre_total, decode_busy, decode_total, served, busy)
        return served, busy


def block_rows(block) -> int:
    """The plans (rows) of one block of a :class:`CandidateTable`."""
    return block.rows if isinstance(block, PairRows) else block[0].shape[0]


def served_tokens(e) -> np.ndarray:
    """Output tokens/s of the instance where the evaluation ``e`` fits and meets both SLOs,
    ``-inf`` where it does not (so that any serving plan beats it)."""
    return np.where(e.fits & e.slo_met, e.tokens_per_s_instance, -np.inf)


def objective(served: np.ndarray, busy: np.ndarray, power_weight=None) -> np.ndarray:
    """What the planner maximises per plan and trial (rows of a :class:`CandidateTable`):
    the ``served`` tokens/s for ``workload.plan_objective = "throughput"``
    (``power_weight`` None), else tokens per dollar up to a factor common to a trial's
    plans, ``served / (1 + k busy)`` with ``k`` the trial's ``power_weight``
    (:func:`mcengine.stages.econ.plan_power_weight`: the cost of the GPUs' dynamic power
    at full load over the plan-independent cost, so that the largest value is the least
    cost per token). ``-inf`` where a plan does not serve."""
    if power_weight is None:
        return served
    return served / (1.0 + np.asarray(power_weight, float) * busy)


def _best_rows(table: CandidateTable, power_weight, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per trial, the first row with the largest :func:`objective` (``np.argmax`` over
    every row, NaN first as there) and its served tokens/s, block by block without
    stacking the table, in one pass over each block's rows
    (:func:`mcengine.kernels.plan.fold_best`: :func:`objective`'s arithmetic, operation by
    operation). A block that serves no trial (``busy`` None) is skipped: its objective,
    ``-inf`` throughout, beats no row; a trial that no row serves keeps row 0 and
    ``-inf``, as ``np.argmax`` over ``-inf`` rows gives."""
    best, value, served = np.zeros(n, np.int64), np.full(n, -np.inf), np.full(n, -np.inf)
    by_cost = power_weight is not None
    weight = _kernel_rows(power_weight if by_cost else 0.0, (n,))
    offset, scratch = 0, None
    for block in table.blocks:
        rows = block_rows(block)
        if isinstance(block, PairRows):  # its rows made into the buffers of the last such block
            if scratch is None or scratch[0].shape != (rows, n):
                scratch = (np.empty((rows, n)), np.empty((rows, n)))
            fold_best(*block.fill(*scratch), weight, by_cost, offset, best, value, served)
        elif block[1] is not None:
            fold_best(_kernel_rows(block[0], (rows, n)), _kernel_rows(block[1], (rows, n)), weight, by_cost, offset, best, value, served)
        offset += rows
    return best, served


def _kernel_rows(x, shape: tuple, dtype=np.float64) -> np.ndarray:
    """``x`` broadcast to ``shape`` as the one array type the kernels of
    :mod:`mcengine.kernels.plan` are compiled for (``dtype``, C order, writeable: a
    broadcast or read-only view is copied; an array already of that type is passed as it is)."""
    a = np.asarray(x, dtype)
    if a.shape == shape and a.flags.c_contiguous and a.flags.writeable:
        return a
    return np.require(np.broadcast_to(a, shape), dtype, ["C", "W"])


@dataclass(frozen=True)
class PlannedBlock:
    """The plan each trial of a block serves: ``index`` (int64, (n,)) into ``plans``,
    ``feasible`` (bool, (n,): some plan meets the trial's SLOs), and every candidate's
    evaluation (``table``; the chosen one is gathered per trial by :meth:`column`); for a
    fleet chosen under a demand, the :class:`~.planner_load.FleetSearch` of each trial's
    plan (0 where the choice under the demand did not take it), else None; for a fixed
    cluster under a demand, each trial's plan's capacity at SLO (output tokens/s) where it is
    the plan of most goodput (:func:`~.planner_load.most_goodput`, searched from no load), 0
    elsewhere, else None."""

    plans: tuple[Plan, ...]
    index: np.ndarray
    feasible: np.ndarray
    table: CandidateTable
    fleet: FleetSearch | None = None
    capacity: np.ndarray | None = None

    def column(self, name: str) -> np.ndarray:
        """Per-trial ``name`` of each trial's plan: a property every evaluation type has
        (``tokens_per_s_instance``, ``tokens_per_s_per_gpu``, ``ttft_s``, ``tpot_s``,
        ``batch``, ``slo_met``, ``busy_fraction``, ``fits``)."""
        n = self.index.size
        dtype = np.asarray(getattr(self.evaluation(0), name)).dtype
        out = np.empty(n, dtype=dtype)
        for k in np.unique(self.index):
            rows = self.index == k
            out[rows] = np.broadcast_to(np.asarray(getattr(self.table.evaluation(int(k)), name)), (n,))[rows]
        return out

    def evaluation(self, trial: int):
        """The evaluation of the plan trial ``trial`` serves (every trial of the block)."""
        return self.table.evaluation(int(self.index[trial]))

    def plan_of(self, trial: int) -> Plan:
        return self.plans[int(self.index[trial])]


def plan_per_trial(scenario: Scenario, inputs: TrialInputs, power_weight=None, table: CandidateTable | None = None, demand=None) -> PlannedBlock:
    """Each trial's best plan (module docstring) by :func:`objective` (``power_weight``
    None: the most tokens/s); ``table`` the block's :class:`CandidateTable` when already
    evaluated. ``demand`` (a :class:`~.planner_load.Demand`): where some plan meets both
    SLO quantiles under that demand, the trial takes the one of least cost per served
    token among them (:func:`~.planner_load.choose`); on a fixed cluster where none does,
    the plan of most goodput (:func:`~.planner_load.most_goodput`); else the saturation
    choice. For a fleet bought, "none does" includes a trial where every plan's fleet costs
    ``+inf``: no count of instances passes the fleet's second test, as where the served
    availability ``A`` is so small that the peak over it, ``P / (A O)``, overflows; the trial
    keeps its saturation plan with no fleet search, and the load stage, asking the same
    test, buys it no fleet (it serves nothing, at ``+inf`` per served token), as a trial no
    plan serves. Raises InputError when in some trial no candidate fits the weights and a
    batch in HBM."""
    return plan_jointly([(scenario, inputs, power_weight, table, demand)])[0]


def plan_jointly(asked: list[tuple], keys: list | None = None) -> list[PlannedBlock]:
    """:func:`plan_per_trial` of each ``(scenario, inputs, power_weight, table, demand)``
    of ``asked`` (a mix's request classes), their choices under their demands made in one
    pass (:func:`~.planner_load.choose_jointly`: the same choices, with fewer model calls),
    the rest of each part's work inside ``keys[i]()`` (a context naming its bad input;
    none by default)."""
    keys = keys or [contextlib.nullcontext] * len(asked)
    tables, saturated = [], []
    for (scenario, inputs, power_weight, table, _), key in zip(asked, keys):
        with key():
            tables.append(evaluate_candidates(scenario, inputs) if table is None else table)
            saturated.append(_best_rows(tables[-1], power_weight, inputs.n))
    under = [i for i, a in enumerate(asked) if a[4] is not None]
    steps = {i: candidate_steps(asked[i][0], tables[i], asked[i][1]) for i in under}
    outs = {i: kept_lengths(asked[i][0], asked[i][1], tables[i].steps).output_tokens for i in under}
    chosen = dict(zip(under, choose_jointly([(tables[i], asked[i][2], asked[i][4], outs[i], asked[i][1].n, steps[i]) for i in under]))) if under else {}
    blocks = []
    for i, ((scenario, inputs, _, _, demand), key) in enumerate(zip(asked, keys)):
        with key():
            blocks.append(_planned(scenario, inputs, tables[i], *saturated[i], demand,
                                   (*chosen[i], outs[i], steps[i]) if demand is not None else None))
    return blocks


def _planned(scenario: Scenario, inputs: TrialInputs, table: CandidateTable, best, served, demand, choice) -> PlannedBlock:
    """The :class:`PlannedBlock` of :func:`plan_per_trial`: each trial's plan at saturation
    (``best``, its ``served`` tokens/s) or, under ``demand``, its ``choice``
    (``(loaded, met, fleet, output tokens, steps_of)``, :func:`~.planner_load.choose`'s),
    with the fixed cluster's fallback to the plan of most goodput; the errors of a block
    where some trial fits no plan."""
    plans = table.plans
    fleet = capacity = None
    if demand is not None:
        loaded, met, fleet, out, steps_of = choice
        if demand.instances is not None:  # a fixed cluster: where no plan meets the SLOs at the peak, the plan of most goodput
            fallback, met_some, capacity = most_goodput(table, demand, out, ~met, steps_of)
            capacity = np.where(met_some & ~met, capacity, 0.0)
            loaded, met = np.where(met, loaded, fallback), met | met_some
        best = np.where(met, loaded, best)
        served = np.where(met, table.served[best, np.arange(inputs.n)], served)
    feasible = np.isfinite(served)
    if not feasible.all():
        fits = table.fits
        if not fits.any(axis=0).all():
            i = int(np.argmin(fits.any(axis=0)))
            room = max(int(np.broadcast_to(h, (inputs.n,))[i]) for h in table.holders)
            if scenario.workload.batch != "auto" and room >= 1:  # the weights fit: the fixed batch does not
                raise InputError(Problem(
                    "workload.batch", scenario.workload.batch,
                    f"in trial {inputs.trial_start + i} at most {room} sequences fit HBM beside the weights in any plan "
                    f"(cluster.instance_gpus = {scenario.cluster.instance_gpus}); allowed: a batch every trial fits, or \"auto\""))
            raise InputError(Problem(
                "gpu.hbm_gb", float(np.broadcast_to(inputs["gpu.hbm_gb"], (inputs.n,))[i]),
                f"in trial {inputs.trial_start + i} no plan fits the weights, a batch's KV cache and a prefill chunk in HBM "
                f"(a sequence's context at {lengths_label(scenario)}, workload.hbm_usable_fraction, workload.prefill_chunk_tokens, "
                f"cluster.instance_gpus = {scenario.cluster.instance_gpus}); "
                "allowed: inputs whose whole range fits them, or a smaller workload.model"))
        tpot = np.where(fits, table.tpot_s, np.inf)
        best = np.where(feasible, best, np.argmin(tpot, axis=0))
    if fleet is not None:  # the fleet search of the plans the trials serve as the choice under the demand took them
        fleet = fleet.where(met & (best == loaded))
    if capacity is not None:  # likewise the capacity of the plan of most goodput
        capacity = np.where(met & (best == loaded), capacity, 0.0)
    return PlannedBlock(plans, best.astype(np.int64), feasible, table, fleet, capacity)


def _sequences_that_fit(evaluation) -> np.ndarray:
    """Per trial, the sequences whose KV cache fits HBM beside the weights in an evaluated
    plan (a disaggregated plan's decode instances hold the sequences)."""
    holder = evaluation.decode if isinstance(evaluation, Disaggregated) else evaluation
    return holder.batch_memory


#: Prefixes of the length inputs whose larger value also lowers throughput (a drawn
#: prompt length, a prompt law's median and sigma, the KV quantile): more prefill work and
#: a larger KV cache per request. Output lengths are not among them: a longer answer
#: spreads its prompt's prefill over more output tokens, so output tokens/s rise with it
#: (h100 at the median: 1,867 tokens/s at 128 output tokens, 3,381 at 256, 10,797 at
#: 2,048), and their pessimistic side is the lower quantile, like every other input's.
LONGER_IS_SLOWER = ("workload.prompt_tokens", "workload.kv_length_quantile")


def pessimistic_inputs(scenario: Scenario, q: float) -> TrialInputs:
    """One trial with every input at its ``q`` quantile, those of :data:`HIGHER_IS_SLOWER`
    and the prompt lengths and KV quantile (:data:`LONGER_IS_SLOWER`) at ``1 - q`` (``q``
    < 0.5: a slower world than the median; output lengths at ``q``, shorter answers)."""
    inputs = scenario.inputs()
    slower = [key for key in inputs if key in HIGHER_IS_SLOWER or key.startswith(LONGER_IS_SLOWER)]
    return quantile_inputs(scenario, q, {key: 1.0 - q for key in slower})


def best_by_mode(scenario: Scenario, inputs: TrialInputs, weight: float | None) -> dict[str, tuple[Plan, object] | None]:
    """At the one trial ``inputs``: each searched mode's best plan by the per-trial rule
    (the largest :func:`objective` with ``weight``, the econ weight at ``inputs``, among the plans that fit and meet the SLOs, else the fitting one with the lowest TPOT)
    with its evaluation (every batch limit searched in full); None for a mode where no
    plan fits."""
    table = evaluate_candidates(scenario, inputs, screen=False)
    served, fits, tpot = table.served[:, 0], table.fits[:, 0], table.tpot_s[:, 0]
    modes = np.array([p.mode for p in table.plans])
    out: dict[str, tuple[Plan, object] | None] = {}
    for mode in serving_modes(scenario):
        ours = (modes == mode) & fits
        if not ours.any():
            out[mode] = None
            continue
        serving = ours & np.isfinite(served)
        k = _best_of_mode(table, mode, weight) if serving.any() else int(np.argmin(np.where(ours, tpot, np.inf)))
        out[mode] = (table.plans[k], evaluate_plan(scenario, table.plans[k], inputs))
    return out


def _best_of_mode(table: CandidateTable, mode: str, power_weight) -> int:
    """The row of ``table`` (one trial) that :func:`_best_rows` picks among the plans of
    serving mode ``mode`` alone (each block of rows holds plans of one mode)."""
    starts = np.cumsum([0] + [block_rows(block) for block in table.blocks])
    ours = [i for i, start in enumerate(starts[:-1]) if table.plans[start].mode == mode]
    best, _ = _best_rows(dataclasses.replace(table, blocks=[table.blocks[i] for i in ours]), power_weight, 1)
    return int(starts[ours[0]] + best[0])


def resized(scenario: Scenario, gpus: int) -> Scenario:
    """``scenario`` with instances of ``gpus`` GPUs whose layout is searched ("auto"
    degrees: a degraded instance re-plans whatever degrees the full one fixes)."""
    w = dataclasses.replace(scenario.workload, tensor_parallel="auto", pipeline_parallel="auto")
    return dataclasses.replace(scenario, cluster=dataclasses.replace(scenario.cluster, instance_gpus=gpus), workload=w)


def layout_sizes(scenario: Scenario) -> list[int]:
    """The instance sizes ``t x p <= instance_gpus`` on which some layout can shard the model
    (:func:`~.layout.degraded_layouts`): at most (tensor degrees) x layers of
    them, whatever ``instance_gpus``."""
    return sorted({layout.gpus for layout in degraded_layouts(scenario)})


def best_tokens(scenario: Scenario, inputs: TrialInputs, power_weight=None) -> float:
    """The output tokens/s of one instance (``cluster.instance_gpus`` GPUs) at the one trial
    ``inputs`` in the plan the per-trial rule picks there by :func:`objective` with
    ``power_weight`` (None: the most tokens/s); 0 where no plan meets the SLOs or fits."""
    _, served = _best_rows(evaluate_candidates(scenario, inputs), power_weight, 1)
    return max(float(served[0]), 0.0)
