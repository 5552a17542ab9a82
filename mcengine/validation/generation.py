"""The current generation's anchors (docs/generation.md#validate): DeepSeek-V3's card
against its technical report (parameters, MLA KV bytes per token) and the shipped ``b200``
scenario against TensorRT-LLM's published B200 throughput. The B200 anchors are held out:
no efficiency is fitted to them (the efficiency tables are fitted to H100 anchors,
docs/sources.md#roof-calibration), so their errors say how far the H100 fit carries."""

from __future__ import annotations

from dataclasses import dataclass

from ..analytic.roofline import weights as rw
from ..scenario import load_scenario
from ..scenario.cards import load_model_card
from ..stages.roofline import STAGE
from ..standalone.roofline import roofline_summary
from .check import Check
from .roofline import CALIBRATED_SERVING

#: B200 FP4 (half-byte weights select the fp4 precision: the b200's dense fp4 peak, 9,000
#: TFLOP/s; fp8 KV cache), one GPU per engine, no latency limit (the throughput scenario:
#: requests at an unbounded rate).
_FP4_TP1 = (
    *CALIBRATED_SERVING,
    "workload.bytes_per_param=0.5",
    "workload.kv_bytes=1",
    "cluster.instance_gpus=1",
    "workload.tensor_parallel=1",
    "workload.pipeline_parallel=1",
    "workload.tpot_slo_ms=1000",
)
_TRT_B200 = ("TensorRT-LLM 0.19.0 perf overview, Llama-3.3-70B FP4 on one B200 (DGX B200), {} in / {} out: {:,.0f} output tok/s "
             "(docs/sources.md#gen-b200-anchors; held out, +-10%)")


@dataclass(frozen=True)
class B200Anchor:
    """A measured B200 result and the ``--set`` overrides that reproduce its setup from the
    shipped ``b200`` scenario; ``role`` is "held-out" (no efficiency is fitted to it)."""

    name: str
    prompt_tokens: int
    output_tokens: int
    measured: float
    known_miss: str
    role: str = "held-out"

    def value(self) -> float:
        """Output tokens/s per GPU of the model at the b200 inputs' medians."""
        overrides = (*_FP4_TP1, f"workload.prompt_tokens={self.prompt_tokens}", f"workload.output_tokens={self.output_tokens}")
        return float(roofline_summary(load_scenario("b200", overrides))["tokens_per_s_per_gpu"])

    def check(self) -> Check:
        got = self.value()
        detail = (f"[fp4 on the fp8 efficiency table, {self.role}] error {got / self.measured - 1:+.1%}; "
                  + _TRT_B200.format(self.prompt_tokens, self.output_tokens, self.measured))
        return Check(STAGE, self.name, self.measured, got, 0.1 * self.measured, detail, self.known_miss, basis="measured")


_LARGE_BATCH = ("high, as the H100 fit is at large batches (docs/sources.md#roof-calibration), on a GPU whose fp4 "
                "efficiencies nobody has fitted: the model's large batch streams weights and KV at the fp8 table's "
                "efficiencies, where the engine's measured throughput implies less")

B200_ANCHORS: tuple[B200Anchor, ...] = (
    B200Anchor("B200 FP4 TP1 tok/s, 128 in / 128 out", 128, 128, 11_253.28,
               _LARGE_BATCH),
    B200Anchor("B200 FP4 TP1 tok/s, 128 in / 2,048 out", 128, 2048, 9_925.00,
               _LARGE_BATCH + " (the H100's 128 in / 2,048 out row misses the same way)"),
)


def _deepseek_checks() -> list[Check]:
    """DeepSeek-V3's card against the technical report (arXiv:2412.19437): 671 B total and
    37 B active parameters, and the MLA KV cache of 61 x (512 + 64) elements per token."""
    m = load_model_card("deepseek-v3", "workload.model", [])
    src = "docs/sources.md#gen-deepseek-v3"
    return [
        Check(STAGE, "DeepSeek-V3 parameters (B), total", 671.0, rw.params_total(m) / 1e9, 671.0 * 0.005,
              f"the report's 671 B (without the 14 B MTP module), +-0.5%; {src}"),
        Check(STAGE, "DeepSeek-V3 parameters (B), active per token", 37.0, rw.params_active(m) / 1e9, 37.0 * 0.015,
              f"the report's 37 B (rounded), +-1.5%; {src}"),
        Check(STAGE, "DeepSeek-V3 MLA KV bytes per token (bf16)", 61 * (512 + 64) * 2.0, rw.kv_bytes_per_token_rank(m, 1, 2.0), 0.0,
              "61 layers x (latent 512 + rope 64) x 2 bytes (docs/sources.md#gen-mla)"),
    ]


def checks() -> list[Check]:
    """DeepSeek-V3's card checks, then the held-out B200 anchors (each with its error)."""
    return _deepseek_checks() + [a.check() for a in B200_ANCHORS]
