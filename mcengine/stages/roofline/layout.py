"""Roofline stage internals: per-trial rates, one layout's evaluation, the layouts that exist.

A layout is ``tensor x pipeline`` GPUs with ``tensor x pipeline = cluster.instance_gpus``,
an attention mode and an all-reduce algorithm. ``"auto"`` degrees make every such
layout that an engine can shard a candidate (``tensor`` divides the query heads; KV heads
divide evenly or replicate: ``n_kv % t == 0`` or ``t % n_kv == 0``, a constraint that
data-parallel attention lifts; with expert parallelism ``tensor`` divides the experts;
``pipeline`` at most the layers), times the attention modes of ``workload.attention``
(``"auto"``: heads sharded, data-parallel, and grouped data-parallel with every
number of groups :func:`attention_variants` allows), with ``workload.allreduce`` (``"auto"``:
the fastest algorithm the fabric ``cluster.scale_up`` allows, per message).

This module evaluates (:func:`evaluate`: batch limits, phase times and tokens/s of one
layout under static batching) and lists the candidates (:func:`candidate_layouts`, and
:func:`degraded_layouts` for instances short of GPUs); it chooses nothing. The choice is
the planner's (:mod:`.planner`; the median rule of ``workload.plan = "median"`` in
:mod:`.median_plan`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ...analytic import fabric as fb
from ...analytic import lengths as al
from ...analytic.roofline import model as rm, weights as rw, steps as rt, limits as rl
from ...errors import InputError, Problem
from ...scenario import Dist, Scenario
from ...scenario.fabric import scale_out
from ...scenario.lengths import EmpiricalLength, LognormalLength
from ...scenario.sampling import TrialInputs
from ...units import MS_PER_S


def rates_of(scenario: Scenario, inputs: TrialInputs) -> rm.Rates:
    """Effective per-device rates of every trial (``F = peak x dvfs_scale x compute_efficiency`` ...);
    with ``workload.allreduce_impl = "nccl"`` the all-reduce starts after
    ``workload.nccl_start_us``, every other collective after ``workload.collective_start_us``;
    ``[workload.speculative]`` sets the decoding scheme (docs/generation.md#speculative),
    ``[workload.prefix_cache]`` the prefill's cached share (docs/generation.md#prefix-caching).
    With the switched fabric (``econ.fabric_model = "fat_tree"``, docs/model.md#fabric) a
    scale-out hop crosses the tiers' packet switches, ``workload.scale_out_hop_us`` for the
    first and ``econ.switch_latency_us`` for each other one
    (:func:`mcengine.analytic.fabric.switch_traversals`)."""
    w = scenario.workload
    scale_out_hop_us = inputs["workload.scale_out_hop_us"]
    if scenario.econ.fabric_model == "fat_tree":  # fabric hops (issue #46): the tiers lengthen every scale-out hop
        tiers = scale_out(scenario).tiers
        scale_out_hop_us = scale_out_hop_us + (fb.switch_traversals(tiers, scenario.econ.top_tier == "ocs") - 1) * inputs["econ.switch_latency_us"]
    return rm.Rates.from_peaks(
        peak_tflops=inputs["gpu.peak_tflops"] * inputs["gpu.dvfs_scale"],
        hbm_tbps=inputs["gpu.hbm_tbps"],
        link_gbps=inputs["gpu.link_gbps"],
        compute_efficiency=inputs["workload.compute_efficiency"],
        memory_efficiency=inputs["workload.memory_efficiency"],
        link_efficiency=inputs["workload.link_efficiency"],
        collective_start_us=inputs["workload.collective_start_us"],
        hop_latency_us=inputs["workload.hop_latency_us"],
        step_overhead_ms=inputs["workload.step_overhead_ms"],
        layer_overhead_us=inputs["workload.layer_overhead_us"],
        bytes_per_param=w.bytes_per_param.value,
        kv_bytes=w.kv_bytes.value,
        comm_overlap=inputs["workload.comm_overlap"],
        scale_out_gbps=inputs["gpu.scale_out_gbps"],
        scale_out_hop_us=scale_out_hop_us,
        allreduce_start_us=inputs["workload.nccl_start_us"] if w.allreduce_impl == "nccl" else None,
        **({} if w.speculative is None else {"draft_tokens": w.speculative.draft_tokens, "acceptance": inputs["workload.speculative.acceptance"],
                                              "draft_cost": inputs["workload.speculative.draft_cost"]}),
        **({} if w.prefix_cache is None else {"prefix_hit": inputs["workload.prefix_cache.hit_rate"]}),
        **({} if w.moe_imbalance is None else {"moe_imbalance": inputs["workload.moe_imbalance"]}),
        kv_efficiency=None if w.efficiency_of("kv") is None else inputs["workload.kv_efficiency"],
    )


def prefix_cache_share(scenario: Scenario, inputs: TrialInputs):
    """The share of the HBM free for the KV cache that the prefix cache keeps:
    ``workload.prefix_cache.cache_share``, 0 without prefix caching."""
    return 0.0 if scenario.workload.prefix_cache is None else inputs["workload.prefix_cache.cache_share"]


#: What a length key holds besides a number: per-trial draws or a length law.
_DRAWN = (Dist, LognormalLength, EmpiricalLength)


def lengths_of(scenario: Scenario, inputs: TrialInputs) -> al.Lengths:
    """The request lengths of every trial (docs/model.md#lengths): ``workload.prompt_tokens``
    and ``output_tokens`` as numbers (every request's), drawn per trial (a dist table) or
    as the mean and the ``workload.kv_length_quantile`` quantile of a length law; the
    context at the quantile is the prompt's plus the output's (a request long in both);
    a decode step reads the mean prompt plus half the length-weighted mean output
    (:class:`~mcengine.analytic.lengths.Lengths`)."""
    w = scenario.workload
    if not isinstance(w.prompt_tokens, _DRAWN) and not isinstance(w.output_tokens, _DRAWN):
        return al.Lengths.fixed(w.prompt_tokens, w.output_tokens)
    q = inputs["workload.kv_length_quantile"]
    (s, s_kv, _), (o, o_kv, o_biased) = (_length_terms(getattr(w, k), f"workload.{k}", inputs, q) for k in ("prompt_tokens", "output_tokens"))
    return al.Lengths(s, o, s_kv, s_kv + o_kv, s + o_biased / 2.0)


def _length_terms(value, key: str, inputs: TrialInputs, q) -> tuple:
    """A length key's mean, its quantile ``q`` and its length-weighted mean ``E[X^2]/E[X]``
    (a number, per-trial draws, or a law's)."""
    if isinstance(value, Dist):
        return inputs[key], inputs[key], inputs[key]
    if isinstance(value, LognormalLength):
        median, sigma = inputs[f"{key}.median"], inputs[f"{key}.sigma"]
        return al.lognormal_mean(median, sigma), al.lognormal_quantile(median, sigma, q), al.lognormal_size_biased_mean(median, sigma)
    if isinstance(value, EmpiricalLength):
        return (al.empirical_mean(value.quantiles, value.tokens), al.empirical_quantile(value.quantiles, value.tokens, q),
                al.empirical_size_biased_mean(value.quantiles, value.tokens))
    return value, value, value


def lengths_label(scenario: Scenario) -> str:
    """The request lengths as an error message names them."""
    w = scenario.workload

    def shown(value) -> str:
        return f"{value:,}" if isinstance(value, (int, float)) else str(value.to_toml())

    return f"workload.prompt_tokens = {shown(w.prompt_tokens)}, workload.output_tokens = {shown(w.output_tokens)}"


@dataclass(frozen=True)
class Evaluation:
    """One layout over a block of trials (arrays of shape (n,))."""

    layout: rm.Layout
    batch_memory: np.ndarray
    batch_slo: np.ndarray
    batch: np.ndarray
    decode: rm.PhaseTimes
    prefill: rm.PhaseTimes
    ttft: rm.PhaseTimes
    tokens_per_s_instance: np.ndarray
    tpot_slo_ms: np.ndarray
    ttft_slo_ms: np.ndarray
    batch_ttft: np.ndarray
    ttft_batch: rm.PhaseTimes
    output_tokens: object

    @property
    def fits(self) -> np.ndarray:
        """The weights and the operating batch's KV cache fit HBM."""
        return (self.batch_memory >= 1) & (self.batch <= self.batch_memory)

    @property
    def tpot_met(self) -> np.ndarray:
        return self.decode.total_s * MS_PER_S <= self.tpot_slo_ms

    @property
    def ttft_met(self) -> np.ndarray:
        """The batch's last request gets its first token within ``ttft_slo_ms``."""
        return self.ttft_batch.total_s * MS_PER_S <= self.ttft_slo_ms

    @property
    def slo_met(self) -> np.ndarray:
        return self.tpot_met & self.ttft_met

    @property
    def slo_excess(self) -> np.ndarray:
        """The largest of TPOT / its SLO and TTFT / its SLO (<= 1: both met)."""
        return np.maximum(self.decode.total_s * MS_PER_S / self.tpot_slo_ms, self.ttft_batch.total_s * MS_PER_S / self.ttft_slo_ms)

    @property
    def busy_fraction(self) -> np.ndarray:
        """Share of a serving cycle (one prefill of the batch, then ``O`` decode steps) in
        which the GPU computes or streams HBM: ``(prefill.busy + O decode.busy) /
        (prefill.total + O decode.total)`` (docs/model.md#power)."""
        o = self.output_tokens
        return (self.prefill.busy_s + o * self.decode.busy_s) / (self.prefill.total_s + o * self.decode.total_s)

    @property
    def tokens_per_s_per_gpu(self) -> np.ndarray:
        return self.tokens_per_s_instance / self.layout.gpus

    @property
    def tpot_s(self) -> np.ndarray:
        return self.decode.total_s

    @property
    def ttft_s(self) -> np.ndarray:
        """One prompt's TTFT (the static batch's prefill is ``prefill.total_s``)."""
        return self.ttft.total_s


def evaluate(scenario: Scenario, layout: rm.Layout, inputs: TrialInputs, prefills: bool = True, within_memory: bool = False,
             limits_of: Evaluation | None = None, rates: rm.Rates | None = None, shared: rl.SharedColumns | None = None) -> Evaluation:
    """Batch limits, phase terms and throughput of ``layout`` for every trial.

    ``batch = "auto"`` takes ``max(1, min(B_max, B_SLO, B_TTFT))``. A trial whose batch
    misses either SLO (with ``"auto"``: even one sequence misses it) delivers no tokens
    (``slo_met`` false, ``tokens_per_s_instance`` 0; docs/model.md#roofline).
    ``prefills = False``: a decode-only instance (disaggregated serving), whose prompts
    arrive prefilled, so its batch's prefill does not bound TTFT (``B_TTFT`` unlimited).
    ``within_memory``: the SLO searches stop at ``B_max`` (``B_SLO`` and ``B_TTFT`` then
    read at most ``B_max``; the batch and every time are unchanged), the planner's
    shortcut. ``limits_of``: an evaluation of the same layout, trials, rates and
    ``within_memory`` whose ``B_max``, ``B_SLO`` and one prompt's TTFT are reused (none
    depends on ``prefills``), and whose phases are too where its batch is this one in
    every trial. ``rates``: the trials' :func:`rates_of` when already made. ``shared``: the
    :class:`~mcengine.analytic.roofline.limits.SharedColumns` the caller keeps for the
    layouts it evaluates on the same trials and ``rates`` (that object), in which their
    searches' tables share the columns that do not depend on the layout.
    The searches run compiled (:func:`mcengine.analytic.roofline.limits.search_table`: the
    same batches) for the layouts the kernels cover, with NumPy otherwise.
    """
    w, m = scenario.workload, scenario.workload.model
    rates = rates_of(scenario, inputs) if rates is None else rates
    lengths = lengths_of(scenario, inputs)
    s, o = lengths.prompt_tokens, lengths.output_tokens
    context = lengths.context_tokens
    slo_ms = inputs["workload.tpot_slo_ms"]
    ttft_slo_ms = inputs["workload.ttft_slo_ms"] if prefills else np.full(inputs.n, np.inf)
    searches = limits_of is None or prefills and not np.all(np.isinf(ttft_slo_ms))
    table = rl.search_table(m, layout, s, context, rates, slo_ms / MS_PER_S, ttft_slo_ms / MS_PER_S, inputs.n, shared=shared) if searches else None
    if limits_of is None:
        b_mem = rl.batch_limit_memory(m, layout, inputs["gpu.hbm_gb"], inputs["workload.hbm_usable_fraction"], lengths.kv_context_tokens,
                                      rates.bytes_per_param, rates.kv_bytes, prefix_cache_share(scenario, inputs))
        b_slo = rl.batch_limit_slo(m, layout, context, slo_ms / MS_PER_S, rates, b_mem if within_memory else rm.SLO_SEARCH_CAP, table)
    else:
        b_mem, b_slo = limits_of.batch_memory, limits_of.batch_slo
    cap = b_mem if within_memory else rm.SLO_SEARCH_CAP
    b_ttft = rl.batch_limit_ttft(m, layout, s, ttft_slo_ms / MS_PER_S, rates, np.minimum(b_mem, b_slo) if within_memory else cap, table)
    if w.batch == "auto":
        batch = np.maximum(1, np.minimum(np.minimum(b_mem, b_slo), b_ttft))
    else:
        batch = np.full(inputs.n, w.batch, np.int64)
    if limits_of is not None and np.array_equal(batch, limits_of.batch):  # the same batch: the same phases, not made again
        decode, pre, ttft_batch = limits_of.decode, limits_of.prefill, limits_of.ttft_batch
    else:
        decode = rt.decode_step(m, layout, batch, context, rates)
        pre = rt.prefill(m, layout, batch, s, rates)
        ttft_batch = rt.batch_time_to_first_token(m, layout, batch, s, rates, pre)
    ttft = rt.time_to_first_token(m, layout, s, rates) if limits_of is None else limits_of.ttft  # (one prompt: the same)
    per_instance = batch * o / (pre.total_s + o * decode.total_s)
    e = Evaluation(layout, b_mem, b_slo, batch, decode, pre, ttft, per_instance, slo_ms, ttft_slo_ms, b_ttft, ttft_batch, o)
    return replace(e, tokens_per_s_instance=np.where(e.slo_met, per_instance, 0.0))


# --------------------------------------------------------------------------- layouts


def _shard_problem(scenario: Scenario, t: int, attention: str = "tensor", groups: int = 0) -> str:
    """Why an engine cannot shard the model over ``t`` tensor ranks ('' if it can);
    data-parallel attention does not shard the heads. The MLP is tensor-parallel in every
    attention mode: its intermediate dimension (``ffn``, each expert's ``expert_ffn`` for a
    mixture of experts without expert parallelism) is split column-wise into ``t`` equal
    shards, which engines require to divide evenly (docs/sources.md#roof-tp-divisibility).
    That also bounds the tensor degrees searched by the divisors of a model dimension,
    whatever ``instance_gpus``."""
    m = scenario.workload.model
    ep = bool(m.experts and scenario.workload.expert_parallel)
    mlp, mlp_key = (m.expert_ffn, "expert_ffn") if m.experts else (m.ffn, "ffn")
    if not ep and mlp % t:
        return f"allowed: a divisor of workload.model.{mlp_key} = {mlp} (the MLP is split into {t} equal column shards)"
    u = rw.attention_ranks(t, attention, groups)  # the ranks that shard one sequence's heads
    if u > 1 and m.heads % u:
        return f"allowed: a divisor of workload.model.heads = {m.heads}"
    if u > 1 and m.kv_heads % u and u % m.kv_heads:
        return f"allowed: a divisor or a multiple of workload.model.kv_heads = {m.kv_heads}"
    if m.experts and scenario.workload.expert_parallel and m.experts % t:
        return f"allowed: a divisor of workload.model.experts = {m.experts} with workload.expert_parallel"
    return ""


def allreduce_algorithm(scenario: Scenario) -> str:
    """``workload.allreduce`` as the fabric allows it: a ring fabric (``cluster.scale_up =
    "ring"``) runs ring all-reduces only, so "auto" is "ring" there and any other
    algorithm is an input error (docs/sources.md#roof-allreduce-algorithms)."""
    algorithm, fabric = scenario.workload.allreduce, scenario.cluster.scale_up
    if fabric == "ring" and algorithm not in ("ring", "auto"):
        raise InputError(Problem("workload.allreduce", algorithm, 'allowed on cluster.scale_up = "ring": "ring" or "auto" (a ring fabric has no switch for '
                                 "one-shot, two-shot or tree exchanges); or set cluster.scale_up = \"switched\""))
    return "ring" if fabric == "ring" else algorithm


def scale_up_domain(scenario: Scenario) -> int:
    """``cluster.scale_up_domain_gpus`` as a :class:`~mcengine.analytic.roofline.model.Layout`
    reads it: 0 (one domain spans every layout) for "auto" or a domain at least as large
    as the instance, so that such a scenario's layouts and times are today's flat ones."""
    c = scenario.cluster
    d = c.scale_up_domain_gpus
    return 0 if d == "auto" or d >= c.instance_gpus else int(d)


def attention_modes(scenario: Scenario) -> tuple[str, ...]:
    """The attention modes to search: ``workload.attention``, or all of them for "auto"."""
    a = scenario.workload.attention
    return rm.ATTENTION_MODES if a == "auto" else (a,)


def attention_variants(scenario: Scenario, t: int, grouped: bool = True) -> list[tuple[str, int, str]]:
    """``(attention, groups, problem)`` of every searched attention mode at ``t`` tensor
    ranks: "tensor" and "data" once (groups 0), "grouped" once per number of groups
    ``1 < g < t`` dividing ``t`` whose ``u = t/g`` ranks per group divide the KV heads
    (a larger group would replicate KV heads, what grouping exists to remove): at most
    the divisors of ``n_kv``, whatever the instance. ``problem`` is :func:`_shard_problem`'s
    ('' if an engine can shard it). ``grouped = False`` leaves the grouped modes out."""
    kv = scenario.workload.model.kv_heads
    out = []
    for a in attention_modes(scenario):
        if a == "grouped":
            out += [(a, t // u, _shard_problem(scenario, t, a, t // u)) for u in range(min(t - 1, kv), 1, -1) if grouped and t % u == 0 and kv % u == 0]
        else:
            out.append((a, 0, _shard_problem(scenario, t, a)))
    return out


def candidate_layouts(scenario: Scenario) -> list[rm.Layout]:
    """The layouts to consider: the fixed degrees, or every shardable ``t x p =
    instance_gpus`` (largest ``t`` first, so exact ties go to the least pipelining), each
    in every searched attention mode (heads sharded first, so exact ties go to it)."""
    w, n = scenario.workload, scenario.cluster.instance_gpus
    ep = bool(scenario.workload.model.experts and w.expert_parallel)
    algorithm = allreduce_algorithm(scenario)
    domain = scale_up_domain(scenario)
    t_fixed, p_fixed = w.tensor_parallel, w.pipeline_parallel
    if t_fixed != "auto" or p_fixed != "auto":
        t = t_fixed if t_fixed != "auto" else n // p_fixed
        p = p_fixed if p_fixed != "auto" else n // t_fixed
        variants = attention_variants(scenario, t)
        if all(problem for _, _, problem in variants):
            raise InputError(Problem("workload.tensor_parallel", t, variants[0][2] if variants else
                                     f"allowed with workload.attention = \"grouped\": a degree with groups of 1 < u < t ranks, u dividing workload.model.kv_heads = "
                                     f"{scenario.workload.model.kv_heads}"))
        if p > scenario.workload.model.layers:
            raise InputError(
                Problem("workload.tensor_parallel", t, f"leaves pipeline {p} > workload.model.layers = {scenario.workload.model.layers}; allowed: a larger tensor degree")
            )
        return [rm.Layout(t, p, ep, algorithm, a, domain, g) for a, g, problem in variants if not problem]
    layouts = [
        rm.Layout(t, n // t, ep, algorithm, a, domain, g)
        for t in range(n, 0, -1)
        if n % t == 0 and n // t <= scenario.workload.model.layers
        for a, g, problem in attention_variants(scenario, t)
        if not problem
    ]
    if not layouts:
        raise InputError(
            Problem("cluster.instance_gpus", n, f"no tensor x pipeline layout of {n} GPUs can shard workload.model {scenario.workload.model.name!r}")
        )
    return layouts


#: The most layouts the reshard capacity table may evaluate (one roofline evaluation at the
#: median inputs each, a few ms): a scenario whose search is larger is refused, so a
#: reshard run's set-up stays bounded (tens of seconds) whatever ``workload.model.layers``
#: and ``cluster.instance_gpus``. Every shipped model card stays below it on the largest
#: instance (65,536 GPUs): at most 3,288 layouts (llama-3.1-405b).
MAX_DEGRADED_LAYOUTS = 4096


def _tensor_degrees(scenario: Scenario) -> list[int]:
    """The tensor degrees :func:`_shard_problem` can allow, at most ``instance_gpus``: the
    divisors of the dimension every degree must divide (``experts`` with expert
    parallelism, else the MLP's), found in O(sqrt) of it, never by counting to ``n``."""
    m, n = scenario.workload.model, scenario.cluster.instance_gpus
    ep = bool(m.experts and scenario.workload.expert_parallel)
    dim = m.experts if ep else (m.expert_ffn if m.experts else m.ffn)
    small = [d for d in range(1, int(dim**0.5) + 1) if dim % d == 0]
    return sorted(t for t in {*small, *(dim // d for d in small)} if t <= n)


def degraded_layouts(scenario: Scenario) -> list[rm.Layout]:
    """Every shardable ``t x p`` layout of at most ``instance_gpus`` GPUs (``p`` at most the
    layers), in each searched attention mode but the grouped one (a degraded instance
    reshards with heads sharded or data-parallel attention; the full instance's plan may be
    grouped) with the searched all-reduce algorithm (as
    :func:`candidate_layouts`): at most (tensor degrees) x layers x modes of them,
    whatever ``instance_gpus``. More than :data:`MAX_DEGRADED_LAYOUTS` is InputError
    naming ``cluster.on_failure`` and the bound."""
    w, m, n = scenario.workload, scenario.workload.model, scenario.cluster.instance_gpus
    ep = bool(m.experts and w.expert_parallel)
    algorithm = allreduce_algorithm(scenario)
    shardable = [(t, a, g) for t in _tensor_degrees(scenario) for a, g, problem in attention_variants(scenario, t, grouped=False) if not problem]
    count = sum(min(m.layers, n // t) for t, _, _ in shardable)
    if count > MAX_DEGRADED_LAYOUTS:
        raise InputError(Problem("cluster.on_failure", "reshard", f"the degraded-layout search would evaluate {count:,} layouts "
                                 f"({len(shardable)} shardable tensor degrees x modes, pipelines up to workload.model.layers = {m.layers} "
                                 f"on cluster.instance_gpus = {n}); allowed: at most {MAX_DEGRADED_LAYOUTS:,} (a model with fewer "
                                 'layers or fewer divisors of its MLP, a smaller instance, or cluster.on_failure = "down")'))
    domain = scale_up_domain(scenario)
    return [rm.Layout(t, p, ep, algorithm, a, domain, g) for t, a, g in shardable for p in range(1, min(m.layers, n // t) + 1)]
