"""The training stage (mcengine/stages/training.py, docs/training.md): Llama 3's 405B job
on 16,384 H100s (the done-when anchors), the interval property through the stage, the
job's share of the cluster, and chunking."""

from __future__ import annotations

import numpy as np
import pytest

from mcengine import api
from mcengine.errors import InputError
from mcengine.pipeline import run_block
from mcengine.scenario.sampling import draw_inputs
from mcengine.stages import training

from ..conftest import ROOT

STUDY = ['workload.kind="training"', 'workload.model="llama-3.1-405b"', "workload.bytes_per_param=1"]
H100 = str(ROOT / "configs" / "training" / "train-h100.toml")
LITE = str(ROOT / "configs" / "training" / "train-lite-h100.toml")
N = 16


def _columns(ref, extra=()):
    s = api.check(ref, [*STUDY, *extra])
    inputs = draw_inputs(s, 0, 0, N)
    return s, training.training(s, inputs, np.full(N, 1e9))


def test_llama3_405b_job_on_16384_h100s_meets_the_reports_numbers():
    """419 interruptions in 54 days (+-15 %), ETTR above 90 %, MFU within 15 % of 38-43 %."""
    s, cols = _columns(H100)
    per_gpu_year = (0.025 + 0.044) + 5 * (0.002 + 0.004) + (0.002 + 0.005) + (0.004 + 0.0105) + (0.07 + 0.11) / 8
    per_gpu_year += 0.0223 + 0.0029 + 0.0025 + 0.0025  # software, NCCL, SDC, thermal
    in_54_days = cols["job_interruptions_per_day"] * 54
    np.testing.assert_allclose(in_54_days, per_gpu_year * 16384 * 54 * 24 / 8766, rtol=1e-12)
    assert np.all(np.abs(in_54_days / 419 - 1) < 0.15)
    assert np.all(cols["ettr"] > 0.90) and np.all(cols["ettr"] < 0.95)
    assert np.all((cols["mfu"] > 0.38 * 0.85) & (cols["mfu"] < 0.43 * 1.15))


def test_lite_job_sums_its_own_units():
    """The Lite cluster's job spans 65,536 packages with their optics (and their link flaps) and lasers, 4,096 hosts
    and 16,384 NICs; its four job fault classes count per H100-equivalent (the same as H100's)."""
    s, cols = _columns(LITE)
    _, h100 = _columns(H100)
    by_cause = {k.split(".")[1]: v for k, v in cols.items() if k.startswith("job_interruptions.")}
    np.testing.assert_allclose(by_cause["software"], h100["job_interruptions.software.per_day"], rtol=1e-12)
    assert set(by_cause) == {"die", "hbm", "gsp", "network", "optics", "laser", "host", "software", "nccl_timeout", "sdc", "thermal"}
    flaps = draw_inputs(s, 0, 0, N)["reliability.components.optics.transient_afr"]  # link flaps (docs/sources.md)
    np.testing.assert_allclose(by_cause["optics"], 65536 * (0.0034 + flaps) / 8766 * 24, rtol=1e-12)
    np.testing.assert_allclose(sum(by_cause.values()), cols["job_interruptions_per_day"], rtol=1e-12)
    lost = {k.split(".")[1]: v for k, v in cols.items() if k.startswith("job_lost_hours.")}
    assert set(lost) == set(by_cause)
    tau, delta = cols["checkpoint_interval_minutes"] / 60, cols["checkpoint_write_s"] / 3600
    # the day's hours: useful + writing checkpoints + lost, the lost split as the rates
    np.testing.assert_allclose(24 * cols["ettr"] * (tau + delta) / tau + sum(lost.values()), 24.0, rtol=1e-12)
    np.testing.assert_allclose(lost["optics"] / lost["die"], by_cause["optics"] / by_cause["die"], rtol=1e-12)


@pytest.mark.parametrize("minutes", [2, 10, 30, 120, 600])
def test_optimal_interval_never_does_worse_than_a_fixed_one(minutes):
    _, best = _columns(H100)
    _, fixed = _columns(H100, [f"workload.training.checkpoint_interval_minutes={minutes}"])
    assert np.all(best["ettr"] >= fixed["ettr"] * (1 - 1e-12))
    assert np.all(best["cost_per_mtok_trained_usd"] <= fixed["cost_per_mtok_trained_usd"] * (1 + 1e-12))


def test_a_smaller_job_pays_its_share_and_spans_fewer_units():
    s, whole = _columns(H100)
    _, half = _columns(H100, ["workload.training.job_gpus=8192"])
    np.testing.assert_allclose(half["job_interruptions_per_day"], whole["job_interruptions_per_day"] / 2, rtol=1e-12)
    cost_per_hour = 1e9 / (5 * 8766) * 8192 / 16384
    np.testing.assert_allclose(half["cost_per_mtok_trained_usd"],
                               cost_per_hour / (half["training_tokens_per_s"] * half["ettr"] * 3600 / 1e6), rtol=1e-12)
    with pytest.raises(InputError, match="job_gpus"):
        _columns(H100, ["workload.training.job_gpus=20000"])


def test_training_columns_do_not_depend_on_the_chunking():
    s = api.check("h100", ["cluster.instances=4", "cluster.spare_gpus=8", 'workload.kind="training"'])
    one = run_block(s, 3, 0, 6)
    two = [run_block(s, 3, 0, 3), run_block(s, 3, 3, 3)]
    for name in ("ettr", "mfu", "cost_per_mtok_trained_usd", "time_to_train_days", "job_interruptions_per_day"):
        np.testing.assert_array_equal(one[name], np.concatenate([b[name] for b in two]), err_msg=name)


def test_a_training_job_computes_at_the_bf16_peak_whatever_the_serving_precision():
    """Mixed-precision training computes in bf16: fp8 weights on the serving side (which
    select the fp8 peak, 1,978.9 TFLOP/s on the h100) leave the job at the bf16 peak, 989.4."""
    from mcengine.scenario import load_scenario
    from mcengine.stages.training import training_peak_tflops

    for overrides in ((), ("workload.bytes_per_param=1",)):
        s = load_scenario("h100", ('workload.kind="training"', *overrides))
        assert np.all(training_peak_tflops(s, draw_inputs(s, 0, 0, 4)) == 989.4)


def test_the_bf16_peak_of_a_dist_table_is_drawn_as_its_own_input():
    """A peak table of dists: the fp8 serving side draws ``gpu.peak_tflops`` from the fp8
    entry, the training job ``gpu.peak_tflops.bf16`` from the bf16 entry (its own stream,
    its own quantiles); the ratio of medians would have tied them to the fp8 draws."""
    from scipy import stats

    from mcengine.scenario import load_scenario
    from mcengine.scenario.sampling import input_stream_id
    from mcengine.stages.training import training_peak_tflops

    table = ('gpu.peak_tflops={bf16={dist="uniform", low=900, high=1000}, fp8={dist="uniform", low=1800, high=2000}}',)
    s = load_scenario("h100", ('workload.kind="training"', "workload.bytes_per_param=1", *table))
    inputs = draw_inputs(s, 0, 0, 4000)
    peak, fp8 = training_peak_tflops(s, inputs), inputs["gpu.peak_tflops"]
    assert peak.min() >= 900 and peak.max() <= 1000 and fp8.min() >= 1800
    assert stats.kstest((peak - 900) / 100, "uniform").pvalue > 1e-3
    assert abs(np.corrcoef(peak, fp8)[0, 1]) < 4 / np.sqrt(4000)  # independent draws: |r| within 4 standard errors of 0
    assert "gpu.peak_tflops.bf16" in s.uncertain_inputs() and input_stream_id("gpu.peak_tflops.bf16") != input_stream_id("gpu.peak_tflops")
    served = load_scenario("h100", ("workload.bytes_per_param=1", *table))  # inference: no such input
    assert "gpu.peak_tflops.bf16" not in served.inputs()


def test_a_job_waiting_for_swaps_and_an_elastic_one_by_hand():
    """A replacement that joins 2 h after a permanent failure: the job that waits idles 2 h
    - 12.5 min beyond its restart for each; the elastic one trains on without the failed
    unit's data-parallel replica (one of d for a GPU, NIC or host of 8 at tensor parallel 8). Daly's expression at the restart :func:`restart_with_swaps` makes, with the
    permanent rates by hand; hot spares (the default, a wait of 0) leave the job as it was."""
    from mcengine.analytic import training as at

    s, hot = _columns(H100)
    _, zero = _columns(H100, ["workload.training.swap_wait_minutes=0", "workload.training.elastic=true"])
    for name in ("ettr", "cost_per_mtok_trained_usd", "job_lost_hours_per_day"):
        np.testing.assert_array_equal(zero[name], hot[name], err_msg=name)
    waits = {}
    for elastic in ("false", "true"):
        _, waits[elastic] = _columns(H100, ["workload.training.swap_wait_minutes=120", f"workload.training.elastic={elastic}"])
    permanent_per_gpu_year = 0.025 + 5 * 0.002 + 0.002 + 0.004 + 0.07 / 8  # die, HBM, GSP, NIC (1 per GPU), host of 8
    rate = hot["job_interruptions_per_day"] / 24
    swaps = 16384 * permanent_per_gpu_year / 8766
    tau, delta = hot["checkpoint_interval_minutes"] / 60, hot["checkpoint_write_s"] / 3600
    beyond = 2.0 - 12.5 / 60
    for elastic, idle in (("false", 1.0), ("true", 1.0 / hot["training_data_parallel"])):
        read = 12.5 / 60 - np.log1p(-swaps / rate * -np.expm1(-beyond * idle * rate)) / rate
        np.testing.assert_allclose(waits[elastic]["ettr"], at.ettr(tau, delta, read, 1 / rate), rtol=1e-9)
    assert np.all(hot["training_data_parallel"] >= 2) and np.all(hot["training_tensor_parallel"] == 8)
    assert np.all(waits["false"]["ettr"] < waits["true"]["ettr"]) and np.all(waits["true"]["ettr"] < hot["ettr"])
    # the waits are lost hours of the causes needing swaps: transients and job faults lose no more than with hot spares
    lost = {k: waits["false"][f"job_lost_hours.{k}.per_day"] / hot[f"job_lost_hours.{k}.per_day"] for k in ("die", "software")}
    assert np.all(lost["die"] > 2 * lost["software"])


def test_lost_hours_by_unit_sum_the_causes_each_strikes():
    """gpu: die, hbm, gsp (and a Lite's co-packaged optics and lasers); nic: network; host: the host's own law; job: the four
    job fault classes. Their sum is the day's lost hours."""
    for ref, gpu_classes in ((H100, ("die", "hbm", "gsp")), (LITE, ("die", "hbm", "gsp", "optics", "laser"))):
        s, cols = _columns(ref)
        unit = {u: cols[f"job_lost_hours_by_unit.{u}.per_day"] for u in ("gpu", "host", "nic", "job")}
        cause = lambda c: cols[f"job_lost_hours.{c}.per_day"]  # noqa: E731
        np.testing.assert_allclose(unit["gpu"], sum(cause(c) for c in gpu_classes), rtol=1e-12)
        np.testing.assert_allclose(unit["nic"], cause("network"), rtol=1e-12)
        np.testing.assert_allclose(unit["job"], sum(cause(c) for c in ("software", "nccl_timeout", "sdc", "thermal")), rtol=1e-12)
        np.testing.assert_allclose(sum(unit.values()), cols["job_lost_hours_per_day"], rtol=1e-12)
        assert not any(k.startswith("job_lost_hours_by_unit.") and k.split(".")[1] not in unit for k in cols)


def test_the_jobs_interruptions_from_the_life_kernels_events_average_to_the_renewal_rates():
    """Through the chain the job's interruptions come from each trial's simulated events
    (they vary with the lifetime); their mean over 400 lifetimes of a 32-GPU cluster over 5
    years is the renewal closed form within 4 SEM, cause by cause and in all. Half the
    GPUs: half the cluster's events."""
    from tests.conftest import assert_mc

    s = api.check("h100", ["cluster.instances=4", "cluster.spare_gpus=8", 'workload.kind="training"'])
    cols = run_block(s, 5, 0, 400)
    renewal = training.renewal_rates(s, draw_inputs(s, 5, 0, 400), 32)
    per_day = {c: (a + b) * 24 for c, (a, b) in renewal.items()}
    assert cols["job_interruptions_per_day"].std() > 0  # the lifetime's randomness
    assert_mc(cols["job_interruptions_per_day"], float(np.mean(sum(per_day.values()))))
    for cause in ("die", "hbm", "network", "host"):
        assert_mc(cols[f"job_interruptions.{cause}.per_day"], float(np.mean(per_day[cause])))
    np.testing.assert_array_equal(cols["job_interruptions.software.per_day"], per_day["software"])
    lite = api.check("lite-h100", ["cluster.instances=2", "cluster.spare_gpus=8", 'workload.kind="training"'])
    cols_lite = run_block(lite, 5, 0, 400)
    renewal_lite = training.renewal_rates(lite, draw_inputs(lite, 5, 0, 400), 64)
    for cause in ("optics", "laser", "gsp"):  # the laser: a field-replaceable module, its failures module swaps
        assert_mc(cols_lite[f"job_interruptions.{cause}.per_day"], float(np.mean(sum(renewal_lite[cause]) * 24)))
    half = api.check("h100", ["cluster.instances=4", "cluster.spare_gpus=8", 'workload.kind="training"', "workload.training.job_gpus=16"])
    np.testing.assert_allclose(run_block(half, 5, 0, 8)["job_interruptions.die.per_day"], cols["job_interruptions.die.per_day"][:8] / 2,
                               rtol=1e-12)


def test_a_training_cluster_need_not_be_servable():
    """Llama-3.1-405B in bf16 (812 GB of weights) fits no 8-H100 instance (640 GB): as a
    training job the chain runs, its serving side serves no tokens (slo_met 0, an
    infinite cost per output token and TTFT), and the job's columns are those of the same
    job whose serving side holds the model in fp8 (training computes at the bf16 peak
    whatever the serving precision; the cluster's cost at full load does not read the plan)."""
    base = ["cluster.instances=16", "cluster.spare_gpus=8", 'workload.kind="training"', 'workload.model="llama-3.1-405b"']
    bf16, fp8 = (api.check("h100", [*base, f"workload.bytes_per_param={b}"]) for b in (2, 1))
    assert not training.serves(bf16) and training.serves(fp8) and training.serves(api.check("h100", base[:2]))
    a, b = run_block(bf16, 1, 0, 4), run_block(fp8, 1, 0, 4)
    assert np.all(a["slo_met"] == 0) and np.all(a["tokens_per_s"] == 0) and np.all(np.isposinf(a["cost_per_mtok_usd"]))
    assert np.all(np.isposinf(a["ttft_ms"])) and np.all(b["slo_met"] == 1)
    for name in ("ettr", "mfu", "cost_per_mtok_trained_usd", "time_to_train_days", "job_interruptions_per_day"):
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    with pytest.raises(InputError, match="hbm_gb"):  # an inference scenario still needs its plan
        run_block(api.check("h100", ['workload.model="llama-3.1-405b"', "workload.bytes_per_param=2"]), 1, 0, 4)


def test_training_metrics_are_paired_over_every_trial_even_where_neither_cluster_serves():
    """A job trains whether or not its cluster serves tokens: its metrics' paired ratios
    cover every trial; a serving metric's only the trials where both serve (none here)."""
    from mcengine.runner.accumulate import Accumulators

    n = 8
    side = lambda ettr: {"trial": np.arange(n), "slo_met": np.zeros(n), "tokens_per_s": np.zeros(n),  # noqa: E731
                         "cost_per_mtok_usd": np.full(n, np.inf), "ettr": np.full(n, ettr)}
    acc = Accumulators(("a", "b"))
    acc.add({"a": side(0.9), "b": side(0.72)})
    pair = acc.summary()["paired"]
    assert pair["ettr"]["ratio"]["mean"] == pytest.approx(0.8, rel=1e-12) and pair["ettr"]["p_b_below_a"] == 1.0
    assert pair["cost_per_mtok_usd"]["ratio"]["mean"] == np.inf  # no trial where both serve: an empty summary
