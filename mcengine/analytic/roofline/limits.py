"""Batch limits: the sequences whose KV cache fits HBM beside the weights, and the
largest batch that meets a TPOT or TTFT SLO (a bisection over the step-time formulas,
docs/model.md#roofline; notation: :mod:`mcengine.analytic.roofline`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...kernels import continuous as kc, searches as ks
from ...units import BYTES_PER_GB
from . import collectives as rc
from .model import SLO_SEARCH_CAP, Layout, ModelCard, Rates
from .weights import (attention_groups, kv_bytes_per_token_per_gpu, kv_bytes_per_token_rank, rank_params_streamed, sharded_params_active,
                      weights_bytes_per_gpu)
from .steps import batch_time_to_first_token, decode_flops_per_sequence, decode_step, prefill_flops_per_prompt


def free_kv_bytes_per_gpu(m: ModelCard, layout: Layout, hbm_gb, usable_fraction, bytes_per_param: float) -> np.ndarray:
    """HBM left for the KV cache on one GPU: ``u x HBM - weights per GPU`` (negative: no fit)."""
    hbm = np.asarray(hbm_gb, float) * BYTES_PER_GB
    return usable_fraction * hbm - weights_bytes_per_gpu(m, layout, bytes_per_param)


def batch_limit_memory(m: ModelCard, layout: Layout, hbm_gb, usable_fraction, context_tokens, bytes_per_param: float, kv_bytes: float,
                       cache_share=0.0) -> np.ndarray:
    """``B_max``: sequences whose KV cache at ``context_tokens`` fits next to the weights
    (docs/sources.md#roof-batch-limit), 0 when not even one does. With data-parallel
    attention each of the ``t`` ranks holds whole sequences: ``t`` times what fits one
    rank. ``cache_share``: the share of the free HBM a prefix cache keeps
    (docs/generation.md#prefix-caching). int64."""
    free = free_kv_bytes_per_gpu(m, layout, hbm_gb, usable_fraction, bytes_per_param) * (1.0 - np.asarray(cache_share, float))
    if layout.attention != "tensor":  # each of the g groups holds whole sequences (g = t: data-parallel)
        per_sequence = context_tokens * kv_bytes_per_token_rank(m, layout.tensor, kv_bytes, layout.attention, layout.attention_groups) / layout.pipeline
        return layout.groups * np.floor(np.maximum(free, 0.0) / per_sequence).astype(np.int64)
    per_sequence = context_tokens * kv_bytes_per_token_per_gpu(m, layout, kv_bytes)
    return np.floor(np.maximum(free, 0.0) / per_sequence).astype(np.int64)


def largest_batch(time_s, limit_s, shape, cap=SLO_SEARCH_CAP, rates: Rates | Timing | None = None) -> np.ndarray:
    """The largest integer batch ``B <= cap`` with ``time_s(B) <= limit_s`` (0 if even one
    sequence misses it; ``time_s`` non-decreasing in ``B``, so the answer is unique); ``cap``
    an int or a per-trial int array. int64.

    A bracketed search on integers: ``time_s(1)`` and ``time_s(cap)`` settle the trials
    outside ``[1, cap)``; then steps alternate between the point where the straight line
    through the bracket's two times meets the limit (the times are piecewise linear in
    ``B``, so this lands next to the answer in a few steps) and the midpoint (at most twice
    the steps of a bisection whatever the shape).

    ``rates``: when given (:class:`Rates`, or a :class:`Timing` of rates and lengths),
    ``time_s(B, r)`` reads the trials' rates from ``r`` (and nothing
    else per trial), and each step after the bracket times only the trials still open,
    ``time_s(B[rows], rates.take(rows))`` (:func:`_bracketed_on_rows`; elementwise, so the same numbers as timing
    every trial, in a fraction of the work once most trials have settled).
    """
    def timed(batch):
        return time_s(batch) if rates is None else time_s(batch, rates)

    top = np.broadcast_to(np.asarray(cap, np.int64), shape)
    one = np.ones(shape, np.int64)
    limit = np.broadcast_to(np.asarray(limit_s, float), shape)
    t_one = np.broadcast_to(timed(one), shape)
    t_top = np.broadcast_to(timed(np.maximum(top, 1)), shape)
    inside = (top > 1) & (t_one <= limit) & (t_top > limit)
    # outside the bracket: 0 (one sequence misses, or cap 0) or cap (cap itself meets it)
    lo = np.where(inside, 1, np.where((top >= 1) & (t_top <= limit), top, 0))  # time(lo) <= limit (lo = 0: vacuous)
    hi = np.where(inside, top, lo + 1)  # time(hi) > limit (cap + 1: assumed)
    t_lo, t_hi = np.where(inside, t_one, 0.0), np.where(inside, t_top, 0.0)
    if rates is not None and len(shape) == 1:
        return _bracketed_on_rows(time_s, rates, limit, lo, hi, t_lo, t_hi)
    interpolate = True
    while np.any(open_ := hi - lo > 1):
        mid = _next_probe(limit, lo, hi, t_lo, t_hi, interpolate)
        mid = np.where(open_, mid, 1)
        t_mid = np.broadcast_to(timed(mid), shape)
        ok = t_mid <= limit
        lo, t_lo = np.where(open_ & ok, mid, lo), np.where(open_ & ok, t_mid, t_lo)
        hi, t_hi = np.where(open_ & ~ok, mid, hi), np.where(open_ & ~ok, t_mid, t_hi)
        interpolate = not interpolate
    return lo


def _next_probe(limit, lo, hi, t_lo, t_hi, interpolate: bool) -> np.ndarray:
    """The next batch :func:`largest_batch` times inside each bracket ``(lo, hi)``: where the
    straight line through the bracket's times meets ``limit`` (``interpolate``), else the
    midpoint."""
    if not interpolate:
        return (lo + hi) // 2
    with np.errstate(divide="ignore", invalid="ignore"):
        step = np.floor((limit - t_lo) / (t_hi - t_lo) * (hi - lo))
    return np.clip(lo + np.nan_to_num(step, nan=1.0, posinf=1.0, neginf=1.0).astype(np.int64), lo + 1, hi - 1)


def _bracketed_on_rows(time_s, rates, limit, lo, hi, t_lo, t_hi) -> np.ndarray:
    """:func:`largest_batch`'s steps on the open trials only (``time_s(B, rates of those
    trials)``): the same probes and updates per trial as its loop over every trial. The
    open trials' brackets and rates are kept packed, and packed again as trials settle,
    so that a step reads and gathers only the trials still open."""
    lo = lo.copy()
    rows = np.flatnonzero(hi - lo > 1)
    x, r_lo, r_hi, r_limit, r_tlo, r_thi = rates.take(rows), lo[rows], hi[rows], limit[rows], t_lo[rows], t_hi[rows]
    interpolate = True
    while rows.size:
        mid = _next_probe(r_limit, r_lo, r_hi, r_tlo, r_thi, interpolate)
        t_mid = np.broadcast_to(time_s(mid, x), rows.shape)
        ok = t_mid <= r_limit
        r_lo, r_tlo = np.where(ok, mid, r_lo), np.where(ok, t_mid, r_tlo)
        r_hi, r_thi = np.where(ok, r_hi, mid), np.where(ok, r_thi, t_mid)
        interpolate = not interpolate
        settled = r_hi - r_lo <= 1
        if settled.any():
            lo[rows[settled]] = r_lo[settled]
            keep = np.flatnonzero(~settled)
            rows, x, r_lo, r_hi, r_limit, r_tlo, r_thi = rows[keep], x.take(keep), r_lo[keep], r_hi[keep], r_limit[keep], r_tlo[keep], r_thi[keep]
    return lo


def trial_shape(limit_s, r: Rates, *lengths) -> tuple:
    """The shape of per-trial results: ``limit_s``, every field of ``r`` and ``lengths`` broadcast."""
    return np.broadcast_shapes(np.shape(limit_s), r.shape, *map(np.shape, lengths))


@dataclass(frozen=True)
class Timing:
    """What a batch search times its trials with: their ``rates`` and request ``lengths``
    (numbers or per-trial arrays), taken at a subset of the trials together (:meth:`take`,
    as :func:`largest_batch` does with the trials still open)."""

    rates: Rates
    lengths: tuple

    def take(self, rows: np.ndarray) -> "Timing":
        return Timing(self.rates.take(rows), tuple(x[rows] if np.ndim(x) > 0 else x for x in self.lengths))


def batch_limit_slo(m: ModelCard, layout: Layout, context, slo_s, r: Rates, cap=SLO_SEARCH_CAP, table: "SearchTable | None" = None) -> np.ndarray:
    """``B_SLO``: the largest batch with TPOT <= ``slo_s`` (0 if even one sequence misses
    it), by bisection over integers (TPOT is non-decreasing in B); at most ``cap``. int64.
    ``context`` a number or per trial. ``table``: the trials' :func:`search_table` (the
    same ``context`` and ``r``, ``slo_s`` its TPOT SLO), to search compiled (the same
    probes, the same batches; when the NumPy search's result would be per trial too)."""
    shape = trial_shape(slo_s, r, context)
    if table is not None and shape == table.x.shape[:1]:
        return compiled_largest_batch(table, ks.DECODE, "tpot_slo_s", cap)
    return largest_batch(lambda b, x: decode_step(m, layout, b, x.lengths[0], x.rates).total_s, slo_s, shape, cap,
                         rates=Timing(r, (context,)))


def batch_limit_ttft(m: ModelCard, layout: Layout, prompt_tokens, slo_s, r: Rates, cap=SLO_SEARCH_CAP, table: "SearchTable | None" = None) -> np.ndarray:
    """``B_TTFT``: the largest batch whose last request's TTFT
    (:func:`batch_time_to_first_token`) is at most ``slo_s`` (0 if one prompt misses
    it; ``cap`` for an infinite SLO, without a search). int64. ``prompt_tokens`` a number
    or per trial. ``table``: as for :func:`batch_limit_slo` (``slo_s`` its TTFT SLO)."""
    shape = trial_shape(slo_s, r, prompt_tokens)
    if np.all(np.isinf(slo_s)):
        return np.broadcast_to(np.asarray(cap, np.int64), shape).copy()
    if table is not None and shape == table.x.shape[:1]:
        return compiled_largest_batch(table, ks.PREFILL, "ttft_slo_s", cap)
    return largest_batch(lambda b, x: batch_time_to_first_token(m, layout, b, x.lengths[0], x.rates).total_s, slo_s, shape, cap,
                         rates=Timing(r, (prompt_tokens,)))


# --------------------------------------------------------------------------- compiled searches


def searchable(m: ModelCard, layout: Layout, r: Rates) -> bool:
    """Whether the compiled steps (:mod:`mcengine.kernels.continuous`,
    :mod:`mcengine.kernels.searches`) cover ``layout``: a dense model, the "auto"
    all-reduce, a tensor group inside one scale-up domain, no stage boundary leaving a
    domain, no speculative decoding (any attention mode)."""
    return not (m.experts or layout.allreduce != "auto" or layout.tensor_split[1] != 1 or layout.crossing_hops or r.draft_tokens)


def search_layout(m: ModelCard, layout: Layout, r: Rates) -> np.ndarray:
    """The layout vector of the compiled steps (:data:`mcengine.kernels.continuous.LAYOUT_ENTRIES`)
    for a :func:`searchable` layout: its degrees and attention mode, the weights streamed
    and KV bytes per token of a rank, and the ``(k, c)`` constants of "auto"'s collectives
    (:data:`~mcengine.analytic.roofline.collectives.UNDOMINATED`, the candidates NumPy times)."""
    t, att, g = layout.tensor, layout.attention, layout.attention_groups
    ar, inner = rc.allreduce_constants, (t // g if att == "grouped" else 1)
    two, one = rc.UNDOMINATED[rc.allreduce_seconds]
    (gather,) = rc.UNDOMINATED[rc.all_gather_seconds]
    entries = {
        "pipeline": layout.pipeline, "layers": m.layers, "hidden": m.hidden, "sequence_attention": att != "tensor",
        "attention_groups": attention_groups(t, att, g), "weights": r.bytes_per_param * rank_params_streamed(m, t, 1.0, att, g),
        "kv_rank": kv_bytes_per_token_rank(m, t, r.kv_bytes, att, g), "sharded_params": sharded_params_active(m, t),
        "tp_ranks": t, "inner_ranks": inner,
        **dict(zip(("ar_k2", "ar_c2", "ar_k1", "ar_c1"), (*ar(two, t), *ar(one, t)))),
        **dict(zip(("ag_k", "ag_c"), rc.all_gather_constants(gather, t))),
        **dict(zip(("in_k2", "in_c2", "in_k1", "in_c1"), (*ar(two, inner), *ar(one, inner)))),
    }
    return np.array([float(entries[name]) for name in kc.LAYOUT_ENTRIES])


#: The columns of a search's per-trial table that depend on the layout (the FLOPs of a
#: prompt and of a sequence's decode step); every other column reads only the trials'
#: rates, lengths and SLOs.
LAYOUT_COLUMNS = ("sequence_flops", "prompt_attention_flops", "prompt_flops")


class SharedColumns:
    """The tables of one kind of search over one block of trials and one :class:`Rates`
    (the candidate layouts the planner evaluates on them), whose columns other than
    :data:`LAYOUT_COLUMNS` are equal: the first table made is kept, and each later one is
    that table with only its layout's columns written over, in place (no copy of the
    columns every layout shares). A table is therefore valid until the next one of its
    names is asked for: each evaluation's searches read their table before the planner
    evaluates the next layout, one layout after another on one thread. It checks only the
    block's ``rates`` (the same object) and trial count ``n``: a table asked for other
    rates or trials raises. Every other input of the
    columns it keeps is the caller's to hold fixed, unchecked: one model card, the same
    prompt and context tokens, TPOT and TTFT SLOs and KV rates (``kv``) for every search
    that shares it (the layout and GPUs an instance are the layout vector's, not the
    table's); a search given other values of these would read the first table's columns,
    not its own.
    """

    def __init__(self, rates: Rates, n: int):
        self.rates, self.n, self._tables = rates, n, {}

    def tables(self, rates: Rates, n: int) -> dict:
        """The kept tables by column names, for a search on ``rates`` over ``n`` trials."""
        if rates is not self.rates or n != self.n:
            raise ValueError(f"shared search columns made for {self.n} trials and one Rates, asked for {n} trials"
                             f"{'' if rates is self.rates else ' and other Rates'}")
        return self._tables

    def clear(self) -> None:
        """Drop the kept tables (a table made later keeps its own again)."""
        self._tables.clear()


def trial_table(columns: dict, names: tuple, n: int, shared: dict | None = None) -> np.ndarray:
    """The per-trial table a compiled search reads: float64 (n, len(names)), column ``j``
    ``columns[names[j]]`` (a number or per trial) broadcast to the ``n`` trials.
    ``shared``: :meth:`SharedColumns.tables`, whose table of ``names`` (kept at the first
    call) is returned with only the :data:`LAYOUT_COLUMNS` written over."""
    if shared is not None and names in shared:
        x = shared[names]
        for j, name in enumerate(names):
            if name in LAYOUT_COLUMNS:
                x[:, j] = columns[name]
        return x
    values = [np.asarray(columns[name], float) for name in names]
    x = np.empty((n, len(names)))
    x[:] = [v if v.ndim == 0 else 0.0 for v in values]  # the numbers every trial shares, row by row (contiguous)
    for j, v in enumerate(values):
        if v.ndim:
            x[:, j] = v
    if shared is not None:
        shared[names] = x  # (the searches never write their table: only the next layout's columns do)
    return x


@dataclass(frozen=True)
class SearchTable:
    """What the compiled static searches read (:func:`search_table`): the per-trial table
    ``x`` (:data:`mcengine.kernels.searches.STATIC_COLUMNS`) and the layout vector ``lay``."""

    x: np.ndarray
    lay: np.ndarray


def search_table(m: ModelCard, layout: Layout, prompt_tokens, context_tokens, r: Rates, tpot_slo_s, ttft_slo_s, n: int,
                 kv: Rates | None = None, instance_gpus: int = 1, shared: SharedColumns | None = None) -> SearchTable | None:
    """The :class:`SearchTable` of ``n`` trials for :func:`batch_limit_slo`,
    :func:`batch_limit_ttft` and a prefill instance's TTFT search (``kv``: the rates its KV
    caches move at, over ``instance_gpus`` GPUs); everything that does not depend on the
    batch, made with NumPy once. None for a layout the compiled steps do not cover
    (:func:`searchable`; then search with NumPy). ``shared``: the :class:`SharedColumns` of
    the tables of the same arguments but ``layout``."""
    if not searchable(m, layout, r):
        return None
    kv = r if kv is None else kv
    ctx = np.asarray(context_tokens, float)
    attention, rest = prefill_flops_per_prompt(m, layout, prompt_tokens, r.prefix_hit)
    columns = {
        **{f: getattr(r, f) for f in ("flops_per_s", "hbm_bytes_per_s", "link_bytes_per_s", "collective_start_s", "hop_latency_s",
                                      "comm_overlap", "kv_read_factor", "step_overhead_s", "layer_overhead_s", "prefix_hit")},
        "allreduce_start_s": r.for_allreduce().collective_start_s, "overhead_s": r.step_overhead_s + m.layers * r.layer_overhead_s,
        "prompt_tokens": prompt_tokens, "context_tokens": ctx, "sequence_flops": decode_flops_per_sequence(m, layout, ctx),
        "prompt_attention_flops": attention, "prompt_flops": rest,
        "kv_link_bytes_per_s": kv.link_bytes_per_s, "kv_start_s": kv.collective_start_s, "kv_hop_s": kv.hop_latency_s,
        "tpot_slo_s": tpot_slo_s, "ttft_slo_s": ttft_slo_s,
    }
    lay = np.concatenate([search_layout(m, layout, r), [kv_bytes_per_token_rank(m, 1, r.kv_bytes), float(instance_gpus)]])
    return SearchTable(trial_table(columns, ks.STATIC_COLUMNS, n, None if shared is None else shared.tables(r, n)), lay)


def compiled_largest_batch(table: SearchTable, kind: int, limit: str, cap) -> np.ndarray:
    """:func:`largest_batch` over the compiled step ``kind`` (:mod:`mcengine.kernels.searches`)
    with the limit of column ``limit`` of ``table``, at most ``cap`` (an int or per trial):
    the same batches (fewer probes where the step is monotone in the batch,
    :func:`mcengine.kernels.searches.largest_batches`). int64 (n,)."""
    n = table.x.shape[0]
    out = np.empty(n, np.int64)
    ks.largest_batches(kind, table.x, table.lay, ks.STATIC_COLUMNS.index(limit), np.broadcast_to(np.asarray(cap, np.int64), (n,)).copy(), out)
    return out
