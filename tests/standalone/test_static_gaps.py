"""The static mode's completion gaps as the simulator shows them (docs/load.md#static,
docs/load/static_gaps.py): the measures read from its per-request rows, by hand, and the
exact light-traffic limit of the gaps a waiting request sees."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mcengine.scenario import load_scenario
from mcengine.standalone.serve import serving_system, simulate_requests
from tests.docs_scripts import docs_script, refused


@pytest.fixture(scope="module")
def gaps():
    return docs_script("load/static_gaps")


def hand_rows() -> tuple[pd.DataFrame, np.ndarray]:
    """Per-request rows of two instances by hand (:func:`test_gap_measures_by_hand`) and their pass times by batch."""
    return pd.DataFrame({
        "arrival_s": [0.0, 0.2, 1.0, 1.5, 3.0],
        "first_token_s": [0.5, 0.7, 2.6, 2.6, 3.5],
        "finish_s": [2.0, 2.2, 4.0, 4.0, 5.0],
        "instance": [0, 1, 0, 0, 1],
        "measured": [True] * 5,
    }), np.array([0.0, 0.5, 0.6])


def test_gap_measures_by_hand(gaps):
    """Two instances, a pass of ``k`` prompts taking 0.4 + 0.1 k s: requests at 0 and 0.2 find
    them idle (batches 0 -> 2.0 and 0.2 -> 2.2); those at 1.0 and 1.5 wait for the completion
    at 2.0 (R = 1.0 and 0.5) and leave in one batch (2.0 -> 4.0); the one at 3.0 finds
    instance 1 idle since 2.2 (3.0 -> 5.0). Three of five requests found an instance idle,
    three of four batches an idle instance started, and the gaps between completions 2.0,
    2.2, 4.0, 5.0 are 0.2, 1.8, 1.0: squared CV 0.64/1.5 = 0.4267."""
    df, prefill = hand_rows()
    got = gaps.gap_measures(df, gaps.batch_rows(df, prefill))
    assert got["idle"] == pytest.approx(0.6)
    assert got["residual"] == pytest.approx(0.75)
    assert got["idle_started"] == pytest.approx(0.75)
    assert got["gaps_cv2"] == pytest.approx((0.8**2 + 0.8**2) / 3.0)


def test_wait_measures_by_hand(gaps):
    """The requests of :func:`test_gap_measures_by_hand`: the one at 0 finds both instances
    idle, the one at 0.2 instance 0 busy (0 -> 2.0), those at 1.0 and 1.5 both busy and the
    one at 3.0 instance 0 busy (2.0 -> 4.0; instance 1 idle since 2.2): busy 0, 1, 2, 2, 1.
    The waiting ones wait 1.0 and 0.5 s and see the completions at 2.0 and 2.2: residuals
    (1.0, 1.2) and (0.5, 0.7)."""
    df, prefill = hand_rows()
    got = gaps.wait_measures(df, gaps.batch_rows(df, prefill), 2)
    assert got["busy"].tolist() == [0, 1, 2, 2, 1]
    np.testing.assert_allclose(got["wait"], [1.0, 0.5], rtol=1e-12)
    np.testing.assert_allclose(got["residuals"], [[1.0, 1.2], [0.5, 0.7]], rtol=1e-12)


@pytest.mark.parametrize("design, cv, load", [("h100", 1.0, 0.2), ("lite-h100", 2.0, 0.1), ("lite-h100", 1.0, 0.8)])
def test_model_pieces_make_the_models_mean_ttft(gaps, design, cv, load):
    """``--waits``' model pieces (:func:`model_pieces`) put together as the mean TTFT's
    ``prefill(1) + P(wait) (wait + f (batch|wait - 1))`` give the fast model's mean TTFT (to
    1e-12): the flat pass and the one-second step read its wait and its batch exactly."""
    from mcengine.analytic import queue_static as qs
    from mcengine.standalone.serve import fast_latency

    s = serving_system(load_scenario(design), "static", 16)
    top, o = s.batch_max, s.output_tokens
    rate = load * s.capacity_tokens_per_s / o
    wait, batch = gaps.model_pieces(s, rate, cv)
    idle = float(qs.completion_gaps(rate, 16, s.prefill_s[1] + (o - 1) * s.decode_s[1], s.prefill_s[top] + (o - 1) * s.decode_s[top], top,
                                    qs.STATIC_GAP_CV2, cv).idle_probability)
    f = (s.prefill_s[top] - s.prefill_s[1]) / (top - 1)
    want = float(fast_latency(s, rate, cv, 0.99).ttft_mean_s)
    assert s.prefill_s[1] + (1.0 - idle) * (wait + f * (batch - 1.0)) == pytest.approx(want, rel=1e-12)
    assert 1.0 < batch < top


REPLICATIONS = 6


@pytest.mark.parametrize("instances, offered", [(2, 0.2)])
def test_the_gaps_a_waiting_request_sees_in_light_traffic(gaps, instances, offered):
    """In light traffic a request that finds all ``c`` instances busy finds each holding one
    request started at a Poisson arrival within the last ``T(1)``, uniform over it, and waits
    ``T(1) - max`` of ``c`` uniforms: mean ``T(1) / (c + 1)``, the squared CV ``(c - 1) / (c +
    1)`` of gaps of mean ``T(1) / c`` (docs/load.md#static). The simulator's static instances
    (h100, ``lambda T(1) =`` ``offered``) within 4 standard errors of :data:`REPLICATIONS`
    replications of 100,000 requests."""
    system = serving_system(load_scenario("h100"), "static", instances)
    cycle_1 = system.prefill_s[1] + (system.output_tokens - 1) * system.decode_s[1]
    seen = []
    for rep in range(REPLICATIONS):
        df, _ = simulate_requests(system, offered / cycle_1, 100_000, seed=11, replication=rep)
        df["measured"] = np.arange(len(df)) >= len(df) // 5
        seen.append(2.0 * instances * gaps.gap_measures(df, gaps.batch_rows(df, system.prefill_s))["residual"] / cycle_1 - 1.0)
    sem = np.std(seen, ddof=1) / np.sqrt(REPLICATIONS)
    assert abs(np.mean(seen) - (instances - 1) / (instances + 1)) <= 4.0 * sem, (np.mean(seen), sem)


def test_the_models_terms_fed_the_simulators_gaps_and_idle_share(gaps):
    """h100, Poisson, load 0.3 of capacity on 16 instances (a cell the fit table fails, the
    model's mean TTFT 19 % short): the same terms fed the simulator's own pieces (the gaps a
    waiting request sees and the share that finds an instance idle; the spill keeps the
    model's ``c_g^2``) put the mean within 5 % and the P99 within 10 % of the simulator's
    (docs/load.md#static): what the cell lacks is those two pieces, not the terms."""
    scenario = load_scenario("h100")
    row = gaps.cell(scenario, serving_system(scenario, "static", 16), 0.3, "poisson", 1.0)
    assert abs(row["pieces mean err"]) <= 0.05 and abs(row["pieces p99 err"]) <= 0.10, row
    assert row["idle sim"] > row["idle model"] and row["seen"] > row["model"] + 0.5, row


@pytest.mark.parametrize("servers", [1, 2, 16])
def test_independent_streams_of_equal_uniform_and_exponential_cycles(gaps, servers):
    """:func:`independent_seen_cv2` against its closed forms: equal cycles ``T`` give ``E[R] =
    T / (c + 1)``, the light-traffic limit ``(c - 1) / (c + 1)``; cycles uniform on ``[0, 2m]``
    give ``h(t) = (1 - t / 2m)^2`` and ``E[R] = 2m / (2c + 1)``, so ``(2c - 1) / (2c + 1)``;
    exponential cycles give a Poisson superposition, 1. The two continuous laws are given
    as 100,000 quantiles (no random draw), so the integral's error is the grid's, under 10^-3."""
    n = 100_000
    u = (np.arange(n) + 0.5) / n
    assert gaps.independent_seen_cv2(np.full(50, 2.0), servers) == pytest.approx((servers - 1) / (servers + 1), abs=1e-12)
    assert gaps.independent_seen_cv2(2.0 * u, servers) == pytest.approx((2 * servers - 1) / (2 * servers + 1), abs=1e-3)
    assert gaps.independent_seen_cv2(-np.log1p(-u), servers) == pytest.approx(1.0, abs=2e-3)


def test_empty_share_closed_forms(gaps):
    """:func:`empty_share`: exponential gaps with Poisson arrivals put a completion's count
    geometric, ``E[s^N] = 1 / (1 + k (1 - s))``, whose root is ``s = 1 / k`` (0.4 at ``k =
    2.5``), the share the Markov chain of :func:`mcengine.analytic.queue_static.completion_gaps`
    gives on many instances (``P(idle) k`` on 400 instances at ``a/c = 2.5``: within 1 %); a
    mean batch of at most one is all singletons (1); more variable gaps or bursts leave more
    completions empty."""
    from mcengine.analytic import queue_static as qs

    assert gaps.empty_share(2.5, 1.0, 1.0) == pytest.approx(0.4, abs=1e-12)
    assert gaps.empty_share(1.0, 2.0, 4.0) == 1.0 and gaps.empty_share(0.8, 1.0, 1.0) == 1.0
    chain = qs.completion_gaps(2.5 * 400 / 2.0, 400, 2.0, 2.0, 50)
    assert float(chain.idle_probability * chain.batch_mean) == pytest.approx(float(gaps.empty_share(chain.batch_mean, 1.0, 1.0)), rel=0.01)
    assert gaps.empty_share(2.5, 2.0, 1.0) > gaps.empty_share(2.5, 1.0, 1.0)
    assert gaps.empty_share(2.5, 1.0, 4.0) > gaps.empty_share(2.5, 1.0, 1.0)


@pytest.mark.parametrize("k", [2.0, 4.0])
def test_idle_start_share_closed_forms(gaps, k):
    """:func:`idle_start_share`: with no empty completions the two parts are the batches' gaps
    alone, squared CV ``(c - 1)/(c + 1)``; at ``c = k + 1 + 1/k`` instances and Poisson
    arrivals the two parts at ``s = 1/k`` (the rest ``k + 1`` arrival gaps long, squared CV
    ``(k^2 + k + 1)/(k + 1)^2 * 2 - 1``) make every gap exponential, ``c_g^2 = 1``, whose
    chain's root is ``1/k`` (:func:`test_empty_share_closed_forms`): the joint root is
    ``1/k``; a mean batch of at most one is all singletons."""
    servers = k + 1.0 + 1.0 / k
    assert float(gaps.two_part_gap_cv2(0.0, k, servers, 1.0)) == pytest.approx((servers - 1.0) / (servers + 1.0), abs=1e-12)
    assert float(gaps.two_part_gap_cv2(1.0 / k, k, servers, 1.0)) == pytest.approx(1.0, abs=1e-12)
    assert float(gaps.idle_start_share(k, servers, 1.0)) == pytest.approx(1.0 / k, abs=1e-12)
    assert float(gaps.idle_start_share(1.0, 16.0, 4.0)) == 1.0


@pytest.mark.parametrize("k, servers", [(2.0, 16.0), (4.0, 64.0)])
def test_idle_start_share_given_batch_gaps(gaps, k, servers):
    """:func:`idle_start_share` with the batch-ending gaps' squared CV given: the uniform
    phases' ``(c - 1)/(c + 1)`` is the default's root bit for bit, and ``v_Q = (k^2 + 1)/(k +
    1)^2`` (the value :func:`test_idle_start_share_closed_forms` reaches through ``c``) makes
    every gap exponential at ``s = 1/k`` on any pool, so the joint root is ``1/k``."""
    phases = (servers - 1.0) / (servers + 1.0)
    assert float(gaps.idle_start_share(k, servers, 1.0, phases)) == float(gaps.idle_start_share(k, servers, 1.0))
    exponential = (k * k + 1.0) / (k + 1.0) ** 2
    assert float(gaps.two_part_gap_cv2(1.0 / k, k, servers, 1.0, exponential)) == pytest.approx(1.0, abs=1e-12)
    assert float(gaps.idle_start_share(k, servers, 1.0, exponential)) == pytest.approx(1.0 / k, abs=1e-12)


@pytest.mark.parametrize("k, servers, arrival_cv2", [(2.43, 16, 1.0), (7.43, 64, 1.0), (2.43, 16, 4.0), (20.0, 128, 1.0)])
def test_idle_start_share_is_its_chains_at_its_own_gaps(gaps, k, servers, arrival_cv2):
    """:func:`idle_start_share`'s root is :func:`empty_share`'s at the two parts' gap law it
    gives (the joint solve is a fixed point of the two)."""
    s = float(gaps.idle_start_share(k, servers, arrival_cv2))
    assert 0.0 < s < 1.0
    assert float(gaps.empty_share(k, gaps.two_part_gap_cv2(s, k, servers, arrival_cv2), arrival_cv2)) == pytest.approx(s, abs=1e-12)


@pytest.mark.parametrize("k, gap_cv2, arrival_cv2", [(2.5, 2.3, 1.0), (4.0, 1.4, 4.0)])
def test_empty_share_is_its_chains_share(gaps, k, gap_cv2, arrival_cv2):
    """The chain :func:`empty_share` solves, run: ``i' = (i + 1 - N)^+`` with ``N`` drawn from
    its negative binomial law (mean ``k``, variance ``k c_a^2 + k^2 c_g^2``); the share of
    steps with ``N <= i`` over 8 batches of 25,000 steps (seed 3) within 4 standard errors
    of the root."""
    rng = np.random.default_rng(3)
    variance = k * arrival_cv2 + k * k * gap_cv2
    size, p = k * k / (variance - k), k / variance
    shares = []
    i = 0
    for _ in range(8):
        counts = rng.negative_binomial(size, p, 25_000)
        empty = 0
        for n in counts:
            empty += n <= i
            i = max(i + 1 - n, 0)
        shares.append(empty / counts.size)
    sem = np.std(shares, ddof=1) / np.sqrt(len(shares))
    assert abs(np.mean(shares) - float(gaps.empty_share(k, gap_cv2, arrival_cv2))) <= 4.0 * sem, (np.mean(shares), sem)


def _burst_chain_idle_share(offered: float, servers: int, arrival_cv2: float, waiting: int = 400) -> float:
    """The share :func:`burst_idle_share` gives, by a sparse solve of its chain: states ``-c ..
    waiting`` (the waiting side cut where its geometric tail is below 1e-24 in these cases: it
    falls as ``(a/b + c q) / (c + a/b)``, 0.87 at (40, 16, 9)), geometric bursts of
    mean ``b`` at rate ``lambda / b``, completions at ``(c - i) / T`` (``T = 1``, ``lambda = a``)."""
    from scipy.sparse import csc_matrix, lil_matrix
    from scipy.sparse.linalg import spsolve

    b = (1.0 + arrival_cv2) / 2.0
    states = np.arange(-servers, waiting + 1)
    n = states.size
    rates = lil_matrix((n, n))
    sizes = np.arange(1, n + 1)
    burst = (1.0 - 1.0 / b) ** (sizes - 1) / b
    for at, x in enumerate(states):
        for m, pm in zip(sizes, burst):
            rates[at, min(x + m, waiting) + servers] += offered / b * pm
        idle = max(-x, 0)
        if idle < servers:
            rates[at, (x - 1 if x <= 0 else 0) + servers] += servers - idle
    rates = rates.tocsr()
    generator = (rates.T - csc_matrix((np.asarray(rates.sum(axis=1)).ravel(), (range(n), range(n))), shape=(n, n))).tolil()
    generator[0, :] = 1.0
    pi = spsolve(generator.tocsc(), np.r_[1.0, np.zeros(n - 1)])
    idle = np.maximum(-states, 0)
    return float(np.sum(pi * (1.0 - (1.0 - 1.0 / b) ** idle)))


@pytest.mark.parametrize("offered, servers, arrival_cv2", [(18.0, 16, 4.0), (38.0, 16, 4.0), (5.0, 4, 2.0), (40.0, 16, 9.0)])
def test_burst_idle_share_is_its_chains(gaps, offered, servers, arrival_cv2):
    """:func:`burst_idle_share`'s closed form (the negative binomial's weights on the idle side)
    equals a sparse solve of the chain it is derived on, to 1e-12."""
    assert float(gaps.burst_idle_share(offered, servers, arrival_cv2)) == pytest.approx(_burst_chain_idle_share(offered, servers, arrival_cv2), abs=1e-12)


def test_burst_idle_share_tends_to_erlangs(gaps):
    """As the bursts shrink to single requests (``c_a^2 -> 1``) the share tends to the Markov
    chain's with Poisson arrivals, ``(1/E - 1) / (1/E + a/c)`` (Erlang B ``E``; 16 instances, ``a
    = 24``, a flat cycle), and bursts find more instances idle."""
    from mcengine.analytic import queue_static as qs

    a, c = 24.0, 16
    chain = qs.completion_gaps(a, c, 1.0, 1.0, 50)
    assert float(gaps.burst_idle_share(a, c, 1.0 + 1e-7)) == pytest.approx(float(chain.idle_probability), rel=1e-5)
    assert float(gaps.burst_idle_share(a, c, 4.0)) > float(chain.idle_probability)


def test_the_idle_share_from_the_chain_at_completions(gaps):
    """h100 on 16 instances, Poisson, loads 0.2 and 0.3 (cells the fit table fails; 100,000
    requests, seed 0): a request finds an instance idle with probability ``P0 / k`` (exact but for
    the warm-up's edge: to 10^-4) and the completions come ``k / lambda`` apart on average (to 1 %); :func:`empty_share`
    fed the simulator's ``k`` and gap squared CV is within 0.05 of its ``P0`` (0.60 / 0.44
    against 0.56 / 0.40), where the model's Markov chain gives 0.40 / 0.26; and independent
    instances would show a waiting request gaps of squared CV 0.88, where it sees 2.6 / 2.3:
    the hump is the instances' dependence, not the batch sizes' mixture (docs/load.md#static)."""
    scenario = load_scenario("h100")
    system = serving_system(scenario, "static", 16)
    for load in (0.2, 0.3):
        row = gaps.laws_cell(scenario, system, load, "poisson", 1.0)
        assert row["P0/k"] == pytest.approx(row["idle"], abs=1e-4) and row["gap*lam/k"] == pytest.approx(1.0, abs=0.01), row
        assert abs(row["P0 law"] - row["P0"]) <= 0.05 < row["P0"] - row["P0 model"], row
        assert row["independent"] < 0.9 and row["seen"] > 2.0, row


def test_the_bunching_starts_with_the_offered_load_not_the_cycles_growth(gaps):
    """``--pools``' cells (docs/load.md#static-direct): h100 on 32 instances at ``a/c = 1.1``
    (``lambda s`` 1.8) waits the unbunched ``T(k) / (c + 1)`` (1.05), on 8 instances at ``a/c =
    2.4`` (``lambda s`` 0.99) half as long again (1.49): the onset follows ``a/c``, which the
    model's weight ``min(1, max(0, a/c - 1))`` reads (0.11 and 1 at its own ``k``)."""
    scenario = load_scenario("h100")
    free, bunched = gaps.pools_cell(scenario, "h100", 32, 1.1), gaps.pools_cell(scenario, "h100", 8, 2.4)
    assert free["lam s"] > 1.5 and abs(free["unbunched"] - 1.0) < 0.1 and free["onset"] < 0.2, free
    assert bunched["lam s"] < 1.0 and bunched["unbunched"] > 1.4 and bunched["onset"] == 1.0, bunched
    assert gaps.pools_cell(scenario, "h100", 64, 11.0) is None  # past 0.95 of capacity


@pytest.mark.parametrize("argv", [["--design", "a100"], ["--loads", "0.5,1.2"], ["--instances", "0", "--phases"], ["--replications", "0", "--phases"]])
def test_cells_outside_the_grid_are_refused(gaps, argv, capsys):
    """``--design`` and ``--loads`` take subsets of the grid, ``--instances`` and
    ``--replications`` whole numbers of 1 or more; anything else exits 2 naming the option and
    what is allowed, before a cell is simulated."""
    refused(gaps.main, argv, capsys)


@pytest.mark.parametrize("load", [0.98, 0.99])
def test_the_spill_near_capacity_meets_the_simulator(load):
    """h100's static plan on 16 instances near capacity, Poisson (docs/load.md#near-capacity):
    the simulator's mean and P99 TTFT (200,000 requests, seed 0, MSER-5's warm-up left out,
    the fit table's rule; 0.2 s of CPU) against the fast model's, whose spill keeps the gaps'
    variance only over the walk's horizon and spreads its exponential part into the quantile
    (:func:`mcengine.analytic.queue_static._spill_wait`): within the fit table's tolerance (5 % on
    the mean, 10 % on the P99) plus 4 standard errors. The one-gap spill put them at +57 /
    +110 % and +34 / +47 %."""
    from mcengine.standalone.serve import fast_latency, serve_summary

    h100 = load_scenario("h100")
    system = serving_system(h100, "static", 16)
    demand = load * system.capacity_tokens_per_s
    body, _ = serve_summary(h100, demand, 200_000, 0, "poisson", 1.0, "static", 16, warmup="mser5")
    fast = fast_latency(system, demand / system.output_tokens, 1.0, 0.99)
    for stat, model, tolerance in (("mean", fast.ttft_mean_s, 0.05), ("p99", fast.ttft_q_s, 0.10)):
        sim, sem = body["ttft_ms"][stat], body["ttft_sem_ms"][stat]
        assert abs(float(model) * 1e3 - sim) <= tolerance * sim + 4.0 * sem, (stat, float(model) * 1e3, sim, sem)


def test_waiting_residual_closed_forms(gaps):
    """:func:`waiting_residual`: no idle instance (``s = 0``) leaves the renewal residual ``m (1
    + c_g^2) / 2``; exponential gaps leave a waiting request a memoryless gap's rest, ``m``,
    whatever ``s``; a mean batch of one leaves no request waiting (NaN)."""
    m = 2.5 / 2.0
    assert float(gaps.waiting_residual(2.5, 2.3, 0.0, 2.0)) == pytest.approx(m * 3.3 / 2.0, rel=1e-12)
    for s in (0.0, 0.3, 0.9):
        assert float(gaps.waiting_residual(2.5, 1.0, s, 2.0)) == pytest.approx(m, rel=1e-12)
    assert np.isnan(gaps.waiting_residual(1.0, 2.0, 1.0))


@pytest.mark.parametrize("k, gap_cv2", [(2.5, 2.3), (4.0, 0.6)])
def test_waiting_residual_is_its_chains(gaps, k, gap_cv2):
    """The chain :func:`waiting_residual` and :func:`empty_share` describe, run: gaps i.i.d. gamma
    (mean ``k``, arrival rate 1, squared CV ``gap_cv2``), ``N`` Poisson arrivals in each, the
    first ``min(N, i)`` riding the ``i`` idle instances and the rest waiting to the gap's end
    (their mean rest given ``N`` and ``w`` waiting, the last ``w`` of ``N`` uniform order
    statistics: ``X (w + 1) / (2 (N + 1))``), ``i' = (i + 1 - N)^+``. Over 8 batches of 25,000
    gaps (seed 5) the mean rest of a waiting request is within 4 standard errors of the
    formula at the chain's root ``s``."""
    rng = np.random.default_rng(5)
    i, rests = 0, []
    for _ in range(8):
        x = rng.gamma(1.0 / gap_cv2, k * gap_cv2, 25_000)
        counts = rng.poisson(x)
        total = waited = 0.0
        for gap, n in zip(x, counts):
            w = max(n - i, 0)
            total += gap * w * (w + 1) / (2.0 * (n + 1))
            waited += w
            i = max(i + 1 - n, 0)
        rests.append(total / waited)
    sem = np.std(rests, ddof=1) / np.sqrt(len(rests))
    s = float(gaps.empty_share(k, gap_cv2, 1.0))
    assert abs(np.mean(rests) - float(gaps.waiting_residual(k, gap_cv2, s))) <= 4.0 * sem, (np.mean(rests), sem)


def test_spill_walk_closed_forms(gaps):
    """:func:`spill_walk_left` (seeded runs, 200 patterns of 1,800 cycles kept): with the batch
    cap at one request Lindley's walk is a single-server queue seen at departures, ``W = L -
    N``. Equal gaps (no gaps' part, frozen or not) and one instance (its one gap is its whole
    cycle, whatever ``V``) give M/D/1, ``E[L] = rho + rho^2 / (2 (1 - rho))``, so ``E[W] =
    k^2 / (2 (1 - k))`` = 0.25 at ``k = 0.5``; independent exponential gaps (``V = k + k^2``)
    give M/M/1's geometric count, ``E[W] = k^2 / (1 - k)`` = 0.5. The frozen phases leave
    fewer requests than independent gaps of the same ``V`` (the Lite's Poisson 0.8 of
    docs/load.md#static-laws: ``k`` 11.57, ``V`` 291, 16 instances)."""
    assert gaps.spill_walk_left(0.5, 0.5, 1, 16) == pytest.approx(0.25, rel=0.02)
    assert gaps.spill_walk_left(0.5, 0.75, 1, 1) == pytest.approx(0.25, rel=0.02)
    assert gaps.spill_walk_left(0.5, 0.75, 1, 16, frozen=False) == pytest.approx(0.5, rel=0.02)
    assert gaps.spill_walk_left(11.57, 291.0, 17, 16) < 0.7 * gaps.spill_walk_left(11.57, 291.0, 17, 16, frozen=False)


@pytest.mark.slow
@pytest.mark.parametrize("design, load", [("lite-h100", 0.8), ("h100", 0.9)])
def test_the_frozen_walk_leaves_the_simulators_count(gaps, design, load):
    """``--laws``' spill terms (docs/load.md#static-laws' (3); 16 instances, Poisson, 100,000
    requests, seed 0): Lindley's walk on one cycle's gaps kept from cycle to cycle, fed the
    simulator's ``k`` and one-gap ``V``, leaves the simulator's count of requests waiting at
    a completion within 15 % (13.1 against 14.8 on the Lite at 0.8, 21.5 against 23.6 on h100
    at 0.9), where the walk on independent gaps of that ``V`` over-states it by half or more
    (22.5, 42.7)."""
    scenario = load_scenario(design)
    row = gaps.laws_cell(scenario, serving_system(scenario, "static", 16), load, "poisson", 1.0)
    assert row["left frozen"] == pytest.approx(row["left"], rel=0.15), row
    assert row["left iid"] > 1.5 * row["left"], row


def test_cycle_share_system_keeps_the_top_cycle(gaps):
    """:func:`cycle_share_system`: both step tables become lines through the top batch with the
    cycle at batch 1 the share asked of the top batch's, so ``T(B)`` (and the capacity) stays
    and the cycle grows ``(1 - share) T(B) / (B - 1)`` a request."""
    system = serving_system(load_scenario("h100"), "static", 16)
    top, o = system.batch_max, system.output_tokens
    lined = gaps.cycle_share_system(system, 0.583)
    cycle = lined.prefill_s[1:] + (o - 1) * lined.decode_s[1:]
    own = system.prefill_s[top] + (o - 1) * system.decode_s[top]
    assert cycle[-1] == pytest.approx(own, rel=1e-12) and cycle[0] == pytest.approx(0.583 * own, rel=1e-12)
    np.testing.assert_allclose(np.diff(cycle), (1.0 - 0.583) * own / (top - 1), rtol=1e-12)
    assert lined.capacity_tokens_per_s == system.capacity_tokens_per_s and lined.prefill_s[0] == 0.0


def test_phase_measures_by_hand(gaps):
    """Two instances, top batch 3: instance 1 completes at 0.5 and idles (its next batch starts
    at 2.0: the queue was empty), instance 0 completes at 1.0 and takes a full batch of 3 at
    once, then at 3.0 a part batch of 1; instance 1 completes at 3.5 and takes 2. The last
    batches have no next and are left out. The gaps before the completions at 1.0, 3.0 and
    3.5 are 0.5, 2.0, 0.5 (squared CV 0.5); one is before a full batch, two before part
    batches (2.0 and 0.5: squared CV 0.36), none before an empty queue after the first. Cut
    into runs of two (the instances), the one whole run is 0.5, 2.0: its largest gap holds 0.8
    of it (``hole``)."""
    batches = pd.DataFrame({"instance": [0, 0, 0, 1, 1, 1], "start": [0.0, 1.0, 3.0, 0.0, 2.0, 3.5],
                            "finish": [1.0, 3.0, 4.0, 0.5, 3.5, 5.0], "size": [2, 3, 1, 1, 1, 2], "measured": [True] * 6,
                            "from_idle": [True, False, False, True, True, False]})
    got = gaps.phase_measures((np.zeros(0), batches), 3, 2)
    assert got["full"] == pytest.approx(1 / 3) and got["empty"] == 0.0 and got["hole"] == pytest.approx(0.8)
    assert got["all gaps"] == pytest.approx(0.5) and got["part gaps"] == pytest.approx(0.36) and np.isnan(got["full gaps"])


def test_platoon_gaps_closed_form(gaps):
    """Two instances, ``T(1)`` 1 s, ``T(11)`` 2 s (slope 0.1 s a request), 10 requests/s, mean
    batch 6: the platoon's gap ``g = 0.1 * 11 / (1 + 1)`` = 0.55 s, which a part batch's jump
    ``0.1 (11 - 10 g)`` spans; the mean cycle 1.5 s, the hole 0.95 s (share 19/30), and every
    gap's squared CV ``2 (0.55^2 + 0.95^2) / 1.5^2 - 1``. On 40 instances at batch 1 the
    platoon is wider than the cycle: no hole."""
    hole, cv2 = gaps.platoon_gaps(6.0, 10.0, 2, 1.0, 2.0, 11)
    assert hole == pytest.approx(0.95 / 1.5, rel=1e-12)
    g = (1.0 - hole) * 1.5  # the one gap beside the hole, read back off the law's hole
    assert 0.1 * (11 - 10 * g) == pytest.approx(g, rel=1e-12)  # the part batch's jump spans the platoon
    assert cv2 == pytest.approx(2 * (0.55**2 + 0.95**2) / 1.5**2 - 1, rel=1e-12)
    hole, cv2 = gaps.platoon_gaps(1.0, 10.0, 40, 1.0, 2.0, 11)  # 39 gaps of 0.0275 s span more than the 1 s cycle
    assert hole == 0.0 and np.isnan(cv2)


@pytest.mark.slow
def test_the_cycles_share_sets_the_gaps_not_the_design(gaps):
    """``--phases``' cells (docs/load.md#static-laws' (5); 16 instances, Poisson, load 0.8,
    100,000 requests, seed 0): the Lite's own tables (``T(1)/T(B)`` 0.583) give gaps of squared
    CV 2.07 and h100's (0.447) 0.90; lined at the other's share they swap (the Lite at 0.45:
    1.00; h100 at 0.6: 3.04), and at the same share the designs agree within the runs'
    spread below the switch at one half. The excess is one hole a cycle: below the switch the
    largest of a run of 16 gaps holds the uniform phases' share of it, ``H_16 / 16`` = 0.211
    (0.22-0.23), past it 0.35 on the Lite's own tables and 0.40-0.41 lined at 0.6."""
    got, hole = {}, {}
    for name in ("lite-h100", "h100"):
        system = serving_system(load_scenario(name), "static", 16)
        cells = {share: gaps.phases_cell(system, 0.8, "poisson", 1.0, share) for share in (None, 0.45, 0.6)}
        got[name], hole[name] = ({share: cell[key] for share, cell in cells.items()} for key in ("all gaps", "hole"))
    assert got["lite-h100"][None] > 1.8 and got["h100"][None] < 1.2, got
    assert got["lite-h100"][0.45] < 1.2 and got["h100"][0.6] > 2.2 and got["lite-h100"][0.6] > 2.2, got
    assert got["lite-h100"][0.45] == pytest.approx(got["h100"][0.45], abs=0.15), got
    uniform = np.sum(1.0 / np.arange(1, 17)) / 16
    assert hole["h100"][None] == pytest.approx(uniform, abs=0.03) and hole["lite-h100"][0.45] == pytest.approx(uniform, abs=0.03), hole
    assert hole["lite-h100"][None] > 0.3 and hole["h100"][0.6] > 0.35 and hole["lite-h100"][0.6] > 0.35, hole
