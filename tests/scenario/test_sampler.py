"""The Sobol' input sampler (randomised QMC): a trial's point is a function of its index,
each scrambling stratifies, shared keys keep common random numbers, and the
scramblings' spread is an honest standard error."""

from __future__ import annotations

import numpy as np
import pytest

from mcengine.errors import InputError
from mcengine.summaries import Summary
from mcengine.scenario import load_scenario
from mcengine.scenario.sampling import Sampler, _sobol_uniforms, draw_inputs, run_sampler

SOBOL = ['run.sampler="sobol"']


def _uniforms(sampler: Sampler, key: str, trial_start: int, n: int) -> np.ndarray:
    return _sobol_uniforms(sampler, key, 9, trial_start, n, np.full(n, 0.5), {})


def test_sobol_inputs_do_not_depend_on_the_chunking():
    s = load_scenario("lite-h100", SOBOL)
    sampler = run_sampler([s])
    whole = draw_inputs(s, 3, 0, 3000, sampler)
    parts = [draw_inputs(s, 3, a, b - a, sampler) for a, b in ((0, 1000), (1000, 1017), (1017, 3000))]
    for key in s.uncertain_inputs():
        assert np.array_equal(whole[key], np.concatenate([p[key] for p in parts])), key


def test_each_scrambling_puts_one_point_in_each_of_its_strata():
    """The first 2**m points of a scrambled Sobol' sequence hold one point in each interval
    [k, k + 1) / 2**m of every coordinate (a (0, m, 1)-net, kept by a linear scramble and
    a digital shift); with R scramblings they are the trials r, r + R, ..."""
    reps, m = 4, 9
    sampler = Sampler("sobol", reps, ("a", "b", "c"))
    for key in sampler.dimensions:
        u = _uniforms(sampler, key, 0, reps << m)
        assert ((u > 0.0) & (u < 1.0)).all()
        for r in range(reps):
            strata = np.floor(u[r::reps] * (1 << m)).astype(int)
            assert np.array_equal(np.sort(strata), np.arange(1 << m)), (key, r)


def test_scramblings_are_distinct_and_keys_are_distinct():
    sampler = Sampler("sobol", 4, ("a", "b"))
    u = _uniforms(sampler, "a", 0, 64)
    assert len({tuple(u[r::4][:4]) for r in range(4)}) == 4
    assert not np.array_equal(u, _uniforms(sampler, "b", 0, 64))


def test_a_key_shared_by_two_scenarios_draws_the_same_values():
    a, b = load_scenario("h100", SOBOL), load_scenario("lite-h100", SOBOL)
    sampler = run_sampler([a, b])
    ia, ib = draw_inputs(a, 4, 0, 500, sampler), draw_inputs(b, 4, 0, 500, sampler)
    shared = [k for k, d in a.uncertain_inputs().items() if b.uncertain_inputs().get(k) == d]
    assert shared
    for key in shared:
        assert np.array_equal(ia[key], ib[key]), key


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_scramblings_give_an_honest_standard_error_of_a_closed_form_mean(seed):
    """Mean of u**2 + sin(2 pi v) over (0, 1)**2 is 1/3: within 4 standard errors from the
    scramblings, which are far below the plain Monte Carlo ones (a smooth integrand)."""
    reps, n = 16, 16 * 256
    sampler = Sampler("sobol", reps, ("u", "v"))
    u = _sobol_uniforms(sampler, "u", seed, 0, n, np.full(n, 0.5), {})
    v = _sobol_uniforms(sampler, "v", seed, 0, n, np.full(n, 0.5), {})
    f = u**2 + np.sin(2 * np.pi * v)
    s = Summary(replicates=reps).add(f).to_dict()
    assert abs(s["mean"] - 1.0 / 3.0) <= 4 * s["sem"]
    assert s["sem"] < s["std"] / np.sqrt(n) / 20


def test_scenarios_of_one_run_must_share_their_sampler():
    with pytest.raises(InputError, match="run.sampler"):
        run_sampler([load_scenario("h100", SOBOL), load_scenario("lite-h100")])
    with pytest.raises(InputError, match="run.sampler"):
        load_scenario("h100", ['run.sampler="halton"'])
