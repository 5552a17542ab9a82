"""Collective times: all-reduce, all-gather, gather + scatter, all-to-all and
point-to-point by algorithm, hierarchical across scale-up domains, and the forward pass's
communication (docs/sources.md#roof-collectives, docs/sources.md#roof-allreduce-algorithms,
docs/sources.md#roof-scale-up-domain; notation: :mod:`mcengine.analytic.roofline`)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ...kernels.continuous import collective_s
from .model import ACT_BYTES, SWITCHED_ALGORITHMS, Layout, ModelCard, Rates


def allreduce_seconds(algorithm: str, t: int, nbytes, link_Bps, alpha_s, hop_s) -> np.ndarray:
    """All-reduce of ``nbytes`` per rank over ``t`` ranks by ``algorithm`` (0 at ``t = 1``),
    with ``M`` = nbytes, ``W`` = link_Bps, ``α`` = alpha_s, ``h`` = hop_s
    (docs/sources.md#roof-allreduce-algorithms):

    * ``ring``: ``α + 2(t-1) h + 2(t-1)/t M/W`` (reduce-scatter then all-gather round a ring);
    * ``two_shot``: ``α + 2 h + 2(t-1)/t M/W`` (reduce-scatter + all-gather, each one
      direct exchange on a switch);
    * ``one_shot``: ``α + h + (t-1) M/W`` (every rank sends its whole buffer to all others);
    * ``tree``: ``α + 2 ceil(log2 t) h + 2(t-1)/t M/W`` (double binary tree).
    """
    m = np.asarray(nbytes, float)
    if t == 1:
        return np.zeros(np.broadcast_shapes(np.shape(m), np.shape(link_Bps), np.shape(alpha_s), np.shape(hop_s)))
    hops, c = allreduce_constants(algorithm, t)
    return collective_s(alpha_s, hops, hop_s, c, m, link_Bps)


def allreduce_constants(algorithm: str, t: int) -> tuple:
    """``(k, c)`` of an all-reduce over ``t`` ranks by ``algorithm`` (:func:`allreduce_seconds`)."""
    if algorithm == "ring":
        return 2 * (t - 1), 2.0 * (t - 1) / t
    if algorithm == "two_shot":
        return 2, 2.0 * (t - 1) / t
    if algorithm == "one_shot":
        return 1, t - 1
    if algorithm == "tree":
        return 2 * math.ceil(math.log2(t)), 2.0 * (t - 1) / t
    raise ValueError(f"unknown all-reduce algorithm {algorithm!r}")


def all_gather_seconds(algorithm: str, t: int, nbytes, link_Bps, alpha_s, hop_s) -> np.ndarray:
    """An all-gather (or a reduce-scatter) of a ``nbytes`` message: ``α + k h + (t-1)/t M/W``
    with ``k = t - 1`` hops round a ring, ``ceil(log2 t)`` down a tree (recursive
    halving/doubling), 1 direct on a switch (``one_shot``, ``two_shot``); 0 at ``t = 1``
    (docs/sources.md#roof-attention-dp)."""
    m = np.asarray(nbytes, float)
    if t == 1:
        return np.zeros(np.broadcast_shapes(np.shape(m), np.shape(link_Bps), np.shape(alpha_s), np.shape(hop_s)))
    hops, c = all_gather_constants(algorithm, t)
    return collective_s(alpha_s, hops, hop_s, c, m, link_Bps)


def all_gather_constants(algorithm: str, t: int) -> tuple:
    """``(k, c)`` of an all-gather over ``t`` ranks by ``algorithm`` (:func:`all_gather_seconds`)."""
    return {"ring": t - 1, "tree": math.ceil(math.log2(t)), "one_shot": 1, "two_shot": 1}[algorithm], (t - 1) / t


def gather_scatter_seconds(algorithm: str, t: int, nbytes, link_Bps, alpha_s, hop_s) -> np.ndarray:
    """A reduce-scatter plus an all-gather of a ``nbytes`` message (the MLP collectives
    of data-parallel attention): twice :func:`all_gather_seconds`."""
    return 2.0 * all_gather_seconds(algorithm, t, nbytes, link_Bps, alpha_s, hop_s)


def _candidates(algorithm: str) -> tuple[str, ...]:
    """The algorithms ``algorithm`` stands for ("auto": every switched one, fastest wins)."""
    return SWITCHED_ALGORITHMS if algorithm == "auto" else (algorithm,)


#: For ``"auto"``, the algorithms that can be the fastest by each formula: the others share
#: one of these' bandwidth term (the same expression, so the same float) and add more hops,
#: ``k h`` with ``k`` at least as large and ``h >= 0`` (floating-point products and sums are
#: monotone, so no other algorithm is ever strictly faster). All-reduce: ring ``2(t-1)`` and
#: tree ``2 ceil(log2 t)`` hops against two-shot's 2; all-gather (and gather + scatter): ring
#: ``t - 1`` and tree ``ceil(log2 t)`` against one-shot's 1.
UNDOMINATED = {allreduce_seconds: ("two_shot", "one_shot"), all_gather_seconds: ("one_shot",), gather_scatter_seconds: ("one_shot",)}


def fastest_s(formula, algorithm: str, t: int, nbytes, r: "Rates") -> np.ndarray:
    """Seconds of the fastest of ``algorithm``'s candidates per element (the value
    :func:`_fastest` gives, without its index; for ``"auto"`` only the candidates of
    :data:`UNDOMINATED` are timed)."""
    names = UNDOMINATED[formula] if algorithm == "auto" else _candidates(algorithm)
    best = np.asarray(formula(names[0], t, nbytes, r.link_bytes_per_s, r.collective_start_s, r.hop_latency_s), float)
    for name in names[1:]:
        best = np.minimum(best, formula(name, t, nbytes, r.link_bytes_per_s, r.collective_start_s, r.hop_latency_s))
    return best


def _fastest(formula, algorithm: str, t: int, nbytes, r: "Rates") -> tuple[np.ndarray, np.ndarray]:
    """Seconds of the fastest of ``algorithm``'s candidates per element, and its index
    (the first on exact ties): a running minimum, without stacking the candidates."""
    names = _candidates(algorithm)
    best = np.asarray(formula(names[0], t, nbytes, r.link_bytes_per_s, r.collective_start_s, r.hop_latency_s), float)
    index = np.zeros(np.shape(best), np.int64)
    for k, name in enumerate(names[1:], start=1):
        times = formula(name, t, nbytes, r.link_bytes_per_s, r.collective_start_s, r.hop_latency_s)
        faster = times < best
        best, index = np.where(faster, times, best), np.where(faster, k, index)
    return best, index


def allreduce_s(nbytes, t: int, r: Rates, algorithm: str = "ring") -> np.ndarray:
    """All-reduce of ``nbytes`` per rank over ``t`` ranks by ``algorithm``
    (:func:`allreduce_seconds`; ``"auto"``: the fastest per message). Ring: ``start +
    2(t-1) hop + 2(t-1)/t nbytes / W_link``."""
    if algorithm == "ring":  # the common case, without the stacking of "auto"
        return allreduce_seconds("ring", t, nbytes, r.link_bytes_per_s, r.collective_start_s, r.hop_latency_s)
    return fastest_s(allreduce_seconds, algorithm, t, nbytes, r)


def allreduce_used(nbytes, t: int, r: Rates, algorithm: str) -> str:
    """The algorithm an all-reduce of ``nbytes`` (first element) runs: ``algorithm``
    itself, the fastest for ``"auto"``, or "none" at ``t = 1``."""
    if t == 1:
        return "none"
    names = _candidates(algorithm)
    return names[int(np.ravel(_fastest(allreduce_seconds, algorithm, t, nbytes, r)[1])[0])]


def all_to_all_s(nbytes, t: int, r: Rates) -> np.ndarray:
    """All-to-all of ``nbytes`` per rank over ``t`` ranks (0 at ``t = 1``):
    ``start + (t-1) hop + (t-1)/t nbytes / W_link``."""
    if t == 1:
        return np.zeros(np.shape(nbytes))
    return collective_s(r.collective_start_s, t - 1, r.hop_latency_s, (t - 1) / t, np.asarray(nbytes), r.link_bytes_per_s)


def p2p_s(nbytes, r: Rates) -> np.ndarray:
    """Point-to-point send between pipeline stages: ``start + hop + nbytes / W_link``."""
    return collective_s(r.collective_start_s, 1, r.hop_latency_s, 1, np.asarray(nbytes), r.link_bytes_per_s)


def hierarchical_allreduce_s(nbytes, layout: Layout, r: Rates) -> np.ndarray:
    """All-reduce of ``nbytes`` per rank over a tensor group of ``a`` ranks in each of ``k``
    scale-up domains (:attr:`Layout.tensor_split`), hierarchically (docs/sources.md#roof-scale-up-domain):
    a reduce-scatter inside each domain (``a`` ranks, scale-up links), an all-reduce of
    the ``M/a`` shard across the ``k`` domains (scale-out links and hop latency), an
    all-gather inside each domain; one start latency ``α`` for the whole:

    ``α + RS(a, M) + AR(k, M/a; W_out, h_out) + AG(a, M)``

    with ``RS = AG`` the :func:`all_gather_seconds` form and ``AR`` the
    :func:`allreduce_seconds` form, each without ``α``, by the layout's algorithm
    (``"auto"``: the fastest per phase). ``k = 1`` is :func:`allreduce_s`. ``α`` is the
    all-reduce's start latency (:meth:`Rates.for_allreduce`)."""
    a, k = layout.tensor_split
    r = r.for_allreduce()
    if k == 1:
        return allreduce_s(nbytes, layout.tensor, r, layout.allreduce)
    m = np.asarray(nbytes, float)
    intra, inter = replace(r, collective_start_s=0.0), replace(r.scale_out(), collective_start_s=0.0)
    scatter = fastest_s(all_gather_seconds, layout.allreduce, a, m, intra)
    return r.collective_start_s + 2.0 * scatter + fastest_s(allreduce_seconds, layout.allreduce, k, m / a, inter)


def _group_rates(layout: Layout, r: Rates) -> Rates:
    """The rates of a collective over the whole tensor group other than the all-reduce: the
    scale-up links inside one domain, the scale-out network once the group spans several
    (the whole collective at scale-out speed, docs/sources.md#roof-scale-up-domain)."""
    return r if layout.tensor_split[1] == 1 else r.scale_out()


def stage_hop_s(layout: Layout, nbytes, r: Rates) -> np.ndarray:
    """Mean point-to-point time of one of the ``p - 1`` pipeline stage boundaries:
    :func:`p2p_s` on the scale-up links, on the scale-out network for the
    :attr:`Layout.crossing_hops` boundaries that leave a domain."""
    c, boundaries = layout.crossing_hops, layout.pipeline - 1
    if c == 0:
        return p2p_s(nbytes, r)
    return ((boundaries - c) * p2p_s(nbytes, r) + c * p2p_s(nbytes, r.scale_out())) / boundaries


def moe_dispatch_bytes(m: ModelCard, tokens, t: int, imbalance=1.0) -> np.ndarray:
    """Bytes the busiest rank moves in one dispatch (or combine) all-to-all of an
    expert-parallel layer over ``tokens`` tokens: each token goes to ``k`` experts spread over
    ``t`` ranks, ``tokens k d 2 / t`` per rank on average, times ``ρ = imbalance`` (the
    hottest expert's load over the mean) on the rank holding the hottest expert
    (docs/sources.md#roof-moe, docs/generation.md#moe)."""
    return np.asarray(tokens, float) * m.hidden * ACT_BYTES * m.experts_per_token / t * imbalance


def forward_comm_s(m: ModelCard, layout: Layout, tokens, r: Rates, head_rows=None, group_tokens=None) -> np.ndarray:
    """Tensor/expert-parallel collectives of a forward pass over ``tokens`` tokens, all layers.

    Heads sharded: 2 all-reduces per layer of ``tokens d 2`` bytes (the attention one
    stays with expert parallelism, whose MLP is a dispatch and a combine all-to-all).
    Data-parallel attention: no attention collective; the MLP's reduce-scatter +
    all-gather (:func:`gather_scatter_seconds`), or the two all-to-alls; and before the
    vocab-sharded LM head one all-gather of the ``head_rows`` hidden states it scores
    (``head_rows d 2`` bytes; default ``tokens``), which after the last reduce-scatter
    each rank holds only for its own sequences (SGLang's logits processor gathers them,
    docs/sources.md#roof-attention-dp). Heads sharded, the last all-reduce leaves them on
    every rank. (The all-gather of the vocab-sharded logits is in neither mode.)
    A tensor group spanning scale-up domains runs its all-reduces hierarchically
    (:func:`hierarchical_allreduce_s`) and its other collectives at scale-out speed
    (:func:`_group_rates`). Grouped data-parallel attention adds, per layer, the
    all-reduce of the attention output inside the busiest group (``u = t/g`` consecutive
    ranks, :func:`hierarchical_allreduce_s`) over its ``group_tokens`` tokens (default
    ``ceil(tokens/g)``); the MLP's collectives stay those of data-parallel attention over
    all ``t`` ranks (docs/sources.md#roof-attention-dp).
    """
    t, message = layout.tensor, np.asarray(tokens, float) * m.hidden * ACT_BYTES
    attention = layout.attention == "tensor"
    group = _group_rates(layout, r)
    if not attention:
        rows = np.asarray(tokens if head_rows is None else head_rows, float)
        head = fastest_s(all_gather_seconds, layout.allreduce, t, rows * m.hidden * ACT_BYTES, group)
    if m.experts and layout.expert_parallel:
        dispatch = moe_dispatch_bytes(m, tokens, t, r.moe_imbalance)
        moe = 2 * all_to_all_s(dispatch, t, group)
        return m.layers * (hierarchical_allreduce_s(message, layout, r) + moe) if attention else m.layers * moe + head
    if attention:
        return 2 * m.layers * hierarchical_allreduce_s(message, layout, r)
    mlp = m.layers * fastest_s(gather_scatter_seconds, layout.allreduce, t, message, group) + head
    if layout.attention != "grouped":
        return mlp
    g = layout.groups
    rows = np.ceil(np.asarray(tokens, float) / g) if group_tokens is None else np.asarray(group_tokens, float)
    inner = Layout(t // g, 1, allreduce=layout.allreduce, domain=layout.domain)
    return mlp + m.layers * hierarchical_allreduce_s(rows * m.hidden * ACT_BYTES, inner, r)
