"""The request-level serving simulator (mcengine/kernels/serve) configured as plain
queues, against closed forms within 4 standard errors (independent replications, fixed
seeds), and its reproducibility (docs/serve.md#closed-form-checks)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mcengine.analytic import queueing_closed as qc
from mcengine.errors import InputError
from mcengine.standalone.serve import ServingSystem, latency_summary, mser_truncation, queue_system, simulate_requests

REPLICATIONS = 16
REQUESTS = 20_000
WARMUP = 2_000


def _replicated(system, lengths, lam, stat, seed=7):
    """``stat(table)`` over the measured requests of each replication: (mean, SEM)."""
    values = []
    for r in range(REPLICATIONS):
        df, _ = simulate_requests(system, lam, REQUESTS, seed=seed, replication=r, lengths=lengths)
        values.append(stat(df.iloc[WARMUP:]))
    values = np.asarray(values)
    return values.mean(), values.std(ddof=1) / math.sqrt(REPLICATIONS)


def _within(estimate, exact):
    mean, sem = estimate
    assert sem > 0
    assert abs(mean - exact) < 4 * sem, (mean, exact, sem)


def _wait(df):
    return df.ttft_s.mean()  # (prefill takes no time: the first token comes as service starts)


def _sojourn(df):
    return (df.finish_s - df.arrival_s).mean()


def test_mm1_mean_wait_sojourn_and_quantile():
    lam, mu = 0.5, 1.0
    system, lengths = queue_system(1, 1.0 / mu, exponential=True)
    _within(_replicated(system, lengths, lam, _wait), qc.mm1_wait_mean(lam, mu))  # 1.0 s
    _within(_replicated(system, lengths, lam, _sojourn), qc.mm1_sojourn_mean(lam, mu))  # 2.0 s
    p90 = _replicated(system, lengths, lam, lambda df: np.quantile(df.finish_s - df.arrival_s, 0.9))
    _within(p90, qc.mm1_sojourn_quantile(lam, mu, 0.9))  # ln(10) / 0.5 = 4.605 s


@pytest.mark.parametrize("requests", [20_000, 200_000])
def test_mm1_p99_wait_by_mser_and_sectioning_within_4_sem(requests):
    """The estimator of ``mcengine serve`` and the fit table on one run (no replications):
    MSER-5's warm-up left out, the P99 wait of the rest against M/M/1's ``ln(rho / 0.01) /
    (mu - lam)`` = 7.82 s at rho = 0.5, within 4 standard errors of its sectioning over 20
    batches, at two run lengths; the mean wait likewise (1 s)."""
    lam, mu = 0.5, 1.0
    system, lengths = queue_system(1, 1.0 / mu, exponential=True)
    df, busy = simulate_requests(system, lam, requests, seed=13, lengths=lengths)
    s = latency_summary(df, busy, system, "mser5")
    assert requests - s["requests_measured"] <= requests // 2
    for key, exact in (("p99", qc.mm1_wait_quantile(lam, mu, 0.99)), ("mean", qc.mm1_wait_mean(lam, mu))):
        _within((s["ttft_ms"][key] / 1e3, s["ttft_sem_ms"][key] / 1e3), exact)


def test_mser_cuts_a_step_at_its_end_and_a_stationary_series_not_at_all():
    """MSER-5 by hand: 500 values of 10 then 0, 1, 0, 1, ..: the batches of five after the
    step are 0.4 / 0.6 (squared error 0.01 / (600 - d) per batch left, least at d = 100 batches,
    the step's end); a series without a step is not cut; a series of under two batches neither."""
    step = np.r_[np.full(500, 10.0), np.tile([0.0, 1.0], 2500)]
    assert mser_truncation(step) == 500
    assert mser_truncation(np.tile([0.0, 1.0], 2500)) == 0
    assert mser_truncation(np.arange(9.0)) == 0


def test_md1_pollaczek_khinchine_mean_wait():
    lam, d = 0.6, 1.0
    system, lengths = queue_system(1, d, exponential=False)
    _within(_replicated(system, lengths, lam, _wait), qc.md1_wait_mean(lam, d))  # 0.75 s
    sojourn = _replicated(system, lengths, lam, _sojourn)
    _within(sojourn, qc.md1_wait_mean(lam, d) + d)


def test_static_one_instance_is_the_md_bulk_service_queue():
    """Static batching on one instance with a cycle of ``T`` whatever the batch and batches
    never full: the M/D^[1,inf]/1 bulk-service queue. The instance takes everyone waiting
    when it falls idle (it does not wait to fill a batch); a cycle ends with someone waiting
    with probability ``1 - e^(-a)``, ``a = lambda T``, else the instance idles ``1 / lambda`` on
    average: an arrival finds it idle (and rides alone at once) with probability ``e^(-a) /
    (a + e^(-a))``, and one that finds it busy waits the cycle's residual, ``T / 2`` on
    average (renewal reward), so ``E[W] = T^2 / (2 (T + e^(-a) / lambda))``."""
    lam, cycle, top = 1.0, 1.5, 64  # P(more than 64 arrivals in one cycle) ~ 1e-70
    system = ServingSystem("static", 1, 1, 2, top, decode_s=np.r_[0.0, np.full(top, cycle)], prefill_s=np.zeros(top + 1))
    a = lam * cycle
    idle = math.exp(-a) / (a + math.exp(-a))
    _within(_replicated(system, "fixed", lam, lambda df: float(np.mean(df.ttft_s == 0.0))), idle)  # 0.129
    _within(_replicated(system, "fixed", lam, _wait), cycle**2 / (2.0 * (cycle + math.exp(-a) / lam)))  # 0.653 s


def test_static_dispatch_takes_the_lowest_idle_instance_at_once():
    """Two static instances: a request that finds both idle starts at once on instance 0 (the
    lowest index) alone; one arriving while instance 0 is busy starts at once on instance 1;
    requests arriving while both are busy leave together with the first to fall idle."""
    system = ServingSystem("static", 2, 1, 2, 64, decode_s=np.r_[0.0, np.full(64, 1.0)], prefill_s=np.zeros(65))
    df, _ = simulate_requests(system, 0.01, 400, seed=3)
    alone = df.arrival_s.diff().fillna(np.inf).to_numpy() > 1.0  # the one before it has finished
    assert np.all(df.ttft_s[alone] == 0.0) and np.all(df.instance[alone] == 0)
    df, _ = simulate_requests(system, 10.0, 4000, seed=3)  # batches of about 5, never full
    starts = (df.arrival_s + df.ttft_s).to_numpy()
    epochs = np.unique(starts)
    first = epochs[np.minimum(np.searchsorted(epochs, df.arrival_s.to_numpy()), len(epochs) - 1)]
    np.testing.assert_allclose(starts, first, rtol=0, atol=1e-9)  # every request leaves with the first batch to start after it arrives
    assert df.groupby([df.instance, starts]).size().max() > 1 and set(df.instance) == {0, 1}


def test_mmc_erlang_c_waiting_probability_and_mean_wait():
    lam, mu, c = 2.1, 1.0, 3
    system, lengths = queue_system(c, 1.0 / mu, exponential=True)
    assert qc.erlang_c(c, lam / mu) == pytest.approx(5.145 / (5.305 + 5.145), rel=1e-12)  # by hand: 1.5435/0.3 over 1 + 2.1 + 2.205 + that
    _within(_replicated(system, lengths, lam, lambda df: (df.ttft_s > 0).mean()), qc.erlang_c(c, lam / mu))
    _within(_replicated(system, lengths, lam, _wait), qc.mmc_wait_mean(lam, mu, c))


def test_gamma_arrivals_have_the_given_rate_and_cv():
    system, lengths = queue_system(1, 0.1, exponential=False)
    df, _ = simulate_requests(system, 2.0, 40_000, seed=3, arrival="gamma", arrival_cv=2.0, lengths=lengths)
    gaps = np.diff(np.r_[0.0, df.arrival_s.to_numpy()])
    n = len(gaps)
    assert abs(gaps.mean() - 0.5) < 4 * gaps.std() / math.sqrt(n)
    # the CV (2) by its square: E[g^2] = (1 + cv^2) / lam^2 = 1.25, its SEM from the sample of g^2
    assert abs((gaps**2).mean() - 1.25) < 4 * (gaps**2).std() / math.sqrt(n)


def test_same_seed_same_numbers_and_replications_differ():
    system, lengths = queue_system(2, 1.0, exponential=True)
    a, busy_a = simulate_requests(system, 1.5, 5_000, seed=11, replication=2, lengths=lengths)
    b, busy_b = simulate_requests(system, 1.5, 5_000, seed=11, replication=2, lengths=lengths)
    c, _ = simulate_requests(system, 1.5, 5_000, seed=11, replication=3, lengths=lengths)
    assert a.equals(b) and np.array_equal(busy_a, busy_b)
    assert not np.array_equal(a.arrival_s.to_numpy(), c.arrival_s.to_numpy())


def _lone(mode, **tables):
    """One request every 1,000 s on a lightly loaded instance: it never meets another."""
    system = ServingSystem(mode, 2 if mode == "disaggregated" else 1, 2048, 64, 4, prefill_instances=1 if mode == "disaggregated" else 0,
                           prefill_batch_max=4 if mode == "disaggregated" else 0, **tables)
    df, _ = simulate_requests(system, 1e-3, 50, seed=1)
    return df


def test_a_lone_request_sees_the_tables_step_times():
    decode = np.array([0.0, 0.010, 0.011, 0.012, 0.013])
    prefill = np.array([0.0, 0.2, 0.3, 0.4, 0.5])
    df = _lone("static", decode_s=decode, prefill_s=prefill)
    assert np.allclose(df.ttft_s, 0.2, rtol=1e-9) and np.allclose(df.tpot_s, 0.010, rtol=1e-9)
    df = _lone("disaggregated", decode_s=decode, prefill_s=prefill, prefill_busy_s=prefill / 4, transfer_s=prefill / 100)
    assert np.allclose(df.ttft_s, 0.2 + 0.002, rtol=1e-9) and np.allclose(df.tpot_s, 0.010, rtol=1e-9)
    # continuous: the prompt (2,048 tokens) is one step's chunk (budget 4,096, grid 0 / 2,048 / 4,096 tokens)
    mixed = np.array([[0.0, 0.15, 0.3], [0.010, 0.16, 0.31], [0.011, 0.17, 0.32], [0.012, 0.18, 0.33], [0.013, 0.19, 0.34]])
    df = _lone("continuous", decode_s=decode, prefill_s=np.zeros(5), mixed_s=mixed, chunk_tokens=4096.0)
    assert np.allclose(df.ttft_s, 0.15, rtol=1e-9) and np.allclose(df.tpot_s, 0.010, rtol=1e-9)


def test_a_full_kv_cache_preempts_the_request_admitted_last_and_it_recomputes():
    """Two requests of 10 prompt and 100 output tokens arriving together on one instance
    whose KV cache holds 150 tokens; decode steps take 1 s, a chunk of ``c`` of the
    20-token budget ``c/20`` s more. By hand, from request 0's arrival: request 0 prefills
    alone (0.5 s), request 1 joins (a 1.5 s step), both decode until, at 65 s, 75 + 75
    tokens of KV leave no room for the next step: request 1 (admitted last, 64 tokens
    generated) is preempted; 75 + 1 + 74 <= 150 lets it back in, and at 67 s, 2 s into
    re-prefilling its 74 tokens, it is preempted again; request 0 ends at 101 s (its 99
    steps after the first token, two of them 1.5 s and 2 s long); request 1 then
    re-prefills alone (3 steps of 20 tokens, 1 s each, one of 14 tokens, 0.7 s), gets its
    65th token at 104.7 s and its 100th at 139.7 s."""
    mixed = np.array([[0.0, 1.0], [1.0, 2.0], [1.0, 2.0]])
    system = ServingSystem("continuous", 1, 10, 100, 2, decode_s=np.array([0.0, 1.0, 1.0]), prefill_s=np.zeros(3), mixed_s=mixed,
                           chunk_tokens=20.0, kv_capacity_tokens=150.0)
    df, _ = simulate_requests(system, 1e6, 2, seed=0)
    assert df.preemptions.tolist() == [0, 2]
    start = df.arrival_s[0]
    assert (df.finish_s - start).to_numpy() == pytest.approx([101.0, 139.7], rel=1e-9)
    assert (df.first_token_s - start).to_numpy() == pytest.approx([0.5, 2.0], rel=1e-9)



def test_least_loaded_dispatch_counts_every_instance_at_the_arrival_time():
    """Two continuous instances, one-token prompts (a chunk of one token: one prompt per
    step), two output tokens, every step 1.75 s; arrivals nearly every second (gamma, CV
    0.05: a0 .. a3 about 0, 1, 2, 3 s). By hand: request 0 goes to instance 0 (first token
    a0 + 1.75, done a0 + 3.5), request 1 to instance 1 (done a1 + 3.5); at a2 both run one
    request, the tie goes to instance 0, and request 2 joins it at its next boundary
    a0 + 3.5 (first token a0 + 5.25). At a3 instance 0 has two requests not done (request 0
    leaves only at a0 + 3.5 > a3, request 2) and instance 1 one: request 3 goes to instance
    1, joins it as request 1 leaves (a1 + 3.5) and has its first token at a1 + 5.25. (A
    router reading instance 0's count after settling its departure at a0 + 3.5 saw a tie
    at a3 and sent request 3 to instance 0 too.)"""
    tau = 1.75
    system = ServingSystem("continuous", 2, 1, 2, 4, decode_s=np.r_[0.0, np.full(4, tau)], prefill_s=np.zeros(5),
                           mixed_s=np.full((5, 2), tau), chunk_tokens=1.0)
    df, _ = simulate_requests(system, 1.0, 4, seed=0, arrival="gamma", arrival_cv=0.05)
    a = df.arrival_s.to_numpy()
    assert a[0] + tau < a[2] < a[3] < a[0] + 2 * tau and a[1] + tau < a[3] < a[1] + 2 * tau  # the case's timing
    assert df.instance.tolist() == [0, 1, 0, 1]
    assert df.first_token_s.to_numpy() == pytest.approx([a[0] + tau, a[1] + tau, a[0] + 3 * tau, a[1] + 3 * tau], rel=1e-12)
    assert df.finish_s.to_numpy() == pytest.approx([a[0] + 2 * tau, a[1] + 2 * tau, a[0] + 4 * tau, a[1] + 4 * tau], rel=1e-12)

def _lengths_system(length_cv):
    """Static batches of one request on 64 instances (nobody waits): 2,048-token prompts and
    256-token outputs on average."""
    return ServingSystem("static", 64, 2048, 256, 1, decode_s=np.array([0.0, 1e-3]), prefill_s=np.array([0.0, 1e-3]), length_cv=length_cv)


def test_spread_lengths_have_the_workload_means_and_the_cv():
    """``length_cv = 0.5``: prompt and output lengths drawn per request from a gamma law of
    the workload's means and CV 0.5 (rounded to whole tokens; below one token has
    probability ~1e-15), within 4 SEM over replications; the arrivals are the same
    numbers as without the spread (their own stream), and 0 is fixed lengths."""
    stats = []
    for r in range(REPLICATIONS):
        df, _ = simulate_requests(_lengths_system(0.5), 20.0, 4_000, seed=3, replication=r)
        stats.append([df.prompt_tokens.mean(), df.prompt_tokens.std() / df.prompt_tokens.mean(),
                      df.output_tokens.mean(), df.output_tokens.std() / df.output_tokens.mean()])
    stats = np.asarray(stats)
    for j, exact in enumerate((2048.0, 0.5, 256.0, 0.5)):
        _within((stats[:, j].mean(), stats[:, j].std(ddof=1) / math.sqrt(REPLICATIONS)), exact)
    fixed, _ = simulate_requests(_lengths_system(0.0), 20.0, 4_000, seed=3, replication=REPLICATIONS - 1)
    assert (fixed.prompt_tokens == 2048).all() and (fixed.output_tokens == 256).all()
    assert np.array_equal(fixed.arrival_s, df.arrival_s) and not np.array_equal(fixed.finish_s, df.finish_s)


def test_spread_lengths_fill_the_kv_cache_and_preempt():
    """A continuous instance whose KV cache holds exactly its batch of 8 requests at the
    mean lengths (8 x 2,304 tokens) never preempts with fixed lengths; with lengths of CV 1
    long requests overflow it and are preempted, and every request still ends with its
    output tokens."""
    mixed = np.c_[np.r_[0.0, np.full(8, 0.02)], np.r_[0.05, np.full(8, 0.06)]]
    runs = {}
    for cv in (0.0, 1.0):
        system = ServingSystem("continuous", 1, 2048, 256, 8, decode_s=np.r_[0.0, np.full(8, 0.02)], prefill_s=np.zeros(9), mixed_s=mixed,
                               chunk_tokens=2048.0, kv_capacity_tokens=8 * 2304.0, length_cv=cv)
        runs[cv], _ = simulate_requests(system, 1.2, 3_000, seed=5)
    assert runs[0.0].preemptions.sum() == 0 and runs[1.0].preemptions.sum() > 0
    spread = runs[1.0]
    assert np.all(np.isfinite(spread.finish_s)) and np.all(spread.finish_s >= spread.first_token_s)


def test_bad_input_names_the_option():
    system, lengths = queue_system(1, 1.0, exponential=True)
    with pytest.raises(InputError, match="--arrival"):
        simulate_requests(system, 0.5, 10, arrival="bursty")
    with pytest.raises(InputError, match="--cv"):
        simulate_requests(system, 0.5, 10, arrival="gamma", arrival_cv=0.0)
    with pytest.raises(InputError, match="--requests"):
        simulate_requests(system, 0.5, 0)
