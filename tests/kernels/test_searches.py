"""The compiled static searches (mcengine/kernels/searches.py) against the NumPy path on
inputs drawn over the scenario keys' legal ranges: the same decode step and batch TTFT
(with and without the KV transfer) at every batch, and the same ``B_SLO``, ``B_TTFT`` and
prefill ``P_TTFT``, bit for bit, for every layout the kernels cover; no table (NumPy) for
the layouts they do not."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mcengine.analytic import serving as sv
from mcengine.analytic.roofline import limits as rl, model as rm, steps as rt
from mcengine.kernels import continuous as kc, searches as ks
from mcengine.units import MS_PER_S
from tests.analytic.roofline_cases import card
from tests.kernels.test_continuous import DENSE, N, _key, _layout, _length, _rates

#: The largest cap :func:`test_monotone_searches_are_the_brute_force_answer` times every batch up to.
BRUTE_CAP = 1536


def _case(data):
    """A covered layout, a dense model, every key the static searches read drawn over its
    legal range, the prompt a whole number or per trial, the context per trial or not, and
    the KV transfer's rates (scale-up or scale-out) over ``g`` GPUs."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    m = card(str(rng.choice(DENSE)))
    layout = _layout(rng)
    s, o = _length(data, "workload.prompt_tokens"), _length(data, "workload.output_tokens")
    prompt = s if rng.random() < 0.5 else rng.integers(1, s + 1, N).astype(float)
    context = float(s + o / 2.0) if rng.random() < 0.5 else rng.uniform(1, s + o, N)
    r = _rates(data, rng, N)
    tpot = np.broadcast_to(_key(data, rng, "workload.tpot_slo_ms", N) / MS_PER_S, (N,))
    ttft = np.where(rng.random(N) < 0.1, np.inf, np.broadcast_to(_key(data, rng, "workload.ttft_slo_ms", N) / MS_PER_S, (N,)))
    kv, g = (r if rng.random() < 0.5 else r.scale_out()), int(layout.gpus)
    return rng, m, layout, prompt, context, r, tpot, ttft, kv, g


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_step_times_and_searches_match_numpy(data):
    rng, m, layout, prompt, context, r, tpot, ttft, kv, g = _case(data)
    table = rl.search_table(m, layout, prompt, context, r, tpot, ttft, N, kv, g)
    batch = rng.integers(1, 2**20, N)
    ttft_s = rt.batch_time_to_first_token(m, layout, batch, prompt, r).total_s
    steps = {ks.DECODE: rt.decode_step(m, layout, batch, context, r).total_s, ks.PREFILL: ttft_s,
             ks.PREFILL_KV: ttft_s + sv.kv_transfer_s(m, prompt, g, kv, batch)}
    for kind, numpy_s in steps.items():
        kernel_s = [ks._timed(kind, int(batch[i]), table.x, i, table.lay) for i in range(N)]
        np.testing.assert_array_equal(kernel_s, np.broadcast_to(numpy_s, (N,)), err_msg=f"kind {kind}")

    b_mem = np.broadcast_to(rl.batch_limit_memory(m, layout, _key(data, rng, "gpu.hbm_gb", N), _key(data, rng, "workload.hbm_usable_fraction", N),
                                                  context, r.bytes_per_param, r.kv_bytes), (N,))
    cap = b_mem if data.draw(st.booleans(), label="within memory") else rm.SLO_SEARCH_CAP
    b_slo = rl.batch_limit_slo(m, layout, context, tpot, r, cap)
    np.testing.assert_array_equal(rl.batch_limit_slo(m, layout, context, tpot, r, cap, table), b_slo)
    top = np.minimum(b_mem, b_slo)
    np.testing.assert_array_equal(rl.batch_limit_ttft(m, layout, prompt, ttft, r, top, table), rl.batch_limit_ttft(m, layout, prompt, ttft, r, top))

    def latency_s(b, x):  # as prefill_pass times a pass: the KV rates are the trials' own, on the scale-up or scale-out links
        p, link, hop = x.lengths
        return (rt.batch_time_to_first_token(m, layout, b, p, x.rates).total_s
                + sv.kv_transfer_s(m, p, g, replace(x.rates, link_bytes_per_s=link, hop_latency_s=hop), b))

    lengths = (prompt, *(np.broadcast_to(v, (N,)) for v in (kv.link_bytes_per_s, kv.hop_latency_s)))
    top = int(max(1, top.max()))
    np.testing.assert_array_equal(rl.compiled_largest_batch(table, ks.PREFILL_KV, "ttft_slo_s", top),
                                  rl.largest_batch(latency_s, ttft, (N,), top, rates=rl.Timing(r, lengths)))


def test_layouts_not_covered_have_no_table():
    m = card("llama-3-70b")
    r = rm.Rates.from_peaks(peak_tflops=989.0, hbm_tbps=3.35, link_gbps=450.0, bytes_per_param=2.0, kv_bytes=2.0)
    covered = rm.Layout(8, 2, allreduce="auto")
    assert rl.search_table(m, covered, 1000, 1500.0, r, 0.05, 1.0, 4) is not None
    for lay in (replace(covered, allreduce="ring"), replace(covered, domain=4), rm.Layout(2, 4, allreduce="auto", domain=4)):
        assert rl.search_table(m, lay, 1000, 1500.0, r, 0.05, 1.0, 4) is None
    assert rl.search_table(card("mixtral-8x7b"), covered, 1000, 1500.0, r, 0.05, 1.0, 4) is None
    assert rl.search_table(m, covered, 1000, 1500.0, replace(r, draft_tokens=2, acceptance=0.7), 0.05, 1.0, 4) is None


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_tables_sharing_layout_free_columns_are_the_tables_made_alone(data):
    """The tables of several layouts made with one :class:`SharedColumns` per kind of
    search (the first one kept, each later one that table with its layout's columns
    written over in place) are, bit for bit, each one made alone: static, prefill-pass and continuous
    searches; asked for other Rates or another trial count, one raises."""
    rng, m, layout, prompt, context, r, tpot, ttft, kv, g = _case(data)
    layouts = [layout, _layout(rng), _layout(rng)]
    static, passes, continuous = (rl.SharedColumns(r, N) for _ in range(3))
    for lay in layouts:
        alone = rl.search_table(m, lay, prompt, context, r, tpot, ttft, N, kv, g)
        kept = rl.search_table(m, lay, prompt, context, r, tpot, ttft, N, kv, g, static)
        np.testing.assert_array_equal(kept.x, alone.x)
        np.testing.assert_array_equal(kept.lay, alone.lay)
        alone = rl.search_table(m, lay, prompt, prompt, r, ttft, ttft, N, kv, g)
        np.testing.assert_array_equal(rl.search_table(m, lay, prompt, prompt, r, ttft, ttft, N, kv, g, passes).x, alone.x)
        alone = sv.continuous_search_tables(m, lay, prompt, 256, context, r, tpot, ttft, N)
        kept = sv.continuous_search_tables(m, lay, prompt, 256, context, r, tpot, ttft, N, continuous)
        np.testing.assert_array_equal(kept[0], alone[0])
    assert len(static.tables(r, N)) == len(passes.tables(r, N)) == len(continuous.tables(r, N)) == 1
    for rates, n in ((replace(r), N), (r, N + 1)):
        with pytest.raises(ValueError, match="shared search columns"):
            rl.search_table(m, layout, prompt, context, rates, tpot, ttft, n, kv, g, static)
        with pytest.raises(ValueError, match="shared search columns"):
            sv.continuous_search_tables(m, layout, prompt, 256, context, rates, tpot, ttft, n, continuous)



@pytest.mark.parametrize("kind,column", [(ks.DECODE, "tpot_slo_s"), (ks.PREFILL, "ttft_slo_s"), (ks.PREFILL_KV, "ttft_slo_s")])
def test_largest_batches_at_small_caps_ties_and_non_finite_limits(kind, column):
    """:func:`ks.largest_batches` against the largest ``B <= cap`` with ``time(B) <= limit``,
    counted batch by batch from the kernel's own step times: caps 0, 1, 2 and 3-64; a limit
    exactly a batch's time (a tie meets it: that batch, or the last of equal times); a limit
    just below it (the batch before); NaN (no time meets it: 0), +inf (the cap), -inf and 0
    (0). The NumPy search (:func:`rl.largest_batch`) on the same times gives the same."""
    m = card("llama-3-70b")
    r = rm.Rates.from_peaks(peak_tflops=989.0, hbm_tbps=3.35, link_gbps=450.0, bytes_per_param=2.0, kv_bytes=2.0)
    caps = np.array([0, 1, 2, 3, 5, 8, 17, 64])
    picks = (1, 2, 3, 5, 8, 13, 40, 64)  # the batch whose time a tie takes as the limit
    cases = [(cap, kind_of_limit, pick) for cap in caps for kind_of_limit in ("tie", "below", "nan", "inf", "-inf", "zero") for pick in picks]
    n = len(cases)
    table = rl.search_table(m, rm.Layout(8, 2, allreduce="auto"), 1000, 1500.0, r, 0.05, 1.0, n)
    col = ks.STATIC_COLUMNS.index(column)

    def timed(b, i):
        return ks._timed(kind, np.int64(b), table.x, i, table.lay)

    x = table.x.copy()
    for i, (cap, how, pick) in enumerate(cases):
        t = timed(pick, i)
        x[i, col] = {"tie": t, "below": np.nextafter(t, -np.inf), "nan": np.nan, "inf": np.inf, "-inf": -np.inf, "zero": 0.0}[how]
    table = rl.SearchTable(x, table.lay)
    want = np.array([max((b for b in range(1, cap + 1) if timed(b, i) <= x[i, col]), default=0) for i, (cap, _, _) in enumerate(cases)])
    got = rl.compiled_largest_batch(table, kind, column, caps.repeat(n // caps.size))
    np.testing.assert_array_equal(got, want)
    by = {how: want[[i for i, c in enumerate(cases) if c[1] == how]] for how in ("nan", "inf", "-inf", "zero")}
    assert not by["nan"].any() and not by["-inf"].any() and not by["zero"].any()
    np.testing.assert_array_equal(by["inf"], [c[0] for c in cases if c[1] == "inf"])
    ties = [(i, c) for i, c in enumerate(cases) if c[1] == "tie" and 1 <= c[2] <= c[0]]
    assert ties and all(got[i] >= pick for i, (_, _, pick) in ties)
    numpy = rl.largest_batch(lambda b: np.array([timed(int(v), i) for i, v in enumerate(np.broadcast_to(b, (n,)))]), x[:, col], (n,),
                             caps.repeat(n // caps.size))
    np.testing.assert_array_equal(numpy, want)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_monotone_searches_are_the_brute_force_answer(data):
    """:func:`ks.largest_batches` over the steps non-decreasing in the batch (the static
    decode step, the batch TTFT with the KV transfer, the continuous step with heads
    sharded; any pipeline, attention mode and groups of the covered layouts) against every
    batch up to the cap timed by NumPy: each step is non-decreasing over ``[1, cap]`` (what
    makes the answer unique whatever batches a search times: the batches up to the
    pipeline's depth, timed as the batch 1, and the tops of the stairs of ``ceil(b/g)``
    sequences it times first) and the search returns the largest ``B <= cap`` with
    ``t(B) <= limit``. The decode and continuous steps (grouped and data-parallel layouts
    too) time every batch up to the pipeline's depth exactly as the batch 1, which the
    searches' bracket starting at ``p`` assumes. Caps in ``[1, BRUTE_CAP]``; each trial's limit its time at a batch
    (a tie), at a stair's top or the batch after, or just below one, or the SLO drawn."""
    rng, m, layout, prompt, context, r, tpot, ttft, kv, g = _case(data)
    s, o = _length(data, "workload.prompt_tokens"), _length(data, "workload.output_tokens")
    cap = rng.integers(1, BRUTE_CAP + 1, N)
    static = rl.search_table(m, layout, prompt, context, r, tpot, ttft, N, kv, g)
    stair = int(static.lay[kc.L_PIPELINE] * static.lay[kc.L_GROUPS])
    grid = np.arange(1, BRUTE_CAP + stair + 2)[:, None]
    ttft_s = rt.batch_time_to_first_token(m, layout, grid, prompt, r).total_s
    sharded = replace(layout, attention="tensor", attention_groups=0)
    x, lay, _ = sv.continuous_search_tables(m, sharded, s, o, context, r, tpot, ttft, N)
    searches = {
        ks.DECODE: (static.x, static.lay, ks.S_TPOT_SLO, rt.decode_step(m, layout, grid, context, r).total_s),
        ks.PREFILL: (static.x, static.lay, ks.S_TTFT_SLO, ttft_s),
        ks.PREFILL_KV: (static.x, static.lay, ks.S_TTFT_SLO, ttft_s + sv.kv_transfer_s(m, prompt, g, kv, grid)),
        ks.CONTINUOUS: (x, lay, kc.X_TPOT_SLO, sv.continuous_step(m, sharded, grid, s, o, r, context).total_s),
    }
    depth = grid[: int(static.lay[kc.L_PIPELINE])]
    for step in (rt.decode_step(m, layout, depth, context, r), sv.continuous_step(m, layout, depth, s, o, r, context)):
        np.testing.assert_array_equal(step.total_s, np.broadcast_to(step.total_s[:1], step.total_s.shape))
    for kind, (x, lay, column, times) in searches.items():
        times = np.broadcast_to(times, (grid.size, N))
        x = x.copy()
        for i in range(N):
            assert np.all(np.diff(times[:cap[i], i]) >= 0.0), f"kind {kind}: a step falling in the batch"
            pick = int(rng.integers(1, cap[i] + 2))
            if rng.random() < 0.4:
                pick = max(1, pick // stair * stair + int(rng.integers(0, 2)))
            t = times[pick - 1, i]
            x[i, column] = (t, np.nextafter(t, -np.inf), x[i, column])[rng.integers(0, 3)]
        want = np.array([np.count_nonzero(times[:cap[i], i] <= x[i, column]) for i in range(N)])
        got = np.empty(N, np.int64)
        ks.largest_batches(kind, x, lay, column, cap.copy(), got)
        np.testing.assert_array_equal(got, want, err_msg=f"kind {kind}")
