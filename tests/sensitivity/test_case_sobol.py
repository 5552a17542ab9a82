"""The case study's Sobol' ranking (docs/sensitivity.md): the page's block is the committed
designs', its claims hold on them, and the ranking helpers of the ``sobol`` benchmark."""

from __future__ import annotations

import json
import math

import pytest
from scipy import stats

from benchmarks.harness import sobol as bench
from mcengine.options import DEFAULT_SCRAMBLINGS
from tests.docs_scripts import docs_script


@pytest.fixture(scope="module")
def make():
    return docs_script("sensitivity/make_case_sobol")


@pytest.fixture(scope="module")
def docs(make):
    return json.loads(make.RESULT.read_text())


def _doc(**st):
    """A sobol document whose inputs have the given (ST, ST_conf), in that order."""
    return {"indices": {k: {"S1": v[0], "S1_conf": v[1], "ST": v[0], "ST_conf": v[1]} for k, v in st.items()}}


def test_drivers_are_the_inputs_with_a_total_index_of_at_least_one_percent():
    doc = _doc(a=(0.45, 0.03), b=(0.2, 0.01), c=(0.0099, 0.002))
    assert bench.drivers(doc) == ["a", "b"]
    assert bench._apart(doc, "a", "b")  # 0.25 apart, intervals 0.04
    assert not bench._apart(_doc(a=(0.22, 0.02), b=(0.2, 0.01)), "a", "b")  # 0.02 apart, intervals 0.03


def test_the_block_on_the_page_is_the_committed_designs(make, docs):
    assert [(*make.shape(d), d["seed"]) for d in docs] == [(n, r, s) for n, r in make.DESIGNS for s in make.SPREAD_SEEDS]
    assert all(d["scenario"] == " vs ".join(bench.SCENARIOS) and d["output"] == "cost_per_mtok_usd" for d in docs)
    text = make.PAGE.read_text()
    assert text[text.index(make.BEGIN) + len(make.BEGIN):text.index(make.END)].strip() == make.block(docs)


def test_the_block_says_when_the_seeds_disagree(make):
    one, other, near = _doc(a=(0.4, 0.03), b=(0.3, 0.03)), _doc(a=(0.3, 0.03), b=(0.4, 0.03)), _doc(a=(0.41, 0.03), b=(0.31, 0.03))
    for d, seed in ((one, 0), (other, 1), (near, 1)):
        d.update(base_samples=16, seed=seed, evaluations=16 * 5, conf_level=0.95, scramblings=8)
    assert "alike: no" in make.block([one, other])
    text = make.block([one, near])
    assert "alike: yes" in text
    # spread of a's two values 0.4 and 0.41: sd 0.00707; reported se 0.03 / t(0.975, 7) = 0.01269
    assert "| `a` | 0.405, 0.0071, 0.0127, 1.79 |" in text


def test_the_page_claims_hold_on_the_committed_designs(make, docs):
    """docs/sensitivity.md: seeds 0 and 1 rank the drivers alike in each design shape; at
    N = 1,024 with the benchmark's 32 scramblings every total-index half-interval of the
    six designs is within 0.03 and each driver's reported standard error is within 2x of
    its spread over them, either way; at N = 2,048 every total-index half-interval is
    within 0.03, and so is twice the spread of each driver's total index over the six
    seeds; seeds 0 and 1 differ as their intervals say (the root-mean-square of each
    difference over its combined standard error is between 0.5 and 2)."""
    by_shape = {}
    for d in docs:
        by_shape.setdefault(make.shape(d), []).append(d)
    for same in by_shape.values():
        assert len(same) == len(make.SPREAD_SEEDS)
        assert bench.drivers(same[0]) == bench.drivers(same[1])
        first, second = same[0], same[1]
        z = [(a["ST"] - second["indices"][k]["ST"]) / math.hypot(make._se(first, k), make._se(second, k))
             for k, a in first["indices"].items() if a["ST_conf"] + second["indices"][k]["ST_conf"] > 0]
        assert len(z) >= 20 and 0.5 <= math.sqrt(sum(x * x for x in z) / len(z)) <= 2.0
    benchmark = by_shape[bench.BASE_TRIALS, bench.SCRAMBLINGS]
    assert max(v["ST_conf"] for d in benchmark for v in d["indices"].values()) <= 0.03
    for key in bench.drivers(benchmark[0]):
        assert 0.5 <= sum(make._se(d, key) for d in benchmark) / len(benchmark) / stats.tstd([d["indices"][key]["ST"] for d in benchmark]) <= 2.0
    wide = by_shape[2 * bench.BASE_TRIALS, DEFAULT_SCRAMBLINGS]
    assert max(v["ST_conf"] for d in wide for v in d["indices"].values()) <= 0.03
    for key in bench.drivers(wide[0]):
        assert 2 * stats.tstd([d["indices"][key]["ST"] for d in wide]) <= 0.03
