"""Serving modes in the roofline stage: the chained run's columns in each mode, the
disaggregated split, the infeasible chunk, and static reproducing the pre-mode numbers."""

from __future__ import annotations

import numpy as np
import pytest

from mcengine.analytic import serving as sv
from mcengine.errors import InputError
from mcengine.scenario import load_scenario
from mcengine.scenario.sampling import draw_inputs, quantile_inputs
from mcengine.stages import roofline
from mcengine.stages.roofline.layout import rates_of
from mcengine.stages.roofline.median_plan import choose_serving
from mcengine.stages.roofline.serving import evaluate_disaggregated
from mcengine.standalone.roofline import roofline_summary
from mcengine.validation.roofline import CALIBRATED_SERVING
from tests.conftest import FP8_FIT_EFFICIENCIES


#: The chained columns below are those of the one plan chosen at the median inputs.
MEDIAN_PLAN = "workload.plan='median'"


def _mode(name: str) -> str:
    return f"workload.serving='{name}'"


def test_static_reproduces_the_numbers_before_serving_modes():
    # main at 8955525 (before the serving modes): h100 285.41505305485384 tokens/s per GPU,
    # TPOT 47.010632317300015 ms, TTFT 184.9187411391766 ms; lite-h100 49.416283815095014
    for name, per_gpu, tpot in (("h100", 285.41505305485384, 47.010632317300015), ("lite-h100", 49.416283815095014, 49.98331758755644)):
        for overrides in (CALIBRATED_SERVING, (*CALIBRATED_SERVING, _mode("static"))):
            body = roofline_summary(load_scenario(name, (*overrides, *FP8_FIT_EFFICIENCIES)))
            assert body["serving"] == "static"
            assert body["tokens_per_s_per_gpu"] == per_gpu
            assert body["decode"]["tpot_ms"] == tpot
            assert body["serving_modes"]["static"]["tokens_per_s_per_gpu"] == per_gpu


@pytest.mark.parametrize("mode", ["continuous", "disaggregated"])
def test_chained_run_columns_in_each_mode(mode):
    s = load_scenario("lite-h100", (_mode(mode), MEDIAN_PLAN))
    inputs = draw_inputs(s, 11, 0, 32)
    cols = roofline.throughput(s, inputs)
    assert set(cols) == {"tokens_per_s_instance", "tokens_per_s_per_gpu", "ttft_ms", "tpot_ms", "batch", "slo_met", "busy_fraction",
                         "output_tokens_per_request"}
    assert all(v.shape == (32,) and np.all(np.isfinite(v)) for v in cols.values())
    assert np.all((cols["busy_fraction"] > 0) & (cols["busy_fraction"] <= 1))
    np.testing.assert_allclose(cols["tokens_per_s_per_gpu"], cols["tokens_per_s_instance"] / 32)
    assert np.ptp(cols["tokens_per_s_instance"]) > 0
    # chunk-independent: two halves give the same trials
    halves = [roofline.throughput(s, draw_inputs(s, 11, start, 16)) for start in (0, 16)]
    for key, values in cols.items():
        np.testing.assert_array_equal(values, np.concatenate([h[key] for h in halves]))
    chosen = choose_serving(s).best[mode]
    if mode == "continuous":
        # TTFT = ceil(O m / B) tau, m = min(B, p), throughput = B / tau
        p, o = chosen.layout.pipeline, s.workload.output_tokens
        steps = -(-(o * np.minimum(cols["batch"], p)) // cols["batch"])
        np.testing.assert_allclose(cols["ttft_ms"], steps * cols["tpot_ms"], rtol=1e-12)
        np.testing.assert_allclose(cols["tokens_per_s_instance"], cols["batch"] / cols["tpot_ms"] * 1e3, rtol=1e-12)
        # busy share of a step: max(compute, memory) / tau
        step = chosen.step
        assert float(cols["busy_fraction"][0]) <= 1.0 and float(chosen.busy_fraction[0]) == float(step.busy_s[0] / step.total_s[0])
    else:
        # GPU-weighted: f of the GPUs prefill, 1 - f decode
        f = float(chosen.prefill_share[0])
        pre = float(chosen.prefill.busy_s[0] / chosen.prefill.total_s[0])
        dec = float(chosen.decode.decode.busy_s[0] / chosen.decode.decode.total_s[0])
        assert float(chosen.busy_fraction[0]) == pytest.approx(f * pre + (1 - f) * dec, rel=1e-12)


def test_disaggregated_split_matches_prompt_supply_to_decode_demand():
    s = load_scenario("h100", (_mode("disaggregated"),))
    e = choose_serving(s).best["disaggregated"]
    o = s.workload.output_tokens
    f, r_p = float(e.prefill_share[0]), float(e.prompts_per_s_prefill[0])
    r_d = float(e.decode_tokens_per_s[0]) / o
    assert 0 < f < 1
    assert f * r_p == pytest.approx((1 - f) * r_d, rel=1e-12)
    assert float(e.tokens_per_s_instance[0]) == pytest.approx((1 - f) * r_d * o, rel=1e-12)
    # a prefill pass batches P = 8192 // 2048 = 4 prompts (the token budget binds; their KV
    # fits and the 2 s TTFT SLO is met); the pass's KV caches add to TTFT, sent between two
    # 8-GPU hosts (8-GPU NVLink domains) over each GPU's NIC:
    # 4 x S x 327,680 B / 8 GPUs over 50 x 0.82 GB/s + start + one scale-out hop
    assert int(e.prefill_batch[0]) == 4
    median = quantile_inputs(s, 0.5)
    latency_us = float(median["workload.collective_start_us"][0] + median["workload.scale_out_hop_us"][0])
    kv = latency_us * 1e-6 + 4 * 2048 * 327_680 / 8 / (50e9 * 0.82)
    assert float(e.kv_transfer_s[0]) == pytest.approx(kv, rel=1e-9)
    assert float(e.ttft_s[0]) == pytest.approx(float(e.ttft.total_s[0]) + kv, rel=1e-12)
    # per trial the share stays the median's and the bottleneck binds
    inputs = draw_inputs(s, 3, 0, 16)
    t = evaluate_disaggregated(s, e.prefill_layout, e.layout, inputs, f)
    supply = f * t.prompts_per_s_prefill * o
    np.testing.assert_allclose(t.tokens_per_s_instance, np.minimum((1 - f) * t.decode_tokens_per_s, supply), rtol=1e-12)
    body = roofline_summary(s)
    row = body["serving_modes"]["disaggregated"]
    assert body["serving"] == "disaggregated" and row["chosen"]
    assert row["prefill_share"] == pytest.approx(f) and body["tokens_per_s_per_gpu"] == row["tokens_per_s_per_gpu"]


def test_a_ttft_slo_bounds_the_disaggregated_prefill_not_the_decode_batch():
    """Decode-only instances get their prompts prefilled elsewhere: a TTFT SLO that is met
    by one prompt's prefill plus its KV transfer leaves the decode batch as without it."""
    free = choose_serving(load_scenario("h100", (_mode("disaggregated"),))).best["disaggregated"]
    ttft_ms = float(free.ttft_s[0]) * 1e3
    bound = choose_serving(load_scenario("h100", (_mode("disaggregated"), f"workload.ttft_slo_ms={2 * ttft_ms}"))).best["disaggregated"]
    assert int(bound.batch[0]) == int(free.batch[0]) and bool(bound.slo_met[0])
    missed = choose_serving(load_scenario("h100", (_mode("disaggregated"), f"workload.ttft_slo_ms={ttft_ms / 100}"))).best["disaggregated"]
    assert not bool(missed.slo_met[0])


def test_infeasible_chunk():
    # S/O = 2048/256 = 8 prompt tokens per running sequence and step: a budget of 7 fits none
    chunk = "workload.prefill_chunk_tokens=7"
    with pytest.raises(InputError) as err:
        roofline.throughput(load_scenario("h100", (_mode("continuous"), chunk, MEDIAN_PLAN)), quantile_inputs(load_scenario("h100"), 0.5))
    assert "workload.serving" in str(err.value) and "prefill_chunk_tokens = 7" in str(err.value)
    body = roofline_summary(load_scenario("h100", (_mode("auto"), chunk)))
    assert body["serving"] != "continuous"
    row = body["serving_modes"]["continuous"]
    assert not row["feasible"] and not row["chosen"] and "workload.prefill_chunk_tokens = 7" in row["why"]
    # a budget of 100 caps the batch at floor(100 x 256 / 2048) = 12
    e = choose_serving(load_scenario("h100", (_mode("continuous"), "workload.prefill_chunk_tokens=100"))).best["continuous"]
    assert int(e.batch_chunk[0]) == 12 and int(e.batch[0]) <= 12


def test_auto_picks_the_mode_with_the_most_tokens_per_gpu():
    body = roofline_summary(load_scenario("h100", (_mode("auto"),)))
    rows = body["serving_modes"]
    best = max((n for n in sv.SERVING_MODES if rows[n]["feasible"] and rows[n]["slo_met"]), key=lambda n: rows[n]["tokens_per_s_per_gpu"])
    assert body["serving"] == best and rows[best]["chosen"]
    assert sum(r["chosen"] for r in rows.values()) == 1


def test_a_ttft_slo_moves_the_continuous_batch_down_a_sawtooth_instead_of_missing():
    """h100 at tensor 2 x pipeline 4 (N = O p = 1024): the TPOT SLO allows B = 130, whose
    prompts take ceil(1024/130) = 8 steps of 49.74 ms = 397.9 ms to prefill. Under a 395 ms
    TTFT SLO the trial used to miss (no tokens); now the batch is the largest below 130 that
    meets it: B = 129 still takes 8 steps (1024/129 = 7.94), of a shorter step."""
    base = ("workload.serving='continuous'", "workload.tensor_parallel=2", *FP8_FIT_EFFICIENCIES, "workload.comm_overlap=0")
    free = choose_serving(load_scenario("h100", base)).best["continuous"]
    assert int(free.batch[0]) == 130 and float(free.ttft_s[0]) * 1e3 == pytest.approx(397.94, abs=0.005)
    s = load_scenario("h100", (*base, "workload.ttft_slo_ms=395"))
    e = choose_serving(s).best["continuous"]
    assert int(e.batch[0]) == 129 and bool(e.slo_met[0]) and str(e.binding_limit[0]) == "ttft"
    assert float(e.ttft_s[0]) == 8 * float(e.tpot_s[0]) and float(e.ttft_s[0]) * 1e3 <= 395.0
    # a scan of every batch up to the TPOT limit at the median rates finds the same one
    median = quantile_inputs(s, 0.5)
    batches = np.arange(1, 131)
    tau = sv.continuous_step(s.workload.model, e.layout, batches, 2048, 256, rates_of(s, median)).total_s
    met = batches[sv.continuous_ttft_s(tau, batches, 4, 256) * 1e3 <= 395.0]
    assert met.max() == 129
    row = roofline_summary(s)["serving_modes"]["continuous"]
    assert row["batch_binds"] == "ttft" and row["batch_limits"]["ttft"] == 129 and row["batch_limits"]["slo"] == 130
    unbounded = roofline_summary(load_scenario("h100", (*base, "workload.ttft_slo_ms='inf'")))["serving_modes"]["continuous"]
    assert unbounded["batch_limits"]["ttft"] is None and unbounded["batch_binds"] == "slo"
