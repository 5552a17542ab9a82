"""The continuous-batching step's batch-dependent terms as pure functions of numbers, the
continuous step and a forward pass's collectives compiled over them, and the continuous
plans' TTFT batch search (docs/performance.md#plan-searches).

The functions without a decorator below are the one copy of each term: NumPy calls them
on per-trial arrays (:mod:`mcengine.analytic.roofline` and
:func:`mcengine.analytic.serving.continuous_step`), and the compiled steps on one trial's
scalars (each compiled inline through :data:`~mcengine.jit.inline_kernel`). Every term is
the same sequence of IEEE operations either way (no fast-math, no fused multiply-add), so
a step time is the same float.

The compiled steps (:func:`_step_s` here, the static steps of
:mod:`mcengine.kernels.searches`) cover a dense model, heads sharded, data-parallel or
grouped attention, a tensor group inside one scale-up domain running its all-reduces by
"auto" (the faster of two-shot and one-shot), no stage boundary leaving a domain, no
speculative decoding. :func:`batches_within_ttft` runs
:func:`mcengine.analytic.serving.largest_batch_within_ttft` (``B_TTFT``) trial by trial,
with the same probes in the same order (``B_SLO``: :func:`mcengine.kernels.searches.largest_batches`).
Everything that does not depend on the batch (rates, one prompt's prefill FLOPs, a
sequence's decode FLOPs, the weights streamed, the collectives' constants) is computed by
NumPy once per search and handed to it.
"""

from __future__ import annotations

import numpy as np

from ..jit import inline_kernel, kernel, linked_kernel


def collective_s(alpha, hops, hop, c, nbytes, link):
    """A collective of ``nbytes`` per rank, ``α + k h + c M / W``: every algorithm of
    :mod:`mcengine.analytic.roofline.collectives` is a pair ``(k, c)`` of its group size."""
    return alpha + hops * hop + c * nbytes / link


def phase_total_s(compute, memory, comm, overhead, overlap):
    """A phase's time, ``max(max(compute, memory), o comm) + (1 - o) comm + overhead``
    (:attr:`mcengine.analytic.roofline.model.PhaseTimes.total_s`)."""
    return np.maximum(np.maximum(compute, memory), overlap * comm) + (1.0 - overlap) * comm + overhead


def busiest_sequences(b, groups):
    """Sequences of the busiest data-parallel attention group (or rank), ``ceil(b/g)``."""
    return np.ceil(b / groups)


def decode_flops(b, sequences, per_sequence, sharded_params, heads_sharded):
    """A decode step's FLOPs per rank for ``b`` sequences (one query token each): heads
    sharded, ``b`` times a sequence's (``per_sequence``); otherwise the busiest rank's
    ``sequences`` attention (``per_sequence`` each) plus the sharded MLP and LM head of all
    ``b`` (``2 b sharded_params``)."""
    if heads_sharded:
        return b * per_sequence
    return sequences * per_sequence + b * 2.0 * sharded_params


def kv_read_tokens(chunk, prompt):
    """Tokens of KV cache a step's prefill chunk reads, ``max(c, S)/2``."""
    return np.maximum(chunk, prompt) / 2.0


def continuous_compute_s(decode, chunk, prompt, prompt_flops, hot, flops_per_s):
    """A continuous step's compute: the decode's FLOPs, ``c/S`` prompts' prefill and the
    hottest expert's extra FLOPs, over ``F``."""
    return decode / flops_per_s + chunk / prompt * (prompt_flops / flops_per_s) + hot / flops_per_s


def continuous_memory_s(weights, share, b, context, chunk_kv, kv_rank, kv_factor, hbm):
    """A continuous step's HBM time: the weights streamed and the busiest rank's ``share``
    of the KV read of ``b`` sequences at ``context`` and of the chunk's ``chunk_kv`` tokens
    (:func:`kv_read_tokens`), ``kv_factor`` weight bytes per KV byte, over ``W``."""
    return (weights + share * (b * context + chunk_kv) * kv_rank * kv_factor) / hbm


_collective = inline_kernel(collective_s)
_total = inline_kernel(phase_total_s)
_busiest = inline_kernel(busiest_sequences)
_decode_flops = inline_kernel(decode_flops)
_compute = inline_kernel(continuous_compute_s)
_memory = inline_kernel(continuous_memory_s)
_kv_tokens = inline_kernel(kv_read_tokens)

#: Columns of the per-trial table :func:`_step_s` reads (float64, one row per trial).
TRIAL_COLUMNS = ("flops_per_s", "hbm_bytes_per_s", "link_bytes_per_s", "collective_start_s", "allreduce_start_s", "hop_latency_s",
                 "comm_overlap", "kv_read_factor", "overhead_s", "prefix_hit", "prompt_tokens", "output_tokens", "context_tokens",
                 "prompt_flops", "sequence_flops", "tpot_slo_s", "ttft_slo_s")
#: Entries of its layout vector (float64): the pipeline, the model's layers and hidden size,
#: the attention mode (``sequence_attention`` 0: heads sharded, 1: data-parallel or grouped),
#: the busiest rank's divisor of the sequences ``g`` (:func:`busiest_sequences`), the weights
#: streamed, KV bytes per token of a rank, the sharded weights a token multiplies by, and
#: the ``(k, c)`` pairs of the collectives: the tensor group's all-reduce (two-shot, one-shot;
#: ``tp_ranks`` > 1), its one-shot all-gather, the inner all-reduce of a grouped attention
#: group (two-shot, one-shot; ``inner_ranks`` > 1: a grouped attention's, 1 otherwise).
LAYOUT_ENTRIES = ("pipeline", "layers", "hidden", "sequence_attention", "attention_groups", "weights", "kv_rank", "sharded_params",
                  "tp_ranks", "ar_k2", "ar_c2", "ar_k1", "ar_c1", "ag_k", "ag_c", "inner_ranks", "in_k2", "in_c2", "in_k1", "in_c1")
#: Their indices, in the order the names above give them (the kernels read by these, never by number).
(X_FLOPS, X_HBM, X_LINK, X_ALPHA, X_ALPHA_AR, X_HOP, X_OVERLAP, X_KV_FACTOR, X_OVERHEAD, X_HIT, X_PROMPT, X_OUTPUT, X_CONTEXT,
 X_PROMPT_FLOPS, X_SEQUENCE_FLOPS, X_TPOT_SLO, X_TTFT_SLO) = range(len(TRIAL_COLUMNS))
(L_PIPELINE, L_LAYERS, L_HIDDEN, L_SEQUENCE_ATTENTION, L_GROUPS, L_WEIGHTS, L_KV_RANK, L_SHARDED_PARAMS, L_TP_RANKS, L_AR_K2, L_AR_C2,
 L_AR_K1, L_AR_C1, L_AG_K, L_AG_C, L_INNER_RANKS, L_IN_K2, L_IN_C2, L_IN_K1, L_IN_C1) = range(len(LAYOUT_ENTRIES))


@linked_kernel
def forward_comm(sharded, message, head_message, group_message, alpha, alpha_ar, hop, link, lay):
    """A forward pass's tensor-group collectives over all layers for the layout vector
    ``lay`` (:data:`LAYOUT_ENTRIES`), as :func:`mcengine.analytic.roofline.collectives.forward_comm_s`
    composes them for a dense model inside one scale-up domain with "auto": heads sharded
    (``sharded``), ``2 L`` all-reduces of ``message`` bytes (the faster of two-shot and
    one-shot, start ``alpha_ar``); otherwise ``L`` gather + scatter pairs of ``message``,
    one all-gather of ``head_message`` before the LM head and, grouped, ``L`` all-reduces
    of ``group_message`` inside the busiest group."""
    layers = lay[L_LAYERS]
    if sharded:
        ar = 0.0
        if lay[L_TP_RANKS] > 1.0:
            ar = np.minimum(_collective(alpha_ar, lay[L_AR_K2], hop, lay[L_AR_C2], message, link),
                            _collective(alpha_ar, lay[L_AR_K1], hop, lay[L_AR_C1], message, link))
        return 2 * layers * ar
    head, gather = 0.0, 0.0
    if lay[L_TP_RANKS] > 1.0:
        head = _collective(alpha, lay[L_AG_K], hop, lay[L_AG_C], head_message, link)
        gather = 2.0 * _collective(alpha, lay[L_AG_K], hop, lay[L_AG_C], message, link)
    forward = layers * gather + head
    if lay[L_INNER_RANKS] > 1.0:  # a grouped attention's all-reduce inside the busiest group
        inner = np.minimum(_collective(alpha_ar, lay[L_IN_K2], hop, lay[L_IN_C2], group_message, link),
                           _collective(alpha_ar, lay[L_IN_K1], hop, lay[L_IN_C1], group_message, link))
        forward = forward + layers * inner
    return forward


@linked_kernel
def _step_s(batch, x, i, lay):
    """The continuous step's ``total_s`` at integer ``batch`` for trial ``i`` (row ``i`` of
    ``x``, :data:`TRIAL_COLUMNS`) and the layout vector ``lay`` (:data:`LAYOUT_ENTRIES`), as
    :func:`mcengine.analytic.serving.continuous_step` composes it: one query token per
    sequence (``q = 1``: ``q b``, ``q flops``) and no hot expert (``+ 0.0``), written as
    there so that each operation is the same."""
    f, hbm, link, alpha, alpha_ar, hop = x[i, X_FLOPS], x[i, X_HBM], x[i, X_LINK], x[i, X_ALPHA], x[i, X_ALPHA_AR], x[i, X_HOP]
    overlap, kvf, overhead, hit = x[i, X_OVERLAP], x[i, X_KV_FACTOR], x[i, X_OVERHEAD], x[i, X_HIT]
    s, o, ctx, pf, per_seq = x[i, X_PROMPT], x[i, X_OUTPUT], x[i, X_CONTEXT], x[i, X_PROMPT_FLOPS], x[i, X_SEQUENCE_FLOPS]
    p, hidden, by_sequence = lay[L_PIPELINE], lay[L_HIDDEN], lay[L_SEQUENCE_ATTENTION]
    groups, weights, kv_rank, spa = lay[L_GROUPS], lay[L_WEIGHTS], lay[L_KV_RANK], lay[L_SHARDED_PARAMS]
    whole = float(batch)
    b = whole / np.minimum(whole, p)
    chunk = b * s / o
    sharded = by_sequence == 0.0
    seqs = b if sharded else _busiest(b, groups)
    computed = chunk * (1.0 - hit)
    compute = _compute(1 * _decode_flops(b, seqs, per_seq, spa, sharded) + 0.0, chunk, s, pf, 0.0, f)
    share = seqs / b
    memory = _memory(weights, share, b, ctx, _kv_tokens(chunk, s), kv_rank, kvf, hbm)
    tokens = b * 1 + computed
    message = tokens * hidden * 2.0
    forward = forward_comm(sharded, message, (b * 1 + chunk / s) * hidden * 2.0, share * tokens * hidden * 2.0, alpha, alpha_ar, hop, link, lay)
    comm = forward + (p - 1) * _collective(alpha, 1, hop, 1, message, link)
    return _total(compute, memory, comm, overhead, overlap)


#: Phases of a trial in :func:`batches_within_ttft`.
_LEFT_END, _RIGHT_END, _BISECT = 0, 1, 2


@kernel
def batches_within_ttft(x, lay, tops, o, p, out):
    """``B_TTFT`` of every trial: :func:`mcengine.analytic.serving.largest_batch_within_ttft`'s
    scan of the pieces ``ceil(O m/B)`` from the one holding its ``top`` down (a piece's left
    end, then, for a piece at or above ``p``, the bound ``h`` at the next piece's right
    end), then its bisection inside the piece found (``o`` the whole number of output
    tokens). Rounds as in :func:`mcengine.kernels.searches.largest_batches`: one step time
    per open trial a round, each trial's probes in its own order.

    ``x``: float64 (n, len(TRIAL_COLUMNS)); ``lay``: float64 (len(LAYOUT_ENTRIES),);
    ``tops`` (each trial's ``min(B_max, B_SLO, B_chunk)``) and ``out``: int64 (n,);
    ``o`` and ``p`` whole numbers."""
    n = x.shape[0]
    big_n = o * p
    lo, hi, k, phase = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
    rows = np.empty(n, np.int64)
    m = 0
    for i in range(n):
        slo, top = x[i, X_TTFT_SLO], tops[i]
        if np.isinf(slo):
            out[i] = max(top, 0)
        elif top >= 1 and slo == slo:
            hi[i] = max(top, 1)
            rows[m] = i
            m += 1
        else:
            out[i] = 0
    while m:
        kept = 0
        for j in range(m):
            i = rows[j]
            slo, done = x[i, X_TTFT_SLO], False
            if phase[i] == _LEFT_END:
                k[i] = -(-(o * min(hi[i], p)) // hi[i])
                lo[i] = 1 if k[i] >= o else -(-big_n // max(k[i], 1))
                if k[i] * _step_s(lo[i], x, i, lay) <= slo:
                    phase[i] = _BISECT
                    done = hi[i] <= lo[i]
                elif lo[i] - 1 < 1:
                    out[i], done = 0, True
                elif lo[i] - 1 >= p:
                    phase[i] = _RIGHT_END
                else:
                    hi[i] = lo[i] - 1
            elif phase[i] == _RIGHT_END:
                below = lo[i] - 1
                if big_n * _step_s(below, x, i, lay) / below > slo:
                    out[i], done = 0, True
                else:
                    hi[i], phase[i] = below, _LEFT_END
            else:
                mid = (lo[i] + hi[i] + 1) // 2
                if k[i] * _step_s(mid, x, i, lay) <= slo:
                    lo[i] = mid
                else:
                    hi[i] = mid - 1
                done = hi[i] <= lo[i]
            if done:
                if phase[i] == _BISECT:
                    out[i] = lo[i]
            else:
                rows[kept] = i
                kept += 1
        m = kept
