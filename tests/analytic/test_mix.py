"""mcengine/analytic/mix.py: the closed forms of a mix of request classes, by hand.

Two classes, request shares 3:1, 100 and 300 output tokens per request, 1,000 and 250
output tokens/s per instance: each class supplies half the output tokens (75 and 75 per
100 requests), so per output token the mix needs 0.5/1000 + 0.5/250 = 0.0025 instance
seconds: 400 tokens/s per instance, 20% of the instances on the first class, 80% on the
second. Every number is exact in binary floating point.
"""

from __future__ import annotations

import numpy as np
import pytest

from mcengine.analytic import mix as mx

SHARES = [np.array([3.0]), np.array([1.0])]
OUTPUTS = [100, 300]
RATES = [np.array([1000.0]), np.array([250.0])]


def test_shares_are_normalised_to_one():
    r = mx.normalised_shares(SHARES)
    assert [float(x[0]) for x in r] == [0.75, 0.25]


def test_output_token_weights_and_mean_output_tokens_by_hand():
    r = mx.normalised_shares(SHARES)
    assert [float(w[0]) for w in mx.output_token_weights(r, OUTPUTS)] == [0.5, 0.5]
    assert float(mx.mean_output_tokens(r, OUTPUTS)[0]) == 150.0  # 0.75 x 100 + 0.25 x 300


def test_two_classes_give_the_weighted_harmonic_rate_and_the_instance_split_exactly():
    w = mx.output_token_weights(mx.normalised_shares(SHARES), OUTPUTS)
    assert float(mx.mix_rate(w, RATES)[0]) == 400.0
    assert [float(s[0]) for s in mx.instance_shares(w, RATES)] == [0.2, 0.8]


def test_the_split_serves_each_class_its_demand():
    """Instances x rate of each class, over the mix's tokens, is the class's token share."""
    w = mx.output_token_weights(mx.normalised_shares([np.array([0.3]), np.array([0.7])]), [37, 911])
    rates = [np.array([1234.5]), np.array([77.25])]
    total, split = mx.mix_rate(w, rates), mx.instance_shares(w, rates)
    for wc, sc, tc in zip(w, split, rates):
        np.testing.assert_allclose(sc * tc / total, wc, rtol=1e-14)


def test_one_class_is_that_class_to_the_bit():
    rates = [np.array([123.456789, 0.1, 9.87e5])]
    w = mx.output_token_weights(mx.normalised_shares([np.array([0.37, 2.0, 5.0])]), [321])
    assert np.array_equal(mx.mix_rate(w, rates), rates[0])
    assert np.array_equal(mx.instance_shares(w, rates)[0], np.ones(3))


def test_an_unserved_class_leaves_the_mix_unserved():
    w = mx.output_token_weights(mx.normalised_shares(SHARES), OUTPUTS)
    assert float(mx.mix_rate(w, [np.array([1000.0]), np.array([0.0])])[0]) == 0.0
    split = mx.instance_shares(w, [np.array([1000.0]), np.array([0.0])])
    assert [float(s[0]) for s in split] == [0.5, 0.5]


def _arrays(*values):
    return [np.array([float(v)]) for v in values]


def test_whole_instances_by_hand():
    """w = (0.5, 0.5), T = (1, 3): relative needs a = (1.5, 0.5), continuous shares 0.75 / 0.25.
    N = 5 (3.75 / 1.25): z = 2 takes ceil(3) + ceil(1) = 4 instances, any larger z needs 6,
    so the mix keeps 2 x 2 / 5 = 0.8 of its continuous rate, one instance left over.
    N = 6 (4.5 / 1.5): z = 8/3 takes 4 + 2 = 6, keeps (8/3) x 2 / 6 = 8/9."""
    kept, counts = mx.whole_instance_rate(_arrays(0.5, 0.5), _arrays(1.0, 3.0), 5)
    assert kept[0] == pytest.approx(0.8, rel=1e-14) and [c[0] for c in counts] == [3.0, 1.0]
    kept, counts = mx.whole_instance_rate(_arrays(0.5, 0.5), _arrays(1.0, 3.0), 6)
    assert kept[0] == pytest.approx(8.0 / 9.0, rel=1e-14) and [c[0] for c in counts] == [4.0, 2.0]
    # shares that are whole already lose nothing: 0.75 / 0.25 of 4 instances
    kept, counts = mx.whole_instance_rate(_arrays(0.5, 0.5), _arrays(1.0, 3.0), 4)
    assert kept[0] == pytest.approx(1.0, rel=1e-14) and [c[0] for c in counts] == [3.0, 1.0]
    # fewer instances than classes, or an unserved class: nothing
    kept, counts = mx.whole_instance_rate(_arrays(0.2, 0.3, 0.5), _arrays(1.0, 2.0, 3.0), 2)
    assert kept[0] == 0.0 and all(c[0] == 0.0 for c in counts)
    kept, _ = mx.whole_instance_rate(_arrays(0.5, 0.5), _arrays(1.0, 0.0), 8)
    assert kept[0] == 0.0


def test_whole_instances_equal_an_exhaustive_search():
    """Every split of N instances (each class at least one): the best min_c n_c / a_c, over
    continuous z_cont = N / sum a, for random mixes of 1-3 classes on 1-13 instances."""
    import itertools

    rng = np.random.default_rng(5)
    for _ in range(200):
        c, n = int(rng.integers(1, 4)), int(rng.integers(1, 14))
        w = rng.random(c)
        w /= w.sum()
        t = rng.random(c) * 10 + 0.1
        a = w / t
        splits = [s for s in itertools.product(range(1, n + 1), repeat=c) if sum(s) <= n]
        best = max((min(k / x for k, x in zip(s, a)) for s in splits), default=0.0) * a.sum() / n
        kept, counts = mx.whole_instance_rate(_arrays(*w), _arrays(*t), n)
        assert kept[0] == pytest.approx(best, rel=1e-12, abs=0.0)
        assert sum(x[0] for x in counts) <= n
