"""The continuous-batching step's batch-dependent terms as pure functions of numbers, and
the continuous plans' two batch-limit searches compiled over them (docs/performance.md#plan-searches).

The functions without a decorator below are the one copy of each term: NumPy calls them
on per-trial arrays (:mod:`mcengine.analytic.roofline` and
:func:`mcengine.analytic.serving.continuous_step`), and :func:`continuous_searches` on
one trial's scalars (each compiled inline through :data:`~mcengine.jit.inline_kernel`).
Every term is the same sequence of IEEE operations either way (no fast-math, no fused
multiply-add), so a step time is the same float.

:func:`continuous_searches` runs :func:`mcengine.analytic.roofline.limits.largest_batch`
(``B_SLO``) and :func:`mcengine.analytic.serving.largest_batch_within_ttft` (``B_TTFT``)
trial by trial, with the same probes in the same order, for the layouts it covers: a
dense model, heads sharded, data-parallel or grouped attention, a tensor group inside one
scale-up domain running its all-reduces by "auto" (the faster of two-shot and one-shot),
no stage boundary leaving a domain, no speculative decoding. Everything that does not
depend on the batch (rates, one prompt's prefill FLOPs, a sequence's decode FLOPs, the
weights streamed, the collectives' constants) is computed by NumPy once per search and
handed to it.
"""

from __future__ import annotations

import numpy as np

from ..jit import event_kernel, inline_kernel, kernel


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

#: Columns of the per-trial table :func:`continuous_searches` reads (float64, one row per trial).
TRIAL_COLUMNS = ("flops_per_s", "hbm_bytes_per_s", "link_bytes_per_s", "collective_start_s", "allreduce_start_s", "hop_latency_s",
                 "comm_overlap", "kv_read_factor", "overhead_s", "prefix_hit", "prompt_tokens", "output_tokens", "context_tokens",
                 "prompt_flops", "sequence_flops", "tpot_slo_s", "ttft_slo_s")
#: Entries of its layout vector (float64): the pipeline, the model's layers and hidden size,
#: the attention mode (``sequence_attention`` 0: heads sharded, 1: data-parallel or grouped),
#: the busiest rank's divisor of the sequences ``g`` (:func:`busiest_sequences`), the weights
#: streamed, KV bytes per token of a rank, the sharded weights a token multiplies by, and
#: the ``(k, c)`` pairs of the collectives: the tensor group's all-reduce (two-shot, one-shot;
#: ``tp_ranks`` > 1), its one-shot all-gather, the inner all-reduce of a grouped attention
#: group (two-shot, one-shot; ``inner_ranks`` > 1), and ``grouped`` (1: add that all-reduce).
LAYOUT_ENTRIES = ("pipeline", "layers", "hidden", "sequence_attention", "attention_groups", "weights", "kv_rank", "sharded_params",
                  "tp_ranks", "ar_k2", "ar_c2", "ar_k1", "ar_c1", "ag_k", "ag_c", "inner_ranks", "in_k2", "in_c2", "in_k1", "in_c1",
                  "grouped")


@event_kernel
def _step_s(batch, x, i, lay):
    """The continuous step's ``total_s`` at integer ``batch`` for trial ``i`` (row ``i`` of
    ``x``, :data:`TRIAL_COLUMNS`) and the layout vector ``lay`` (:data:`LAYOUT_ENTRIES`), as
    :func:`mcengine.analytic.serving.continuous_step` composes it: one query token per
    sequence (``q = 1``: ``q b``, ``q flops``) and no hot expert (``+ 0.0``), written as
    there so that each operation is the same."""
    f, hbm, link, alpha, alpha_ar, hop, overlap, kvf, overhead, hit, s, o, ctx, pf, per_seq = (
        x[i, 0], x[i, 1], x[i, 2], x[i, 3], x[i, 4], x[i, 5], x[i, 6], x[i, 7], x[i, 8], x[i, 9], x[i, 10], x[i, 11], x[i, 12], x[i, 13],
        x[i, 14])
    p, layers, hidden, by_sequence, groups, weights, kv_rank, spa = lay[0], lay[1], lay[2], lay[3], lay[4], lay[5], lay[6], lay[7]
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
    if sharded:
        ar = 0.0
        if lay[8] > 1.0:
            ar = np.minimum(_collective(alpha_ar, lay[9], hop, lay[10], message, link), _collective(alpha_ar, lay[11], hop, lay[12], message, link))
        forward = 2 * layers * ar
    else:
        rows = b * 1 + chunk / s
        head, gather = 0.0, 0.0
        if lay[8] > 1.0:
            head = _collective(alpha, lay[13], hop, lay[14], rows * hidden * 2.0, link)
            gather = 2.0 * _collective(alpha, lay[13], hop, lay[14], message, link)
        forward = layers * gather + head
        if lay[20] != 0.0:
            inner = 0.0
            if lay[15] > 1.0:
                group = share * tokens * hidden * 2.0
                inner = np.minimum(_collective(alpha_ar, lay[16], hop, lay[17], group, link), _collective(alpha_ar, lay[18], hop, lay[19], group, link))
            forward = forward + layers * inner
    comm = forward + (p - 1) * _collective(alpha, 1, hop, 1, message, link)
    return _total(compute, memory, comm, overhead, overlap)


@inline_kernel
def _next_probe(limit, lo, hi, t_lo, t_hi, interpolate):
    """:func:`mcengine.analytic.roofline.limits._next_probe` for one trial."""
    if not interpolate:
        return (lo + hi) // 2
    step = np.floor((limit - t_lo) / (t_hi - t_lo) * (hi - lo))
    move = 1 if (step != step or np.isinf(step)) else int(step)
    return min(max(lo + move, lo + 1), hi - 1)


@inline_kernel
def _largest_batches(x, lay, cap, out):
    """``B_SLO`` of every trial: :func:`mcengine.analytic.roofline.limits.largest_batch`'s
    bracket and its alternating interpolation and bisection probes, trial by trial. The
    trials still open advance one probe per round (round ``j`` interpolates when ``j`` is
    even, as there), so that the probes of different trials, independent of each other,
    overlap in the processor instead of waiting on one trial's chain of divisions."""
    n = x.shape[0]
    lo, hi = np.zeros(n, np.int64), np.zeros(n, np.int64)
    t_lo, t_hi = np.zeros(n), np.zeros(n)
    rows = np.empty(n, np.int64)
    m = 0
    for i in range(n):
        limit, top = x[i, 15], cap[i]
        t_one = _step_s(np.int64(1), x, i, lay)  # (int64 as every other probe's batch, not a literal 1: one compiled _step_s)
        t_top = _step_s(max(top, 1), x, i, lay)
        if top > 1 and t_one <= limit and t_top > limit:
            lo[i], hi[i], t_lo[i], t_hi[i] = 1, top, t_one, t_top
            out[i] = 1
            if top - 1 > 1:
                rows[m] = i
                m += 1
        else:
            out[i] = top if (top >= 1 and t_top <= limit) else 0
    interpolate = True
    while m:
        kept = 0
        for j in range(m):
            i = rows[j]
            mid = _next_probe(x[i, 15], lo[i], hi[i], t_lo[i], t_hi[i], interpolate)
            t_mid = _step_s(mid, x, i, lay)
            if t_mid <= x[i, 15]:
                lo[i], t_lo[i] = mid, t_mid
            else:
                hi[i], t_hi[i] = mid, t_mid
            if hi[i] - lo[i] > 1:
                rows[kept] = i
                kept += 1
            else:
                out[i] = lo[i]
        m = kept
        interpolate = not interpolate


#: Phases of a trial in :func:`_batches_within_ttft`.
_LEFT_END, _RIGHT_END, _BISECT = 0, 1, 2


@inline_kernel
def _batches_within_ttft(x, lay, tops, o, p, out):
    """``B_TTFT`` of every trial: :func:`mcengine.analytic.serving.largest_batch_within_ttft`'s
    scan of the pieces ``ceil(O m/B)`` from the one holding its ``top`` down (a piece's left
    end, then, for a piece at or above ``p``, the bound ``h`` at the next piece's right
    end), then its bisection inside the piece found (``o`` the whole number of output
    tokens). Rounds as in :func:`_largest_batches`: one step time per open trial a round,
    each trial's probes in its own order."""
    n = x.shape[0]
    big_n = o * p
    lo, hi, k, phase = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
    rows = np.empty(n, np.int64)
    m = 0
    for i in range(n):
        slo, top = x[i, 16], tops[i]
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
            slo, done = x[i, 16], False
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


@kernel
def continuous_searches(x, lay, cap, batch_memory, batch_chunk, output_tokens, pipeline, b_slo, b_ttft):
    """Each trial's ``B_SLO`` (the largest batch up to ``cap`` whose step meets the TPOT SLO)
    and ``B_TTFT`` (the largest in ``[1, min(B_max, B_SLO, B_chunk)]`` whose TTFT meets the
    TTFT SLO), as :func:`mcengine.stages.roofline.serving.evaluate_continuous` finds them.

    ``x``: float64 (n, len(TRIAL_COLUMNS)); ``lay``: float64 (len(LAYOUT_ENTRIES),);
    ``cap``, ``batch_memory``, ``batch_chunk``: int64 (n,); ``output_tokens`` and
    ``pipeline`` whole numbers; ``b_slo``, ``b_ttft``: int64 (n,) outputs."""
    _largest_batches(x, lay, cap, b_slo)
    _batches_within_ttft(x, lay, np.minimum(np.minimum(batch_memory, b_slo), batch_chunk), output_tokens, pipeline, b_ttft)
