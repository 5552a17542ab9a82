"""Closed forms of the serving modes beyond static batching: continuous batching with
chunked prefill, and disaggregated prefill and decode (docs/model.md#serving).

Plain NumPy functions, vectorised over trials like :mod:`mcengine.analytic.roofline`,
whose phase helpers (decode step, one prompt's prefill, all-reduces, point-to-points)
they call rather than copy. The continuous step's batch-dependent terms are the pure
functions of :mod:`mcengine.kernels.continuous`, which its compiled batch searches call
on one trial's numbers (:func:`compiled_batch_limits`, docs/performance.md#plan-searches). Notation as there: ``t``/``p`` tensor/pipeline degrees,
``S`` prompt tokens, ``O`` output tokens, ``T̄ = S + O/2``, ``B`` running sequences.

**Continuous batching with chunked prefill** (vLLM, Sarathi-Serve:
docs/sources.md#serve-chunked-prefill). ``B`` sequences decode; to keep ``B`` running,
each step also prefills ``c = B S / O`` prompt tokens (one new request joins per ``O/B``
steps on average), which is infeasible when ``c`` exceeds the engine's per-step token
budget ``prefill_chunk_tokens``. One step, for ``b = B/m`` sequences and ``c_b = b S/O``
chunk tokens per micro-batch (``m = min(B, p)`` as in the static decode)::

    compute  = [b (2 P_active + 4 L n_h d_h T̄) + c_b (2 L P_layer + 2 L n_h d_h S)] / t / F
    memory   = [b_w P_stream / t + b T̄ KV_rank + max(c_b, S)/2 KV_rank] / W
    comm     = 2L all-reduces of (b + c_b) d 2 bytes + (p-1) point-to-points of the same
    overhead = step + L layer
    tau      = max(max(compute, memory), o comm) + (1 - o) comm + overhead

with ``o`` = ``workload.comm_overlap`` (0: ``max(compute, memory) + comm + overhead``),
the all-reduce algorithm of ``workload.allreduce``, and with data-parallel attention
the attention terms (KV read) of the busiest rank's share of the sequences, as in the
static decode step.

The chunk's FLOPs are ``c_b/S`` prompts' worth of one prompt's prefill (prefill FLOPs
are linear in prompts), which adds the LM head of the prompts that finish in the step
(``2 d V`` per prompt, ``c_b/S`` prompts per step) to the issue's formula; the chunk's
attention reads its prompt's earlier KV once per chunk, on average ``max(c_b, S)/2``
tokens (:func:`chunk_kv_read_tokens`; the issue's ``c_b S/2`` reads it once per token). Without
pipelining ``b = B``, ``c_b = c``. TPOT ``= tau``, output tokens/s ``= B / tau``,
TTFT ``= ceil(S / c_b) tau = ceil(O / b) tau`` (a prompt's chunks ride on its own
micro-batch's steps).

**Disaggregated prefill and decode** (Splitwise, DistServe:
docs/sources.md#serve-disaggregated). Each instance is a prefill or a decode instance,
each with its own layout. A prefill instance batches ``P`` prompts per forward pass
(:func:`mcengine.analytic.roofline.steps.prefill` at batch ``P``, pipelining keeping the stages
full): the weights are streamed once per pass while compute is linear in prompts, so
short prompts gain. ``P`` is the largest batch whose ``P S`` tokens fit the engine's
per-pass token budget (``prefill_chunk_tokens``; ``P = 1`` if one prompt exceeds it,
:func:`prefill_batch_limit_budget`), whose KV cache fits HBM next to the weights, and
whose TTFT meets the SLO. A prompt's TTFT is the whole pass's latency (the batch's last
request, :func:`mcengine.analytic.roofline.steps.batch_time_to_first_token`) plus moving the
pass's KV caches to the decode instances; waiting for a pass to start (queueing) is not
modelled. A decode instance decodes ``B`` sequences (the static decode step).

The share ``f`` of instances given to prefill makes prompt supply equal decode demand,
``f r_p = (1 - f) r_d`` with ``r_p = P/prefill(P)`` prompts/s per prefill instance and
``r_d = B / (O TPOT)`` requests/s per decode instance, so ``f = r_d / (r_p + r_d)``;
output tokens/s per instance of the cluster (prefill instances included) is
``min((1 - f) r_d O, f r_p O)`` (equal at the chosen split, the bottleneck when a
trial's rates move away from it).

Each prompt's KV cache, ``S`` x the whole model's KV bytes per token ``KV_token``,
crosses the scale-up links from the prefill to a decode instance, every GPU of the
prefill instance sending its share over its own link: a pass's ``P`` caches are one
point-to-point of ``P S KV_token / g`` bytes per GPU (``g`` GPUs per instance), added to
TTFT. **Link contention**: the KV stream must fit the links. A prefill instance's ``g``
links can send at most ``g W_link (1 - u) / (S KV_token)`` prompts/s, a decode
instance's ``g`` links receive at most as many requests/s, with ``u`` the share of the
instance's time its links carry its own collectives (``comm/total`` of a prefill pass or
a decode step; a link's two directions are counted separately, the collectives load
both); ``r_p`` and ``r_d`` are capped by these (:func:`kv_link_prompts_per_s`). Below
the cap (link load < 1) the transfer keeps the point-to-point time above: no queueing
behind other prompts' transfers is modelled.
"""

from __future__ import annotations

import numpy as np

from ..kernels import continuous as kc, searches as ks
from ..kernels.continuous import continuous_compute_s, continuous_memory_s, kv_read_tokens
from .roofline import model as rm, weights as rw, collectives as rc, steps as rt, limits as rl

SERVING_MODES = ("static", "continuous", "disaggregated")


# --------------------------------------------------------------------------- continuous


def chunk_tokens(batch, prompt_tokens: int, output_tokens: int) -> np.ndarray:
    """``c = B S / O``: prompt tokens each step must prefill to keep ``B`` sequences running."""
    return np.asarray(batch, float) * prompt_tokens / output_tokens


def chunk_kv_read_tokens(chunk, prompt_tokens: int) -> np.ndarray:
    """Tokens of KV cache a step's prefill chunk reads: ``max(c, S) / 2``.

    A chunk's queries attend to their prompt's earlier tokens, read from HBM once per
    chunk (FlashAttention streams the prefix through on-chip memory for the whole chunk),
    not once per query token: a chunk smaller than its prompt (``c < S``) reads on
    average half the prompt (``S/2``), ``c/S`` whole prompts read their own ``c/2`` on
    average. The issue's ``c S/2`` counts the prefix once per chunk token, which at 50
    users of 5,000-token prompts is ~500x the prefix and puts the step far above NIM's
    measured 60 ms (docs/sources.md#serve-nim-concurrency).
    """
    return kv_read_tokens(np.asarray(chunk, float), np.asarray(prompt_tokens, float))


#: The largest batch limit :func:`batch_limit_chunk` gives: 2^53, the largest integer a
#: float holds exactly (far above any batch the memory or the SLOs allow).
BATCH_LIMIT_CAP = 2.0**53


def batch_limit_chunk(prompt_tokens: int, output_tokens: int, chunk_budget_tokens) -> np.ndarray:
    """``B_chunk = floor(budget O / S)``: the largest batch whose per-step chunk ``c = B S/O``
    fits the engine's token budget (0 when not even one sequence's does), at most
    :data:`BATCH_LIMIT_CAP` (a prompt all but wholly cached leaves so few tokens to prefill
    that the ratio would overflow int64; other limits bind long before). int64."""
    return np.floor(np.minimum(np.asarray(chunk_budget_tokens, float) * output_tokens / prompt_tokens, BATCH_LIMIT_CAP)).astype(np.int64)


def continuous_step(m: rm.ModelCard, layout: rm.Layout, batch, prompt_tokens: int, output_tokens: int, r: rm.Rates,
                    context_tokens=None) -> rm.PhaseTimes:
    """One step of continuous batching with chunked prefill (module docstring): ``B``
    sequences decode one token each while ``c = B S/O`` prompt tokens are prefilled.
    ``total_s`` is the TPOT. With speculative decoding (``r.draft_tokens = k``) each
    sequence verifies ``k + 1`` tokens and emits ``τ`` (:func:`step_tokens`), ``c = B S τ/O``
    (:func:`decode_steps`), and the terms are per output token
    (:func:`~mcengine.analytic.roofline.steps.speculative`: the engine step is ``τ total_s``).
    With prefix caching (``r.prefix_hit = h``) the chunk computes ``(1 - h) c`` tokens
    (:func:`~mcengine.analytic.roofline.steps.prefill_flops`); its KV read is unchanged. With
    expert parallelism and routing imbalance ``ρ`` the busiest rank computes the hottest
    expert's share of the decode tokens and of the chunk's computed tokens
    (:func:`~mcengine.analytic.roofline.steps.hot_expert_flops` of each). Broadcasts over trials. ``context_tokens``: the mean context
    the decoding sequences read (:class:`~mcengine.analytic.lengths.Lengths`), ``S + O/2``
    when not given."""
    t, p, s = layout.tensor, layout.pipeline, np.asarray(prompt_tokens, float)
    q = r.draft_tokens + 1  # query tokens per decoding sequence (k + 1 when speculative)
    b = np.asarray(batch, float) / rt.micro_batches(batch, p)
    chunk = chunk_tokens(b, prompt_tokens, decode_steps(output_tokens, r))
    context = rt.mean_context(prompt_tokens, output_tokens) if context_tokens is None else context_tokens
    decode_flops, _ = rt.decode_work(m, layout, b, np.asarray(context, float), r, q)  # (:func:`~mcengine.analytic.roofline.steps.decode_step`'s compute)
    one_prompt_flops = rt.prefill_flops(m, layout, 1.0, prompt_tokens, r.prefix_hit)  # (:func:`~mcengine.analytic.roofline.steps.time_to_first_token`'s)
    computed = chunk * (1.0 - r.prefix_hit)  # the chunk's tokens not in the prefix cache
    hot = rt.hot_expert_flops(m, layout, computed, r)  # the chunk's tokens at the hottest expert's rank
    compute = continuous_compute_s(decode_flops, chunk, s, one_prompt_flops, hot, r.flops_per_s)
    att, g = layout.attention, layout.attention_groups
    kv_rank = rw.kv_bytes_per_token_rank(m, t, r.kv_bytes, att, g)
    share = rw.attention_sequences_per_rank(b, t, att, g) / b  # the busiest rank's share of the sequences (1: heads sharded)
    weights = r.bytes_per_param * rw.rank_params_streamed(m, t, b * q + computed, att, g)
    memory = continuous_memory_s(weights, share, b, context, chunk_kv_read_tokens(chunk, prompt_tokens), kv_rank, r.kv_read_factor, r.hbm_bytes_per_s)
    tokens = b * q + computed
    comm = rc.forward_comm_s(m, layout, tokens, r, head_rows=b * q + chunk / s, group_tokens=share * tokens) + (p - 1) * rc.stage_hop_s(layout, tokens * m.hidden * rm.ACT_BYTES, r)
    overhead = r.step_overhead_s + m.layers * r.layer_overhead_s
    step = rt.phase_times(compute, memory, comm, overhead, r.comm_overlap)
    return rt.speculative(step, rt.draft_s(m, layout, batch, context, r), r) if r.draft_tokens else step


def step_tokens(r: rm.Rates):
    """Tokens a decoding sequence emits per engine step: 1, or with speculative decoding
    :func:`~mcengine.analytic.roofline.steps.tokens_per_step` (per trial)."""
    return rt.tokens_per_step(r.draft_tokens, r.acceptance) if r.draft_tokens else 1


def computed_prompt_tokens(prompt_tokens, r: rm.Rates):
    """Prompt tokens a prefill computes, ``(1 - h) S`` (``h`` the prefix-cache hit rate):
    what the engine's per-step token budget bounds."""
    return prompt_tokens * (1.0 - r.prefix_hit)


def decode_steps(output_tokens, r: rm.Rates):
    """Engine steps a request decodes for: ``O``, or ``O / τ`` with speculative decoding
    (so a continuous batch admits ``c = B S τ / O`` prompt tokens per step)."""
    return output_tokens / step_tokens(r) if r.draft_tokens else output_tokens


def continuous_ttft_s(step_s, batch, pipeline: int, output_tokens: int) -> np.ndarray:
    """TTFT under chunked prefill: ``ceil(S / c_b) tau = ceil(O / b) tau = ceil(O m / B) tau``
    with ``m = min(B, p)`` micro-batches (integer ceiling, no rounding error)."""
    whole = np.maximum(np.asarray(batch, np.int64), 1)
    steps = -(-(output_tokens * np.minimum(whole, pipeline)) // whole)
    return steps * np.asarray(step_s, float)


def largest_batch_within_ttft(step_s, ttft_slo_s, batch_max, pipeline: int, output_tokens: int, rates: rm.Rates | None = None) -> np.ndarray:
    """``B_TTFT``: the largest integer batch ``B`` in ``[1, B_max]`` whose continuous-batching
    TTFT ``g(B) = k(B) tau(B)``, ``k(B) = ceil(O m / B)``, ``m = min(B, p)``, is at most
    ``ttft_slo_s`` (0 if none is; ``B_max`` without a search for an infinite SLO). Equal to a
    scan over every integer ``B`` (tests/analytic/test_serving_ttft.py), by the argument below.

    ``step_s(B)`` is ``tau``, an int64 array of batches (one per trial) to seconds; ``batch_max``
    the other limits' batch (memory, TPOT SLO, chunk budget), int64 per trial.

    *Why the largest.* Throughput ``B / tau(B)`` is non-decreasing in ``B``: for ``B <= p``
    every micro-batch holds one sequence, ``tau`` is constant; above, ``B/tau = p b / tau(b)``
    with ``b = B/p``, and every term of ``tau(b)`` (:func:`continuous_step` with heads sharded)
    is a non-negative constant plus a linear or concave function of ``b`` (weights streamed
    once per step; the distinct MoE experts touched; all-reduces ``alpha + ... + bytes/W``,
    the fastest of several for "auto"), so ``tau(b)/b`` is non-increasing. The best
    throughput under the TTFT SLO is then the largest batch that meets it.

    *Why not bisection.* ``g`` is a sawtooth: ``k(B) = O`` for ``B <= p`` (and ``tau(B) =
    tau(1)``), then ``k(B) = ceil(N/B)`` with ``N = O p``, which steps down as ``B`` grows
    while ``tau`` grows. The integers with one value ``k`` form a *piece* ``[lo_k, hi_k]``,
    ``lo_k = ceil(N/k)`` (1 for ``k = O``), ``hi_k = floor((N-1)/(k-1))``; on a piece ``g = k
    tau(B)`` is non-decreasing, so its feasible batches are a prefix and its largest one is a
    bisection on integers (at most 64 steps).

    *Which pieces.* Scanning the pieces from the one holding ``B_max`` down, the first whose
    left end ``lo_k`` meets the SLO holds the answer (every larger batch is in a piece whose
    left end, its best, missed). The scan stops without an answer at the first piece whose
    right end already has ``h(hi) = N tau(hi)/hi > T``: for ``B >= p``, ``g(B) >= N tau(B)/B
    = h(B)``, and ``h`` is non-increasing because the throughput is non-decreasing, so every
    smaller batch misses too (for ``B < p`` ``g = O tau(1) = h(p)``). The pieces scanned are
    those whose left ends miss while ``h <= T`` still holds (``g - h < tau``: ``k(B) <
    N/B + 1``), a band around the SLO of fewer than ``2 + k_top (tau(B_top)/tau(B_h) - 1)``
    pieces (``k_top = k(B_max)``, ``B_h`` the smallest batch with ``h <= T``; from
    ``k_top tau(lo_top) > T >= h(B') > (k_top + j - 2) tau(B')`` at the right end ``B'``
    of the ``j``-th piece scanned). ``tau`` changes little across the band at real rates:
    at most 21 evaluations in all in sweeps of O up to 10^6 and B_max up to 10^6 at
    Llama-70B rates (tests/analytic/test_serving_ttft.py counts them). Each piece costs two evaluations of
    ``tau`` per trial, vectorised over the trials still open. The band is not bounded by a
    constant for every input, only by the number of distinct values of ``ceil(N/B)``,
    under ``2 sqrt(N)``: with a step that is nearly proportional to ``B`` (``tau = a + c B``,
    ``a << c``) and an SLO just above ``c N``, meeting it needs ``B`` to divide a number in
    ``[N, T/c]``, a divisor search that no bounded number of evaluations of ``tau`` settles
    (O = 999,983, a prime, ``T = N + 0.5``: 3,996 evaluations, 0.08 s). Real steps carry
    the weights, collectives and overheads in ``a``, which keeps the band to a few pieces.

    With data-parallel attention ``tau`` and ``B/tau`` can dip where the busiest rank's
    ``ceil(b/t)`` steps, as for the TPOT bisection (:func:`mcengine.analytic.roofline.limits.largest_batch`):
    the batch returned then meets the SLO but may not be the largest that does.

    ``rates``: when given (:class:`~mcengine.analytic.roofline.model.Rates` or a
    :class:`~mcengine.analytic.roofline.limits.Timing`), ``step_s(B, r)`` reads the trials' rates from ``r`` (and nothing
    else per trial), and each step times only the trials still open
    (``rates.take(rows)``; elementwise, so the same batches as timing every trial).
    ``output_tokens`` a whole number (exact integer ceilings) or a mean per trial (a real ``O``:
    the same pieces, ``k(B) = ceil(O m / B)`` in floating point).
    """
    o, p = _steps_numerator(output_tokens), int(pipeline)
    top = np.asarray(batch_max, np.int64)
    slo = np.broadcast_to(np.asarray(ttft_slo_s, float), top.shape)
    if np.all(np.isinf(slo)):
        return np.maximum(top, 0)
    big_n = o * p

    def timed(batch, live):
        """``tau`` of ``batch`` where ``live`` (elsewhere 0, never read)."""
        if rates is None or batch.ndim != 1:
            return step_s(batch)
        rows = np.flatnonzero(live)
        out = np.zeros(batch.shape)
        out[rows] = np.broadcast_to(step_s(batch[rows], rates.take(rows)), rows.shape)
        return out

    def steps(b):
        return -(-(o * np.minimum(b, p)) // b)

    def left_end(k):
        return np.where(k >= o, 1, -(-big_n // np.maximum(k, 1)))

    answer = np.where(np.isinf(slo), np.maximum(top, 0), 0)
    open_ = np.isfinite(slo) & (top >= 1)
    hi = np.maximum(top, 1)
    found_lo, found_hi, found_k = np.ones_like(hi), np.zeros_like(hi), np.ones_like(hi)
    while np.any(open_):
        k = steps(hi)
        lo = left_end(k)
        ok = open_ & (k * timed(np.where(open_, lo, 1), open_) <= slo)
        found_lo, found_hi, found_k = np.where(ok, lo, found_lo), np.where(ok, hi, found_hi), np.where(ok, k, found_k)
        open_ &= ~ok
        below = lo - 1  # the next piece's right end
        h = big_n * timed(np.maximum(np.where(open_, below, 1), 1), open_) / np.maximum(below, 1)
        open_ &= (below >= 1) & ~((below >= p) & (h > slo))
        hi = np.where(open_, below, hi)
    # bisection inside each trial's piece: k tau(B) is non-decreasing there, tau(lo) met
    lo, hi = found_lo, found_hi
    while np.any(gap := hi > lo):
        mid = np.where(gap, (lo + hi + 1) // 2, lo)
        ok = found_k * timed(mid, gap) <= slo
        lo = np.where(gap & ok, mid, lo)
        hi = np.where(gap & ~ok, mid - 1, hi)
    return np.where(found_hi >= 1, lo, answer).astype(np.int64)


def compiled_batch_limits(m: rm.ModelCard, layout: rm.Layout, prompt_tokens, output_tokens, context_tokens, r: rm.Rates, tpot_slo_s, ttft_slo_s,
                          cap, batch_memory, batch_chunk, n: int, shared: rl.SharedColumns | None = None):
    """``(B_SLO, B_TTFT)`` of :func:`continuous_step` as
    :func:`~mcengine.analytic.roofline.limits.largest_batch` and
    :func:`largest_batch_within_ttft` find them (the same batches), by the
    compiled searches :func:`mcengine.kernels.searches.largest_batches` and
    :func:`mcengine.kernels.continuous.batches_within_ttft` over ``n`` trials, or None for
    what they do not cover (:func:`continuous_search_tables`; then search with NumPy).
    ``shared``: as for :func:`continuous_search_tables`."""
    tables = continuous_search_tables(m, layout, prompt_tokens, output_tokens, context_tokens, r, tpot_slo_s, ttft_slo_s, n, shared)
    if tables is None:
        return None
    x, lay, o_steps = tables
    b_slo, b_ttft = np.empty(n, np.int64), np.empty(n, np.int64)
    cap, b_mem, b_chunk = (np.broadcast_to(np.asarray(v, np.int64), (n,)).copy() for v in (cap, batch_memory, batch_chunk))  # writable: one compiled signature
    ks.largest_batches(ks.CONTINUOUS, x, lay, kc.X_TPOT_SLO, cap, b_slo)
    kc.batches_within_ttft(x, lay, np.minimum(np.minimum(b_mem, b_slo), b_chunk), o_steps, int(layout.pipeline), b_ttft)
    return b_slo, b_ttft


def continuous_search_tables(m: rm.ModelCard, layout: rm.Layout, prompt_tokens, output_tokens, context_tokens, r: rm.Rates, tpot_slo_s,
                             ttft_slo_s, n: int, shared: rl.SharedColumns | None = None):
    """What the compiled continuous searches read: the per-trial table
    (:data:`~mcengine.kernels.continuous.TRIAL_COLUMNS`), the layout vector
    (:func:`~mcengine.analytic.roofline.limits.search_layout`) and ``O`` as a whole number;
    everything that does not depend on the batch, made with NumPy once per search. None
    for what the kernels do not cover (:func:`~mcengine.analytic.roofline.limits.searchable`:
    an expert model, another all-reduce than "auto", a tensor group or a stage boundary
    spanning scale-up domains, speculative decoding) and a mean output length per trial.
    ``shared``: the :class:`~mcengine.analytic.roofline.limits.SharedColumns` of the
    tables of the same arguments but ``layout``."""
    o_steps = _steps_numerator(output_tokens)
    if not rl.searchable(m, layout, r) or not isinstance(o_steps, int):
        return None
    ctx = np.asarray(rt.mean_context(prompt_tokens, output_tokens) if context_tokens is None else context_tokens, float)
    columns = {
        **{f: getattr(r, f) for f in ("flops_per_s", "hbm_bytes_per_s", "link_bytes_per_s", "collective_start_s", "hop_latency_s",
                                      "comm_overlap", "kv_read_factor", "prefix_hit")},
        "allreduce_start_s": r.for_allreduce().collective_start_s,
        "overhead_s": r.step_overhead_s + m.layers * r.layer_overhead_s,
        "prompt_tokens": prompt_tokens, "output_tokens": output_tokens, "context_tokens": ctx,
        "prompt_flops": rt.prefill_flops(m, layout, 1.0, prompt_tokens, r.prefix_hit),
        "sequence_flops": rt.decode_flops_per_sequence(m, layout, ctx),
        "tpot_slo_s": tpot_slo_s, "ttft_slo_s": ttft_slo_s,
    }
    return rl.trial_table(columns, kc.TRIAL_COLUMNS, n, None if shared is None else shared.tables(r, n)), rl.search_layout(m, layout, r), o_steps


def _steps_numerator(output_tokens):
    """``O`` as :func:`largest_batch_within_ttft` counts steps with it: a Python int when it
    is a whole number (exact), else a float array (a mean length per trial)."""
    if np.ndim(output_tokens) == 0 and float(output_tokens).is_integer():
        return int(output_tokens)
    return np.asarray(output_tokens, float)


def continuous_tokens_per_s(step_s, batch) -> np.ndarray:
    """Output tokens/s of one instance: ``B / tau``."""
    return np.asarray(batch, float) / np.asarray(step_s, float)


# --------------------------------------------------------------------------- disaggregated


def kv_transfer_s(m: rm.ModelCard, prompt_tokens: int, instance_gpus: int, r: rm.Rates, prompts=1) -> np.ndarray:
    """Moving ``prompts`` prompts' KV caches (``S x 2 L n_kv d_h b_kv`` bytes each, the whole
    model) from a prefill to a decode instance: each of the ``g`` GPUs sends ``1/g`` of
    them over its own link, one point-to-point ``start + hop + bytes / W_link``."""
    nbytes = np.asarray(prompts, float) * prompt_tokens * rw.kv_bytes_per_token_rank(m, 1, r.kv_bytes) / instance_gpus
    return rc.p2p_s(nbytes, r)


def kv_link_prompts_per_s(m: rm.ModelCard, prompt_tokens: int, instance_gpus: int, phase: rm.PhaseTimes, r: rm.Rates) -> np.ndarray:
    """Prompts' KV caches per second the ``g`` links of one instance can carry (one
    direction): ``g W_link (1 - comm/total) / (S KV_token)``, the links' time left by the
    instance's own collectives during ``phase`` (its prefill pass or decode step)."""
    free = np.clip(1.0 - phase.comm_s / phase.total_s, 0.0, 1.0)
    return instance_gpus * r.link_bytes_per_s * free / (prompt_tokens * rw.kv_bytes_per_token_rank(m, 1, r.kv_bytes))


def prefill_batch_limit_budget(prompt_tokens, budget_tokens: int):
    """``P_budget = max(1, floor(budget / S))``: prompts per prefill pass within the engine's
    per-pass token budget (one prompt longer than the budget runs alone); ``S`` a whole
    number (an int back) or per trial (int64 per trial)."""
    if np.ndim(prompt_tokens) == 0 and float(prompt_tokens).is_integer():
        return max(1, budget_tokens // int(prompt_tokens))
    return np.maximum(1, np.floor_divide(float(budget_tokens), np.asarray(prompt_tokens, float))).astype(np.int64)


def prefill_share(prompts_per_s_prefill, requests_per_s_decode) -> np.ndarray:
    """``f = r_d / (r_p + r_d)``: the share of instances (and GPUs) doing prefill so that
    prompt supply ``f r_p`` equals decode demand ``(1 - f) r_d``."""
    rp, rd = np.asarray(prompts_per_s_prefill, float), np.asarray(requests_per_s_decode, float)
    return rd / (rp + rd)


def disaggregated_tokens_per_s(share, prompts_per_s_prefill, decode_tokens_per_s, output_tokens: int) -> np.ndarray:
    """Output tokens/s per instance of the cluster: ``min((1 - f) B/TPOT, f r_p O)``, the
    decode capacity or the prompt supply, whichever binds."""
    f = np.asarray(share, float)
    return np.minimum((1.0 - f) * np.asarray(decode_tokens_per_s, float), f * np.asarray(prompts_per_s_prefill, float) * output_tokens)
