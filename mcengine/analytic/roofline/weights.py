"""Parameter counts, and the weights and KV cache one tensor-parallel rank or GPU holds
and streams (docs/sources.md#roof-kv-replication, docs/sources.md#roof-attention-dp,
docs/sources.md#roof-moe; notation: :mod:`mcengine.analytic.roofline`)."""

from __future__ import annotations

import numpy as np

from ...kernels.continuous import busiest_sequences
from .model import Layout, ModelCard


def _matrices(m: ModelCard) -> int:
    return 3 if m.gated_mlp else 2


def attention_params(m: ModelCard) -> int:
    """Q, K, V and O projections of one layer: ``d n_h d_h + 2 d n_kv d_h + n_h d_h d``;
    with multi-head latent attention the down-projections every rank keeps plus the
    per-head up-projections and output (:func:`mla_replicated_params`, :func:`mla_head_params`)."""
    if m.kv_lora_rank:
        return mla_replicated_params(m) + mla_head_params(m)
    d, dh = m.hidden, m.head_dim
    return d * m.heads * dh + 2 * d * m.kv_heads * dh + m.heads * dh * d


def mla_replicated_params(m: ModelCard) -> int:
    """MLA's down-projections of one layer, which a rank sharding the heads still holds
    whole: ``d q_lora + d (kv_lora + d_rope)`` (DeepSeek-V2/V3, docs/sources.md#gen-mla)."""
    return m.hidden * m.q_lora_rank + m.hidden * (m.kv_lora_rank + m.rope_head_dim)


def mla_head_params(m: ModelCard) -> int:
    """MLA's per-head weights of one layer, sharded with the heads: the query up-projection
    ``q_in n_h (d_h + d_rope)`` (``q_in = q_lora``, or ``d`` without a query latent), the key
    and value up-projections ``kv_lora n_h 2 d_h`` and the output ``n_h d_h d``."""
    q_in = m.q_lora_rank or m.hidden
    return q_in * m.heads * (m.head_dim + m.rope_head_dim) + m.kv_lora_rank * m.heads * 2 * m.head_dim + m.heads * m.head_dim * m.hidden


def attention_width(m: ModelCard, absorbed: bool) -> float:
    """``w``: attention FLOPs per query token, head and context token are ``4 w``: ``d_h``
    (scores and values over the head dimension); with MLA, decoding with the up-projections
    absorbed (``absorbed``) attends over the cached latent, ``(2 kv_lora + d_rope)/2``, and
    prefill over the decompressed heads, ``(2 d_h + d_rope)/2`` (docs/generation.md#mla)."""
    if not m.kv_lora_rank:
        return m.head_dim
    return (2 * m.kv_lora_rank + m.rope_head_dim) / 2 if absorbed else (2 * m.head_dim + m.rope_head_dim) / 2


def expert_params(m: ModelCard) -> int:
    """One MoE expert (``(3 or 2) d expert_ffn``); 0 for a dense model."""
    return _matrices(m) * m.hidden * m.expert_ffn if m.experts else 0


def mlp_params(m: ModelCard) -> int:
    """MLP weights of one layer: ``(3 or 2) d d_ff`` dense; all experts + shared + router for MoE
    (averaged over the layers when the first ``dense_layers`` are dense, :func:`per_layer_mlp`)."""
    if not m.experts:
        return _matrices(m) * m.hidden * m.ffn
    return per_layer_mlp(m, (m.experts + m.shared_experts) * expert_params(m) + m.hidden * m.experts)


def active_mlp_params(m: ModelCard) -> int:
    """MLP weights one token multiplies by (``k`` routed + shared experts + router for MoE)."""
    if not m.experts:
        return mlp_params(m)
    return per_layer_mlp(m, (m.experts_per_token + m.shared_experts) * expert_params(m) + m.hidden * m.experts)


def per_layer_mlp(m: ModelCard, moe):
    """The mean MLP weights per layer of a mixture whose first ``D = dense_layers`` of ``L``
    layers are dense: ``((L - D) moe + D (3 or 2) d d_ff) / L`` (``moe`` itself when ``D = 0``)."""
    if not m.dense_layers:
        return moe
    return ((m.layers - m.dense_layers) * moe + m.dense_layers * _matrices(m) * m.hidden * m.ffn) / m.layers


def routed_layers(m: ModelCard) -> int:
    """Layers whose MLP is routed experts: ``L - dense_layers`` (0 for a dense model)."""
    return m.layers - m.dense_layers if m.experts else 0


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


def attention_groups(t: int, attention: str, groups: int) -> int:
    """``g``: the data-parallel attention groups (1 with heads sharded)."""
    return t // attention_ranks(t, attention, groups)


def attention_rank(m: ModelCard, t: int, attention: str = "tensor", groups: int = 0) -> float:
    """Attention weights per rank and layer: Q and O sharded over the ``u`` ranks of the
    attention group (:func:`attention_ranks`), K and V per the KV heads each keeps
    (``max(1, n_kv/u)``, replicated above ``u = n_kv``); with data-parallel attention
    (``u = 1``) every rank holds them all, grouped they are replicated ``g`` times."""
    if attention == "data":
        return float(attention_params(m))
    u = attention_ranks(t, attention, groups)
    if m.kv_lora_rank:  # MLA: the down-projections whole on every rank, the heads' weights sharded
        return mla_replicated_params(m) + mla_head_params(m) / u
    d, dh = m.hidden, m.head_dim
    return 2.0 * d * m.heads * dh / u + 2.0 * d * dh * kv_heads_per_rank(m, u)


def attention_sequences_per_rank(batch, t: int, attention: str = "tensor", groups: int = 0) -> np.ndarray:
    """Sequences whose attention one rank computes: all ``b`` (heads sharded), or with
    data-parallel attention those of the busiest rank, ``ceil(b/t)``, grouped those of
    the busiest group, ``ceil(b/g)`` (docs/sources.md#roof-attention-dp)."""
    b = np.asarray(batch, float)
    if attention == "tensor":
        return b
    return busiest_sequences(b, attention_groups(t, attention, groups))


def rank_params_active(m: ModelCard, t: int, attention: str = "tensor", groups: int = 0) -> float:
    """Weights per rank that one token multiplies by (all layers, LM head included)."""
    per_layer = attention_rank(m, t, attention, groups) + (active_mlp_params(m) + 2 * m.hidden) / t
    return m.layers * per_layer + m.vocab * m.hidden / t


def sharded_params_active(m: ModelCard, t: int) -> float:
    """The tensor-sharded part of :func:`rank_params_active` (MLP, norms, LM head)."""
    return m.layers * (active_mlp_params(m) + 2 * m.hidden) / t + m.vocab * m.hidden / t


def rank_params_streamed(m: ModelCard, t: int, tokens, attention: str = "tensor", groups: int = 0) -> np.ndarray:
    """Weights per rank read by a forward pass over ``tokens`` tokens (all layers + LM head).

    Dense: every weight. MoE: attention, norms, router, shared experts and the expected
    distinct routed experts the tokens touch.
    """
    if not m.experts:  # the same number for any tokens: computed once, broadcast (a read-only view)
        return np.broadcast_to(_params_streamed(m, t, float(mlp_params(m)), attention, groups), np.shape(tokens))
    mlp = per_layer_mlp(m, m.hidden * m.experts + (m.shared_experts + experts_touched(m, tokens)) * expert_params(m))
    return _params_streamed(m, t, mlp, attention, groups)


def _params_streamed(m: ModelCard, t: int, mlp, attention: str, groups: int):
    """:func:`rank_params_streamed` with ``mlp`` MLP weights per layer streamed."""
    per_layer = attention_rank(m, t, attention, groups) + (mlp + 2 * m.hidden) / t
    return m.layers * per_layer + m.vocab * m.hidden / t


def rank_params_held(m: ModelCard, t: int, attention: str = "tensor", groups: int = 0) -> float:
    """Weights per rank held in HBM over all layers (embedding included unless tied)."""
    per_layer = attention_rank(m, t, attention, groups) + (mlp_params(m) + 2 * m.hidden) / t
    embeddings = 1 if m.tied_embeddings else 2
    return m.layers * per_layer + embeddings * m.vocab * m.hidden / t


def kv_bytes_per_token_rank(m: ModelCard, t: int, kv_bytes: float, attention: str = "tensor", groups: int = 0) -> float:
    """KV bytes per token of a sequence one tensor-parallel rank attends to, over all ``L``
    layers: ``2 L max(1, n_kv/t) d_h b_kv`` (docs/sources.md#roof-kv-bytes); with
    data-parallel attention a rank holds all ``n_kv`` heads of its own sequences, grouped
    ``max(1, n_kv/u)`` of the sequences of its group (``u = t/g`` ranks). With multi-head
    latent attention every rank caches the whole latent and rope key of its sequences:
    ``L (kv_lora + d_rope) b_kv`` in every mode (docs/generation.md#mla)."""
    if m.kv_lora_rank:
        return float(m.layers * (m.kv_lora_rank + m.rope_head_dim) * kv_bytes)
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
