"""Step times: a decode step, a prefill, the time to first token and the instance's
tokens/s, each compute, memory and communication in the step-time model of
:mod:`mcengine.analytic.roofline` (docs/sources.md#roof-step-time, docs/sources.md#roof-pipeline)."""

from __future__ import annotations

import numpy as np

from ...kernels.continuous import decode_flops
from .model import ACT_BYTES, Layout, ModelCard, PhaseTimes, Rates
from .weights import (attention_params, attention_rank, attention_ranks, attention_sequences_per_rank, attention_width, expert_params,
                      kv_bytes_per_token_rank, rank_params_active, rank_params_streamed, routed_layers, sharded_params_active)
from .collectives import forward_comm_s, stage_hop_s


def mean_context(prompt_tokens: int, output_tokens: int) -> float:
    """``T̄ = S + O/2``: the mean context a decode step attends to."""
    return prompt_tokens + output_tokens / 2.0


def micro_batches(batch, pipeline: int) -> np.ndarray:
    """``m = min(B, p)`` micro-batches in flight."""
    return np.minimum(np.asarray(batch, float), pipeline)


def decode_work(m: ModelCard, layout: Layout, b, ctx, r: Rates, q: int = 1) -> tuple:
    """FLOPs and HBM bytes per rank of one decode step of ``b`` sequences at context ``ctx``,
    each with ``q`` query tokens (1; ``k + 1`` when a speculative step verifies ``k``
    drafted tokens: ``q`` times the FLOPs, the weights one pass over ``b q`` tokens streams,
    the KV cache read once).

    Heads sharded: ``b (2 P_active + 4 L n_h d_h T̄)/t`` FLOPs, ``b_w P_stream/t + b T̄
    KV_rank`` bytes. Data-parallel attention: the busiest rank's ``s = ceil(b/t)``
    sequences run the whole attention (``s (2 L P_attn + 4 L n_h d_h T̄)``, their KV
    ``s T̄ KV``), the MLP and LM head stay sharded over all ``b``. Grouped: the busiest
    group's ``s = ceil(b/g)`` sequences, their heads sharded over its ``u = t/g`` ranks
    (``s (2 L P_attn,rank + 4 L (n_h/u) d_h T̄)``, KV ``s T̄ KV_rank(u)``). The KV bytes
    are counted in weight-byte equivalents (times ``r.kv_read_factor``,
    docs/model.md#kv-read), so ``bytes / W`` is the memory time.
    """
    t, att, g = layout.tensor, layout.attention, layout.attention_groups
    kv = kv_bytes_per_token_rank(m, t, r.kv_bytes, att, g) * r.kv_read_factor
    weights = r.bytes_per_param * rank_params_streamed(m, t, b * q, att, g)
    s = attention_sequences_per_rank(b, t, att, g)
    flops = decode_flops(b, s, decode_flops_per_sequence(m, layout, ctx), sharded_params_active(m, t), att == "tensor")
    return q * flops + hot_expert_flops(m, layout, b * q, r), weights + s * ctx * kv


def decode_flops_per_sequence(m: ModelCard, layout: Layout, ctx):
    """One decoding sequence's FLOPs on the rank that runs its attention, at context
    ``ctx`` (:func:`decode_work`): heads sharded, ``(2 P_active + 4 L n_h d_h T̄)/t``;
    data-parallel or grouped, its attention only (``2 L P_attn + 4 L n_h d_h T̄``, of the
    rank's share of the heads when grouped), the MLP and LM head counted over the batch
    (:func:`mcengine.kernels.continuous.decode_flops`)."""
    t, att, g = layout.tensor, layout.attention, layout.attention_groups
    if att == "tensor":
        return 2.0 * rank_params_active(m, t) + 4.0 * m.layers * (m.heads / t) * attention_width(m, True) * ctx
    attn_w, heads = _attention_work(m, t, att, g)
    return 2.0 * m.layers * attn_w + 4.0 * m.layers * heads * attention_width(m, True) * ctx


def hot_expert_flops(m: ModelCard, layout: Layout, tokens, r: Rates):
    """The busiest expert-parallel rank's extra routed-expert FLOPs over ``tokens`` tokens:
    its experts receive ``ρ`` (``r.moe_imbalance``, the hottest expert's load over the
    mean) times the mean rank's ``tokens k`` expert passes, ``(ρ - 1) tokens 2 k P_expert
    L_routed / t`` (0 without expert parallelism or at ρ = 1, docs/generation.md#moe)."""
    if not (m.experts and layout.expert_parallel):
        return 0.0
    return (r.moe_imbalance - 1.0) * tokens * 2.0 * m.experts_per_token * expert_params(m) * routed_layers(m) / layout.tensor


def _attention_work(m: ModelCard, t: int, attention: str, groups: int) -> tuple:
    """Attention weights and query heads one rank of a data-parallel attention group
    computes per sequence: all of them (``"data"``), or its ``1/u`` share (``"grouped"``)."""
    if attention == "data":
        return attention_params(m), m.heads
    return attention_rank(m, t, attention, groups), m.heads / attention_ranks(t, attention, groups)


def decode_step(m: ModelCard, layout: Layout, batch, context, r: Rates) -> PhaseTimes:
    """One decode step of ``batch`` sequences at mean context ``context`` (TPOT terms).

    ``compute`` and ``memory`` from :func:`decode_work` (``F`` and ``W``);
    ``comm = forward collectives of b d 2 bytes + (p-1) p2p``;
    ``overhead = step + L layer``, with ``b = B/m`` (``b = B`` without pipelining).
    With speculative decoding (``r.draft_tokens = k > 0``) the terms are those of one
    output token, :func:`speculative`: a verification step of ``k + 1`` tokens per
    sequence plus ``k`` draft steps, over the tokens it emits.
    """
    if r.draft_tokens:
        verify = _decode_pass(m, layout, batch, context, r, r.draft_tokens + 1)
        return speculative(verify, draft_s(m, layout, batch, context, r), r)
    return _decode_pass(m, layout, batch, context, r, 1)


def _decode_pass(m: ModelCard, layout: Layout, batch, context, r: Rates, q: int) -> PhaseTimes:
    """A forward pass of ``batch`` sequences with ``q`` query tokens each (:func:`decode_step`'s terms)."""
    p = layout.pipeline
    b = np.asarray(batch, float) / micro_batches(batch, p)
    ctx = np.asarray(context, float)
    flops, nbytes = decode_work(m, layout, b, ctx, r, q)
    comm = forward_comm_s(m, layout, b * q, r) + (p - 1) * stage_hop_s(layout, b * q * m.hidden * ACT_BYTES, r)
    overhead = r.step_overhead_s + m.layers * r.layer_overhead_s
    return phase_times(flops / r.flops_per_s, nbytes / r.hbm_bytes_per_s, comm, overhead, r.comm_overlap)


def tokens_per_step(draft_tokens: int, acceptance) -> np.ndarray:
    """Expected tokens a sequence emits per verification step of ``k = draft_tokens``
    drafted tokens, each accepted with probability ``α`` until the first rejection (the
    target's own token always counts): ``(1 - α^(k+1)) / (1 - α)`` = ``1 + α + ... + α^k``,
    ``k + 1`` at ``α = 1`` and 1 without drafts (Leviathan et al. 2023,
    docs/sources.md#gen-speculative)."""
    a = np.asarray(acceptance, float)
    return sum(a**i for i in range(draft_tokens + 1)) + np.zeros(np.shape(a))


def draft_s(m: ModelCard, layout: Layout, batch, context, r: Rates) -> np.ndarray:
    """Seconds the draft spends per verification step: ``k`` draft steps, each
    ``draft_cost`` times a plain decode step of the same batch (a share of the target's
    step, so a draft model or a multi-token-prediction head is one number)."""
    return r.draft_tokens * r.draft_cost * _decode_pass(m, layout, batch, context, r, 1).total_s


def speculative(verify: PhaseTimes, draft, r: Rates) -> PhaseTimes:
    """Per-output-token terms of a speculative step: the verification step's terms and
    the draft's seconds ``draft`` (in series, as overhead: the target waits for them)
    over the :func:`tokens_per_step` ``τ`` it emits per sequence, so ``total_s`` is the
    TPOT and ``B / total_s`` the instance's tokens/s (the max of the roofline is
    homogeneous, so ``total(x/τ) = total(x)/τ``)."""
    tau = tokens_per_step(r.draft_tokens, r.acceptance)
    return phase_times(verify.compute_s / tau, verify.memory_s / tau, verify.comm_s / tau, (verify.overhead_s + draft) / tau, r.comm_overlap)


def prefill_flops(m: ModelCard, layout: Layout, b, prompt_tokens: int, hit=0.0):
    """FLOPs of the busiest TP rank in one whole-model forward over ``b`` prompts of ``S``
    tokens (causal attention, LM head on the last token). With data-parallel attention
    the busiest rank runs the attention of ``ceil(b/t)`` whole prompts, the MLP stays
    sharded over all ``b S`` tokens. With a share ``h = hit`` of each prompt in the prefix
    cache (docs/generation.md#prefix-caching) only the last ``(1 - h) S`` tokens are
    computed: the weight FLOPs times ``1 - h``, the causal attention of those tokens over
    the whole prefix times ``1 - h²`` (positions ``hS..S``: ``(S² - h²S²)/2``), the LM head
    unchanged. One prompt's terms: :func:`prefill_flops_per_prompt`."""
    attention, rest = prefill_flops_per_prompt(m, layout, prompt_tokens, hit)
    if layout.attention == "tensor":
        return b * rest
    return attention_sequences_per_rank(b, layout.tensor, layout.attention, layout.attention_groups) * attention + b * rest


def prefill_flops_per_prompt(m: ModelCard, layout: Layout, prompt_tokens: int, hit=0.0) -> tuple:
    """One prompt's prefill FLOPs on the busiest rank (:func:`prefill_flops`) as ``(attention,
    rest)``: with data-parallel or grouped attention, the attention a rank runs per whole
    prompt it holds and the sharded rest (MLP and LM head); with heads sharded, ``attention``
    is 0 and ``rest`` is all of it (``prefill_flops`` is ``b rest`` then, ``ceil(b/g)
    attention + b rest`` otherwise)."""
    t, att, g = layout.tensor, layout.attention, layout.attention_groups
    s = np.asarray(prompt_tokens, float)
    new, attended = 1.0 - np.asarray(hit, float), 1.0 - np.asarray(hit, float) ** 2
    head = m.vocab * m.hidden / t
    if att == "tensor":
        return 0.0, 2.0 * (rank_params_active(m, t) - head) * s * new + 2.0 * m.layers * (m.heads / t) * attention_width(m, False) * s * s * attended + 2.0 * head
    attn_w, heads = _attention_work(m, t, att, g)
    return (2.0 * m.layers * attn_w * s * new + 2.0 * m.layers * heads * attention_width(m, False) * s * s * attended,
            2.0 * (sharded_params_active(m, t) - head) * s * new + 2.0 * head)


def _prefill_forward(m: ModelCard, layout: Layout, b, prompt_tokens: int, r: Rates) -> tuple:
    """FLOPs (:func:`prefill_flops`), HBM bytes and collective seconds per TP rank of one
    whole-model forward over ``b`` prompts of ``S`` tokens. With prefix caching the
    ``(1 - h) S`` tokens computed stream the experts and cross the collectives; the KV
    bytes are unchanged (the cached share's KV is read where it would have been written)."""
    t, att, g = layout.tensor, layout.attention, layout.attention_groups
    s = np.asarray(prompt_tokens, float)
    new = 1.0 - r.prefix_hit
    flops = prefill_flops(m, layout, b, prompt_tokens, r.prefix_hit) + hot_expert_flops(m, layout, b * s * new, r)
    kv = kv_bytes_per_token_rank(m, t, r.kv_bytes, att, g)
    weights = r.bytes_per_param * rank_params_streamed(m, t, b * s * new, att, g)
    if att == "tensor":
        return flops, weights + b * s * kv, forward_comm_s(m, layout, b * s * new, r, head_rows=b)
    seqs = attention_sequences_per_rank(b, t, att, g)
    return flops, weights + seqs * s * kv, forward_comm_s(m, layout, b * s * new, r, head_rows=b, group_tokens=seqs * s * new)


def prefill(m: ModelCard, layout: Layout, batch, prompt_tokens: int, r: Rates) -> PhaseTimes:
    """Instance time to prefill ``batch`` prompts of ``S`` tokens.

    Without pipelining: ``compute = B (2 L P_layer S + 2 L n_h d_h S² + 2 d V)/t / F``,
    ``memory = (b_w P_stream/t + B S KV_rank) / W``, ``comm = 2L all-reduces of
    B S d 2 bytes``, ``overhead = step + L layer`` (data-parallel attention:
    :func:`_prefill_forward`). With ``p`` stages the pipeline is
    kept full by continuous batching (no fill/drain bubble): ``m`` micro-batches of
    ``b = B/m`` pass every stage, so each term is ``m/p`` times the whole-model term at
    ``b``, plus ``m (p-1)/p`` point-to-points of ``b S d 2`` bytes.
    """
    p = layout.pipeline
    mb = micro_batches(batch, p)
    b = np.asarray(batch, float) / mb
    share = mb / p
    flops, nbytes, comm = _prefill_forward(m, layout, b, prompt_tokens, r)
    hops = mb * (p - 1) / p * stage_hop_s(layout, b * prompt_tokens * (1.0 - r.prefix_hit) * m.hidden * ACT_BYTES, r)
    overhead = r.step_overhead_s + share * m.layers * r.layer_overhead_s
    return phase_times(share * flops / r.flops_per_s, share * nbytes / r.hbm_bytes_per_s, share * comm + hops, overhead, r.comm_overlap)


def time_to_first_token(m: ModelCard, layout: Layout, prompt_tokens: int, r: Rates) -> PhaseTimes:
    """TTFT: the latency of one prompt's prefill, through all ``p`` stages in turn
    (``= prefill(batch=1)`` without pipelining; ``(p-1)`` point-to-points with it)."""
    flops, nbytes, comm = _prefill_forward(m, layout, 1.0, prompt_tokens, r)
    hops = (layout.pipeline - 1) * stage_hop_s(layout, prompt_tokens * (1.0 - r.prefix_hit) * m.hidden * ACT_BYTES, r)
    overhead = r.step_overhead_s + m.layers * r.layer_overhead_s
    return phase_times(flops / r.flops_per_s, nbytes / r.hbm_bytes_per_s, comm + hops, overhead, r.comm_overlap)


def batch_time_to_first_token(m: ModelCard, layout: Layout, batch, prompt_tokens: int, r: Rates, pre: PhaseTimes | None = None) -> PhaseTimes:
    """Static batching: the TTFT of the batch's last request, the prefill of the whole
    batch (docs/sources.md#roof-slo). With ``p`` stages the ``m`` micro-batches leave
    the pipeline after its ``p - 1`` stage fill: the prefill terms times
    ``(m + p - 1)/m``, with one prompt's overhead (``= prefill(B)`` at ``p = 1``).
    ``pre``: :func:`prefill` of the same batch, prompts and rates, when already made."""
    p = layout.pipeline
    mb = micro_batches(batch, p)
    pre = prefill(m, layout, batch, prompt_tokens, r) if pre is None else pre
    fill = (mb + p - 1) / mb
    overhead = r.step_overhead_s + m.layers * r.layer_overhead_s
    if p == 1:
        return pre
    return phase_times(fill * pre.compute_s, fill * pre.memory_s, fill * pre.comm_s, overhead, r.comm_overlap)


def phase_times(compute, memory, comm, overhead, overlap=0.0) -> PhaseTimes:
    """The four terms as float arrays of one common (trial) shape, and the overlap share
    (read-only broadcast views: a term common to every trial is not copied per trial)."""
    return PhaseTimes(*np.broadcast_arrays(*(np.asarray(x, float) for x in (compute, memory, comm, overhead, overlap))))
