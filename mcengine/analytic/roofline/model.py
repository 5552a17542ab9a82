"""The roofline's shared vocabulary (docs/model.md#roofline): the model card a formula reads
(:class:`ModelCard`), the layout of an instance (:class:`Layout`), the per-trial rates of a
device and its links (:class:`Rates`), the times of one phase (:class:`PhaseTimes`), and the
constants of the model (notation and step-time model: :mod:`mcengine.analytic.roofline`)."""

from __future__ import annotations

import copy

import math
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Protocol

import numpy as np

from ...kernels.continuous import phase_total_s
from ...units import BYTES_PER_GB, BYTES_PER_TB, FLOPS_PER_TFLOP, MS_PER_S, US_PER_S


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
    dense_layers: int
    kv_lora_rank: int
    q_lora_rank: int
    rope_head_dim: int


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
    """Effective per-device rates, latencies and precisions (floats or per-trial arrays),
    and the decoding scheme every decode step reads: ``draft_tokens`` ``k`` (0: one token
    per step), ``acceptance`` ``α`` and ``draft_cost`` (a draft step's share of a target
    step) of speculative decoding (:func:`.steps.decode_step`, docs/generation.md#speculative),
    and the share of a prompt found in the prefix cache, ``prefix_hit``
    (:func:`.steps.prefill_flops`, docs/generation.md#prefix-caching), and the routing
    imbalance of expert parallelism, ``moe_imbalance`` (the hottest expert's load over the
    mean, :func:`.collectives.forward_comm_s`, docs/generation.md#moe).

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
    draft_tokens: int = 0
    acceptance: np.ndarray | float = 0.0
    draft_cost: np.ndarray | float = 0.0
    prefix_hit: np.ndarray | float = 0.0
    moe_imbalance: np.ndarray | float = 1.0
    kv_read_factor: np.ndarray | float = 1.0

    def for_allreduce(self) -> "Rates":
        """These rates with the all-reduce's own start latency in place of
        ``collective_start_s`` (``allreduce_start_s``; None: the same for every collective)."""
        return self if self.allreduce_start_s is None else replace(self, collective_start_s=self.allreduce_start_s)

    @cached_property
    def shape(self) -> tuple:
        """The shape every field broadcasts to (``()`` when none is per trial), worked out once
        per rates: each batch search of a block reads it."""
        return np.broadcast_shapes(*(np.shape(getattr(self, f)) for f in self.__dataclass_fields__))

    def take(self, rows: np.ndarray) -> "Rates":
        """These rates at the trials ``rows`` (an index array): every per-trial field indexed,
        scalars kept."""
        out = copy.copy(self)  # (a field-by-field copy: the batch searches take the open trials at every step)
        out.__dict__.pop("shape", None)  # (the copy's fields are indexed: its shape is its own)
        for f in self.__dataclass_fields__:
            if isinstance(v := getattr(self, f), np.ndarray) and v.ndim:
                object.__setattr__(out, f, v[rows])
        return out

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
        draft_tokens: int = 0,
        acceptance=0.0,
        draft_cost=0.0,
        prefix_hit=0.0,
        moe_imbalance=1.0,
        kv_efficiency=None,
    ) -> "Rates":
        """From datasheet units: ``F = peak x compute_efficiency`` etc.; the scale-out
        bandwidth is derated by ``link_efficiency`` as the scale-up links are. A decode step
        reads its KV cache at ``kv_efficiency`` of the HBM bandwidth (None: at
        ``memory_efficiency``, as the weights): each KV byte costs ``kv_read_factor =
        memory_efficiency / kv_efficiency`` weight bytes (docs/model.md#kv-read)."""
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
            draft_tokens=int(draft_tokens),
            acceptance=np.asarray(acceptance, float),
            draft_cost=np.asarray(draft_cost, float),
            prefix_hit=np.asarray(prefix_hit, float),
            moe_imbalance=np.asarray(moe_imbalance, float),
            kv_read_factor=1.0 if kv_efficiency is None else np.asarray(memory_efficiency, float) / np.asarray(kv_efficiency, float),
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
        return phase_total_s(self.compute_s, self.memory_s, self.comm_s, self.overhead_s, self.overlap)

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
