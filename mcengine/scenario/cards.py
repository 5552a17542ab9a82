"""Model cards: a transformer's shape, shipped as data files in ``configs/models/``.

``[workload] model`` names a shipped card or gives an inline ``[workload.model]``
table; both are validated by :class:`ModelCard`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType

from ..errors import Problem
from .fields import did_you_mean, flag, integer, parse_section, text
from .files import configs_dir, read_toml

#: The card used when ``[workload] model`` is not given.
DEFAULT_MODEL = "llama-3-70b"


_SHAPE_WHY = "~100x today's largest models; parameter and FLOP counts stay exact in float64"


@dataclass(frozen=True)
class ModelCard:
    """A transformer's shape. Dense unless ``experts`` > 0 (MoE)."""

    name: str = text("custom", "Label of the model.")
    layers: int = integer(80, "Transformer layers L.", lo=1, hi=10_000, why=_SHAPE_WHY)
    hidden: int = integer(8192, "Hidden size d.", lo=1, hi=10**6, why=_SHAPE_WHY)
    heads: int = integer(64, "Attention (query) heads n_h.", lo=1, hi=10_000, why=_SHAPE_WHY)
    kv_heads: int = integer(8, "Key/value heads n_kv (GQA).", lo=1, hi=10_000, why=_SHAPE_WHY)
    head_dim: int = integer(128, "Head dimension d_h.", lo=1, hi=10_000, why=_SHAPE_WHY)
    ffn: int = integer(28672, "Feed-forward (intermediate) size d_ff of a dense layer.", lo=1, hi=10**7, why=_SHAPE_WHY)
    vocab: int = integer(128256, "Vocabulary size V.", lo=1, hi=10**8, why=_SHAPE_WHY)
    gated_mlp: bool = flag(True, "Gated MLP (SwiGLU: 3 matrices) instead of 2.")
    tied_embeddings: bool = flag(False, "Input embedding shares the LM head's weights.")
    experts: int = integer(0, "Routed experts per MoE layer; 0 = dense.", lo=0, hi=100_000, why=_SHAPE_WHY)
    experts_per_token: int = integer(0, "Routed experts each token uses.", lo=0, hi=100_000, why=_SHAPE_WHY)
    expert_ffn: int = integer(0, "Feed-forward size of one expert.", lo=0, hi=10**7, why=_SHAPE_WHY)
    shared_experts: int = integer(0, "Always-on shared experts per MoE layer.", lo=0, hi=10_000, why=_SHAPE_WHY)
    dense_layers: int = integer(0, "MoE only: the first layers whose MLP is dense (ffn) rather than experts (DeepSeek-V3: 3).",
                                lo=0, hi=10_000, why=_SHAPE_WHY)
    kv_lora_rank: int = integer(0, "Multi-head latent attention (MLA): the compressed KV latent per layer and token; 0 = "
                                   "ordinary (grouped-query) attention (docs/generation.md#mla).", lo=0, hi=10**6, why=_SHAPE_WHY)
    q_lora_rank: int = integer(0, "MLA: the compressed query latent (0 = queries projected straight from d).", lo=0, hi=10**6,
                               why=_SHAPE_WHY)
    rope_head_dim: int = integer(0, "MLA: the decoupled rotary key width cached beside the latent per layer and token "
                                    "(head_dim is then each head's no-rope query/key and value width).", lo=0, hi=10**6, why=_SHAPE_WHY)


def parse_model(raw, key: str, problems: list[Problem]) -> ModelCard | None:
    """A shipped card by name, or an inline table."""
    if isinstance(raw, str):
        return load_model_card(raw, key, problems)
    if raw is None:
        return load_model_card(DEFAULT_MODEL, key, problems)
    if isinstance(raw, dict):
        return parse_section(ModelCard, raw, f"{key}.", problems)
    problems.append(Problem(key, raw, "allowed: the name of a shipped model card or an inline [workload.model] table"))
    return None


def model_names() -> list[str]:
    return sorted(p.stem for p in (configs_dir() / "models").glob("*.toml"))


@lru_cache(maxsize=None)
def _model_raw(name: str) -> MappingProxyType:
    """The shipped card's raw table, read once (read only: callers take a copy,
    :func:`_card_copy`)."""
    raw = read_toml(configs_dir() / "models" / f"{name}.toml")
    raw.setdefault("name", name)
    return MappingProxyType(raw)


def _card_copy(name: str) -> dict:
    """A copy of the raw table of the shipped card ``name``, its nested tables too (the
    cached one stays as read)."""
    return copy.deepcopy(dict(_model_raw(name)))


def card_table(name: str) -> dict:
    """A copy of the raw table of the shipped card ``name`` (as an inline table would give it)."""
    return _card_copy(name)


def load_model_card(name: str, key: str, problems: list[Problem]) -> ModelCard | None:
    """The shipped card ``name`` (a Problem at ``key`` if there is none)."""
    if name not in model_names():
        names = model_names()
        problems.append(Problem(key, name, "unknown model card; shipped: " + ", ".join(names), did_you_mean(name, names)))
        return None
    return parse_section(ModelCard, _card_copy(name), f"{key}.", problems)
