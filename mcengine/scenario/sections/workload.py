"""``[workload]``: the model served and how (ARCHITECTURE "Roofline").

Model cards are data files in ``configs/models/`` (or an inline ``[workload.model]``
table), validated by :class:`ModelCard`. Sources: ``shared/reference/notes/roofline.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import Problem
from ..dists import Dist
from ..fields import AUTO, flag, integer, number, parse_section, text


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


def parse_model(raw, key: str, problems: list[Problem]) -> ModelCard | None:
    """A shipped card by name, or an inline table."""
    from ..load import load_model_card  # local: load imports the schema

    if isinstance(raw, str):
        return load_model_card(raw, key, problems)
    if raw is None:
        return load_model_card("llama-3-70b", key, problems)
    if isinstance(raw, dict):
        return parse_section(ModelCard, raw, f"{key}.", problems)
    problems.append(Problem(key, raw, "allowed: the name of a shipped model card or an inline [workload.model] table"))
    return None


_EFF = dict(lo=0.0, lo_open=True, hi=1.0, why="a share of the peak")
_TOKENS = "10^7 tokens is ~100x the longest context; token counts stay exact"
_DEGREE = "at most cluster.instance_gpus (65,536)"
_LATENCY = "a second per collective, hop or step is no longer a serving system"


@dataclass(frozen=True)
class WorkloadSection:
    model: ModelCard = field(default=None, metadata={"help": "Shipped model card name or inline table."})
    bytes_per_param: Dist = number(2.0, "Bytes per weight (bf16 2, fp8 1).", "bytes", lo=0.0, lo_open=True, hi=8.0, uncertain=False, why="fp64 is 8 bytes")
    kv_bytes: Dist = number(2.0, "Bytes per KV-cache element.", "bytes", lo=0.0, lo_open=True, hi=8.0, uncertain=False, why="fp64 is 8 bytes")
    prompt_tokens: int = integer(2048, "Prompt length S.", "tokens", lo=1, hi=10**7, why=_TOKENS)
    output_tokens: int = integer(256, "Generated tokens O per request.", "tokens", lo=1, hi=10**7, why=_TOKENS)
    tpot_slo_ms: Dist = number(50.0, "Time-per-output-token SLO that caps the batch.", "ms", lo=0.0, lo_open=True, hi=1e6,
                               why="1,000 s per token is no SLO at all")
    batch: int | str = integer(AUTO, 'Concurrent sequences per instance; "auto" = largest that fits HBM and the SLO.', lo=1, hi=10**7, auto_ok=True,
                               why="KV-cache bytes of a batch stay far inside int64")
    tensor_parallel: int | str = integer(AUTO, 'Tensor-parallel degree t; "auto" searches the layouts.', lo=1, hi=2**16, auto_ok=True, why=_DEGREE)
    pipeline_parallel: int | str = integer(AUTO, 'Pipeline stages p; "auto" searches the layouts.', lo=1, hi=2**16, auto_ok=True, why=_DEGREE)
    expert_parallel: bool = flag(
        False,
        "MoE only: each tensor-parallel rank holds experts/t whole experts and tokens move by a dispatch and a "
        "combine all-to-all per layer (GenZ, llm-analysis: notes roofline.md 2.8) instead of sharding every expert.",
    )
    compute_efficiency: Dist = number(0.5, "Achieved share of peak FLOP/s (prefill measured 33-45%).", **_EFF)
    memory_efficiency: Dist = number(0.7, "Achieved share of HBM bandwidth (decode measured 55-60% of the bound).", **_EFF)
    link_efficiency: Dist = number(0.8, "Achieved share of link bandwidth in ring all-reduce (~370 of 450 GB/s).", **_EFF)
    collective_start_us: Dist = number(5.0, "Fixed start-up latency per collective.", "us", lo=0.0, hi=1e6, why=_LATENCY)
    hop_latency_us: Dist = number(1.0, "Latency per ring hop; a ring all-reduce makes 2(t-1) hops.", "us", lo=0.0, hi=1e6, why=_LATENCY)
    step_overhead_ms: Dist = number(0.5, "Fixed per-step overhead (scheduling, kernel launches).", "ms", lo=0.0, hi=1e3, why=_LATENCY)
    layer_overhead_us: Dist = number(0.0, "Extra per-layer per-step overhead (one simulator uses 20 us).", "us", lo=0.0, hi=1e6, why=_LATENCY)
    hbm_usable_fraction: Dist = number(0.9, "Share of HBM available for weights + KV cache.", lo=0.0, lo_open=True, hi=1.0, why="a share")
