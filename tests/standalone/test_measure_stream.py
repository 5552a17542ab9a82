"""docs/load/measure_stream.py: the prefill stream's components read off the simulator's
per-request rows (docs/load.md#continuous), checked on a table computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from tests.docs_scripts import docs_script, refused


@pytest.fixture(scope="module")
def measure():
    return docs_script("load/measure_stream")


def test_the_components_of_a_hand_made_table(measure):
    """Two instances, six requests in arrival order. Instance 0: arrivals 0, 1, 1.5, 10 and
    first tokens 2, 3, 4, 11, so 0 / 1 / 2 / 0 prompts ahead and a prompt behind the first
    two; instance 1: arrivals 0.5 and 6, first tokens 0.7 and 6.5. Over [0, 10] instance 0's
    window count is at least 1 on [0, 4) and at least 2 on [1, 3); instance 1's at least 1
    for 0.7 s. Gaps 1, 0.5, 8.5 and 5.5 s at 0.4 requests/s an instance. Requests leave at 5,
    6, 9, 12 (instance 0) and 2, 7 (instance 1): the admissions at 10 and 6 refill a departure
    (at 9 and 2: 1 and 4 s, 0.4 and 1.6 mean gaps), the others follow none: the two refills
    have none ahead (TTFT 0.5 and 1 s), the four births 0 / 0 / 1 / 2 (TTFT 2, 0.2, 2, 2.5 s);
    the request with two ahead meets the first's token 0.5 s after it arrives.
    The slowest 1 % (at or above the P99, 2.475 s) is the request with two ahead. The rates
    met with 0 / 1 / 2 ahead: the shares of arrivals 4/6, 1/6, 1/6 over the shares of time
    0.765, 0.135, 0.1; state by state (:func:`thinning`), instance 0's window holds three on
    [1.5, 2) (0.025 of the time over both), where no arrival comes, so 2 holds 0.075, 3 meets
    the rate 0 and 4 or more is never held (nan)."""
    df = pd.DataFrame({"instance": [0, 1, 0, 0, 1, 0], "arrival_s": [0.0, 0.5, 1.0, 1.5, 6.0, 10.0],
                       "first_token_s": [2.0, 0.7, 3.0, 4.0, 6.5, 11.0], "finish_s": [5.0, 2.0, 6.0, 9.0, 7.0, 12.0]})
    df["ttft_s"] = df.first_token_s - df.arrival_s
    got = measure.stream_components(df, 0.8, warmup=0.0)
    gaps = pd.Series([0.4, 0.2, 3.4, 2.2])
    want = {"p_ge1": 2 / 6, "p_ge2": 1 / 6, "t_ge1": (0.4 + 0.07) / 2, "t_ge2": 0.1,
            "ttft0": 925.0, "ttft1": 2000.0, "ttft2": 2500.0, "rest2": 500.0, "behind0": 0.25, "ttft0_alone": 1700.0 / 3, "ttft0_behind": 2000.0,
            "gap_cv2": gaps.var(ddof=0) / gaps.mean() ** 2, "gap_short": 0.0, "refill": 2 / 6, "refill_delay": 1.0,
            "p_ge3": 0.0, "tail_ge2": 1.0, "tail_ge3": 0.0, "p_ge1_refill": 0.0, "p_ge2_refill": 0.0, "ttft_refill": 750.0, "p_ge1_birth": 0.5, "p_ge2_birth": 0.25, "ttft_birth": 1675.0,
            "rate0": (4 / 6) / (1 - 0.235), "rate1": (1 / 6) / (0.235 - 0.1), "rate2": (1 / 6) / 0.1,
            "thin1": ((1 / 6) / 0.135) / ((4 / 6) / 0.765), "thin2": ((1 / 6) / 0.075) / ((1 / 6) / 0.135), "thin3": 0.0, "thin4": np.nan}
    assert got == pytest.approx(want, rel=1e-12, nan_ok=True)


def test_thinning_is_one_under_random_dispatch_and_reads_a_geometric_feedback(measure):
    """Poisson arrivals see time averages, so shares of arrivals equal to the shares of time
    give 1 for every prompt; a stream whose states 0-4+ hold 0.4 / 0.3 / 0.15 / 0.1 / 0.05 of
    the time and meet rates 1, 0.8, 0.8^2, 0.8^3, 0.8^4 (arrival shares their product,
    normalised) gives 0.8 for every prompt."""
    t = np.array([0.4, 0.3, 0.15, 0.1, 0.05])
    assert measure.thinning(np.cumsum(t[::-1])[::-1][1:], np.cumsum(t[::-1])[::-1][1:]) == pytest.approx({f"thin{k}": 1.0 for k in range(1, 5)}, rel=1e-12)
    a = t * 0.8 ** np.arange(5)
    a /= a.sum()
    p_ge, t_ge = np.cumsum(a[::-1])[::-1][1:], np.cumsum(t[::-1])[::-1][1:]
    assert measure.thinning(p_ge, t_ge) == pytest.approx({f"thin{k}": 0.8 for k in range(1, 5)}, rel=1e-12)


def test_the_requests_an_arrival_finds_on_its_instance(measure):
    """The hand-made table above: instance 0's arrivals at 0, 1, 1.5 find 0, 1 and 2 of its
    requests not done, the one at 10 none (its three left at 5, 6 and 9); instance 1's at 0.5
    and 6 find none (its first left at 2). In arrival order 0, 0, 1, 2, 0, 0; without the
    first third (two rows) 1, 2, 0, 0."""
    df = pd.DataFrame({"instance": [0, 1, 0, 0, 1, 0], "arrival_s": [0.0, 0.5, 1.0, 1.5, 6.0, 10.0],
                       "finish_s": [5.0, 2.0, 6.0, 9.0, 7.0, 12.0]})
    assert measure.running_counts(df, 0.0) == {"running": 3 / 6, "running_min": 0, "running_max": 2}
    assert measure.running_counts(df, 1 / 3) == {"running": 3 / 4, "running_min": 0, "running_max": 2}


@pytest.mark.parametrize("argv", [["--loads", "0.5,1.2"], ["--design", "a100"], ["--arrival", "poisson,uniform"], ["--warmup", "1"],
                                  ["--length-cv", "3.5"], ["--standin", "1.5"], ["--standin", "0"]])
def test_cells_outside_the_grid_are_refused(measure, argv, capsys):
    """``--loads`` outside (0, 1), a design or arrival law the grid lacks, a ``--warmup`` share
    outside [0, 1): exit 2 naming the option and what is allowed, before a cell is simulated."""
    refused(measure.main, argv, capsys)


def test_least_loaded_dispatch_without_departures_is_round_robin(measure):
    """With no request leaving (holding times beyond the run) every instance holds as many
    requests as arrived to it, so the fewest-requests rule with lowest-index ties deals the
    arrivals out in turn: 0, 1, 2, 3, 0, ..."""
    toy = measure.dispatch_toy(1e18, 0.5, 48, instances=4, seed=3)
    assert toy.instance.tolist() == [0, 1, 2, 3] * 12
    assert (toy.arrival_s.diff().dropna() > 0).all()


def test_least_loaded_dispatch_when_every_request_has_left_takes_the_first_instance(measure):
    """Holding times far below the gaps between arrivals (1e-9 against a mean of 1/4; the
    least of 200 such gaps is exponential of mean 1/800): every instance is empty at each
    arrival, and the lowest index takes it."""
    toy = measure.dispatch_toy(1e-9, 0.0, 200, instances=4, seed=5)
    assert toy.instance.tolist() == [0] * 200


def test_an_instance_stream_serves_its_prompts_in_turn(measure):
    """Each prompt takes ``prompt`` in its instance's first-come first-served stream: its first
    token is ``max(arrival, the previous first token there) + prompt``, it leaves ``holding``
    after it, and the TTFT is the first token less the arrival."""
    toy = measure.dispatch_toy(3.0, 0.7, 400, instances=3, seed=7)
    for _, part in toy.groupby("instance"):
        a, f = part.arrival_s.to_numpy(), part.first_token_s.to_numpy()
        want = np.empty(len(a))
        last = -np.inf
        for k, t in enumerate(a):
            last = want[k] = max(t, last) + 0.7
        np.testing.assert_allclose(f, want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(toy.finish_s - toy.first_token_s, 3.0)
    np.testing.assert_allclose(toy.ttft_s, toy.first_token_s - toy.arrival_s)


@pytest.mark.parametrize("pending, per_prompt, tail, want", [
    (0.0, 1.48, 0.035, 0.0),  # nothing ahead: a lone prompt's steps
    (0.48, 1.48, 0.035, 0.035 * 0.04 / 0.52 + 0.048 * 0.48 / 0.52 - 0.035),  # ceil(1.96) = 2 steps still, the last 0.96 of a chunk
    (1.48, 1.48, 0.035, 0.048 + 0.035 * 0.04 / 0.52 + 0.048 * 0.48 / 0.52 - 0.035),  # ceil(2.96) = 3: one step more
    (0.855, 1.855, 0.044, 0.048),  # ceil(2.71) = 3: one step more, its last 0.71 of a chunk below the tail's 0.855 (flat)
    (0.5, 2.0, 0.048, 0.048),  # whole chunks: one step more
])
def test_what_a_pending_stream_adds_counted_in_steps(measure, pending, per_prompt, tail, want):
    """A prompt of ``p`` chunks joining with ``W`` chunks pending goes out in step ``ceil(W +
    p)`` instead of ``ceil(p)``; its last step, carrying ``W + p - (ceil(W + p) - 1)`` chunks,
    costs the tail step up to the lone tail's share of a chunk and rises linearly to a whole
    chunk's step (48 ms here) above it."""
    assert float(measure.step_cost_s(pending, per_prompt, 0.048, tail)) == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_the_step_counted_components_at_a_trickle_by_hand(measure):
    """One prompt of 1.5 chunks (300 tokens, chunk 200) on an instance whose steps take 20 ms
    without a chunk, 40 ms with a whole one and 30 ms with the lone prompt's last half chunk,
    at a trickle (u = 0): none ahead, the rest of a step (10 ms) and its own two steps (40 + 30
    ms); one ahead, weights 10 / 40 / 40 ms on its wait for a step (W = 1.5: a step more and a
    whole last chunk, 50 ms), its first step (W = 0.5: the last chunk whole, 10 ms) and its
    last (nothing); two ahead, W = 3 / 2 / 1: 3 / 2 / 1 steps more (120 / 80 / 40 ms)."""
    from types import SimpleNamespace

    mixed = np.array([[0.02, 0.04]] * 4 + [[0.03, 0.05]])
    system = SimpleNamespace(pipeline=1, batch_max=4, instances=2, prompt_tokens=300, chunk_tokens=200.0, output_tokens=10,
                             mixed_s=mixed, decode_s=np.array([0.0, 0.02, 0.02, 0.02, 0.03]), tail_steps_s=(0.03, 0.04))
    got = measure.step_laws(system, 1e-12)
    assert got["t0_law"] == pytest.approx(80.0, rel=1e-9)
    assert got["c1_law"] == pytest.approx((0.01 * 50 + 0.04 * 10) / 0.09, rel=1e-9)
    assert got["c2_law"] == pytest.approx((0.01 * 120 + 0.04 * 80 + 0.04 * 40) / 0.09, rel=1e-9)
    assert got["c2_join_law"] == pytest.approx(40.0 - 10.0, rel=1e-9)  # W = 2 x 1.5 - 2: a step more, less a step's rest
    assert got["p1_law"] == pytest.approx(0.5e-12 * 0.08, rel=1e-6)
    assert got["p2_poisson"] == pytest.approx((0.5e-12 * 0.08) ** 2 / 2.0, rel=1e-3)  # two in the window: x^2 / 2
    assert got["p2_dead"] == pytest.approx(got["p1_law"] * 0.5e-12 * (0.08 - 0.06), rel=1e-6)  # the window less a prompt, 1.5 x 40 ms
    # busy share: the chunks (1.5 x 20 ms) and a setup of a step's rest (10 ms) and the last step's unused half chunk (20 ms)
    assert got["p1_busy"] == pytest.approx(0.5e-12 * (0.03 + 0.03), rel=1e-6)
    assert got["p2_busy"] == pytest.approx(got["p1_busy"] * 0.5e-12 * (0.08 - 0.06), rel=1e-6)


def test_what_a_prompt_ahead_adds_weights_its_wait_for_a_step_by_the_pending_weight(measure):
    """The hand system above (steps of 20 / 40 / 30 ms, 1.5 chunks a prompt): one ahead adds 50
    / 10 / 0 ms in its wait for a step, its first step and its last; with the wait weighted
    half its 10 ms (``pending`` 0.5) the weights are 5 / 40 / 40 ms, with none 0 / 40 / 40."""
    for pending in (1.0, 0.5, 0.0):
        want = (pending * 0.01 * 0.05 + 0.04 * 0.01) / (pending * 0.01 + 0.08)
        assert measure.ahead_cost_s(1, 1.5, 0.02, 0.04, 0.03, pending) == pytest.approx(want, rel=1e-12)


@pytest.fixture(scope="module")
def one_ahead(measure):
    """``one_ahead`` on the committed fit table (each design's system built once), and its continuous rows."""
    from functools import cache

    from make_fit_table import CSV, fit_system

    table = pd.read_csv(CSV)
    shares = pd.read_csv(measure.HERE / "jsq-shares.csv")
    return measure.one_ahead(table, shares, cache(lambda name: fit_system(name, "continuous"))), table[table["mode"] == "continuous"]


def test_the_fluid_variant_of_one_ahead_is_the_fast_models_mean(one_ahead):
    """``one_ahead``'s ``fluid`` column rebuilds the fast model's mean TTFT from its terms (the
    rest of a step and the own steps, ``u D / 2``, the second prompt ``u a D / 2``, the bursts'
    wait): its mean is the fit table's own in every continuous cell, and so is its verdict
    where the table's other three statistics pass."""
    got, cont = one_ahead
    assert len(got) == len(cont) == 36
    mean = (1.0 + got.fluid_ttft_mean.to_numpy()) * cont.sim_ttft_mean_ms.to_numpy()
    assert mean == pytest.approx(cont.fast_ttft_mean_ms.to_numpy(), rel=1e-5)  # the CSV keeps 6 figures
    assert (got.fluid_passes.to_numpy() == cont.passes.to_numpy()).all()


def test_the_one_ahead_section_on_the_page_is_the_tools(measure, one_ahead):
    """docs/load.md#one-ahead quotes ``--one-ahead``: each replacement's count of continuous
    cells within, and the step count's and the fluid cost of one ahead in its table (the
    simulator's figures beside them come from ``--laws`` runs, not checked here)."""
    got, _ = one_ahead
    text = (measure.HERE.parent / "load.md").read_text()
    flat = " ".join(text.split())
    for name, head in (("steps", "(`c1` the \"steps\" cost above):"), ("behind", "and the prompt behind:"),
                       ("busy", "in place of `u`:"), ("busy_dead", "[above](#busy-share)):"),
                       ("window", "in place of the busy shares:"), ("measured", "in the same variant (`measured`),"),
                       ("rest", "In the `window` variant (`rest`):"), ("rest_measured", "with the simulator's shares (`rest_measured`):"),
                       ("beyond1", "Beyond one ahead (`beyond1`):"), ("beyond2", "beyond two (`beyond2`):")):
        assert f"{head} **{int(got[f'{name}_passes'].sum())} of {len(got)}**" in flat
    for name, head in (("h100", "h100"), ("lite-h100", "the Lite")):
        mine = got[(got.design == name) & (got.arrival == "poisson")].sort_values("load")
        line = next(x for x in text.splitlines() if x.startswith(f"  | {head}: one ahead costs, ms:"))
        cells = [c.split(" / ") for c in line.strip(" |").split(" | ")[1:]]
        assert [(c[1], c[2]) for c in cells] == [(f"{a:.1f}", f"{b:.1f}") for a, b in zip(mine.c1_chunked_ms, mine.fluid_ms)]


def test_the_bursts_beyond_the_shares_thin_only_the_gamma_cells(one_ahead):
    """``one_ahead``'s ``beyond1`` / ``beyond2`` keep ``u`` / ``u^2`` of the bursts' wait in the
    ``rest`` variant: with Poisson arrivals there is none, so they are ``rest`` itself; with
    gamma CV 2 they fall below it in that order, each by less than the whole bursts' wait
    (``rest`` less ``beyond2`` over ``rest`` less ``beyond1`` is ``1 + u``, in (1, 2))."""
    got, _ = one_ahead
    poisson, gamma = got[got.arrival == "poisson"], got[got.arrival == "gamma"]
    assert (poisson.beyond1_ttft_mean == poisson.rest_ttft_mean).all() and (poisson.beyond2_ttft_mean == poisson.rest_ttft_mean).all()
    ratio = (gamma.rest_ttft_mean - gamma.beyond2_ttft_mean) / (gamma.rest_ttft_mean - gamma.beyond1_ttft_mean)
    assert ((ratio > 1.0) & (ratio < 2.0)).all()
    assert all(r.sort_index().is_monotonic_increasing for _, r in ratio.groupby(gamma.design))  # u grows with the load


def test_window_shares_solve_the_departures_fixed_point(measure):
    """``window_shares``' Lambert-W ``p1`` is the root of ``p1 = 1 - exp(-lambda (W + p1 c))``
    (here 10 requests/s, a 100 ms window, 20 ms a prompt ahead: the iteration, a contraction
    of slope at most 0.2, settles on it); with no cost it is the lone window's Poisson count;
    and the second share is nil when the prompt's stream time fills the window."""
    p1, p2 = measure.window_shares(10.0, 0.1, 0.02, 0.05)
    q = 0.0
    for _ in range(100):
        q = -np.expm1(-10.0 * (0.1 + q * 0.02))
    assert p1 == pytest.approx(q, rel=1e-12)
    assert p2 == pytest.approx(p1 * -np.expm1(-10.0 * (0.1 + p1 * 0.02 - 0.05)), rel=1e-12)
    assert measure.window_shares(10.0, 0.1, 0.0, 0.05)[0] == pytest.approx(-np.expm1(-1.0), rel=1e-12)
    assert measure.window_shares(10.0, 0.1, 0.0, 0.1)[1] == 0.0


def test_state_rates_are_one_under_random_dispatch_and_average_to_one(measure):
    """Arrivals that see the time averages (``p_ge = t_ge``: random dispatch) meet the mean rate
    in every state; and whatever the shares, the rates weighted by the time shares sum to one
    (every arrival finds some count)."""
    assert measure.state_rates(0.4, 0.1, 0.4, 0.1) == pytest.approx({"rate0": 1.0, "rate1": 1.0, "rate2": 1.0}, rel=1e-12)
    r = measure.state_rates(0.59, 0.083, 0.75, 0.245)
    assert r["rate0"] * 0.25 + r["rate1"] * (0.75 - 0.245) + r["rate2"] * 0.245 == pytest.approx(1.0, rel=1e-12)
    assert np.isnan(measure.state_rates(0.0, 0.0, 0.0, 0.0)["rate2"])  # no prompt time: no state with two ahead


def _trickle_system():
    """The hand system of :func:`test_the_step_counted_components_at_a_trickle_by_hand`: one
    prompt of 1.5 chunks, steps of 20 / 40 / 30 ms (none / a whole chunk / the last half chunk)."""
    from types import SimpleNamespace

    mixed = np.array([[0.02, 0.04]] * 4 + [[0.03, 0.05]])
    return SimpleNamespace(pipeline=1, batch_max=4, instances=2, prompt_tokens=300, chunk_tokens=200.0, output_tokens=10,
                           mixed_s=mixed, decode_s=np.array([0.0, 0.02, 0.02, 0.02, 0.03]), tail_steps_s=(0.03, 0.04),
                           capacity_tokens_per_s=1000.0)


def test_the_shortest_queue_laws_on_the_streams_at_a_load(measure):
    """With the instances' streams as shortest-queue routing's queues, each busy ``u`` of the
    time: Erlang C over the ``N = 2`` streams (offered ``2u``: ``2u^2 / (1 + u)``) and the
    supermarket model's ``u^N`` and ``u^(N (N + 1))`` (its arrivals finding at least one / two
    ahead), at the ``u`` the step count reads (``lambda p tau``)."""
    system = _trickle_system()
    rate = 10.0
    got = measure.step_laws(system, rate)
    u = measure._steps(system, rate)["u"]
    assert 0.1 < u < 0.5
    assert got["p1_pooled"] == pytest.approx(2.0 * u * u / (1.0 + u), rel=1e-9)
    assert got["p1_jsq"] == pytest.approx(u ** 2, rel=1e-12)
    assert got["p2_jsq"] == pytest.approx(u ** 6, rel=1e-12)


def test_the_busy_share_at_a_load_is_m_g_1_with_a_setup(measure):
    """At 5 requests/s an instance on the hand system the stream's idle share is an M/G/1
    queue's with a setup ``delta`` opening each busy period: ``1 - p1_busy = (1 - u) / (1 +
    lambda delta)``, ``delta`` the rest of a step and the last step's unused half chunk
    (``tau / 2 + 0.5 d_c``), at the step count's ``u`` and ``tau``; its dead-time second share
    is ``p1_busy`` times the chance of a second arrival in the window less a prompt's 1.5 whole
    chunks."""
    system = _trickle_system()
    st = measure._steps(system, 10.0)
    got = measure.step_laws(system, 10.0)
    assert 0.1 < st["u"] < 0.5
    delta = st["tau"] / 2.0 + 0.5 * st["dc"]
    assert 1.0 - got["p1_busy"] == pytest.approx((1.0 - st["u"]) / (1.0 + 5.0 * delta), rel=1e-12)
    window = st["tau"] / 2.0 + st["own"] - 1.5 * st["dc"]
    assert got["p2_busy"] == pytest.approx(got["p1_busy"] * (1.0 - np.exp(-5.0 * window)), rel=1e-12)


def test_the_step_model_at_a_trickle_by_hand(measure):
    """At a trickle with Poisson arrivals (no bursts' wait) the step count's mean is ``t0 + p1
    c1 + p2 (c2 - c1)`` (80 ms, and the hand components above); its 0.99 quantile with no
    prompt ahead is the rest of a step at its 0.99 point (0.99 of 20 ms) plus the prompt's own
    steps (70 ms)."""
    system = _trickle_system()
    c1, c2 = (0.01 * 50 + 0.04 * 10) / 0.09, (0.01 * 120 + 0.04 * 80 + 0.04 * 40) / 0.09
    mean, q = measure.step_model(system, 1e-9, 1.0, 0.0, 0.0)
    assert mean == pytest.approx(80.0, rel=1e-6)
    assert q == pytest.approx(0.99 * 20.0 + 70.0, rel=1e-4)
    mean, _ = measure.step_model(system, 1e-9, 1.0, 0.6, 0.2)
    assert mean == pytest.approx(80.0 + 0.6 * c1 + 0.2 * (c2 - c1), rel=1e-6)


def test_the_oracle_scores_a_cell_against_the_tolerance(measure):
    """A continuous row whose simulated mean is the step count's own and whose P99 is 5 % above
    it passes (errors 0 and -1/21); at 12 % above, the P99 is out. The shares are the row's
    design's Poisson ones at that load, the power law's second share ``p_ge1^k`` with ``k`` the
    designs' mean exponent (one design here: its own, so both columns agree)."""
    system = _trickle_system()
    load = 0.1  # 5 requests/s an instance: its stream busy 0.18 of the time
    rate = load * system.capacity_tokens_per_s / system.output_tokens
    mean, q = measure.step_model(system, rate, 1.0, 0.3, 0.05)
    shares = pd.DataFrame({"design": ["x", "x"], "arrival": ["poisson", "gamma"], "load": [load, load], "p_ge1": [0.3, 0.9], "p_ge2": [0.05, 0.8]})
    for above, passes in ((1.05, True), (1.12, False)):
        table = pd.DataFrame([{"design": "x", "mode": "continuous", "arrival": "poisson", "load": load, "cv": 1.0, "sim_ttft_mean_ms": mean,
                               "sim_ttft_p99_ms": q * above, "err_tpot_p99": 0.0, "err_tpot_mean": 0.0, "passes": False}])
        got = measure.oracle(table, shares, lambda name: system).iloc[0]
        assert got.shares_ttft_mean == pytest.approx(0.0, abs=1e-12)
        assert got.shares_ttft_p99 == pytest.approx(1.0 / above - 1.0, rel=1e-9)
        assert got.power_ttft_p99 == pytest.approx(got.shares_ttft_p99, rel=1e-9)
        assert bool(got.shares_passes) is passes and bool(got.power_passes) is passes
        law = measure.step_laws(system, rate)
        assert got.p_ge1 == 0.3 and got.p1_busy == law["p1_busy"]
        err, ok = measure._scored(system, rate, table.iloc[0].to_dict(), law["p1_busy"], law["p2_busy"])
        assert (got.busy_dead_ttft_mean, got.busy_dead_ttft_p99, bool(got.busy_dead_passes)) == (err["ttft_mean"], err["ttft_p99"], ok)
        assert (got.p1_lo, got.p1_hi) == measure.p1_band(system, rate, table.iloc[0].to_dict(), np.log(0.05) / np.log(0.3))


def test_the_band_of_one_ahead_that_passes_is_where_the_errors_cross_the_tolerance(measure):
    """A continuous row whose simulated mean and P99 are the step count's at ``p_ge1`` = 0.3,
    ``p_ge2 = 0.3^2``: the band of ``p_ge1`` (``k`` = 2) holds 0.3; at each inner edge the
    step count passes and one grid step beyond it fails (the mean's 5 % or the P99's 10 %);
    a row 40 % above the step count at any share has no band."""
    system = _trickle_system()
    load = 0.1
    rate = load * system.capacity_tokens_per_s / system.output_tokens
    mean, q = measure.step_model(system, rate, 1.0, 0.3, 0.09)
    row = {"cv": 1.0, "sim_ttft_mean_ms": mean, "sim_ttft_p99_ms": q, "err_tpot_p99": 0.0, "err_tpot_mean": 0.0}
    lo, hi = measure.p1_band(system, rate, row, 2.0)
    assert lo <= 0.3 <= hi
    assert measure._scored(system, rate, row, 0.3, 0.09) == ({"ttft_mean": pytest.approx(0.0, abs=1e-12), "ttft_p99": pytest.approx(0.0, abs=1e-12)}, True)
    for edge, beyond in ((lo, lo - 0.01), (hi, hi + 0.01)):
        assert measure._scored(system, rate, row, edge, edge ** 2)[1]
        if 0.0 < beyond < 1.0:
            assert not measure._scored(system, rate, row, beyond, beyond ** 2)[1]
    assert (lo, hi) != (0.01, 0.99)  # the band is the tolerance's, not the grid's
    high = row | {"sim_ttft_mean_ms": mean / 1.4, "sim_ttft_p99_ms": q / 1.4}
    assert all(np.isnan(measure.p1_band(system, rate, high, 2.0)))


def test_the_jsq_and_busy_share_tables_on_the_page_are_the_committed_shares(measure):
    """docs/load.md#jsq-laws, #busy-share and #thinning's equal-lengths row read
    docs/load/jsq-shares.csv (``--jsq --loads 0.1,...,0.9 --requests 1600000 --warmup 0.5
    --out``): the shares ahead, their exponent, the rates met and the thinning (``thin1``-
    ``thin3`` at loads 0.3, 0.6, 0.9), and ``--oracle`` on it (the busy share, the bands that pass, the counts
    of continuous cells within for the model, the measured shares, ``p₂ = p₁^k``, the busy
    share with the measured exponent and with the dead time's second share; the departures'
    shares, quoted in #one-ahead)."""
    from make_fit_table import CSV, fit_system

    text = (measure.HERE.parent / "load.md").read_text()
    flat = " ".join(text.split())
    shares = pd.read_csv(measure.HERE / "jsq-shares.csv")
    poisson = shares[shares.arrival == "poisson"].sort_values("load")
    h100, lite = (poisson[poisson.design == name] for name in ("h100", "lite-h100"))

    def row(head, cells):
        return f"| {head} | " + " | ".join(cells) + " |"

    assert row("h100: none / one / two or more ahead", (f"{r.a0:.2f} / {r.a1:.3f} / {r.a2:.3f}" for r in h100.itertuples())) in text
    assert row("the Lite", (f"{r.a0:.2f} / {r.a1:.3f} / {r.a2:.3f}" for r in lite.itertuples())) in text
    assert row("`k = ln p₂ / ln p₁`: h100 / the Lite", (f"{a:.2f} / {b:.2f}" for a, b in zip(h100.k, lite.k))) in text
    assert row("h100: rates met with 0 / 1 / 2+ ahead", (f"{r.rate0:.2f} / {r.rate1:.2f} / {r.rate2:.2f}" for r in h100.itertuples())) in text
    assert row("the Lite", (f"{r.rate0:.2f} / {r.rate1:.2f} / {r.rate2:.2f}" for r in lite.itertuples())) in text
    thinning = [" / ".join(" ".join(f"{getattr(r, f'thin{k}'):.2f}" for k in (1, 2, 3)) for r in (a, b))
                for a, b in zip(h100[h100.load.isin([0.3, 0.6, 0.9])].itertuples(), lite[lite.load.isin([0.3, 0.6, 0.9])].itertuples())]
    assert row("0 (equal lengths; docs/load/jsq-shares.csv, [the JSQ runs](#jsq-laws): 1.6 M requests, the first half out; `thin1`–`thin3`)",
               (*thinning, "")).replace("|  |", "| |") in text  # docs/load.md#thinning's equal-lengths row
    got = measure.oracle(pd.read_csv(CSV), shares, lambda name: fit_system(name, "continuous"))
    for name, head in (("h100", "h100"), ("lite-h100", "the Lite")):
        mine = got[got.design == name]
        p, g = (mine[mine.arrival == a].sort_values("load") for a in ("poisson", "gamma"))
        assert row(f"{head}: `p₁` measured / busy share", (f"{a:.3f} / {b:.3f}" for a, b in zip(p.p_ge1, p.p1_busy))) in text
        assert row(f"{head}: the band that passes, Poisson / gamma",
                   (f"{a.p1_lo:.2f}–{a.p1_hi:.2f} / {b.p1_lo:.2f}–{b.p1_hi:.2f}" for a, b in zip(p.itertuples(), g.itertuples()))) in text
    count = {k: int(got[f"{k}_passes"].sum()) for k in ("model", "shares", "power", "busy", "busy_dead", "window")}
    assert f"With the measured shares, {count['shares']} of {len(got)} pass (the model: {count['model']})" in flat
    assert f"(`k` the two designs' mean at the load), {count['power']}." in flat
    assert f"With the measured exponent it passes **{count['busy']} of {len(got)}**" in flat
    assert f"(laws alone, no measured exponent), **{count['busy_dead']} of {len(got)}**" in flat
    assert f"(`--oracle`'s `window` column, [above](#jsq-laws)), {count['window']}," in flat


def _crommelin(x: float, rho: float) -> float:
    """M/D/1's waiting-time distribution at ``x`` prompt times (Crommelin 1932): ``(1 - rho)
    sum_{k <= x} (rho (k - x))^k / k! e^(-rho (k - x))``."""
    return (1.0 - rho) * sum((rho * (k - x)) ** k / math.factorial(k) * math.exp(-rho * (k - x)) for k in range(int(math.floor(x)) + 1))


def test_the_stand_in_without_thinning_or_setup_is_m_d_1(measure):
    """Utilisation 0.5, prompts of 1 s, no step, no own time, no thinning: M/D/1, mean wait
    ``rho D / (2 (1 - rho))`` = 0.5 s and P99 3.336 s (Crommelin's law); 48,000 waits of seed
    0, within 4.2 % / 4.6 % (three standard deviations over seeds 0-9: 1.4 % / 1.5 %); the
    admitted rate within 0.015 of the cell's (three standard deviations over seeds 0-9:
    0.46 %)."""
    from scipy import optimize

    got = measure.stream_standin(0.5, 1.0, 0.0, 0.0, 1.0)
    p99 = optimize.brentq(lambda x: _crommelin(x, 0.5) - 0.99, 0.5, 20.0)
    assert got["standin_mean"] == pytest.approx(500.0, rel=0.042)
    assert got["standin_p99"] == pytest.approx(1e3 * p99, rel=0.046)
    assert got["rate"] == pytest.approx(1.0, abs=0.015)


def test_the_stand_in_with_a_setup_is_m_d_1_with_an_exceptional_first_service(measure):
    """Steps of 0.4 s (a busy period's first prompt 0.2 s longer), lambda = 0.5/s, prompts of
    1 s: ``p_0 = 0.5 / 1.1`` of the prompts start a busy period, the mean wait ``0.5 (p_0
    1.2^2 + (1 - p_0)) / (2 * 0.5)`` = 0.6 s, and the TTFT's mean adds the rest of the step,
    0.2 s: 800 ms, within 3 % (three standard deviations over seeds 0-9: 0.95 %). Thinning by
    0.8 a prompt admits the same rate (within 0.015, as above) and lowers the mean to 0.768 of
    it and the P99 to 0.681 (over seeds 0-9, standard deviations 0.006 and 0.012): below 0.79
    and 0.72, three standard deviations above."""
    got = measure.stream_standin(0.5, 1.0, 0.4, 0.0, 1.0)
    assert got["standin_mean"] == pytest.approx(800.0, rel=0.03)
    thinned = measure.stream_standin(0.5, 1.0, 0.4, 0.0, 0.8)
    assert thinned["rate"] == pytest.approx(1.0, abs=0.015)
    assert thinned["standin_mean"] < 0.79 * got["standin_mean"] and thinned["standin_p99"] < 0.72 * got["standin_p99"]


@pytest.mark.parametrize("argv, named", [
    (["--standin", "0.5", "--arrival", "poisson"], "--arrival"),
    (["--standin", "0.5", "--laws"], "--laws"),
    (["--standin", "0.5", "--out", "x.csv"], "--out"),
    (["--toy", "1,0.5", "--length-cv", "0.3"], "--length-cv"),
    (["--oracle", "x.csv", "--length-cv", "0.3"], "--length-cv"),
    (["--one-ahead", "--loads", "0.5"], "--loads"),
    (["--one-ahead", "--oracle", "x.csv"], "--one-ahead"),
    (["--standin", "0.5", "--toy", "1,0.5"], "--standin"),
    (["--standin", "0"], "(0, 1]"),
    (["--standin", "1.5"], "(0, 1]"),
    (["--toy", "1,0.5", "--requests", "0"], "1 or more"),
])
def test_options_it_would_ignore_or_out_of_range_exit_2(measure, capsys, argv, named):
    """An option the chosen mode does not use (``--standin``: the cells' arrival law and
    shown components; ``--toy`` and ``--oracle``: the lengths' spread; ``--one-ahead``: the
    cells' loads), two modes at once, a
    thinning outside ``(0, 1]`` or no requests: exit 2 naming it, before any run."""
    with pytest.raises(SystemExit) as stop:
        measure.main(argv)
    assert stop.value.code == 2
    assert named in capsys.readouterr().err
