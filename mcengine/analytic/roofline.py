"""Closed forms of the roofline stage: parameter counts, KV bytes, collectives, phase
times and batch limits, as plain NumPy functions.

The stage (:mod:`mcengine.stages.roofline`), its tests and ``mcengine validate`` share
these functions. Every time function broadcasts over trials: scalar model shapes and
layouts, per-trial arrays (or floats) of rates and batch sizes.

Notation (``docs/sources.md#roof-notation``): ``L`` layers, ``d`` hidden,
``n_h``/``n_kv`` query/KV heads, ``d_h`` head dim, ``d_ff`` FFN size, ``V`` vocab,
``b_w``/``b_kv`` bytes per weight/KV element, ``t``/``p`` tensor/pipeline degrees,
``F``/``W``/``W_link`` effective FLOP/s, HBM bytes/s and link bytes/s per device
(peak x efficiency). Activations cross the wire in bf16 (:data:`ACT_BYTES`).

Model (per phase, aggregate roofline with collectives in series, docs/sources.md#roof-step-time):

* ``time = max(max(compute, memory), o comm) + (1 - o) comm + overhead`` with ``o`` the
  overlapped share of the collectives (``comm_overlap``, docs/sources.md#roof-overlap;
  ``o = 0``: in series); ``bound`` names the largest of compute, memory and comm ("network").
* Tensor parallelism shards every matrix over ``t`` ranks, except that each rank keeps
  at least one KV head (``max(1, n_kv/t)``, docs/sources.md#roof-kv-replication): the KV cache *and* the K/V
  projection weights are replicated when ``t > n_kv``, as vLLM/TRT-LLM do. For
  ``t <= n_kv`` the per-rank weights are exactly ``P/t``. With data-parallel attention
  (``Layout.attention = "data"``, docs/sources.md#roof-attention-dp) the attention weights are
  replicated, each rank attends to ``ceil(b/t)`` whole sequences with all KV heads, and
  the MLP stays sharded behind a reduce-scatter and an all-gather, and the vocab-sharded
  LM head behind one all-gather of the hidden states it scores.
* Two all-reduces per layer (after attention and after the MLP) of ``tokens x d x 2``
  bytes, by the layout's algorithm (:func:`allreduce_seconds`: ring ``collective_start +
  2(t-1) hop + 2(t-1)/t bytes/W_link``, the GenZ form, docs/sources.md#roof-collectives; tree, one-shot,
  two-shot, or the fastest per message, docs/sources.md#roof-allreduce-algorithms); zero at ``t = 1``.
* Scale-up domains (docs/sources.md#roof-scale-up-domain): ``Layout.domain`` GPUs share
  the scale-up links (0: the whole instance). A tensor group spanning ``k > 1`` domains
  all-reduces hierarchically (:func:`hierarchical_allreduce_s`) and runs its other
  collectives at the scale-out bandwidth and hop latency (``Rates.scale_out``); a
  pipeline boundary between domains is a scale-out point-to-point (:func:`stage_hop_s`).
* Pipeline parallelism (docs/sources.md#roof-pipeline): ``L/p`` layers per stage, balanced (the embedding
  and LM head counted as ``1/p`` per stage), ``m = min(B, p)`` micro-batches of ``B/m``
  sequences, each stage re-reading its weights per micro-batch, one point-to-point
  (``collective_start + hop + bytes/W_link``) per stage boundary. Decode: a sequence's
  token traverses the ``p`` stages, so ``TPOT = p x stage(B/m) + (p-1) p2p`` = the
  whole-model time at micro-batch ``B/m`` plus the hops: the weight term equals one TP
  group's, PP adds capacity, not decode bandwidth. Prefill has no token dependency, so
  continuous batching keeps the pipeline full: the instance spends ``m/p`` times the
  whole-model time at ``B/m`` on a batch (no fill/drain bubble), while one prompt's
  TTFT is the whole-model time at one prompt plus the ``(p-1)`` hops.
* MoE: every layer's MLP is ``experts`` routed experts of ``expert_ffn`` (+ shared
  experts + a ``d x E`` router); ``ffn`` is unused. A token computes ``k`` experts;
  a step streams the distinct experts its tokens touch, ``E (1 - (1 - k/E)^tokens)``
  under uniform routing (docs/sources.md#roof-moe; routing imbalance is not modelled). Experts are
  tensor-sharded like a dense MLP unless ``expert_parallel``: then each rank holds
  ``E/t`` whole experts (same bytes and FLOPs per rank in expectation) and the MLP
  all-reduce is replaced by a dispatch and a combine all-to-all of
  ``tokens x k x d x 2 / t`` bytes per rank, each
  ``collective_start + (t-1) hop + (t-1)/t bytes/W_link`` (docs/sources.md#roof-moe; GenZ,
  llm-analysis). The attention all-reduce stays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Protocol

import numpy as np

from ..units import BYTES_PER_GB, BYTES_PER_TB, FLOPS_PER_TFLOP, MS_PER_S, US_PER_S

#: Bytes per activation element on the wire (bf16); the brief's ``B x d x 2``.
ACT_BYTES = 2.0
#: Largest batch the SLO search considers (the schema allows ``batch`` up to 1e7).
SLO_SEARCH_CAP = 2**24
BOUNDS = ("compute", "memory", "network")


class ModelCard(Protocol):
    """The transformer shape these formulas read (notation above); any object with these
    attributes will do (the scenario's model card is one)."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    gated_mlp: bool
    tied_embeddings: bool
    experts: int
    experts_per_token: int
    expert_ffn: int
    shared_experts: int


#: All-reduce algorithms (docs/sources.md#roof-allreduce-algorithms); "auto" takes the
#: fastest of :data:`SWITCHED_ALGORITHMS` for every message.
ALLREDUCE_ALGORITHMS = ("ring", "tree", "one_shot", "two_shot")
#: What a switched scale-up fabric (NVSwitch, a flat optical fabric) allows; a ring fabric allows "ring" only.
SWITCHED_ALGORITHMS = ALLREDUCE_ALGORITHMS
#: Where attention runs: sharded by heads over the tensor group, by sequence (data-parallel),
#: or by sequence over groups of ranks that shard the heads inside each group ("grouped").
ATTENTION_MODES = ("tensor", "data", "grouped")


@dataclass(frozen=True)
class Layout:
    """How one instance is split: ``tensor`` x ``pipeline`` GPUs, the all-reduce
    algorithm (one of :data:`ALLREDUCE_ALGORITHMS` or ``"auto"``), where attention
    runs (``"tensor"``: heads sharded; ``"data"``: sequences sharded; ``"grouped"``:
    sequences sharded over ``attention_groups`` groups whose ranks shard the heads,
    docs/sources.md#roof-attention-dp) and the GPUs per scale-up domain (``domain``, 0:
    the whole instance, docs/sources.md#roof-scale-up-domain)."""

    tensor: int
    pipeline: int = 1
    expert_parallel: bool = False
    allreduce: str = "ring"
    attention: str = "tensor"
    domain: int = 0
    attention_groups: int = 0

    @property
    def groups(self) -> int:
        """Data-parallel attention groups ``g``: 1 with heads sharded, ``t`` with
        data-parallel attention, ``attention_groups`` when grouped (docs/sources.md#roof-attention-dp)."""
        if self.attention == "tensor":
            return 1
        return self.attention_groups if self.attention == "grouped" else self.tensor

    @property
    def attention_label(self) -> str:
        """The attention mode, with its groups when grouped (``"grouped/4"``)."""
        return f"grouped/{self.attention_groups}" if self.attention == "grouped" else self.attention

    @property
    def gpus(self) -> int:
        return self.tensor * self.pipeline

    @property
    def tensor_split(self) -> tuple[int, int]:
        """``(a, k)``: the tensor group's ranks per scale-up domain and the domains it spans
        (docs/sources.md#roof-scale-up-domain). The instance's GPUs are numbered in
        order, a stage's ``t`` ranks consecutive, domains of ``D = domain`` GPUs (0: one
        domain spans the instance). A group inside one domain (``D`` a multiple of ``t``)
        is ``(t, 1)``; otherwise ``a = gcd(t, D)`` ranks in each of ``k = t/a`` domains,
        the worst group's split when groups straddle domains unevenly."""
        t, d = self.tensor, self.domain
        if d == 0 or d % t == 0:
            return t, 1
        a = math.gcd(t, d)
        return a, t // a

    @property
    def crossing_hops(self) -> int:
        """Pipeline stage boundaries (of ``p - 1``) whose point-to-point leaves a scale-up
        domain: stage ``i`` holds GPUs ``[i t, (i+1) t)`` and its boundary with stage ``i-1``
        stays inside one domain only when both stages do. At most ``p - 1`` (bounded by the
        model's layers)."""
        t, p, d = self.tensor, self.pipeline, self.domain
        if d == 0 or p == 1:
            return 0
        i = np.arange(1, p)
        return int(np.count_nonzero((i - 1) * t // d != ((i + 1) * t - 1) // d))


@dataclass(frozen=True)
class Rates:
    """Effective per-device rates, latencies and precisions (floats or per-trial arrays).

    Units: FLOP/s, bytes/s, seconds, bytes per element.
    """

    flops_per_s: np.ndarray | float
    hbm_bytes_per_s: np.ndarray | float
    link_bytes_per_s: np.ndarray | float
    collective_start_s: np.ndarray | float = 0.0
    hop_latency_s: np.ndarray | float = 0.0
    step_overhead_s: np.ndarray | float = 0.0
    layer_overhead_s: np.ndarray | float = 0.0
    bytes_per_param: float = 2.0
    kv_bytes: float = 2.0
    comm_overlap: np.ndarray | float = 0.0
    scale_out_bytes_per_s: np.ndarray | float = 0.0
    scale_out_hop_s: np.ndarray | float = 0.0
    allreduce_start_s: np.ndarray | float | None = None

    def for_allreduce(self) -> "Rates":
        """These rates with the all-reduce's own start latency in place of
        ``collective_start_s`` (``allreduce_start_s``; None: the same for every collective)."""
        return self if self.allreduce_start_s is None else replace(self, collective_start_s=self.allreduce_start_s)

    def take(self, rows: np.ndarray) -> "Rates":
        """These rates at the trials ``rows`` (an index array): every per-trial field indexed,
        scalars kept."""
        return replace(self, **{f: v[rows] for f in self.__dataclass_fields__ if np.ndim(v := getattr(self, f)) > 0})

    def scale_out(self) -> "Rates":
        """These rates with the link bandwidth and per-hop latency of the scale-out network
        (a hop between scale-up domains, docs/sources.md#roof-scale-up-domain); the
        collective start latency is unchanged."""
        return replace(self, link_bytes_per_s=self.scale_out_bytes_per_s, hop_latency_s=self.scale_out_hop_s)

    @classmethod
    def from_peaks(
        cls,
        peak_tflops,
        hbm_tbps,
        link_gbps,
        compute_efficiency=1.0,
        memory_efficiency=1.0,
        link_efficiency=1.0,
        collective_start_us=0.0,
        hop_latency_us=0.0,
        step_overhead_ms=0.0,
        layer_overhead_us=0.0,
        bytes_per_param: float = 2.0,
        kv_bytes: float = 2.0,
        comm_overlap=0.0,
        scale_out_gbps=0.0,
        scale_out_hop_us=0.0,
        allreduce_start_us=None,
    ) -> "Rates":
        """From datasheet units: ``F = peak x compute_efficiency`` etc.; the scale-out
        bandwidth is derated by ``link_efficiency`` as the scale-up links are."""
        return cls(
            flops_per_s=np.asarray(peak_tflops, float) * FLOPS_PER_TFLOP * compute_efficiency,
            hbm_bytes_per_s=np.asarray(hbm_tbps, float) * BYTES_PER_TB * memory_efficiency,
            link_bytes_per_s=np.asarray(link_gbps, float) * BYTES_PER_GB * link_efficiency,
            collective_start_s=np.asarray(collective_start_us, float) / US_PER_S,
            hop_latency_s=np.asarray(hop_latency_us, float) / US_PER_S,
            step_overhead_s=np.asarray(step_overhead_ms, float) / MS_PER_S,
            layer_overhead_s=np.asarray(layer_overhead_us, float) / US_PER_S,
            bytes_per_param=float(bytes_per_param),
            kv_bytes=float(kv_bytes),
            comm_overlap=np.asarray(comm_overlap, float),
            scale_out_bytes_per_s=np.asarray(scale_out_gbps, float) * BYTES_PER_GB * link_efficiency,
            scale_out_hop_s=np.asarray(scale_out_hop_us, float) / US_PER_S,
            allreduce_start_s=None if allreduce_start_us is None else np.asarray(allreduce_start_us, float) / US_PER_S,
        )


@dataclass(frozen=True)
class PhaseTimes:
    """The terms of one phase (seconds, arrays over trials): ``total = max(max(compute,
    memory), o comm) + (1 - o) comm + overhead`` with ``o`` the share of communication
    overlapped with compute (``comm_overlap``, docs/sources.md#roof-overlap); ``o = 0`` is
    ``max(compute, memory) + comm + overhead``."""

    compute_s: np.ndarray
    memory_s: np.ndarray
    comm_s: np.ndarray
    overhead_s: np.ndarray
    overlap: np.ndarray | float = 0.0

    @cached_property
    def total_s(self) -> np.ndarray:
        """The phase's time (computed once per phase: searches and planners read it often)."""
        o = self.overlap
        return np.maximum(np.maximum(self.compute_s, self.memory_s), o * self.comm_s) + (1.0 - o) * self.comm_s + self.overhead_s

    @property
    def busy_s(self) -> np.ndarray:
        """The time the GPU computes or streams HBM: ``max(compute, memory)`` (the rest,
        collectives and per-step overhead, it waits; docs/model.md#power)."""
        return np.maximum(self.compute_s, self.memory_s)

    @property
    def bound(self) -> np.ndarray:
        """The largest of compute, memory and comm per trial (ties: that order)."""
        stack = np.stack(np.broadcast_arrays(self.compute_s, self.memory_s, self.comm_s))
        return np.asarray(BOUNDS)[np.argmax(stack, axis=0)]

    def terms_ms(self, i: int = 0) -> dict[str, float]:
        """Trial ``i``'s terms in milliseconds (for reports)."""
        names = ("compute", "memory", "comm", "overhead", "total")
        values = (self.compute_s, self.memory_s, self.comm_s, self.overhead_s, self.total_s)
        return {f"{n}_ms": float(np.ravel(v)[i]) * MS_PER_S for n, v in zip(names, values)}


# --------------------------------------------------------------------------- parameters


def _matrices(m: ModelCard) -> int:
    return 3 if m.gated_mlp else 2


def attention_params(m: ModelCard) -> int:
    """Q, K, V and O projections of one layer: ``d n_h d_h + 2 d n_kv d_h + n_h d_h d``."""
    d, dh = m.hidden, m.head_dim
    return d * m.heads * dh + 2 * d * m.kv_heads * dh + m.heads * dh * d


def expert_params(m: ModelCard) -> int:
    """One MoE expert (``(3 or 2) d expert_ffn``); 0 for a dense model."""
    return _matrices(m) * m.hidden * m.expert_ffn if m.experts else 0


def mlp_params(m: ModelCard) -> int:
    """MLP weights of one layer: ``(3 or 2) d d_ff`` dense; all experts + shared + router for MoE."""
    if not m.experts:
        return _matrices(m) * m.hidden * m.ffn
    return (m.experts + m.shared_experts) * expert_params(m) + m.hidden * m.experts


def active_mlp_params(m: ModelCard) -> int:
    """MLP weights one token multiplies by (``k`` routed + shared experts + router for MoE)."""
    if not m.experts:
        return mlp_params(m)
    return (m.experts_per_token + m.shared_experts) * expert_params(m) + m.hidden * m.experts


def params_per_layer(m: ModelCard) -> int:
    """``P_layer`` = attention + MLP + two norms (``2d``), docs/sources.md#roof-params."""
    return attention_params(m) + mlp_params(m) + 2 * m.hidden


def params_streamed(m: ModelCard) -> int:
    """``P_stream = L P_layer + V d``: what a dense decode step reads (LM head included)."""
    return m.layers * params_per_layer(m) + m.vocab * m.hidden


def params_total(m: ModelCard) -> int:
    """All weights: ``P_stream`` plus the input embedding ``V d`` unless tied."""
    return params_streamed(m) + (0 if m.tied_embeddings else m.vocab * m.hidden)


def params_active(m: ModelCard) -> int:
    """Weights one token multiplies by (``= P_stream`` for a dense model)."""
    return m.layers * (attention_params(m) + active_mlp_params(m) + 2 * m.hidden) + m.vocab * m.hidden


def experts_touched(m: ModelCard, tokens) -> np.ndarray:
    """Expected distinct routed experts hit by ``tokens`` tokens: ``E (1 - (1 - k/E)^tokens)``."""
    if not m.experts:
        return np.zeros(np.shape(tokens))
    return m.experts * (1.0 - (1.0 - m.experts_per_token / m.experts) ** np.asarray(tokens, float))


# --------------------------------------------------------------------------- per TP rank


def kv_heads_per_rank(m: ModelCard, t: int) -> float:
    """``max(1, n_kv/t)``: KV heads one tensor-parallel rank stores (replicated if t > n_kv)."""
    return max(1.0, m.kv_heads / t)


def attention_ranks(t: int, attention: str = "tensor", groups: int = 0) -> int:
    """``u``: the ranks that shard one sequence's attention heads: ``t`` (heads sharded),
    1 (data-parallel), ``t/g`` (``g = groups`` grouped data-parallel groups)."""
    if attention == "tensor":
        return t
    return t // groups if attention == "grouped" else 1


def _attention_groups(t: int, attention: str, groups: int) -> int:
    """``g``: the data-parallel attention groups (1 with heads sharded)."""
    return t // attention_ranks(t, attention, groups)


def _attention_rank(m: ModelCard, t: int, attention: str = "tensor", groups: int = 0) -> float:
    """Attention weights per rank and layer: Q and O sharded over the ``u`` ranks of the
    attention group (:func:`attention_ranks`), K and V per the KV heads each keeps
    (``max(1, n_kv/u)``, replicated above ``u = n_kv``); with data-parallel attention
    (``u = 1``) every rank holds them all, grouped they are replicated ``g`` times."""
    if attention == "data":
        return float(attention_params(m))
    u = attention_ranks(t, attention, groups)
    d, dh = m.hidden, m.head_dim
    return 2.0 * d * m.heads * dh / u + 2.0 * d * dh * kv_heads_per_rank(m, u)


def attention_sequences_per_rank(batch, t: int, attention: str = "tensor", groups: int = 0) -> np.ndarray:
    """Sequences whose attention one rank computes: all ``b`` (heads sharded), or with
    data-parallel attention those of the busiest rank, ``ceil(b/t)``, grouped those of
    the busiest group, ``ceil(b/g)`` (docs/sources.md#roof-attention-dp)."""
    b = np.asarray(batch, float)
    if attention == "tensor":
        return b
    return np.ceil(b / _attention_groups(t, attention, groups))


def rank_params_active(m: ModelCard, t: int, attention: str = "tensor", groups: int = 0) -> float:
    """Weights per rank that one token multiplies by (all layers, LM head included)."""
    per_layer = _attention_rank(m, t, attention, groups) + (active_mlp_params(m) + 2 * m.hidden) / t
    return m.layers * per_layer + m.vocab * m.hidden / t


def _sharded_params_active(m: ModelCard, t: int) -> float:
    """The tensor-sharded part of :func:`rank_params_active` (MLP, norms, LM head)."""
    return m.layers * (active_mlp_params(m) + 2 * m.hidden) / t + m.vocab * m.hidden / t


def rank_params_streamed(m: ModelCard, t: int, tokens, attention: str = "tensor", groups: int = 0) -> np.ndarray:
    """Weights per rank read by a forward pass over ``tokens`` tokens (all layers + LM head).

    Dense: every weight. MoE: attention, norms, router, shared experts and the expected
    distinct routed experts the tokens touch.
    """
    if not m.experts:  # the same number for any tokens: computed once, broadcast (a read-only view)
        return np.broadcast_to(_params_streamed(m, t, float(mlp_params(m)), attention, groups), np.shape(tokens))
    mlp = m.hidden * m.experts + (m.shared_experts + experts_touched(m, tokens)) * expert_params(m)
    return _params_streamed(m, t, mlp, attention, groups)


def _params_streamed(m: ModelCard, t: int, mlp, attention: str, groups: int):
    """:func:`rank_params_streamed` with ``mlp`` MLP weights per layer streamed."""
    per_layer = _attention_rank(m, t, attention, groups) + (mlp + 2 * m.hidden) / t
    return m.layers * per_layer + m.vocab * m.hidden / t


def rank_params_held(m: ModelCard, t: int, attention: str = "tensor", groups: int = 0) -> float:
    """Weights per rank held in HBM over all layers (embedding included unless tied)."""
    per_layer = _attention_rank(m, t, attention, groups) + (mlp_params(m) + 2 * m.hidden) / t
    embeddings = 1 if m.tied_embeddings else 2
    return m.layers * per_layer + embeddings * m.vocab * m.hidden / t


def kv_bytes_per_token_rank(m: ModelCard, t: int, kv_bytes: float, attention: str = "tensor", groups: int = 0) -> float:
    """KV bytes per token of a sequence one tensor-parallel rank attends to, over all ``L``
    layers: ``2 L max(1, n_kv/t) d_h b_kv`` (docs/sources.md#roof-kv-bytes); with
    data-parallel attention a rank holds all ``n_kv`` heads of its own sequences, grouped
    ``max(1, n_kv/u)`` of the sequences of its group (``u = t/g`` ranks)."""
    heads = float(m.kv_heads) if attention == "data" else kv_heads_per_rank(m, attention_ranks(t, attention, groups))
    return 2.0 * m.layers * heads * m.head_dim * kv_bytes


def kv_bytes_per_token_per_gpu(m: ModelCard, layout: Layout, kv_bytes: float) -> float:
    """KV bytes per token of the batch on one GPU: the rank's share of its ``L/p`` layers
    (with data-parallel attention, averaged over the ``t`` ranks that split the sequences;
    grouped, over the ``g`` groups)."""
    per_rank = kv_bytes_per_token_rank(m, layout.tensor, kv_bytes, layout.attention, layout.attention_groups) / layout.pipeline
    if layout.attention == "grouped":
        return per_rank / layout.groups
    return per_rank / layout.tensor if layout.attention == "data" else per_rank


def weights_bytes_per_gpu(m: ModelCard, layout: Layout, bytes_per_param: float) -> float:
    """Weight bytes one GPU holds: ``b_w x held params per rank / p``."""
    return bytes_per_param * rank_params_held(m, layout.tensor, layout.attention, layout.attention_groups) / layout.pipeline


# --------------------------------------------------------------------------- collectives


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
    if algorithm == "ring":
        return alpha_s + 2 * (t - 1) * hop_s + 2.0 * (t - 1) / t * m / link_Bps
    if algorithm == "two_shot":
        return alpha_s + 2 * hop_s + 2.0 * (t - 1) / t * m / link_Bps
    if algorithm == "one_shot":
        return alpha_s + hop_s + (t - 1) * m / link_Bps
    if algorithm == "tree":
        return alpha_s + 2 * math.ceil(math.log2(t)) * hop_s + 2.0 * (t - 1) / t * m / link_Bps
    raise ValueError(f"unknown all-reduce algorithm {algorithm!r}")


def all_gather_seconds(algorithm: str, t: int, nbytes, link_Bps, alpha_s, hop_s) -> np.ndarray:
    """An all-gather (or a reduce-scatter) of a ``nbytes`` message: ``α + k h + (t-1)/t M/W``
    with ``k = t - 1`` hops round a ring, ``ceil(log2 t)`` down a tree (recursive
    halving/doubling), 1 direct on a switch (``one_shot``, ``two_shot``); 0 at ``t = 1``
    (docs/sources.md#roof-attention-dp)."""
    m = np.asarray(nbytes, float)
    if t == 1:
        return np.zeros(np.broadcast_shapes(np.shape(m), np.shape(link_Bps), np.shape(alpha_s), np.shape(hop_s)))
    hops = {"ring": t - 1, "tree": math.ceil(math.log2(t)), "one_shot": 1, "two_shot": 1}[algorithm]
    return alpha_s + hops * hop_s + (t - 1) / t * m / link_Bps


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
_UNDOMINATED = {allreduce_seconds: ("two_shot", "one_shot"), all_gather_seconds: ("one_shot",), gather_scatter_seconds: ("one_shot",)}


def _fastest_s(formula, algorithm: str, t: int, nbytes, r: "Rates") -> np.ndarray:
    """Seconds of the fastest of ``algorithm``'s candidates per element (the value
    :func:`_fastest` gives, without its index; for ``"auto"`` only the candidates of
    :data:`_UNDOMINATED` are timed)."""
    names = _UNDOMINATED[formula] if algorithm == "auto" else _candidates(algorithm)
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
    return _fastest_s(allreduce_seconds, algorithm, t, nbytes, r)


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
    return r.collective_start_s + (t - 1) * r.hop_latency_s + (t - 1) / t * np.asarray(nbytes) / r.link_bytes_per_s


def p2p_s(nbytes, r: Rates) -> np.ndarray:
    """Point-to-point send between pipeline stages: ``start + hop + nbytes / W_link``."""
    return r.collective_start_s + r.hop_latency_s + np.asarray(nbytes) / r.link_bytes_per_s


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
    scatter = _fastest_s(all_gather_seconds, layout.allreduce, a, m, intra)
    return r.collective_start_s + 2.0 * scatter + _fastest_s(allreduce_seconds, layout.allreduce, k, m / a, inter)


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
        head = _fastest_s(all_gather_seconds, layout.allreduce, t, rows * m.hidden * ACT_BYTES, group)
    if m.experts and layout.expert_parallel:
        dispatch = message * m.experts_per_token / t
        moe = 2 * all_to_all_s(dispatch, t, group)
        return m.layers * (hierarchical_allreduce_s(message, layout, r) + moe) if attention else m.layers * moe + head
    if attention:
        return 2 * m.layers * hierarchical_allreduce_s(message, layout, r)
    mlp = m.layers * _fastest_s(gather_scatter_seconds, layout.allreduce, t, message, group) + head
    if layout.attention != "grouped":
        return mlp
    g = layout.groups
    rows = np.ceil(np.asarray(tokens, float) / g) if group_tokens is None else np.asarray(group_tokens, float)
    inner = Layout(t // g, 1, allreduce=layout.allreduce, domain=layout.domain)
    return mlp + m.layers * hierarchical_allreduce_s(rows * m.hidden * ACT_BYTES, inner, r)


# --------------------------------------------------------------------------- phases


def mean_context(prompt_tokens: int, output_tokens: int) -> float:
    """``T̄ = S + O/2``: the mean context a decode step attends to."""
    return prompt_tokens + output_tokens / 2.0


def micro_batches(batch, pipeline: int) -> np.ndarray:
    """``m = min(B, p)`` micro-batches in flight."""
    return np.minimum(np.asarray(batch, float), pipeline)


def _decode_work(m: ModelCard, layout: Layout, b, ctx, r: Rates) -> tuple:
    """FLOPs and HBM bytes per rank of one decode step of ``b`` sequences at context ``ctx``.

    Heads sharded: ``b (2 P_active + 4 L n_h d_h T̄)/t`` FLOPs, ``b_w P_stream/t + b T̄
    KV_rank`` bytes. Data-parallel attention: the busiest rank's ``s = ceil(b/t)``
    sequences run the whole attention (``s (2 L P_attn + 4 L n_h d_h T̄)``, their KV
    ``s T̄ KV``), the MLP and LM head stay sharded over all ``b``. Grouped: the busiest
    group's ``s = ceil(b/g)`` sequences, their heads sharded over its ``u = t/g`` ranks
    (``s (2 L P_attn,rank + 4 L (n_h/u) d_h T̄)``, KV ``s T̄ KV_rank(u)``).
    """
    t, att, g = layout.tensor, layout.attention, layout.attention_groups
    kv = kv_bytes_per_token_rank(m, t, r.kv_bytes, att, g)
    weights = r.bytes_per_param * rank_params_streamed(m, t, b, att, g)
    if att == "tensor":
        flops = b * (2.0 * rank_params_active(m, t) + 4.0 * m.layers * (m.heads / t) * m.head_dim * ctx)
        return flops, weights + b * ctx * kv
    s = attention_sequences_per_rank(b, t, att, g)
    attn_w, heads = _attention_work(m, t, att, g)
    flops = s * (2.0 * m.layers * attn_w + 4.0 * m.layers * heads * m.head_dim * ctx) + b * 2.0 * _sharded_params_active(m, t)
    return flops, weights + s * ctx * kv


def _attention_work(m: ModelCard, t: int, attention: str, groups: int) -> tuple:
    """Attention weights and query heads one rank of a data-parallel attention group
    computes per sequence: all of them (``"data"``), or its ``1/u`` share (``"grouped"``)."""
    if attention == "data":
        return attention_params(m), m.heads
    return _attention_rank(m, t, attention, groups), m.heads / attention_ranks(t, attention, groups)


def decode_step(m: ModelCard, layout: Layout, batch, context, r: Rates) -> PhaseTimes:
    """One decode step of ``batch`` sequences at mean context ``context`` (TPOT terms).

    ``compute`` and ``memory`` from :func:`_decode_work` (``F`` and ``W``);
    ``comm = forward collectives of b d 2 bytes + (p-1) p2p``;
    ``overhead = step + L layer``, with ``b = B/m`` (``b = B`` without pipelining).
    """
    p = layout.pipeline
    b = np.asarray(batch, float) / micro_batches(batch, p)
    ctx = np.asarray(context, float)
    flops, nbytes = _decode_work(m, layout, b, ctx, r)
    comm = forward_comm_s(m, layout, b, r) + (p - 1) * stage_hop_s(layout, b * m.hidden * ACT_BYTES, r)
    overhead = r.step_overhead_s + m.layers * r.layer_overhead_s
    return _phase(flops / r.flops_per_s, nbytes / r.hbm_bytes_per_s, comm, overhead, r.comm_overlap)


def prefill_flops(m: ModelCard, layout: Layout, b, prompt_tokens: int):
    """FLOPs of the busiest TP rank in one whole-model forward over ``b`` prompts of ``S``
    tokens (causal attention, LM head on the last token). With data-parallel attention
    the busiest rank runs the attention of ``ceil(b/t)`` whole prompts, the MLP stays
    sharded over all ``b S`` tokens."""
    t, att, g = layout.tensor, layout.attention, layout.attention_groups
    s = np.asarray(prompt_tokens, float)
    head = m.vocab * m.hidden / t
    if att == "tensor":
        return b * (2.0 * (rank_params_active(m, t) - head) * s + 2.0 * m.layers * (m.heads / t) * m.head_dim * s * s + 2.0 * head)
    seqs = attention_sequences_per_rank(b, t, att, g)
    attn_w, heads = _attention_work(m, t, att, g)
    attn = seqs * (2.0 * m.layers * attn_w * s + 2.0 * m.layers * heads * m.head_dim * s * s)
    return attn + b * (2.0 * (_sharded_params_active(m, t) - head) * s + 2.0 * head)


def _prefill_forward(m: ModelCard, layout: Layout, b, prompt_tokens: int, r: Rates) -> tuple:
    """FLOPs (:func:`prefill_flops`), HBM bytes and collective seconds per TP rank of one
    whole-model forward over ``b`` prompts of ``S`` tokens."""
    t, att, g = layout.tensor, layout.attention, layout.attention_groups
    s = np.asarray(prompt_tokens, float)
    flops = prefill_flops(m, layout, b, prompt_tokens)
    kv = kv_bytes_per_token_rank(m, t, r.kv_bytes, att, g)
    weights = r.bytes_per_param * rank_params_streamed(m, t, b * s, att, g)
    if att == "tensor":
        return flops, weights + b * s * kv, forward_comm_s(m, layout, b * s, r, head_rows=b)
    seqs = attention_sequences_per_rank(b, t, att, g)
    return flops, weights + seqs * s * kv, forward_comm_s(m, layout, b * s, r, head_rows=b, group_tokens=seqs * s)


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
    hops = mb * (p - 1) / p * stage_hop_s(layout, b * prompt_tokens * m.hidden * ACT_BYTES, r)
    overhead = r.step_overhead_s + share * m.layers * r.layer_overhead_s
    return _phase(share * flops / r.flops_per_s, share * nbytes / r.hbm_bytes_per_s, share * comm + hops, overhead, r.comm_overlap)


def time_to_first_token(m: ModelCard, layout: Layout, prompt_tokens: int, r: Rates) -> PhaseTimes:
    """TTFT: the latency of one prompt's prefill, through all ``p`` stages in turn
    (``= prefill(batch=1)`` without pipelining; ``(p-1)`` point-to-points with it)."""
    flops, nbytes, comm = _prefill_forward(m, layout, 1.0, prompt_tokens, r)
    hops = (layout.pipeline - 1) * stage_hop_s(layout, prompt_tokens * m.hidden * ACT_BYTES, r)
    overhead = r.step_overhead_s + m.layers * r.layer_overhead_s
    return _phase(flops / r.flops_per_s, nbytes / r.hbm_bytes_per_s, comm + hops, overhead, r.comm_overlap)


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
    return _phase(fill * pre.compute_s, fill * pre.memory_s, fill * pre.comm_s, overhead, r.comm_overlap)


def _phase(compute, memory, comm, overhead, overlap=0.0) -> PhaseTimes:
    """The four terms as float arrays of one common (trial) shape, and the overlap share
    (read-only broadcast views: a term common to every trial is not copied per trial)."""
    return PhaseTimes(*np.broadcast_arrays(*(np.asarray(x, float) for x in (compute, memory, comm, overhead, overlap))))


# --------------------------------------------------------------------------- batch limits


def free_kv_bytes_per_gpu(m: ModelCard, layout: Layout, hbm_gb, usable_fraction, bytes_per_param: float) -> np.ndarray:
    """HBM left for the KV cache on one GPU: ``u x HBM - weights per GPU`` (negative: no fit)."""
    hbm = np.asarray(hbm_gb, float) * BYTES_PER_GB
    return usable_fraction * hbm - weights_bytes_per_gpu(m, layout, bytes_per_param)


def batch_limit_memory(m: ModelCard, layout: Layout, hbm_gb, usable_fraction, context_tokens, bytes_per_param: float, kv_bytes: float) -> np.ndarray:
    """``B_max``: sequences whose KV cache at ``context_tokens`` fits next to the weights
    (docs/sources.md#roof-batch-limit), 0 when not even one does. With data-parallel
    attention each of the ``t`` ranks holds whole sequences: ``t`` times what fits one
    rank. int64."""
    free = free_kv_bytes_per_gpu(m, layout, hbm_gb, usable_fraction, bytes_per_param)
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
    return np.broadcast_shapes(np.shape(limit_s), *(np.shape(getattr(r, f)) for f in r.__dataclass_fields__), *map(np.shape, lengths))


@dataclass(frozen=True)
class Timing:
    """What a batch search times its trials with: their ``rates`` and request ``lengths``
    (numbers or per-trial arrays), taken at a subset of the trials together (:meth:`take`,
    as :func:`largest_batch` does with the trials still open)."""

    rates: Rates
    lengths: tuple

    def take(self, rows: np.ndarray) -> "Timing":
        return Timing(self.rates.take(rows), tuple(x[rows] if np.ndim(x) > 0 else x for x in self.lengths))


def batch_limit_slo(m: ModelCard, layout: Layout, context, slo_s, r: Rates, cap=SLO_SEARCH_CAP) -> np.ndarray:
    """``B_SLO``: the largest batch with TPOT <= ``slo_s`` (0 if even one sequence misses
    it), by bisection over integers (TPOT is non-decreasing in B); at most ``cap``. int64.
    ``context`` a number or per trial."""
    return largest_batch(lambda b, x: decode_step(m, layout, b, x.lengths[0], x.rates).total_s, slo_s, trial_shape(slo_s, r, context), cap,
                         rates=Timing(r, (context,)))


def batch_limit_ttft(m: ModelCard, layout: Layout, prompt_tokens, slo_s, r: Rates, cap=SLO_SEARCH_CAP) -> np.ndarray:
    """``B_TTFT``: the largest batch whose last request's TTFT
    (:func:`batch_time_to_first_token`) is at most ``slo_s`` (0 if one prompt misses
    it; ``cap`` for an infinite SLO, without a search). int64. ``prompt_tokens`` a number
    or per trial."""
    shape = trial_shape(slo_s, r, prompt_tokens)
    if np.all(np.isinf(slo_s)):
        return np.broadcast_to(np.asarray(cap, np.int64), shape).copy()
    return largest_batch(lambda b, x: batch_time_to_first_token(m, layout, b, x.lengths[0], x.rates).total_s, slo_s, shape, cap,
                         rates=Timing(r, (prompt_tokens,)))
