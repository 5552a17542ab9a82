"""Claim 5, performance: with the same aggregate resources a Lite-GPU cluster falls
short on LLM inference, while one with ~2x the bandwidth-to-compute ratio matches or
beats the H100 cluster (Llama-3-70B, GPT-3-175B, Llama-3.1-405B).

Figures per model, paired over trials: output tokens/s per H100-equivalent of the Lite
cluster over that of the H100 cluster (roofline stage, per instance, at each trial's
efficiencies and latencies), and the cost per million output tokens ratio (full chain).
The claim holds in a trial when the 2x-link Lite cluster reaches the H100's throughput
per H100-equivalent (ratio >= 1); the shipped side also reports the shoreline-derived
quarter die (``lite-h100-shoreline``: HBM stacks and links from its perimeter,
docs/model.md#derive), mcengine's sourced version of "more bandwidth per FLOP". The
sweep moves the Lite-GPU's HBM bandwidth, the input that decides decode throughput
(docs/case-study.md#what-decides-it), with its HBM capacity moving with it as stacks do (20 GB per
0.84 TB/s: one to two HBM3 stacks, the shoreline design's two).

The same paired run feeds claims 3 and 4 (:func:`designs_run`).
"""

from __future__ import annotations

import math

import numpy as np

from ._common import Settings, boundary, chain, paired_ratio, entry, interval, scenario, shared_chain, variant

PAPER_FIGURE = 1.0
#: The models of the paper's case study (shipped cards).
MODELS = ("llama-3-70b", "gpt-3-175b", "llama-3.1-405b")
#: H100, the plain Lite, the paper's 2x-link Lite, then mcengine's sourced version of "more
#: bandwidth per FLOP": the quarter die whose HBM stacks and links follow its shoreline.
SHIPPED = ("h100", "lite-h100", "lite-h100-2x", "lite-h100-shoreline")
PAPER = ("paper-h100", "paper-lite-h100", "paper-lite-h100-2x")
SWEEP_MODEL = "llama-3-70b"
SWEEP_KEY = "gpu.hbm_tbps"
#: The capacity that moves with the bandwidth in the sweep: GB per TB/s of one Lite stack (20 / 0.84).
CAPACITY_KEY = "gpu.hbm_gb"
GB_PER_TBPS = 20.0 / 0.84
SWEEP_VALUES = (0.84, 0.95, 1.05, 1.15, 1.3, 1.5, 1.68)  # TB/s: 1 to 2 stacks


def instance_h100s(model: str) -> int:
    """H100s per instance of ``model``: its weights rounded up to whole H100 hosts
    (:func:`mcengine.paper.fleet.need_of` on the shipped h100; 8 for 70B and 175B, 16 for 405B)."""
    from .fleet import need_of

    h100 = scenario("h100")
    host = h100.cluster.gpus_per_host
    return -(-math.ceil(need_of(h100, model)) // host) * host


def on_model(base, model: str) -> object:
    """``base`` serving ``model`` on instances of :func:`instance_h100s` H100s of silicon,
    the cluster keeping the shipped h100 cluster's silicon (128 x 8 H100s)."""
    h100s = instance_h100s(model)
    cluster_h100s = scenario("h100").active_gpus
    gpus = h100s * round(1 / base.gpu.h100_equivalents.value)
    return variant(base, f"{base.name}.{model}", [f'workload.model="{model}"', f"cluster.instance_gpus={gpus}",
                                                    f"cluster.instances={cluster_h100s // h100s}"])


def designs_run(settings: Settings) -> dict[str, dict[str, np.ndarray]]:
    """One paired chain run of every design (shipped and paper) on every model."""
    bases = [scenario(r) for r in SHIPPED + PAPER]
    return shared_chain("designs", [on_model(b, m) for m in MODELS for b in bases], settings)


def ratios(cols: dict, a: str, b: str) -> dict[str, np.ndarray]:
    """Paired ratios B/A of throughput per H100-equivalent and of cost per Mtok."""
    ca, cb = cols[a], cols[b]
    return {"throughput": paired_ratio(cb["tokens_per_s_per_h100_equivalent"], ca["tokens_per_s_per_h100_equivalent"]),
            "cost": paired_ratio(cb["cost_per_mtok_usd"], ca["cost_per_mtok_usd"])}


def _side(cols: dict, names: tuple[str, ...]) -> dict:
    """``names``: the H100, the plain Lite, the 2x-link Lite (the claim's), then any other
    Lite design reported beside them (``p_holds_by_design``, ``p_cheaper_by_design``)."""
    out = {"scenarios": list(names), "models": {}}
    h100, plain, wide, *others = names
    for m in MODELS:
        r = {n: ratios(cols, f"{h100}.{m}", f"{n}.{m}") for n in names[1:]}
        out["models"][m] = {
            "throughput_per_h100e_ratio": {n: interval(v["throughput"]) for n, v in r.items()},
            "cost_per_mtok_ratio": {n: interval(v["cost"]) for n, v in r.items()},
            "cost_per_mtok_usd": {n: interval(cols[f"{n}.{m}"]["cost_per_mtok_usd"]) for n in names},
            "slo_met": {n: float(np.mean(cols[f"{n}.{m}"]["slo_met"])) for n in names},
            "p_holds": float(np.mean(r[wide]["throughput"] >= PAPER_FIGURE)),
            "p_plain_short": float(np.mean(r[plain]["throughput"] < PAPER_FIGURE)),
            "p_cheaper": float(np.mean(r[wide]["cost"] < 1.0)),
            "p_holds_by_design": {n: float(np.mean(r[n]["throughput"] >= PAPER_FIGURE)) for n in (wide, *others)},
            "p_cheaper_by_design": {n: float(np.mean(r[n]["cost"] < 1.0)) for n in (wide, *others)},
        }
    first = out["models"][next(iter(MODELS))]
    out["figure"] = first["throughput_per_h100e_ratio"][wide]
    out["text"] = "; ".join(f"{m}: {_model_text(r, plain, wide, others)}" for m, r in out["models"].items())
    return out


def _model_text(r: dict, plain: str, wide: str, others: list[str]) -> str:
    """One model's figures: the 2x-link Lite's ratios (the plain one's throughput), then each other design's."""
    t, c = r["throughput_per_h100e_ratio"], r["cost_per_mtok_ratio"]
    text = f"{t[wide]['median']:.2f}x tok/s/H100e (plain {t[plain]['median']:.2f}x), cost {c[wide]['median']:.2f}x"
    return text + "".join(f"; {n.removeprefix('lite-h100-')} {t[n]['median']:.2f}x, cost {c[n]['median']:.2f}x" for n in others)


def _derived_holds(side: dict) -> str:
    """Where each design beyond the paper's reaches the H100 (P(holds) >= 0.5), by model."""
    out = ""
    for n in side["scenarios"][3:]:
        reach = [m for m, r in side["models"].items() if r["p_holds_by_design"][n] >= 0.5]
        out += f"; {n} (HBM and links from its perimeter) reaches H100 on " + (", ".join(reach) if reach else "no model")
    return out


def compute(settings: Settings) -> dict:
    settings.note("claim 5: performance (three models)")
    cols = designs_run(settings)
    p, s = _side(cols, PAPER), _side(cols, SHIPPED)
    h100, wide = (on_model(scenario(r), SWEEP_MODEL) for r in ("h100", "lite-h100-2x"))
    values = settings.grid(SWEEP_VALUES)
    runs = [variant(wide, f"{wide.name}.hbm-{v:g}", [f"{SWEEP_KEY}={v!r}", f"{CAPACITY_KEY}={GB_PER_TBPS * v!r}"]) for v in values]
    swept = chain([h100, *runs], settings)
    figures = [ratios(swept, h100.name, r.name)["throughput"] for r in runs]
    b = boundary(f"B:{SWEEP_KEY}", values, figures, lambda f: f >= PAPER_FIGURE, lambda f: f >= PAPER_FIGURE,
                 f"shipped h100 vs lite-h100-2x on {SWEEP_MODEL}, the Lite-GPU's HBM bandwidth (TB/s) at each value and its "
                 f"capacity with it ({GB_PER_TBPS:.1f} GB per TB/s, as HBM3 stacks)",
                 figure=(f"tokens/s per H100-equivalent, lite-h100-2x / h100 on {SWEEP_MODEL}", "ratio"),
                 key_axis=(f"Lite-GPU HBM bandwidth (TB/s), capacity {GB_PER_TBPS:.1f} GB per TB/s with it\n"
                           f"B:{SWEEP_KEY} and B:{CAPACITY_KEY} (1 to 2 HBM3 stacks)"))
    cross = b["crossing_holds"]
    holds = (f"Lite-GPU HBM >= {cross[0]:.2f} TB/s with {GB_PER_TBPS * cross[0]:.0f} GB (0.84 TB/s, 20 GB = a quarter of H100's) on {SWEEP_MODEL}" if cross
             else f"2x links: not over Lite HBM {values[0]:g}-{values[-1]:g} TB/s on {SWEEP_MODEL}")
    holds += _derived_holds(s)
    return entry(
        number=5, key="performance",
        claim="Same aggregate resources fall short; ~2x bandwidth-to-compute matches or beats H100 (Llama-3-70B, GPT-3-175B, Llama-3-405B)",
        metric="tokens/s per H100-equivalent, Lite 2x-link / H100 (first model; every model under 'models')",
        paper_figure=PAPER_FIGURE, paper_figure_text=">= 1x H100 with 2x bandwidth (qualitative)",
        source="the paper's abstract and case study as reported by Import AI #397 (docs/sources.md#paper-lite-gpu)", confirmed=True,
        unit="ratio", paper_assumptions=p, shipped=s, boundary_=b, holds_when=holds,
        model=("roofline, shipped serving (docs/model.md#serving): each design takes the best of static, continuous (chunked "
               "prefill) and disaggregated serving (serving = auto), the all-reduce algorithm by message size (allreduce = auto), "
               "data-parallel attention searched with the layouts (attention = auto); layout and batch chosen at the median "
               "inputs under the 50 ms TPOT and 2 s TTFT SLOs"),
    )
