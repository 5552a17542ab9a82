"""The compiled continuous-batching searches (mcengine/kernels/continuous.py) against the
NumPy path on inputs drawn over the scenario keys' legal ranges: the same step time at every batch, and the same ``B_SLO``
and ``B_TTFT``, bit for bit, for every layout the kernel covers; None (NumPy) for the
layouts it does not."""

from __future__ import annotations

from dataclasses import fields, replace

import numpy as np
from hypothesis import given, settings, strategies as st

from mcengine.analytic import serving as sv
from mcengine.analytic.roofline import limits as rl, model as rm
from mcengine.kernels import searches as ks
from mcengine.scenario.fields import spec_of
from mcengine.scenario.sections.workload import PrefixCacheSection
from mcengine.units import MS_PER_S
from tests.analytic.roofline_cases import card
from tests.robustness.test_commands import _spread
from tests.scenario.test_numeric_keys_property import SPECS

N = 48
DENSE = ("llama-3-70b", "llama-3-8b", "llama-3.1-405b", "gpt-3-175b", "llama-2-70b")


def _layout(rng) -> rm.Layout:
    """A layout the kernel covers: dense, "auto", one scale-up domain, any attention mode."""
    t, p = int(2 ** rng.integers(0, 6)), int(2 ** rng.integers(0, 5))
    mode = ("tensor", "data", "grouped")[rng.integers(0, 3) if t > 2 else rng.integers(0, 2)]
    groups = int(2 ** rng.integers(1, int(np.log2(t)))) if mode == "grouped" else 0
    domain = (0, t * p, 2 * t * p)[rng.integers(0, 3)]
    return rm.Layout(t, p, allreduce="auto", attention=mode, attention_groups=groups, domain=domain)


def _key(data, rng, key: str, n: int):
    """``key`` over its whole legal range (the schema's lo/hi, :func:`_spread`): one value
    common to every trial (a third of the time), or per trial, each trial one of eight
    drawn values (fewer draws than trials keep the property fast)."""
    spec = SPECS[key] if key in SPECS else spec_of(next(f for f in fields(PrefixCacheSection) if f"workload.prefix_cache.{f.name}" == key))
    value = _spread(spec).filter(lambda x: not (getattr(spec, "hi_open", False) and x >= spec.hi))
    if data.draw(st.integers(0, 2), label=f"{key} common") == 0:
        return np.asarray(float(data.draw(value, label=key)))
    return rng.choice(np.asarray(data.draw(st.lists(value, min_size=8, max_size=8), label=key), float), n)


def _rates(data, rng, n: int) -> rm.Rates:
    """The rates :func:`mcengine.stages.roofline.layout.rates_of` makes, from every key that
    feeds them drawn over its legal range."""
    k = {name: _key(data, rng, key, n) for name, key in (
        ("peak_tflops", "gpu.peak_tflops"), ("hbm_tbps", "gpu.hbm_tbps"), ("link_gbps", "gpu.link_gbps"),
        ("compute_efficiency", "workload.compute_efficiency"), ("memory_efficiency", "workload.memory_efficiency"),
        ("link_efficiency", "workload.link_efficiency"), ("collective_start_us", "workload.collective_start_us"),
        ("hop_latency_us", "workload.hop_latency_us"), ("step_overhead_ms", "workload.step_overhead_ms"),
        ("layer_overhead_us", "workload.layer_overhead_us"), ("comm_overlap", "workload.comm_overlap"),
        ("scale_out_gbps", "gpu.scale_out_gbps"), ("scale_out_hop_us", "workload.scale_out_hop_us"))}
    k["peak_tflops"] = k["peak_tflops"] * _key(data, rng, "gpu.dvfs_scale", n)
    optional = {"allreduce_start_us": "workload.nccl_start_us", "prefix_hit": "workload.prefix_cache.hit_rate",
                "kv_efficiency": "workload.kv_efficiency"}
    k.update({name: _key(data, rng, key, n) for name, key in optional.items() if data.draw(st.booleans(), label=f"{key} set")})
    bytes_per_param, kv_bytes = (float(data.draw(_spread(SPECS[key]), label=key)) for key in ("workload.bytes_per_param", "workload.kv_bytes"))
    return rm.Rates.from_peaks(**k, bytes_per_param=bytes_per_param, kv_bytes=kv_bytes)


def _length(data, key: str) -> int:
    return int(round(data.draw(_spread(SPECS[key]), label=key)))


def _case(data):
    """A covered layout, a dense model, and every key the searches read drawn over its legal
    range; the lengths are whole numbers common to every trial (the kernel's cover), the
    context the mean one or per trial in ``[1, S + O]``."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    m = card(str(rng.choice(DENSE)))
    layout = _layout(rng)
    s, o = _length(data, "workload.prompt_tokens"), _length(data, "workload.output_tokens")
    context = float(s + o / 2.0) if rng.random() < 0.5 else rng.uniform(1, s + o, N)
    r = _rates(data, rng, N)
    tpot = _key(data, rng, "workload.tpot_slo_ms", N) / MS_PER_S
    ttft = np.where(rng.random(N) < 0.1, np.inf, np.broadcast_to(_key(data, rng, "workload.ttft_slo_ms", N) / MS_PER_S, (N,)))
    return rng, m, layout, s, o, context, r, tpot, ttft


def _limits(data, rng, m, layout, s, o, context, r):
    """``B_max`` and ``B_chunk`` as :func:`mcengine.stages.roofline.serving.evaluate_continuous`
    makes them from the HBM, usable-fraction and chunk-budget keys, and the TPOT search's
    cap: the planner's ``min(B_max, B_chunk)`` or none."""
    b_mem = rl.batch_limit_memory(m, layout, _key(data, rng, "gpu.hbm_gb", N), _key(data, rng, "workload.hbm_usable_fraction", N), context,
                                  r.bytes_per_param, r.kv_bytes)
    b_chunk = np.broadcast_to(sv.batch_limit_chunk(sv.computed_prompt_tokens(s, r), o, _key(data, rng, "workload.prefill_chunk_tokens", N)), (N,))
    cap = np.minimum(b_mem, b_chunk) if data.draw(st.booleans(), label="within memory") else rm.SLO_SEARCH_CAP
    return np.broadcast_to(b_mem, (N,)), b_chunk, cap


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_step_times_and_searches_match_numpy(data):
    rng, m, layout, s, o, context, r, tpot, ttft = _case(data)
    x, lay, o_steps = sv.continuous_search_tables(m, layout, s, o, context, r, tpot, ttft, N)
    batch = rng.integers(1, 2**20, N)
    numpy_s = sv.continuous_step(m, layout, batch, s, o, r, context).total_s
    kernel_s = [ks._timed(ks.CONTINUOUS, int(batch[i]), x, i, lay) for i in range(N)]
    np.testing.assert_array_equal(kernel_s, np.broadcast_to(numpy_s, (N,)))

    b_mem, b_chunk, cap = _limits(data, rng, m, layout, s, o, context, r)
    timing = rl.Timing(r, (s, o, context))

    def step_s(b, t):
        return sv.continuous_step(m, layout, b, t.lengths[0], t.lengths[1], t.rates, t.lengths[2]).total_s

    b_slo = rl.largest_batch(step_s, tpot, (N,), cap, rates=timing)
    b_ttft = sv.largest_batch_within_ttft(step_s, ttft, np.minimum(np.minimum(b_mem, b_slo), b_chunk), layout.pipeline, o, rates=timing)
    compiled = sv.compiled_batch_limits(m, layout, s, o, context, r, tpot, ttft, cap, b_mem, b_chunk, N)
    np.testing.assert_array_equal(compiled[0], b_slo)
    np.testing.assert_array_equal(compiled[1], b_ttft)


@settings(max_examples=5, deadline=None)
@given(st.data())
def test_layouts_not_covered_search_with_numpy(data):
    _, m, layout, s, o, context, r, tpot, ttft = _case(data)
    covered = rm.Layout(8, 2, allreduce="auto")
    assert sv.continuous_search_tables(m, covered, s, o, context, r, tpot, ttft, N) is not None
    for lay in (replace(covered, allreduce="ring"), replace(covered, domain=4), rm.Layout(2, 4, allreduce="auto", domain=4)):
        assert sv.continuous_search_tables(m, lay, s, o, context, r, tpot, ttft, N) is None
    assert sv.continuous_search_tables(card("mixtral-8x7b"), covered, s, o, context, r, tpot, ttft, N) is None
    assert sv.continuous_search_tables(m, covered, s, o, context, replace(r, draft_tokens=2, acceptance=0.7), tpot, ttft, N) is None
    assert sv.continuous_search_tables(m, covered, s, np.full(N, 100.5), context, r, tpot, ttft, N) is None
