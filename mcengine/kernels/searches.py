"""The batch-limit searches compiled: the static plans' decode step and batch prefill
latency as functions of one trial's numbers, and one bracketed search over any of the
compiled steps (docs/performance.md#plan-searches).

:func:`largest_batches` runs :func:`mcengine.analytic.roofline.limits.largest_batch`
trial by trial (its batches: its probes where the step is not monotone in the batch,
fewer where it is), over the step time ``kind``
names: :data:`DECODE` (the static decode step, ``B_SLO`` of
:func:`~mcengine.analytic.roofline.limits.batch_limit_slo`), :data:`PREFILL` (the batch's
last TTFT, ``B_TTFT`` of :func:`~mcengine.analytic.roofline.limits.batch_limit_ttft`),
:data:`PREFILL_KV` (that plus the KV transfer, a prefill instance's ``P_TTFT``,
:func:`mcengine.stages.roofline.serving.prefill_pass`) or :data:`CONTINUOUS` (the
continuous step, :func:`mcengine.kernels.continuous._step_s`). The static steps cover
the layouts the continuous one does (:mod:`mcengine.kernels.continuous`) and are written
operation by operation as :mod:`mcengine.analytic.roofline.steps` composes them (no
fast-math, no fused multiply-add), so a step time is the same float; what does not
depend on the batch is computed by NumPy once per search and handed in
(:func:`mcengine.analytic.roofline.limits.search_table`). The steps, like the continuous
one and :func:`mcengine.kernels.continuous.forward_comm`, are linked kernels (no entry
point from Python, :data:`mcengine.jit.linked_kernel`): a first run compiles and links them
into the two searches without a wrapper each; Python reaches them through :func:`_timed`.
"""

from __future__ import annotations

import numpy as np

from ..jit import inline_kernel, kernel, linked_kernel
from .continuous import (L_GROUPS, L_HIDDEN, L_KV_RANK, L_LAYERS, L_PIPELINE, L_SEQUENCE_ATTENTION, L_SHARDED_PARAMS, L_WEIGHTS,
                         LAYOUT_ENTRIES, _busiest, _collective, _decode_flops, _step_s, _total, forward_comm)

#: The step times :func:`largest_batches` searches over (``kind``).
DECODE, PREFILL, PREFILL_KV, CONTINUOUS = 0, 1, 2, 3

#: Columns of the per-trial table the static steps read (float64, one row per trial): the
#: rates, the overheads (a decode step's ``step + L layer``, and each), the prefix-cache
#: hit rate, the prompt and decode context, a sequence's decode FLOPs, one prompt's
#: prefill FLOPs of the attention the busiest group runs per prompt and of the rest
#: (:func:`mcengine.analytic.roofline.steps.prefill_flops_per_prompt`), the KV transfer's
#: link rates, and the two SLOs (s).
STATIC_COLUMNS = ("flops_per_s", "hbm_bytes_per_s", "link_bytes_per_s", "collective_start_s", "allreduce_start_s", "hop_latency_s",
                  "comm_overlap", "kv_read_factor", "overhead_s", "step_overhead_s", "layer_overhead_s", "prefix_hit", "prompt_tokens",
                  "context_tokens", "sequence_flops", "prompt_attention_flops", "prompt_flops", "kv_link_bytes_per_s", "kv_start_s",
                  "kv_hop_s", "tpot_slo_s", "ttft_slo_s")
#: Entries of the static steps' layout vector after :data:`~mcengine.kernels.continuous.LAYOUT_ENTRIES`:
#: the whole model's KV bytes per token and the instance's GPUs (the KV transfer).
STATIC_LAYOUT_ENTRIES = ("kv_token", "instance_gpus")
#: Their indices, in the order the names above give them (the steps read by these, never by number).
(S_FLOPS, S_HBM, S_LINK, S_ALPHA, S_ALPHA_AR, S_HOP, S_OVERLAP, S_KV_FACTOR, S_OVERHEAD, S_STEP_OVERHEAD, S_LAYER_OVERHEAD, S_HIT,
 S_PROMPT, S_CONTEXT, S_SEQUENCE_FLOPS, S_PROMPT_ATTENTION_FLOPS, S_PROMPT_FLOPS, S_KV_LINK, S_KV_ALPHA, S_KV_HOP, S_TPOT_SLO,
 S_TTFT_SLO) = range(len(STATIC_COLUMNS))
L_KV_TOKEN, L_INSTANCE_GPUS = range(len(LAYOUT_ENTRIES), len(LAYOUT_ENTRIES) + len(STATIC_LAYOUT_ENTRIES))


@linked_kernel
def _decode_s(batch, x, i, lay):
    """The static decode step's ``total_s`` at integer ``batch`` for trial ``i`` (row ``i``
    of ``x``, :data:`STATIC_COLUMNS`): :func:`mcengine.analytic.roofline.steps.decode_step`
    without speculative decoding (one query token, ``q = 1``; no hot expert, ``+ 0.0``)."""
    f, hbm, link, alpha, alpha_ar, hop = x[i, S_FLOPS], x[i, S_HBM], x[i, S_LINK], x[i, S_ALPHA], x[i, S_ALPHA_AR], x[i, S_HOP]
    overlap, kvf, overhead, ctx, per_seq = x[i, S_OVERLAP], x[i, S_KV_FACTOR], x[i, S_OVERHEAD], x[i, S_CONTEXT], x[i, S_SEQUENCE_FLOPS]
    p, hidden, by_sequence = lay[L_PIPELINE], lay[L_HIDDEN], lay[L_SEQUENCE_ATTENTION]
    groups, weights, kv_rank, spa = lay[L_GROUPS], lay[L_WEIGHTS], lay[L_KV_RANK], lay[L_SHARDED_PARAMS]
    whole = float(batch)
    b = whole / np.minimum(whole, p)
    sharded = by_sequence == 0.0
    seqs = b if sharded else _busiest(b, groups)
    flops = 1 * _decode_flops(b, seqs, per_seq, spa, sharded) + 0.0
    nbytes = weights + seqs * ctx * (kv_rank * kvf)
    message = b * 1 * hidden * 2.0
    comm = forward_comm(sharded, message, message, seqs * hidden * 2.0, alpha, alpha_ar, hop, link, lay)
    comm = comm + (p - 1) * _collective(alpha, 1, hop, 1, message, link)
    return _total(flops / f, nbytes / hbm, comm, overhead, overlap)


@linked_kernel
def _prefill_s(batch, x, i, lay, kv):
    """The TTFT of a static batch's last request at integer ``batch`` for trial ``i``:
    :func:`mcengine.analytic.roofline.steps.batch_time_to_first_token` (the prefill of
    ``m = min(B, p)`` micro-batches of ``b = B/m`` prompts, times ``(m + p - 1)/m`` with
    pipelining), plus, with ``kv``, the point-to-point of the batch's KV caches
    (:func:`mcengine.analytic.serving.kv_transfer_s`)."""
    f, hbm, link, alpha, alpha_ar, hop = x[i, S_FLOPS], x[i, S_HBM], x[i, S_LINK], x[i, S_ALPHA], x[i, S_ALPHA_AR], x[i, S_HOP]
    overlap, overhead, step, layer, hit = x[i, S_OVERLAP], x[i, S_OVERHEAD], x[i, S_STEP_OVERHEAD], x[i, S_LAYER_OVERHEAD], x[i, S_HIT]
    s, attention, rest = x[i, S_PROMPT], x[i, S_PROMPT_ATTENTION_FLOPS], x[i, S_PROMPT_FLOPS]
    p, layers, hidden, by_sequence = lay[L_PIPELINE], lay[L_LAYERS], lay[L_HIDDEN], lay[L_SEQUENCE_ATTENTION]
    groups, weights, kv_rank = lay[L_GROUPS], lay[L_WEIGHTS], lay[L_KV_RANK]
    whole = float(batch)
    mb = np.minimum(whole, p)
    b = whole / mb
    share = mb / p
    new = 1.0 - hit
    sharded = by_sequence == 0.0
    seqs = b if sharded else _busiest(b, groups)
    flops = (b * rest if sharded else seqs * attention + b * rest) + 0.0
    nbytes = weights + seqs * s * kv_rank
    message = b * s * new * hidden * 2.0
    comm = forward_comm(sharded, message, b * hidden * 2.0, seqs * s * new * hidden * 2.0, alpha, alpha_ar, hop, link, lay)
    hops = mb * (p - 1) / p * _collective(alpha, 1, hop, 1, message, link)
    compute, memory, comm = share * flops / f, share * nbytes / hbm, share * comm + hops
    if p == 1.0:
        total = _total(compute, memory, comm, step + share * layers * layer, overlap)
    else:
        fill = (mb + p - 1) / mb
        total = _total(fill * compute, fill * memory, fill * comm, overhead, overlap)
    if kv:
        total = total + _collective(x[i, S_KV_ALPHA], 1, x[i, S_KV_HOP], 1, whole * s * lay[L_KV_TOKEN] / lay[L_INSTANCE_GPUS], x[i, S_KV_LINK])
    return total


@inline_kernel
def _timed(kind, batch, x, i, lay):
    """The step time ``kind`` names at ``batch`` for trial ``i``."""
    if kind == CONTINUOUS:
        return _step_s(batch, x, i, lay)
    if kind == DECODE:
        return _decode_s(batch, x, i, lay)
    return _prefill_s(batch, x, i, lay, kind == PREFILL_KV)


@inline_kernel
def _next_probe(limit, lo, hi, t_lo, t_hi, interpolate):
    """:func:`mcengine.analytic.roofline.limits._next_probe` for one trial."""
    if not interpolate:
        return (lo + hi) // 2
    step = np.floor((limit - t_lo) / (t_hi - t_lo) * (hi - lo))
    move = 1 if (step != step or np.isinf(step)) else int(step)
    return min(max(lo + move, lo + 1), hi - 1)


#: Rounds a secant search may go without halving its bracket before it bisects (:func:`_secant_probe`).
SECANT_STALL = 3


@inline_kernel
def _secant_probe(limit, lo, hi, b_prev, t_prev, b_last, t_last, stalled, stair):
    """The next batch inside ``(lo, hi)`` of a search over a step time non-decreasing in
    the batch: the floor of the root of the secant through the last two batches timed
    (``b_prev``, ``b_last``, either side of the limit or the same side), at least
    ``lo + 1``, moved onto the stairs of ``stair`` batches (:func:`_on_stair`); the
    midpoint where the secant has no root inside the bracket, or after
    :data:`SECANT_STALL` rounds that did not halve it. Near the answer the step time is
    affine in the batch (one roofline term dominates), so two probes on that piece put the
    root within one batch of it, and the probe after checks the batch above; on a
    staircase, the same holds of the stairs' tops, where the answer mostly lies (the step
    rises little along a stair and jumps at its end). The rounds
    are bounded by the cap alone: each halving of the bracket costs at most
    :data:`SECANT_STALL` rounds and a midpoint, about ``(SECANT_STALL + 1) log2(cap)`` in all
    (81 at ``cap = 2^20``, against about 40 for the alternating search)."""
    if stalled >= SECANT_STALL:
        return (lo + hi) // 2
    root = np.floor(b_last + (limit - t_last) * (b_last - b_prev) / (t_last - t_prev))
    if not (root >= lo and root < hi):  # (NaN or infinite: no root inside)
        return (lo + hi) // 2
    return _on_stair(min(max(int(root), lo + 1), hi - 1), lo, stair)


@inline_kernel
def _on_stair(batch, lo, stair):
    """The batch to time for a probe ``batch`` inside ``(lo, hi)`` where the step is a
    staircase of ``stair`` batches (its sequences ``ceil(B/stair)`` times a group's): the
    last stair top at or below ``batch`` (``batch`` itself when it is a top, else the top of
    the stair below), where that lies above ``lo``; else, with ``lo`` a stair's top, the
    first batch of the next stair (the one that decides whether ``lo`` is the answer); else
    ``batch``. Always inside the bracket, so the search stays a
    bracketed search (its answer unchanged); ``stair`` 1 leaves every batch as it is."""
    top = batch // stair * stair
    if top > lo:
        return top
    if lo % stair == 0:
        return lo + 1
    return batch


@kernel
def largest_batches(kind, x, lay, column, cap, out):
    """The largest batch ``B <= cap`` of every trial whose step time ``kind`` meets the
    limit in column ``column`` of ``x`` (0 if one sequence misses it):
    :func:`mcengine.analytic.roofline.limits.largest_batch`'s answer, trial by trial, in
    its bracket, ``cap`` timed first: a trial whose ``cap`` meets the limit, or is 1, needs
    no other probe, and one whose ``cap`` is 0 none (the batch 1 is timed only where it
    can still decide). The decode and continuous steps time every batch up to the
    pipeline's depth ``p`` as the batch 1 (``b = B/min(B, p)`` is 1, and ``b`` is all they
    read of the batch), so a ``cap`` within it needs no other probe either. Inside the
    bracket:

    * where the step time is non-decreasing in the batch, the batch is unique and any
      bracketed search finds it: the static steps and the continuous step with heads
      sharded, whose terms are non-decreasing functions of ``B`` composed of rounded
      operations that keep that order (a pipeline's fill of fewer micro-batches than
      stages, ``(m + p - 1)/m`` times a share ``m/p``, grows by ``1/(m + p - 1)`` from one
      batch to the next, far above rounding; tests/kernels/test_searches.py and
      tests/kernels/test_continuous.py check the batches against NumPy's probes on random
      inputs; tests/kernels/test_searches.py times every batch up to the cap). There the
      bracket of the decode and continuous steps starts at ``p`` (timed as the batch 1),
      and the probes follow the secant of the last two batches timed (:func:`_secant_rounds`),
      each moved down to the last stair top at or below it where the busiest attention
      group's ``ceil(b/g)`` sequences make the step a staircase (:func:`_on_stair`);
    * the continuous step with data-parallel or grouped attention is not monotone (the
      prefill chunk's KV read, split over ``ceil(b/g)`` sequences of ``b``): its probes are
      :func:`~mcengine.analytic.roofline.limits.largest_batch`'s own
      (:func:`_alternating_rounds`), so the batch found is the same.

    The trials still open advance one probe per round, so that the probes of different
    trials, independent of each other, overlap in the processor instead of waiting on one
    trial's chain of divisions.

    ``x``: float64 (n, columns), :data:`STATIC_COLUMNS` or, for :data:`CONTINUOUS`,
    :data:`~mcengine.kernels.continuous.TRIAL_COLUMNS`; ``lay``: float64, the layout vector
    (:data:`~mcengine.kernels.continuous.LAYOUT_ENTRIES`, then :data:`STATIC_LAYOUT_ENTRIES`
    for the static steps); ``cap``, ``out``: int64 (n,)."""
    n = x.shape[0]
    lo, hi = np.zeros(n, np.int64), np.zeros(n, np.int64)
    t_lo, t_hi = np.zeros(n), np.zeros(n)
    rows = np.empty(n, np.int64)
    m = 0
    one = np.int64(1)  # the batch every probe passes, an int64 as the searches' own batches are
    depth = int(lay[L_PIPELINE])
    level = depth if kind == DECODE or kind == CONTINUOUS else 1  # (the batches timed as the batch 1)
    monotone = kind != CONTINUOUS or lay[L_SEQUENCE_ATTENTION] == 0.0
    start = level if monotone else 1
    for i in range(n):
        limit, top = x[i, column], cap[i]
        out[i] = 0
        if top < 1:  # (no batch to time)
            continue
        t_top = _timed(kind, top, x, i, lay)
        if t_top <= limit:
            out[i] = top
            continue
        if top == 1 or not t_top > limit:  # (one batch, timed; or a NaN time: no bracket)
            continue
        t_one = t_top if top <= level else _timed(kind, one, x, i, lay)
        if t_one <= limit:
            lo[i], hi[i], t_lo[i], t_hi[i] = start, top, t_one, t_top
            out[i] = start
            if top - start > 1:
                rows[m] = i
                m += 1
    if monotone:
        stair = depth * int(lay[L_GROUPS]) if lay[L_SEQUENCE_ATTENTION] != 0.0 else 1  # (b = B/p a multiple of g from B = p g on)
        _secant_rounds(kind, x, lay, column, rows, m, lo, hi, t_lo, t_hi, out, np.empty((4, n)), np.empty(n, np.int64), np.zeros(n, np.int64), stair)
    else:
        _alternating_rounds(kind, x, lay, column, rows, m, lo, hi, t_lo, t_hi, out)


@inline_kernel
def _narrowed(i, mid, t_mid, limit, lo, hi, t_lo, t_hi, out):
    """Trial ``i``'s bracket with the batch ``mid`` timed at ``t_mid`` in it: True while a
    batch lies between its ends, else False with its answer written to ``out``."""
    if t_mid <= limit:
        lo[i], t_lo[i] = mid, t_mid
    else:
        hi[i], t_hi[i] = mid, t_mid
    if hi[i] - lo[i] > 1:
        return True
    out[i] = lo[i]
    return False


@linked_kernel
def _alternating_rounds(kind, x, lay, column, rows, m, lo, hi, t_lo, t_hi, out):
    """:func:`largest_batches`' rounds over the open trials ``rows[:m]`` by
    :func:`~mcengine.analytic.roofline.limits.largest_batch`'s probes: round ``j``
    interpolates when ``j`` is even, else bisects."""
    interpolate = True
    while m:
        kept = 0
        for j in range(m):
            i = rows[j]
            mid = _next_probe(x[i, column], lo[i], hi[i], t_lo[i], t_hi[i], interpolate)
            if _narrowed(i, mid, _timed(kind, mid, x, i, lay), x[i, column], lo, hi, t_lo, t_hi, out):
                rows[kept] = i
                kept += 1
        m = kept
        interpolate = not interpolate


@linked_kernel
def _secant_rounds(kind, x, lay, column, rows, m, lo, hi, t_lo, t_hi, out, points, width, stalled, stair):
    """:func:`largest_batches`' rounds over the open trials ``rows[:m]`` for a step
    non-decreasing in the batch: the bracket's interpolation first, then
    :func:`_secant_probe` through each trial's last two batches timed (the bracket's ends
    before its first probe), both moved onto the stairs of ``stair`` batches
    (:func:`_on_stair`; 1: no stairs); the midpoint after :data:`SECANT_STALL` rounds that
    did not halve the bracket. ``points``: float64 (4, n), each trial's last two batches and their
    times; ``width`` and ``stalled``: int64 (n,), its bracket's width when last halved and
    the rounds since (0)."""
    first = True
    while m:
        kept = 0
        for j in range(m):
            i = rows[j]
            limit = x[i, column]
            if first:
                points[0, i], points[1, i], points[2, i], points[3, i], width[i] = float(lo[i]), t_lo[i], float(hi[i]), t_hi[i], hi[i] - lo[i]
                mid = _on_stair(_next_probe(limit, lo[i], hi[i], t_lo[i], t_hi[i], True), lo[i], stair)
            else:
                mid = _secant_probe(limit, lo[i], hi[i], points[0, i], points[1, i], points[2, i], points[3, i], stalled[i], stair)
            t_mid = _timed(kind, mid, x, i, lay)
            points[0, i], points[1, i], points[2, i], points[3, i] = points[2, i], points[3, i], float(mid), t_mid
            still_open = _narrowed(i, mid, t_mid, limit, lo, hi, t_lo, t_hi, out)
            if 2 * (hi[i] - lo[i]) <= width[i]:
                width[i], stalled[i] = hi[i] - lo[i], 0
            else:
                stalled[i] += 1
            if still_open:
                rows[kept] = i
                kept += 1
        m = kept
        first = False
