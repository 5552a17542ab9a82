"""Roofline stage internals: the serving modes beyond static batching
(docs/model.md#serving; formulas in :mod:`mcengine.analytic.serving`).

``"static"`` is :mod:`.layout`'s evaluation; ``"continuous"`` (chunked
prefill, :func:`evaluate_continuous`) and ``"disaggregated"`` (prefill and decode
instances, :func:`evaluate_disaggregated`) evaluate the same candidate layouts with their
own step models; :func:`evaluate_plan` evaluates one :class:`Plan` in whichever mode it
names. This module chooses nothing: the planner (:mod:`.planner`, and :mod:`.median_plan`
for ``workload.plan = "median"``) picks the plan these closed forms time.

The TTFT limit ``workload.ttft_slo_ms`` (``inf``: none) enters ``slo_met`` of every mode,
the continuous batch search and the prefill batch search.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...analytic.roofline import model as rm, steps as rt, limits as rl
from ...analytic import serving as sv
from ...kernels import searches as ks
from ...scenario import Scenario
from ...scenario.sampling import TrialInputs
from ...units import MS_PER_S
from .layout import Evaluation, evaluate, lengths_of, prefix_cache_share, rates_of


def ttft_slo_ms(scenario: Scenario, inputs: TrialInputs) -> np.ndarray:
    """The per-trial TTFT SLO (ms), ``workload.ttft_slo_ms`` (inf: none)."""
    return np.broadcast_to(np.asarray(inputs["workload.ttft_slo_ms"], float), (inputs.n,))


@dataclass(frozen=True)
class Continuous:
    """One layout under continuous batching with chunked prefill (arrays of shape (n,))."""

    layout: rm.Layout
    batch_memory: np.ndarray
    batch_slo: np.ndarray
    batch_chunk: np.ndarray
    batch_ttft: np.ndarray
    batch: np.ndarray
    step: rm.PhaseTimes
    ttft_s: np.ndarray
    tokens_per_s_instance: np.ndarray
    tpot_slo_ms: np.ndarray
    ttft_slo_ms: np.ndarray

    @property
    def tpot_s(self) -> np.ndarray:
        return self.step.total_s

    @property
    def binding_limit(self) -> np.ndarray:
        """Which limit sets each trial's ``batch = "auto"``: "memory", "slo" (TPOT), "chunk"
        or "ttft" (the TTFT SLO, when it holds the batch below the others; ties: that order)."""
        limits = np.stack(np.broadcast_arrays(self.batch_memory, self.batch_slo, self.batch_chunk))
        names = np.asarray(("memory", "slo", "chunk"))[np.argmin(limits, axis=0)]
        return np.where(self.batch_ttft < limits.min(axis=0), "ttft", names)

    @property
    def fits(self) -> np.ndarray:
        """Weights and the batch's KV cache fit HBM, and the chunk fits the step budget."""
        return (self.batch_memory >= 1) & (self.batch <= self.batch_memory) & (self.batch <= self.batch_chunk)

    @property
    def slo_met(self) -> np.ndarray:
        return (self.tpot_s * MS_PER_S <= self.tpot_slo_ms) & (self.ttft_s * MS_PER_S <= self.ttft_slo_ms)

    @property
    def tokens_per_s_per_gpu(self) -> np.ndarray:
        return self.tokens_per_s_instance / self.layout.gpus

    @property
    def busy_fraction(self) -> np.ndarray:
        """Share of each step the GPU computes or streams HBM (docs/model.md#power)."""
        return self.step.busy_s / self.step.total_s


def evaluate_continuous(scenario: Scenario, layout: rm.Layout, inputs: TrialInputs, within_memory: bool = False,
                        rates: rm.Rates | None = None, shared: rl.SharedColumns | None = None) -> Continuous:
    """``layout`` under continuous batching: ``batch = "auto"`` takes ``max(1, B_TTFT)``,
    ``B_TTFT`` the largest batch in ``[1, min(B_max, B_SLO, B_chunk)]`` whose TTFT
    ``ceil(O m/B) tau(B)`` meets ``workload.ttft_slo_ms``
    (:func:`mcengine.analytic.serving.largest_batch_within_ttft`; the throughput ``B/tau``
    is non-decreasing in ``B``, so it is also the best), ``B_SLO`` the largest batch whose
    step meets the TPOT SLO. A fixed batch is taken as given (``fits`` says if it is
    feasible). A trial where no batch meets both SLOs runs at ``max(1, ...)`` and misses
    (``slo_met`` false). ``within_memory``: the TPOT search stops at ``min(B_max, B_chunk)``
    (``B_SLO`` then reads at most that; the batch is unchanged), the planner's shortcut.
    ``rates``: the trials' :func:`~.layout.rates_of` when already made; ``shared``: as for
    :func:`~.layout.evaluate`. The two searches
    run compiled (:func:`mcengine.analytic.serving.compiled_batch_limits`: the same
    batches) for the layouts that kernel covers, with NumPy otherwise."""
    w, m = scenario.workload, scenario.workload.model
    rates = rates_of(scenario, inputs) if rates is None else rates
    lengths = lengths_of(scenario, inputs)
    s, o = lengths.prompt_tokens, lengths.output_tokens
    slo_ms = inputs["workload.tpot_slo_ms"]
    b_mem = rl.batch_limit_memory(m, layout, inputs["gpu.hbm_gb"], inputs["workload.hbm_usable_fraction"], lengths.kv_context_tokens,
                                  rates.bytes_per_param, rates.kv_bytes, prefix_cache_share(scenario, inputs))
    o_steps = sv.decode_steps(o, rates)  # engine steps per request (O / tokens per step when speculative)
    b_chunk = np.broadcast_to(sv.batch_limit_chunk(sv.computed_prompt_tokens(s, rates), o_steps, w.prefill_chunk_tokens), (inputs.n,))
    ttft_ms = ttft_slo_ms(scenario, inputs)
    cap = np.minimum(b_mem, b_chunk) if within_memory else rm.SLO_SEARCH_CAP
    timing = rl.Timing(rates, (s, o, lengths.context_tokens))

    def step_s(b, x):
        prompt, output, context = x.lengths
        return sv.continuous_step(m, layout, b, prompt, output, x.rates, context).total_s

    def engine_step_s(b, x):  # an engine step emits step_tokens per sequence: TTFT counts whole steps
        return step_s(b, x) * sv.step_tokens(x.rates)

    shape = rl.trial_shape(slo_ms, rates, s, o)
    compiled = sv.compiled_batch_limits(m, layout, s, o, lengths.context_tokens, rates, slo_ms / MS_PER_S, ttft_ms / MS_PER_S, cap, b_mem, b_chunk,
                                        inputs.n, shared) if shape == (inputs.n,) else None
    if compiled is not None:
        b_slo, b_ttft = compiled
    else:
        b_slo = rl.largest_batch(step_s, slo_ms / MS_PER_S, shape, cap, rates=timing)
        b_ttft = sv.largest_batch_within_ttft(engine_step_s if rates.draft_tokens else step_s, ttft_ms / MS_PER_S,
                                              np.minimum(np.minimum(b_mem, b_slo), b_chunk), layout.pipeline, o_steps, rates=timing)
    if w.batch == "auto":
        batch = np.maximum(1, b_ttft)
    else:
        batch = np.full(inputs.n, w.batch, np.int64)
    step = sv.continuous_step(m, layout, batch, s, o, rates, lengths.context_tokens)
    ttft = sv.continuous_ttft_s(step.total_s * sv.step_tokens(rates), batch, layout.pipeline, o_steps)
    per_instance = sv.continuous_tokens_per_s(step.total_s, batch)
    return Continuous(layout, b_mem, b_slo, b_chunk, b_ttft, batch, step, ttft, per_instance, slo_ms, ttft_ms)


@dataclass(frozen=True)
class Disaggregated:
    """A prefill layout and a decode layout sharing the cluster (arrays of shape (n,)).

    ``decode`` is the static evaluation of the decode layout (its batch and decode step;
    its prefill terms are unused). ``prefill`` is the instance time of one prefill pass of
    ``prefill_batch`` prompts (pipeline kept full), ``ttft`` that pass's latency (its last
    prompt's first token). ``kv_send_prompts_per_s`` / ``kv_receive_requests_per_s``: the
    KV caches per second the links of one prefill / decode instance can carry.
    """

    prefill_layout: rm.Layout
    decode: Evaluation
    prefill_batch_memory: np.ndarray
    prefill_batch: np.ndarray
    prefill: rm.PhaseTimes
    ttft: rm.PhaseTimes
    kv_transfer_s: np.ndarray
    kv_send_prompts_per_s: np.ndarray
    kv_receive_requests_per_s: np.ndarray
    prefill_share: np.ndarray
    tokens_per_s_instance: np.ndarray
    ttft_slo_ms: np.ndarray
    output_tokens: object

    @property
    def layout(self) -> rm.Layout:
        """The decode layout (the one that sets TPOT and the batch)."""
        return self.decode.layout

    @property
    def batch(self) -> np.ndarray:
        return self.decode.batch

    @property
    def tpot_s(self) -> np.ndarray:
        return self.decode.decode.total_s

    @property
    def ttft_s(self) -> np.ndarray:
        return self.ttft.total_s + self.kv_transfer_s

    @property
    def prefill_compute_prompts_per_s(self) -> np.ndarray:
        """Prompts/s one prefill instance computes, ``P / prefill(P)``."""
        return self.prefill_batch / self.prefill.total_s

    @property
    def decode_compute_tokens_per_s(self) -> np.ndarray:
        """Output tokens/s one decode instance computes, ``B / TPOT``."""
        return self.decode.batch / self.tpot_s

    @property
    def prompts_per_s_prefill(self) -> np.ndarray:
        """Prompts/s of one prefill instance: computed, capped by what its links can send."""
        return np.minimum(self.prefill_compute_prompts_per_s, self.kv_send_prompts_per_s)

    @property
    def decode_tokens_per_s(self) -> np.ndarray:
        """Output tokens/s of one decode instance, ``B / TPOT`` capped by the requests/s whose
        KV caches its links can receive (x ``O``)."""
        return np.minimum(self.decode_compute_tokens_per_s, self.kv_receive_requests_per_s * self.output_tokens)

    @property
    def kv_link_load(self) -> dict[str, np.ndarray]:
        """Demand on the KV links at the computed rates, per direction (> 1: the link caps)."""
        return {"send": self.prefill_compute_prompts_per_s / self.kv_send_prompts_per_s,
                "receive": self.decode_compute_tokens_per_s / self.output_tokens / self.kv_receive_requests_per_s}

    @property
    def fits(self) -> np.ndarray:
        return self.decode.fits & (self.prefill_batch_memory >= 1)

    @property
    def slo_met(self) -> np.ndarray:
        return self.decode.slo_met & (self.ttft_s * MS_PER_S <= self.ttft_slo_ms)

    @property
    def tokens_per_s_per_gpu(self) -> np.ndarray:
        return self.tokens_per_s_instance / self.layout.gpus

    @property
    def busy_fraction(self) -> np.ndarray:
        """GPU-weighted share of time computing or streaming HBM: the prefill share ``f`` of
        the GPUs at the busy share of a prefill pass, the rest at that of a decode
        step (docs/model.md#power)."""
        f = self.prefill_share
        return f * self.prefill.busy_s / self.prefill.total_s + (1.0 - f) * self.decode.decode.busy_s / self.decode.decode.total_s


@dataclass(frozen=True)
class PrefillPass:
    """A prefill instance on one layout: prompts whose KV fits HBM, prompts per pass, the
    pass's instance time and latency, and the KV transfer of its prompts."""

    batch_memory: np.ndarray
    batch: np.ndarray
    prefill: rm.PhaseTimes
    ttft: rm.PhaseTimes
    kv_transfer_s: np.ndarray

    @property
    def ttft_s(self) -> np.ndarray:
        return self.ttft.total_s + self.kv_transfer_s


def kv_rates(scenario: Scenario, rates: rm.Rates) -> rm.Rates:
    """The rates a prompt's KV cache moves at from a prefill to a decode instance: the scale-up
    links when one scale-up domain can hold both instances (``cluster.scale_up_domain_gpus`` at
    least twice ``cluster.instance_gpus``), else the scale-out network, each GPU its own NIC
    (:meth:`~mcengine.analytic.roofline.model.Rates.scale_out`; "auto" = one domain per instance, so the
    transfer leaves it; docs/sources.md#roof-scale-up-domain)."""
    c = scenario.cluster
    d = c.scale_up_domain_gpus
    return rates if d != "auto" and d >= 2 * c.instance_gpus else rates.scale_out()


def prefill_pass(scenario: Scenario, layout: rm.Layout, inputs: TrialInputs, rates: rm.Rates | None = None,
                 shared: rl.SharedColumns | None = None) -> PrefillPass:
    """A prefill instance on ``layout`` (module docstring of :mod:`mcengine.analytic.serving`):
    ``P = max(1, min(P_memory, P_budget, P_TTFT))`` prompts per pass, ``P_TTFT`` the largest
    whose pass latency plus KV transfer meets ``workload.ttft_slo_ms`` (both grow with
    ``P``, bisection), while prompts/s ``P / prefill(P)`` grows with ``P`` (weights
    streamed once per pass), so the largest allowed ``P`` is the best. ``rates``: the
    trials' :func:`~.layout.rates_of` when already made; ``shared``: as for
    :func:`~.layout.evaluate`. The ``P_TTFT`` search runs
    compiled (:func:`mcengine.analytic.roofline.limits.search_table`, the same batches) for
    the layouts the kernels cover."""
    w, m = scenario.workload, scenario.workload.model
    rates = rates_of(scenario, inputs) if rates is None else rates
    kv = kv_rates(scenario, rates)
    lengths = lengths_of(scenario, inputs)
    s, g = lengths.prompt_tokens, scenario.cluster.instance_gpus
    b_mem = rl.batch_limit_memory(m, layout, inputs["gpu.hbm_gb"], inputs["workload.hbm_usable_fraction"], lengths.kv_prompt_tokens,
                                  rates.bytes_per_param, rates.kv_bytes, prefix_cache_share(scenario, inputs))
    limit = np.minimum(b_mem, sv.prefill_batch_limit_budget(sv.computed_prompt_tokens(s, rates), w.prefill_chunk_tokens))
    slo_s = ttft_slo_ms(scenario, inputs) / MS_PER_S

    def latency_s(batch, x):
        prompt = x.lengths[0]
        return rt.batch_time_to_first_token(m, layout, batch, prompt, x.rates).total_s + sv.kv_transfer_s(m, prompt, g, kv_rates(scenario, x.rates), batch)

    if not np.all(np.isinf(slo_s)):
        shape, cap = rl.trial_shape(slo_s, rates, s), int(max(1, limit.max()))
        table = rl.search_table(m, layout, s, s, rates, slo_s, slo_s, inputs.n, kv, g, shared) if shape == (inputs.n,) else None
        searched = (rl.largest_batch(latency_s, slo_s, shape, cap, rates=rl.Timing(rates, (s,))) if table is None
                    else rl.compiled_largest_batch(table, ks.PREFILL_KV, "ttft_slo_s", cap))
        limit = np.minimum(limit, searched)
    batch = np.maximum(1, limit)
    pre = rt.prefill(m, layout, batch, s, rates)
    return PrefillPass(b_mem, batch, pre, rt.batch_time_to_first_token(m, layout, batch, s, rates, pre),
                        np.broadcast_to(sv.kv_transfer_s(m, s, g, kv, batch), (inputs.n,)))


def evaluate_disaggregated(scenario: Scenario, prefill_layout: rm.Layout, decode_layout: rm.Layout, inputs: TrialInputs, share=None) -> Disaggregated:
    """Prefill instances on ``prefill_layout``, decode instances on ``decode_layout``; the
    prefill share ``share`` (None: the balanced share of each trial, ``f = r_d/(r_p + r_d)``,
    on the rates after the KV link caps)."""
    decode = evaluate(scenario, decode_layout, inputs, prefills=False)
    return disaggregated_of(scenario, prefill_layout, prefill_pass(scenario, prefill_layout, inputs), decode, inputs, share)


def disaggregated_of(scenario: Scenario, prefill_layout: rm.Layout, pre: PrefillPass, decode: Evaluation, inputs: TrialInputs,
                     share=None, rates: rm.Rates | None = None) -> Disaggregated:
    """:func:`evaluate_disaggregated` from a prefill pass on ``prefill_layout`` and a
    decode-only evaluation already made, and the trials' rates if known (the planner pairs
    every prefill layout with every decode layout without evaluating either twice)."""
    w, lengths = scenario.workload, lengths_of(scenario, inputs)
    s, g, o = lengths.prompt_tokens, scenario.cluster.instance_gpus, lengths.output_tokens
    kv = kv_rates(scenario, rates_of(scenario, inputs) if rates is None else rates)
    send = np.broadcast_to(sv.kv_link_prompts_per_s(w.model, s, g, pre.prefill, kv), (inputs.n,))
    receive = np.broadcast_to(sv.kv_link_prompts_per_s(w.model, s, g, decode.decode, kv), (inputs.n,))
    r_p = np.minimum(pre.batch / pre.prefill.total_s, send)
    r_d = np.minimum(decode.batch / decode.decode.total_s / o, receive)
    f = sv.prefill_share(r_p, r_d) if share is None else np.broadcast_to(np.asarray(share, float), (inputs.n,))
    per_instance = sv.disaggregated_tokens_per_s(f, r_p, r_d * o, o)
    return Disaggregated(prefill_layout, decode, pre.batch_memory, pre.batch, pre.prefill, pre.ttft, pre.kv_transfer_s, send, receive, f,
                         per_instance, ttft_slo_ms(scenario, inputs), o)


@dataclass(frozen=True)
class Plan:
    """What an operator chooses for one instance: a serving ``mode`` (one of
    :data:`mcengine.analytic.serving.SERVING_MODES`), its ``layout`` (tensor x pipeline,
    attention mode, all-reduce; disaggregated: the decode layout) and, disaggregated, the
    ``prefill_layout``. The batch is not part of it: each evaluator takes the largest
    batch its limits allow (``workload.batch = "auto"``) or the fixed one."""

    mode: str
    layout: rm.Layout
    prefill_layout: rm.Layout | None = None

    def describe(self) -> str:
        """``"disaggregated 8x1 data / decode 4x2 tensor"``-style label of the plan."""
        lay = self.layout
        text = f"{lay.tensor}x{lay.pipeline} {lay.attention_label}"
        if self.prefill_layout is None:
            return f"{self.mode} {text}"
        pre = self.prefill_layout
        return f"{self.mode} prefill {pre.tensor}x{pre.pipeline} {pre.attention_label} / decode {text}"


def evaluate_plan(scenario: Scenario, plan: Plan, inputs: TrialInputs, share=None):
    """``plan`` for every trial of ``inputs`` (disaggregated: with prefill share ``share``,
    None = each trial's balanced share): a :class:`~.layout.Evaluation`,
    :class:`Continuous` or :class:`Disaggregated`."""
    if plan.mode == "continuous":
        return evaluate_continuous(scenario, plan.layout, inputs)
    if plan.mode == "disaggregated":
        return evaluate_disaggregated(scenario, plan.prefill_layout, plan.layout, inputs, share)
    return evaluate(scenario, plan.layout, inputs)
