"""The training job's closed forms (mcengine.analytic.training, docs/training.md):
Daly's expected wall time against a Monte Carlo of the same job, Young's first order as
its limit, the exact optimal interval, and the step model by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mcengine.analytic import training as at
from mcengine.scenario.cards import load_model_card
from mcengine.validation.training import simulated_segment_hours


@pytest.mark.parametrize("tau_over_m", [0.05, 0.5, 2.0])
def test_daly_expected_wall_time_matches_a_monte_carlo_within_4_sem(tau_over_m):
    mtbf, delta, restart = 3.0, 0.02, 0.25
    tau = tau_over_m * mtbf
    wall = simulated_segment_hours(tau, delta, restart, mtbf, 200_000, np.random.default_rng(44))
    sem = wall.std(ddof=1) / math.sqrt(wall.size)
    expected = tau * float(at.daly_wall_factor(tau, delta, restart, mtbf))
    assert abs(wall.mean() - expected) < 4 * sem
    assert abs(tau / wall.mean() - float(at.ettr(tau, delta, restart, mtbf))) < 4 * sem * tau / wall.mean() ** 2


@pytest.mark.parametrize("idle", [1.0, 0.25])
def test_restarts_that_wait_for_swaps_match_a_monte_carlo_within_4_sem(idle):
    """40 % of the interruptions wait W = 2 h for a replacement (R = 0.25 h, M = 3 h): idle
    for all of it, or (elastic, a quarter of the replicas lost) for its idle-equivalent
    0.25 x 1.75 h. Daly's expression at ``restart_with_swaps``' restart against segments
    whose restarts are drawn afresh from the two kinds."""
    mtbf, delta, restart, wait, tau = 3.0, 0.02, 0.25, 2.0, 1.5
    rate, swap_rate = 1 / mtbf, 0.4 / mtbf
    read = float(at.restart_with_swaps(restart, wait, [swap_rate], rate, [idle], mtbf))
    kinds = (np.array([restart, restart + (wait - restart) * idle]), np.array([0.6, 0.4]))
    wall = simulated_segment_hours(tau, delta, kinds, mtbf, 200_000, np.random.default_rng(46))
    sem = wall.std(ddof=1) / math.sqrt(wall.size)
    assert abs(wall.mean() - tau * float(at.daly_wall_factor(tau, delta, read, mtbf))) < 4 * sem
    # by hand: R* = R - M ln(1 - 0.4 (1 - e^(-1.75 l / 3))); first order R + 0.4 x 1.75 l
    assert read == pytest.approx(restart - mtbf * math.log(1 - 0.4 * (1 - math.exp(-1.75 * idle / mtbf))), rel=1e-12)
    assert read == pytest.approx(restart + 0.4 * 1.75 * idle, rel=0.2)
    # the mean restart would miss: its Daly wall time is off by more than 4 SEM for the idle job
    if idle == 1.0:
        mean = restart + 0.4 * 1.75
        assert abs(wall.mean() - tau * float(at.daly_wall_factor(tau, delta, mean, mtbf))) > 4 * sem


def test_no_wait_beyond_the_restart_leaves_it_unchanged_and_an_elastic_job_loses_its_replicas_share():
    assert at.restart_with_swaps(0.25, 0.1, [0.3], 1.0, [1.0], 3.0) == 0.25  # the spare joins within the restart
    assert at.restart_with_swaps(0.25, 2.0, [0.0], 1.0, [1.0], 3.0) == 0.25  # no interruption needs a swap
    # tensor parallel innermost, then data parallel: an 8-GPU host at TP 8 holds a slice of one replica of 64, at TP 4 of two;
    # 300 GPUs at TP 8 slices of 38
    np.testing.assert_array_equal(at.replicas_lost_share(np.array([8, 1, 300]), 8, 64), [1 / 64, 1 / 64, 38 / 64])
    assert at.replicas_lost_share(8, 4, 64) == 2 / 64
    assert at.replicas_lost_share(8, 4, 2) == 1.0  # a unit across all the job's replicas stops it all


def test_young_first_order_is_the_small_interval_limit():
    mtbf, delta, restart = 1000.0, 0.01, 0.1
    tau = float(at.young_interval(delta, mtbf))
    assert tau == pytest.approx(math.sqrt(2 * 0.01 * 1000.0))  # sqrt(20) = 4.472
    # the second-order terms of e^x: (tau + delta + R)^2 / (2 M^2) ~ 1e-5
    assert float(at.ettr(tau, delta, restart, mtbf)) == pytest.approx(float(at.young_ettr(tau, delta, restart, mtbf)), abs=2e-5)
    assert float(at.optimal_interval(delta, mtbf)) == pytest.approx(tau, rel=math.sqrt(delta / (2 * mtbf)))


def test_optimal_interval_solves_the_stationary_equation_and_daly_approximates_it():
    # (1 - tau/M) e^((tau + delta)/M) = 1; at delta = M = 1: W0(-e^-2) = -0.158594..., tau = 0.841406
    assert float(at.optimal_interval(1.0, 1.0)) == pytest.approx(1.0 - 0.15859433956303937, rel=1e-12)
    for delta, mtbf in ((0.001, 3.0), (0.1, 3.0), (1.0, 2.0)):
        tau = float(at.optimal_interval(delta, mtbf))
        assert (1 - tau / mtbf) * math.exp((tau + delta) / mtbf) == pytest.approx(1.0, rel=1e-9)
        # Daly's higher-order interval is within a per cent of the exact one for delta << M
        if delta / mtbf < 0.05:
            assert float(at.daly_interval(delta, mtbf)) == pytest.approx(tau, rel=0.01)


def test_optimal_never_does_worse_than_any_fixed_interval():
    rng = np.random.default_rng(7)
    for _ in range(200):
        mtbf, delta, restart = 10 ** rng.uniform(-1, 2), 10 ** rng.uniform(-4, 0), rng.uniform(0, 1)
        best = float(at.ettr(at.optimal_interval(delta, mtbf), delta, restart, mtbf))
        grid = np.logspace(-5, 2, 400) * mtbf
        assert best >= at.ettr(grid, delta, restart, mtbf).max() * (1 - 1e-12)


def _hardware(n=1, peak=1e15, eff=0.5, hbm=1e12, link=1e11, so=1e10, domain=8):
    a = lambda x: np.full(n, float(x))  # noqa: E731
    return at.Hardware(a(peak), a(eff), a(hbm), a(link), a(so), a(0.0), a(0.0), a(0.0), domain)


def test_one_gpu_step_is_the_flops_over_the_achieved_peak():
    card = load_model_card("llama-3-8b", "workload.model", [])
    job = at.Job(1, 4096, 4096 * 8, 1, np.zeros(1), np.zeros(1), np.full(1, 34.0), ("zero1",), ("none",))
    out = at.plan(card, job, _hardware())
    flops = at.model_flops_per_token(card, 4096)
    assert flops == 6 * at.params_active(card) + 12 * 32 * 32 * 128 * 4096
    assert float(out["step_s"][0]) == pytest.approx(4096 * 8 * flops / (1e15 * 0.5), rel=1e-12)
    assert float(out["mfu"][0]) == pytest.approx(0.5, rel=1e-12)  # no communication, no bubble: MFU = efficiency


def test_pipeline_bubble_and_recomputation_by_hand():
    card = load_model_card("llama-3-8b", "workload.model", [])
    job = at.Job(4, 4096, 4096 * 8, 1, np.zeros(1), np.zeros(1), np.full(1, 34.0))
    out = at.evaluate(card, job, _hardware(so=1e30), 1, 4, 1, "zero1", "full")
    assert float(out["bubble"][0]) == pytest.approx(3 / (8 + 3))  # (p - 1) / (m + p - 1), m = 8 sequences
    flops = at.model_flops_per_token(card, 4096) * 8 / 6  # a second forward
    assert float(out["step_s"][0]) == pytest.approx(8 * 4096 * flops / 4 / (1e15 * 0.5) / (1 - 3 / 11), rel=1e-9)


def test_llama3_405b_mfu_fit_and_held_out():
    """Llama 3 405B (docs/training.md#anchors): 43 % BF16 MFU on 8,192 H100s is the fit of
    the training compute efficiency (0.74); 41 % on 16,384 is held out (within 15 %)."""
    card = load_model_card("llama-3.1-405b", "workload.model", [])

    def mfu(gpus):
        hw = _hardware(peak=989.4e12, eff=0.74, hbm=80e9 * 0.9, link=450e9 * 0.8, so=50e9 * 0.8)
        hw = at.Hardware(**{**hw.__dict__, "alpha_s": np.full(1, 5e-6), "hop_s": np.full(1, 1e-6), "scale_out_hop_s": np.full(1, 4e-6)})
        job = at.Job(gpus, 8192, 16 * 2**20, 4, np.zeros(1), np.full(1, 0.9), np.full(1, 34.0))
        return float(at.plan(card, job, hw)["mfu"][0])

    assert mfu(8192) == pytest.approx(0.43, abs=0.01)
    assert mfu(16384) == pytest.approx(0.41, rel=0.15)
