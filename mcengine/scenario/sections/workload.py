"""``[workload]``: the model served and how (docs/model.md#roofline).

Model cards are data files in ``configs/models/`` (or an inline ``[workload.model]``
table), validated by :class:`~mcengine.scenario.cards.ModelCard`. Sources: ``docs/sources.md`` (Roofline).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from ...analytic.queue_continuous import REFILL_BIRTHS
from ...analytic.queue_static import STATIC_BUNCH_CYCLES, STATIC_BUNCH_GROWTH, STATIC_GAP_CV2
from ..cards import ModelCard, parse_model
from ..dists import Dist, Fixed
from ...errors import Problem
from ..fields import AUTO, choice, flag, integer, length, number, parse_section
from ..lengths import LengthLaw
from ..limits import MAX_CLASSES
from .training import TrainingSection


_EFF = dict(lo=0.0, lo_open=True, hi=1.0, why="a share of the peak")
_TOKENS = "10^7 tokens is ~100x the longest context; token counts stay exact"
_DEGREE = "at most cluster.instance_gpus (65,536)"
_LATENCY = "a second per collective, hop or step is no longer a serving system"

#: A request class's name becomes part of a dotted key and of column names.
CLASS_NAME_ALLOWED = "allowed: 1 to 32 of a-z 0-9 _, starting with a letter (e.g. chat, code, reasoning)"


@dataclass(frozen=True)
class RequestClass:
    """One ``[workload.classes.NAME]`` table: a kind of request in the served mix
    (docs/model.md#mix). Its lengths replace ``workload.prompt_tokens`` and
    ``workload.output_tokens`` when the planner plans this class's instances."""

    share: Dist = number(
        1.0, "Required. Relative share of the requests in this class; the shares of all classes are normalised to sum to 1 in every "
        "trial (docs/model.md#mix), so 0.6 and 0.4, or 3 and 2, give the same mix.",
        lo=0.0, lo_open=True, hi=1e6, why="a relative weight; 10^6 to 1 is already no mix")
    prompt_tokens: int | float | Dist | LengthLaw = length(
        2048, "Required. Prompt length S of this class's requests: a number (every request's), a dist table (the typical length, "
        "drawn per trial) or a length law (the spread across requests: its mean sets the prefill work, its "
        "workload.kv_length_quantile the KV memory; docs/model.md#lengths).", lo=1, hi=10**7, why=_TOKENS)
    output_tokens: int | float | Dist | LengthLaw = length(
        256, "Required. Generated tokens O of this class's requests (a number, a dist table or a length law, as prompt_tokens: "
        "its mean sets the decode steps per request).", lo=1, hi=10**7, why=_TOKENS)
    tpot_slo_ms: Dist | None = number(
        None, "This class's time-per-output-token SLO; unset: workload.tpot_slo_ms (a class's own SLO overrides the workload's "
        "when its instances are planned, docs/model.md#mix).", "ms", lo=0.0, lo_open=True, hi=1e6, why="1,000 s per token is no SLO at all")
    ttft_slo_ms: Dist | None = number(
        None, 'This class\'s time-to-first-token SLO ("inf" = none); unset: workload.ttft_slo_ms (a class\'s own SLO overrides the '
        "workload's, docs/model.md#mix).", "ms", lo=0.0, lo_open=True, hi=1e7, inf_ok=True,
        why="10^4 s to a first token is no SLO at all: use \"inf\"")
    prefix_hit_rate: Dist | None = number(
        None, "Share of this class's prompt tokens found in the prefix cache; unset: workload.prefix_cache.hit_rate (none without "
        "that table; docs/generation.md#prefix-caching).", lo=0.0, hi=1.0, hi_open=True,
        why="a share; all of a prompt cached leaves nothing to prefill")
    model: ModelCard | None = field(default=None, metadata={
        "help": "The model this class's requests go to (a shipped card name or an inline table; a fleet of models); unset: "
                "workload.model. Its instances are cluster.instance_gpus GPUs like every class's."})

    def overrides(self) -> tuple[str, ...]:
        """The keys of :data:`CLASS_OVERRIDES` this class sets: the workload keys its
        instances read from it (``workload.classes.NAME.KEY``) in place of the workload's."""
        return tuple(k for k in CLASS_OVERRIDES if getattr(self, k) is not None)


#: Workload keys a request class may set for its own instances, overriding the workload's.
CLASS_OVERRIDES = ("tpot_slo_ms", "ttft_slo_ms")


def _class_model(raw, key: str, problems: list[Problem]) -> ModelCard | None:
    """A request class's model card; unset (None) is the scenario's ``workload.model``."""
    return None if raw is None else parse_model(raw, key, problems)


def parse_classes(raw, key: str, problems: list[Problem]) -> tuple[tuple[str, RequestClass], ...] | None:
    """``[workload.classes]``: a table of request-class tables, in file order (none: the
    single request shape of ``workload.prompt_tokens`` / ``output_tokens``)."""
    if raw is None:
        return ()
    if not isinstance(raw, dict) or not raw:
        problems.append(Problem(key, raw, "allowed: a table of request-class tables, e.g. [workload.classes.chat]"))
        return None
    if len(raw) > MAX_CLASSES:
        problems.append(Problem(key, f"{len(raw):,} classes", f"allowed: at most {MAX_CLASSES} request classes (each is planned alone "
                                "in every chunk of trials, so the run time and the wait for a stop grow with them)"))
        return None
    out = []
    for name, body in raw.items():
        if not re.fullmatch(r"[a-z][a-z0-9_]{0,31}", name):
            problems.append(Problem(f"{key}.{name}", name, CLASS_NAME_ALLOWED))
            continue
        if not isinstance(body, dict):
            problems.append(Problem(f"{key}.{name}", body, "allowed: a table with share, prompt_tokens, output_tokens"))
            continue
        missing = [k for k in ("share", "prompt_tokens", "output_tokens") if k not in body]
        if missing:
            problems.append(Problem(f"{key}.{name}.{missing[0]}", None, "required in every request class: share, prompt_tokens, output_tokens"))
            continue
        cls = parse_section(RequestClass, body, f"{key}.{name}.", problems, {"model": _class_model})
        if cls is not None:
            out.append((name, cls))
    return tuple(out)


@dataclass(frozen=True)
class SpeculativeSection:
    """``[workload.speculative]``: speculative decoding (docs/generation.md#speculative).
    A draft (a small model or a multi-token-prediction head) proposes ``k`` tokens per
    sequence, each accepted with probability ``α`` until the first rejection; the target
    verifies all ``k + 1`` positions in one step, reading its weights once, and emits
    ``(1 - α^(k+1)) / (1 - α)`` tokens per sequence on average (Leviathan et al. 2023,
    docs/sources.md#gen-speculative)."""

    draft_tokens: int = integer(0, "Tokens k the draft proposes per sequence and step; 0 = no speculative decoding.",
                                "tokens", lo=0, hi=64, why="acceptance alpha^k makes more than a few dozen drafts useless")
    acceptance: Dist = number(0.7, "Probability alpha that the target accepts a drafted token (EAGLE/Medusa drafts 0.6-0.8; "
                                   "DeepSeek-V3's multi-token-prediction head 0.85-0.9, docs/sources.md#gen-speculative).",
                              lo=0.0, hi=1.0, why="a probability")
    draft_cost: Dist = number(0.05, "Time of one draft step as a share of a target decode step at the same batch (a 1 B draft "
                                    "for a 70 B target ~0.05; a multi-token-prediction head, one extra layer of 61, ~0.02; "
                                    "docs/sources.md#gen-speculative).", lo=0.0, hi=10.0,
                              why="a draft ten times slower than its target is never used")


def optional_table(cls):
    """A parser of an optional sub-table of ``cls`` keys: unset is None (the feature off),
    a non-table a Problem naming the keys it takes."""
    def parse(raw, key: str, problems: list[Problem]):
        if raw is None:
            return None
        if not isinstance(raw, dict):
            problems.append(Problem(key, raw, "allowed: a table with " + ", ".join(f.name for f in dataclasses.fields(cls))))
            return None
        return parse_section(cls, raw, f"{key}.", problems)
    return parse


#: ``[workload.speculative]`` (unset: no speculative decoding).
parse_speculative = optional_table(SpeculativeSection)


@dataclass(frozen=True)
class PrefixCacheSection:
    """``[workload.prefix_cache]``: prefix caching (docs/generation.md#prefix-caching). A
    share ``h`` of every prompt's tokens is found in the cache (a shared system prompt, a
    conversation's earlier turns): the prefill computes only the other ``(1 - h) S`` tokens,
    whose queries still attend to the whole prefix; the cache's blocks are held in a share of
    the HBM left for the KV cache."""

    hit_rate: Dist = number(0.5, "Share h of a prompt's tokens found in the prefix cache (a request class may set its own, "
                                 "workload.classes.NAME.prefix_hit_rate); SGLang reports 0.5-0.9 on multi-turn chat and "
                                 "few-shot workloads (docs/sources.md#gen-prefix-cache).", lo=0.0, hi=1.0, hi_open=True,
                            why="a share; all of a prompt cached leaves nothing to prefill")
    cache_share: Dist = number(0.1, "Share of the HBM left for the KV cache (after the weights) that the prefix cache "
                                    "keeps, no longer available to running sequences (an assumption, docs/sources.md#gen-prefix-cache).",
                               lo=0.0, hi=1.0, hi_open=True, why="a share; all of it leaves no room for a running sequence")


#: ``[workload.prefix_cache]`` (unset: no prefix caching).
parse_prefix_cache = optional_table(PrefixCacheSection)


#: Number formats with an efficiency table of their own (``[workload.efficiency.NAME]``).
PRECISIONS = ("bf16", "fp8", "fp4")
#: The efficiencies a precision's table gives, by the old ``workload.KIND_efficiency`` key.
EFFICIENCY_KINDS = ("compute", "memory", "kv")


@dataclass(frozen=True)
class EfficiencyTable:
    """One ``[workload.efficiency.PRECISION]`` table: the achieved shares of the peaks an
    engine computing in that number format reaches, fitted to that precision's measured
    anchors (docs/sources.md#roof-calibration; ``mcengine validate`` refits them)."""

    compute: Dist = number(0.59, "Achieved share of the peak FLOP/s (gpu.peak_tflops) at this precision; default: the fit, "
                                 "bf16 0.59, fp8 0.45 (configs/h100.toml gives the shipped ranges).", **_EFF)
    memory: Dist = number(0.85, "Achieved share of the HBM bandwidth at this precision; default: the fit, bf16 0.85, fp8 0.62.", **_EFF)
    kv: Dist | None = number(None, "Achieved share of the HBM bandwidth a decode step reads its KV cache at (paged attention "
                                   "reads, in-flight chunks), beside memory for the weights; default: the fit, bf16 0.34, "
                                   "fp8 0.53; unset = this table's memory (docs/model.md#kv-read).", **_EFF)


#: The medians of the shipped tables (configs/h100.toml gives their ranges; docs/sources.md#roof-calibration):
#: the fits to each precision's fit anchors.
DEFAULT_EFFICIENCY = (
    ("bf16", EfficiencyTable(kv=Fixed(0.34))),
    ("fp8", EfficiencyTable(compute=Fixed(0.45), memory=Fixed(0.62), kv=Fixed(0.53))),
    ("fp4", EfficiencyTable(compute=Fixed(0.45), memory=Fixed(0.62), kv=Fixed(0.53))),  # no fp4 anchor: fp8's fit (docs/sources.md#roof-calibration)
)


def parse_efficiency(raw, key: str, problems: list[Problem]) -> tuple[tuple[str, EfficiencyTable], ...] | None:
    """``[workload.efficiency]``: one table per precision of :data:`PRECISIONS`; a precision
    or key left out keeps its default of :data:`DEFAULT_EFFICIENCY`."""
    if raw is None:
        return DEFAULT_EFFICIENCY
    if not isinstance(raw, dict):
        problems.append(Problem(key, raw, "allowed: a table of precision tables, e.g. [workload.efficiency.bf16]"))
        return None
    out, before = dict(DEFAULT_EFFICIENCY), len(problems)
    for name, body in raw.items():
        if name not in PRECISIONS:
            problems.append(Problem(f"{key}.{name}", body, "allowed precisions: " + ", ".join(PRECISIONS)))
            continue
        table = parse_section(EfficiencyTable, body, f"{key}.{name}.", problems)
        if table is not None:
            out[name] = dataclasses.replace(out[name], **{k: getattr(table, k) for k in body})
    return None if len(problems) > before else tuple((name, out[name]) for name in PRECISIONS)


#: ``workload.load.demand``'s word for the old world: every instance runs its largest batch forever.
SATURATE = "saturate"
#: Arrival processes of ``workload.load.arrival``.
ARRIVALS = ("poisson", "gamma")
_CV = dict(lo=0.0, hi=10.0, why="a coefficient of variation of 10 is burstier than any published serving trace (BLIS: 3)")


@dataclass(frozen=True)
class LoadSection:
    """``[workload.load]``: the demand the cluster serves and how its requests arrive
    (docs/load.md; the queueing model :mod:`mcengine.analytic.queueing`)."""

    demand: Dist | str = number(
        SATURATE, 'The cluster\'s mean offered load in output tokens/s, or "saturate": every instance runs its largest feasible batch '
        "forever and latencies are unloaded step times (the upper-bound world, the default). A request class of a mix takes its share "
        "of it (docs/load.md).", "tokens/s", lo=0.0, lo_open=True, hi=1e12, auto_ok=True, auto_word=SATURATE,
        why="10^12 tokens/s is ~10^6 times the shipped clusters' capacity")
    peak_to_mean: Dist = number(
        1.0, "Peak over mean of the diurnal demand: D(t) = demand x (1 + (peak_to_mean - 1) sin(2 pi t / 24 h)), a sinusoid "
        "(1 = flat; docs/load.md#diurnal, docs/sources.md#load-diurnal).", lo=1.0, hi=2.0,
        why="the sinusoid's trough, demand x (2 - peak_to_mean), stays at or above zero")
    arrival: str = choice(
        "poisson", 'Request arrival process: "poisson" (arrival CV 1) or "gamma" renewal arrivals with workload.load.arrival_cv '
        "(bursty traffic; BLIS, docs/sources.md#load-arrivals).", ARRIVALS)
    arrival_cv: Dist = number(
        2.0, 'Coefficient of variation of the gaps between requests with arrival = "gamma" (ignored for "poisson", whose CV is 1); '
        "BLIS measures at CV 3 (docs/sources.md#load-arrivals).", **_CV)
    service_cv: Dist = number(
        1.0, "Coefficient of variation of the time a request holds a batch slot (its prefill and decode), the service CV of the "
        "slot queue's G/G/c reading (docs/load.md#queue; 1 = exponential, the M/M/c reading). No model of the chain reads it: "
        "every plan's latency under load, a mix's classes included, is its serving mode's model, whose holding times are the "
        "plan's step times; the key is kept so that scenarios setting it still load, but is no input: never drawn, not a "
        "sensitivity factor, and mcengine check warns where it is set.", read=False, **_CV)
    length_cv: Dist = number(
        0.0, "Coefficient of variation of the prompt and output lengths across the requests mcengine serve simulates: each drawn "
        "from a gamma law with the workload's mean prompt_tokens / output_tokens, rounded to whole tokens (0 = every request "
        "the same length; the Azure 2023 traces spread 0.77-2.1, docs/sources.md#load-length-spread). The KV cache and its "
        "preemptions see the spread, and so does the trial chain's load model in every serving mode: the prompts' spread in the "
        "prefill queues' wait and a request's own prompt at the SLO quantile, the outputs' in a static batch's longest member "
        "(docs/load.md#length-spread). Not with a length law on prompt_tokens or output_tokens (the law's own spread): "
        "mcengine check refuses both.", lo=0.0, hi=3.0,
        why="above the widest spread of the Azure 2023 traces (2.1, code outputs)")
    static_gap_cv2: Dist = number(
        STATIC_GAP_CV2, "Static batching under a demand: the squared coefficient of variation of the gaps between batch completions "
        "a waiting request sees once every instance is busy (instances bunch: one that takes a small batch catches up with the one "
        "ahead). Measured against the request-level simulator, whose gaps have 0.9-2.9 over the validation grid; 2 fits most of "
        "its cells (docs/load.md#static, docs/sources.md#load-queueing).", lo=0.0, hi=10.0,
        why="over three times the largest the simulator shows (2.9)")
    static_bunch_cycles: Dist = number(
        STATIC_BUNCH_CYCLES, "Static batching under a demand: the wait a bunched pool adds to a waiting request's, in batch cycles "
        "per unit of the share of batches an idle instance starts (an idle instance restarts at the next arrival, nearer the one "
        "ahead). The simulator's excess over the unbunched wait is 0.04-0.07 cycles whatever the pool (8-32 instances); 0.1 "
        "fits the grid's light-to-mid loads (docs/load.md#static-cycles, docs/sources.md#load-queueing).", lo=0.0, hi=1.0,
        why="a whole cycle a unit share: over ten times the largest excess the simulator shows (0.07)")
    static_bunch_growth: Dist = number(
        STATIC_BUNCH_GROWTH, "Static batching under a demand: the seconds of cycle a second of gap adds (the cycle's slope in the "
        "batch times the request rate) up to which a bunch keeps its cycle excess (static_bunch_cycles) whole; past it that "
        "value over the growth (docs/load.md#static-cycles).", lo=0.0, hi=100.0,
        why="a cycle that grows a hundred seconds a second of gap")
    refill_births: Dist = number(
        REFILL_BIRTHS, "Continuous batching under a demand: the share of an instance's admissions that are births (the pool's "
        "arrivals) rather than refills of a request that left it, as the refills' smoothing of the prefill stream's admissions "
        "reads it (their squared CV beta / (beta + (1 - beta) u^2) at the stream's utilisation u): the mean TTFT's second-prompt "
        "term, and the TTFT quantile under a length spread. 0.24 gives the simulator's settled admission gaps' squared CV at "
        "Poisson loads 0.7-0.9 on both designs (0.18-0.31); births counted directly are 0.13-0.22 (docs/load.md#refill, "
        "docs/sources.md#load-queueing).", lo=0.0, lo_open=True, hi=1.0,
        why="a share of the admissions; at 1 every admission is a birth, the pool's Poisson arrivals unsmoothed")


def parse_load(raw, key: str, problems: list[Problem]) -> LoadSection | None:
    """``[workload.load]``; absent: the defaults (``demand = "saturate"``)."""
    return LoadSection() if raw is None else parse_section(LoadSection, raw, f"{key}.", problems)


@dataclass(frozen=True)
class WorkloadSection:
    model: ModelCard = field(default=None, metadata={"help": "Shipped model card name or inline table."})
    kind: str = choice(
        "inference",
        'What the cluster runs: "inference" (serving, docs/model.md#roofline) or "training" (one synchronous job of '
        "[workload.training] on workload.model, with its interruptions and checkpoints: docs/training.md).",
        ("inference", "training"),
    )
    bytes_per_param: Dist = number(2.0, "Bytes per weight (bf16 2, fp8 1).", "bytes", lo=0.0, lo_open=True, hi=8.0, uncertain=False, why="fp64 is 8 bytes")
    kv_bytes: Dist = number(2.0, "Bytes per KV-cache element.", "bytes", lo=0.0, lo_open=True, hi=8.0, uncertain=False, why="fp64 is 8 bytes")
    prompt_tokens: int | float | Dist | LengthLaw = length(
        2048, "Prompt length S: a number (every request's), a dist table (the typical length, uncertain: drawn per trial) or a "
        'length law, the spread across requests ({law = "lognormal", median, sigma} or {law = "empirical", quantiles, tokens}): '
        "its mean sets the prefill work, its workload.kv_length_quantile the KV memory (docs/model.md#lengths).", lo=1, hi=10**7, why=_TOKENS)
    output_tokens: int | float | Dist | LengthLaw = length(
        256, "Generated tokens O per request (a number, a dist table or a length law, as prompt_tokens): the mean sets the "
        "decode steps per request, the quantile workload.kv_length_quantile the KV memory.", lo=1, hi=10**7, why=_TOKENS)
    kv_length_quantile: Dist = number(
        0.99, "With a length law: the quantile of a request's context (prompt and output at this quantile of their laws) that "
        "the KV cache of every sequence in a batch is sized for (docs/model.md#lengths, docs/sources.md#mix-length-spread); "
        "a request longer than it waits or is preempted, which the p99 latency SLOs the batch is planned for leave aside.",
        lo=0.5, hi=1.0, hi_open=True, why="a high quantile; 1 is the longest request, unbounded under a lognormal law")
    tpot_slo_ms: Dist = number(50.0, "Time-per-output-token SLO that caps the batch.", "ms", lo=0.0, lo_open=True, hi=1e6,
                               why="1,000 s per token is no SLO at all")
    ttft_slo_ms: Dist = number(
        float("inf"), 'Time-to-first-token SLO (static batching: the whole batch\'s prefill, docs/sources.md#roof-slo); "inf" = none.',
        "ms", lo=0.0, lo_open=True, hi=1e7, inf_ok=True, why="10^4 s to a first token is no SLO at all: use \"inf\"")
    serving: str = choice(
        "static",
        'How requests share an instance (docs/model.md#serving): "static" batches (B prompts prefilled together, then O '
        'decode steps), "continuous" batching with chunked prefill (vLLM, Sarathi-Serve), "disaggregated" prefill and decode '
        'instances (Splitwise, DistServe), or "auto": the mode with the most output tokens/s per GPU under the SLOs.',
        ("static", "continuous", "disaggregated", "auto"),
    )
    plan: str = choice(
        "per_trial",
        'When the operator chooses the plan (serving mode x layout x attention x all-reduce, batch within; docs/model.md#plan): '
        '"per_trial" = in every trial, for that trial\'s inputs and SLOs, the best plan by workload.plan_objective (least cost per token) '
        '(an operator tunes the plan to the hardware it got); "median" = one plan chosen at the median inputs serves every trial; '
        '"quantile" = one plan chosen at pessimistic inputs (each at workload.plan_quantile on its side that lowers throughput) '
        "serves every trial, a plan provisioned in advance.",
        ("per_trial", "median", "quantile"),
    )
    plan_objective: str = choice(
        "cost",
        'What the planner maximises (docs/model.md#plan): in each trial (workload.plan = "per_trial"), at the pessimistic inputs '
        '("quantile"), and in the plans chosen at the median (mcengine roofline, the reshard table); "median" keeps its own rule. '
        '"cost" = tokens per dollar, the least cost per output token (a trial\'s plans share its capex, repairs and idle power and '
        'differ in tokens/s and dynamic power), so better hardware never costs more per token; "throughput" = the most output '
        "tokens/s of the instance, whatever the power it draws.",
        ("cost", "throughput"),
    )
    plan_quantile: Dist = number(
        0.1, 'With workload.plan = "quantile": the quantile at which every uncertain roofline input is taken, on its pessimistic '
        "side (low efficiencies, bandwidths and SLOs; high latencies and overheads), to choose the one plan.",
        lo=0.0, lo_open=True, hi=0.5, uncertain=False, why="a quantile on the pessimistic side; 0.5 is the median",
    )
    prefill_chunk_tokens: int = integer(
        8192, "Prompt tokens an engine step may prefill (vLLM's max_num_batched_tokens on H100, "
        "docs/sources.md#serve-chunked-prefill). Continuous serving: a batch needing more per step (B S/O) is infeasible; "
        "disaggregated: a prefill pass batches at most budget // S prompts (at least one).", "tokens", lo=1, hi=10**7, why=_TOKENS,
    )
    batch: int | str = integer(AUTO, 'Concurrent sequences per instance; "auto" = largest that fits HBM and the SLO.', lo=1, hi=10**7, auto_ok=True,
                               why="KV-cache bytes of a batch stay far inside int64")
    tensor_parallel: int | str = integer(AUTO, 'Tensor-parallel degree t; "auto" searches the layouts.', lo=1, hi=2**16, auto_ok=True, why=_DEGREE)
    pipeline_parallel: int | str = integer(AUTO, 'Pipeline stages p; "auto" searches the layouts.', lo=1, hi=2**16, auto_ok=True, why=_DEGREE)
    expert_parallel: bool = flag(
        False,
        "MoE only: each tensor-parallel rank holds experts/t whole experts and tokens move by a dispatch and a "
        "combine all-to-all per layer (GenZ, llm-analysis: docs/sources.md#roof-moe) instead of sharding every expert.",
    )
    moe_imbalance: Dist | None = number(
        None, "Expert parallelism: the hottest expert's routed load over the mean (1 = uniform routing): the busiest rank "
        "computes and moves that many times the mean (docs/generation.md#moe). An assumed range 1 (a perfect balancer) to "
        "~4 (small unbalanced batches), no public measurement of it (docs/sources.md#gen-moe-imbalance); unset: 1.",
        lo=1.0, hi=64.0, why="at most every token of a batch on one expert of 64", )
    allreduce: str = choice(
        "ring",
        'All-reduce algorithm: ring, tree, one_shot, two_shot (switched fabrics only) or "auto" = the fastest the fabric '
        "allows for each message (docs/sources.md#roof-allreduce-algorithms).",
        ("ring", "tree", "one_shot", "two_shot", AUTO),
    )
    attention: str = choice(
        "tensor",
        'Attention "tensor" (heads sharded, KV heads replicated above t = n_kv), "data" (sequences sharded, attention '
        'weights replicated, MLP tensor-parallel), "grouped" (sequences sharded over g groups of t/g ranks that shard the heads, '
        'g searched with the layouts) or "auto" = all searched with the layouts (docs/sources.md#roof-attention-dp).',
        ("tensor", "data", "grouped", AUTO),
    )
    comm_overlap: Dist = number(0.0, "Share of collective time hidden under compute/memory time (0 = in series; docs/sources.md#roof-overlap).",
                                lo=0.0, hi=1.0, why="a share")
    precision: str = choice(
        AUTO,
        'Number format the engine computes and streams weights in, which picks the efficiency table '
        '(workload.efficiency.PRECISION) and the dense peak (gpu.peak_tflops.PRECISION): "bf16", "fp8", "fp4", or "auto" = '
        '"fp4" when workload.bytes_per_param <= 0.5, "fp8" when <= 1, else "bf16" (docs/model.md#precision).',
        (AUTO, *PRECISIONS),
    )
    efficiency: tuple = field(default=DEFAULT_EFFICIENCY, metadata={
        "help": "Efficiencies per precision, one [workload.efficiency.PRECISION] table each (compute, memory), fitted to "
                "that precision's measured anchors (docs/sources.md#roof-calibration)."})
    compute_efficiency: Dist | str = number(
        AUTO, 'Achieved share of peak FLOP/s; "auto" = workload.efficiency.PRECISION.compute of the precision in use '
        "(a number or dist table here wins over the table).", auto_ok=True, **_EFF)
    memory_efficiency: Dist | str = number(
        AUTO, 'Achieved share of HBM bandwidth; "auto" = workload.efficiency.PRECISION.memory of the precision in use '
        "(a number or dist table here wins over the table).", auto_ok=True, **_EFF)
    kv_efficiency: Dist | str = number(
        AUTO, 'Achieved share of HBM bandwidth reading the KV cache in decode; "auto" = workload.efficiency.PRECISION.kv of '
        "the precision in use, or the memory efficiency in use where that is unset or workload.memory_efficiency is set "
        "(docs/model.md#kv-read).", auto_ok=True, **_EFF)
    link_efficiency: Dist = number(0.8, "Achieved share of link bandwidth in ring all-reduce (~370 of 450 GB/s).", **_EFF)
    collective_start_us: Dist = number(5.0, "Fixed start-up latency per collective (with allreduce_impl = \"nccl\": of every collective but the all-reduce).",
                                       "us", lo=0.0, hi=1e6, why=_LATENCY)
    allreduce_impl: str = choice(
        "custom",
        'All-reduce implementation: "custom" (an engine\'s one-/two-shot kernel in a CUDA graph, starting after collective_start_us) '
        'or "nccl" (eager NCCL calls, starting after nccl_start_us, measured; docs/sources.md#roof-collective-measured).',
        ("custom", "nccl"),
    )
    nccl_start_us: Dist = number(31.0, "Start-up latency of an eager NCCL all-reduce (allreduce_impl = \"nccl\"; H100 DGX, 4-8 ranks, measured 22-42 us).",
                                 "us", lo=0.0, hi=1e6, why=_LATENCY)
    hop_latency_us: Dist = number(1.0, "Latency per ring hop; a ring all-reduce makes 2(t-1) hops.", "us", lo=0.0, hi=1e6, why=_LATENCY)
    scale_out_hop_us: Dist = number(4.0, "Latency per hop between scale-up domains (the scale-out network; docs/sources.md#roof-scale-up-domain).", "us", lo=0.0, hi=1e6, why=_LATENCY)
    step_overhead_ms: Dist = number(0.5, "Fixed per-step overhead (scheduling, kernel launches).", "ms", lo=0.0, hi=1e3, why=_LATENCY)
    layer_overhead_us: Dist = number(0.0, "Extra per-layer per-step overhead (one simulator uses 20 us).", "us", lo=0.0, hi=1e6, why=_LATENCY)
    hbm_usable_fraction: Dist = number(0.9, "Share of HBM available for weights + KV cache.", lo=0.0, lo_open=True, hi=1.0, why="a share")
    class_instances: str = choice(
        "continuous",
        'How the cluster\'s instances are split among request classes (docs/model.md#mix, docs/sources.md#mix-split): '
        '"continuous" = in proportion to '
        "the instance time each class's demand needs, as a real share (a router moves instances between classes as load "
        'shifts, so the split is right on average); "whole" = each class gets a whole number of the cluster.instances '
        "instances, at least one, chosen to serve the most of the mix, and the rate the rounding loses is reported per class "
        "(mix.NAME.instances, mix.NAME.idle_share).",
        ("continuous", "whole"),
    )
    slo_quantile: Dist = number(
        0.99, "With a demand (workload.load.demand): the quantile of a request's TTFT and TPOT the SLOs hold at (docs/load.md; "
        "Vidur plans at TTFT P90 and TBT P99, docs/sources.md#load-arrivals).", lo=0.5, hi=1.0, hi_open=True,
        why="a high quantile; 1 is the worst request, unbounded under any arrival law")
    load: LoadSection = field(default=LoadSection(), metadata={
        "help": 'The demand and its arrivals, one [workload.load] table (demand, peak_to_mean, arrival, arrival_cv, service_cv, length_cv, static_gap_cv2, static_bunch_cycles, static_bunch_growth, refill_births; '
                'docs/load.md); absent: demand = "saturate".'})
    prefix_cache: PrefixCacheSection | None = field(default=None, metadata={
        "help": "Prefix caching, a [workload.prefix_cache] table (hit_rate, cache_share; docs/generation.md#prefix-caching); "
                "unset: none (a request class's prefix_hit_rate turns it on for that class)."})
    speculative: SpeculativeSection | None = field(default=None, metadata={
        "help": "Speculative decoding, a [workload.speculative] table (draft_tokens, acceptance, draft_cost; "
                "docs/generation.md#speculative); unset: none."})
    training: TrainingSection = field(default=TrainingSection(), metadata={
        "help": 'The training job of workload.kind = "training", one [workload.training] table (docs/training.md).'})
    classes: tuple = field(default=(), metadata={"help": "Request classes of the served mix, one [workload.classes.NAME] table each "
                                                          "(share, prompt_tokens, output_tokens; docs/model.md#mix); none: every "
                                                          "request is workload.prompt_tokens / output_tokens."})

    def precision_in_use(self) -> str:
        """``workload.precision``, "auto" resolved: fp4 for weights of at most half a byte,
        fp8 for at most one byte, else bf16."""
        if self.precision != AUTO:
            return self.precision
        size = self.bytes_per_param.median()
        return "fp4" if size <= 0.5 else "fp8" if size <= 1.0 else "bf16"

    def efficiency_of(self, kind: str) -> Dist | None:
        """The efficiency ``kind`` (of :data:`EFFICIENCY_KINDS`) in use: ``workload.KIND_efficiency``
        when set, else the precision table's; None for a KV-read efficiency that follows the
        memory efficiency in use (the same draw in every trial): the table has none, or
        ``workload.memory_efficiency`` is set while ``kv_efficiency`` is not (a file that sets
        the old key keeps its numbers: its KV cache is read at that efficiency)."""
        explicit = getattr(self, f"{kind}_efficiency")
        if not isinstance(explicit, str):
            return explicit
        if kind == "kv" and not isinstance(self.memory_efficiency, str):
            return None
        return getattr(dict(self.efficiency)[self.precision_in_use()], kind)
