"""mcengine/analytic/mix.py: the closed forms of a mix of request classes, by hand.

Two classes, request shares 3:1, 100 and 300 output tokens per request, 1,000 and 250
output tokens/s per instance: each class supplies half the output tokens (75 and 75 per
100 requests), so per output token the mix needs 0.5/1000 + 0.5/250 = 0.0025 instance
seconds: 400 tokens/s per instance, 20% of the instances on the first class, 80% on the
second. Every number is exact in binary floating point.
"""

from __future__ import annotations

import numpy as np

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
