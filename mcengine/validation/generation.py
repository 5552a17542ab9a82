"""The current generation's anchors (docs/generation.md#validate): DeepSeek-V3's card
against its technical report (parameters, MLA KV bytes per token), the shipped ``b200``
scenario against TensorRT-LLM's published B200 FP4 throughput, and DeepSeek-V3 serving
against SGLang's published expert-parallel deployments on H100 and GB200 NVL72.

Roles: the B200's fp4 compute efficiency (``[workload.efficiency.fp4]`` of
configs/b200.toml) is fitted to the FP4 128 in / 128 out anchor (its decode and prefill are
compute-bound there) and checked against that fit (:func:`fp4_fit_check`); every other
measured anchor is held out (the efficiency tables are H100 fits, docs/sources.md#roof-calibration),
so its error says how far those fits carry."""

from __future__ import annotations

from dataclasses import dataclass

from scipy.optimize import brentq

from ..analytic.roofline import weights as rw
from ..scenario import load_scenario
from ..scenario.cards import load_model_card
from ..stages.roofline import STAGE
from ..standalone.roofline import roofline_summary
from .check import Check
from .fit import BOUNDS, FIT_TOLERANCE
from .roofline import CALIBRATED_SERVING


@dataclass(frozen=True)
class ServingAnchor:
    """A published serving measurement and the ``--set`` overrides that reproduce its setup
    from a shipped scenario (after :data:`CALIBRATED_SERVING`). ``phase`` is what is
    measured per GPU: ``"total"`` (output tokens/s of the instance, prefill included),
    ``"decode"`` (output tokens/s of the decode batch alone) or ``"prefill"`` (prompt
    tokens/s of the prefill batch alone); ``role`` "fit" or "held-out"."""

    name: str
    scenario: str
    overrides: tuple[str, ...]
    measured: float
    source: str
    known_miss: str
    role: str = "held-out"
    phase: str = "total"

    def value(self, more: tuple[str, ...] = ()) -> float:
        """Tokens/s per GPU of the model at the scenario's medians (``more``: further overrides)."""
        s = load_scenario(self.scenario, (*CALIBRATED_SERVING, *self.overrides, *more))
        body = roofline_summary(s)
        if self.phase == "total":
            return float(body["tokens_per_s_per_gpu"])
        return float(body[self.phase]["tokens_per_s"]) / s.cluster.instance_gpus

    def check(self) -> Check:
        got = self.value()
        detail = f"[{self.role}] error {got / self.measured - 1:+.1%}; {self.source}"
        return Check(STAGE, self.name, self.measured, got, 0.1 * self.measured, detail, self.known_miss, basis="measured")


#: B200 FP4 (half-byte weights select the fp4 precision: the b200's dense fp4 peak, 9,000
#: TFLOP/s; fp8 KV cache), one GPU per engine, no latency limit (the throughput scenario:
#: requests at an unbounded rate).
_FP4_TP1 = (
    "workload.bytes_per_param=0.5",
    "workload.kv_bytes=1",
    "cluster.instance_gpus=1",
    "workload.tensor_parallel=1",
    "workload.pipeline_parallel=1",
    "workload.tpot_slo_ms=1000",
)
_TRT_B200 = ("TensorRT-LLM 0.19.0 perf overview, Llama-3.3-70B FP4 on one B200 (DGX B200), {} in / {} out: {:,.0f} output tok/s "
             "(docs/sources.md#gen-b200-anchors; +-10%)")
_KV_BOUND = ("high, as the H100's fp8 128 in / 2,048 out row (docs/sources.md#roof-calibration): the decode batch (355) is "
             "memory-bound on its KV reads, at the fp8 table's KV-read efficiency, where the engine's measured throughput implies "
             "less; the fp4 compute fit on the 128 in / 128 out row does not reach it")


def _b200_fp4(prompt: int, output: int, measured: float, role: str, known_miss: str) -> ServingAnchor:
    return ServingAnchor(f"B200 FP4 TP1 tok/s, {prompt:,} in / {output:,} out", "b200",
                         (*_FP4_TP1, f"workload.prompt_tokens={prompt}", f"workload.output_tokens={output}"),
                         measured, _TRT_B200.format(prompt, output, measured), known_miss, role)


B200_ANCHORS: tuple[ServingAnchor, ...] = (
    _b200_fp4(128, 128, 11_253.28, "fit", ""),
    _b200_fp4(128, 2048, 9_925.00, "held-out", _KV_BOUND),
)

#: DeepSeek-V3 as SGLang deploys it (docs/sources.md#gen-deepseek-serving): fp8 weights,
#: experts spread over the instance (expert parallel; 64 GPUs: the model's expert-parallel
#: group divides the 256 routed experts, SGLang's 72 with 32 redundant experts does not),
#: data-parallel attention, 2,000-token prompts, 100 output tokens (assumed: the decode
#: context is the prompt's), no latency limit; the phases measured apart (disaggregated).
_DEEPSEEK_EP = (
    'workload.model="deepseek-v3"',
    "workload.bytes_per_param=1",
    "workload.expert_parallel=true",
    "workload.attention='data'",
    "cluster.instance_gpus=64",
    "workload.tensor_parallel=64",
    "workload.pipeline_parallel=1",
    "workload.prompt_tokens=2000",
    "workload.output_tokens=100",
    "workload.tpot_slo_ms=1000",
)
#: H100 FP8 (dense peak 1,979 TFLOP/s), bf16 KV cache (SGLang's H100 deployment).
_DEEPSEEK_H100 = (*_DEEPSEEK_EP, "gpu.peak_tflops=1979", "workload.kv_bytes=2")
#: GB200 NVL72 with bf16 attention (KV) and fp8 MoE, the b200-nvl72 scenario (fp8 peak 4,500 TFLOP/s).
_DEEPSEEK_GB200 = (*_DEEPSEEK_EP, "workload.kv_bytes=2")
_SGLANG_H100 = ("SGLang on 12 nodes of 8 H100 (lmsys.org/blog/2025-05-05-large-scale-ep), DeepSeek-V3 with PD disaggregation and "
                "large-scale EP, 2,000-token inputs: {} tokens/s per node / 8 (docs/sources.md#gen-deepseek-serving; +-10%)")
_SGLANG_GB200 = ("SGLang on GB200 NVL72 (lmsys.org/blog/2025-09-25-gb200-part-2), DeepSeek-V3/R1 with bf16 attention and fp8 MoE, "
                 "PD disaggregation and large-scale EP, 2,000-token inputs: {} tokens/s per GPU (docs/sources.md#gen-deepseek-serving; +-10%)")
_H100_COMM = ("low: the model's expert-parallel all-to-alls of 64 GPUs leave the 8-GPU NVLink domain and run at the 50 GB/s "
              "scale-out rate with no overlap (the calibrated serving model), where SGLang's two-batch overlap and DeepEP hide most "
              "of them; the step is network-bound in the model")
_GB200_DECODE = ("high: the decode batch is compute-bound at the fp8 table's compute efficiency (an H100 fit) on the B200's fp8 "
                 "peak; the measured GB200 decode reaches less of it")

DEEPSEEK_ANCHORS: tuple[ServingAnchor, ...] = (
    ServingAnchor("DeepSeek-V3 H100 EP decode output tok/s per GPU", "h100", _DEEPSEEK_H100, 22_300 / 8,
                  _SGLANG_H100.format("22.3k output"), _H100_COMM, phase="decode"),
    ServingAnchor("DeepSeek-V3 H100 EP prefill input tok/s per GPU", "h100", _DEEPSEEK_H100, 52_300 / 8,
                  _SGLANG_H100.format("52.3k input"), _H100_COMM, phase="prefill"),
    ServingAnchor("DeepSeek-V3 GB200 NVL72 EP decode output tok/s per GPU", "b200-nvl72", _DEEPSEEK_GB200, 9_087.0,
                  _SGLANG_GB200.format("9,087 output"), _GB200_DECODE, phase="decode"),
    ServingAnchor("DeepSeek-V3 GB200 NVL72 EP prefill input tok/s per GPU", "b200-nvl72", _DEEPSEEK_GB200, 18_471.0,
                  _SGLANG_GB200.format("18,471 input"), "", phase="prefill"),
)


def fit_fp4_compute(anchor: ServingAnchor = B200_ANCHORS[0]) -> float:
    """The B200 fp4 compute efficiency at which the model meets ``anchor`` (a root in
    :data:`~mcengine.validation.fit.BOUNDS` by ``scipy.optimize.brentq``; the anchor's
    decode and prefill are compute-bound, so its throughput rises with the efficiency)."""
    return brentq(lambda c: anchor.value((f"workload.compute_efficiency={c!r}",)) / anchor.measured - 1.0, *BOUNDS, xtol=1e-6)


def fp4_fit_check() -> Check:
    """The shipped b200 fp4 compute-efficiency median against :func:`fit_fp4_compute`,
    within :data:`~mcengine.validation.fit.FIT_TOLERANCE`."""
    shipped = dict(load_scenario("b200").workload.efficiency)["fp4"].compute.median()
    fitted = fit_fp4_compute()
    return Check(STAGE, "B200 fp4 compute efficiency (fit)", fitted, shipped, FIT_TOLERANCE,
                 f"configs/b200.toml [workload.efficiency.fp4] median against its fit to {B200_ANCHORS[0].name} "
                 f"(fp8's H100 fit: 0.45); docs/sources.md#gen-b200-anchors")


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
    """DeepSeek-V3's card checks, the B200 fp4 fit, then the measured anchors (each with its role and error)."""
    return [*_deepseek_checks(), fp4_fit_check(), *(a.check() for a in (*B200_ANCHORS, *DEEPSEEK_ANCHORS))]
