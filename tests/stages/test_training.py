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
    from mcengine.scenario.sampling import draw_inputs
    from mcengine.stages.training import training_peak_tflops

    for overrides in ((), ("workload.bytes_per_param=1",)):
        s = load_scenario("h100", overrides)
        assert np.all(training_peak_tflops(s, draw_inputs(s, 0, 0, 4)) == 989.4)
