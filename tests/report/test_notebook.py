"""The notebook API of Results: to_frame, repr, HTML repr, plot (issue 21)."""

from __future__ import annotations

import pytest

import mcengine.api as mc
from mcengine.results import SUMMARY_KEYS, metric_items


@pytest.fixture(scope="module")
def res():
    return mc.compare("h100", "lite-h100-2x-fastswap", trials=1024, seed=5)


def test_to_frame_is_tidy_and_equals_the_summary(res):
    frame = res.to_frame()
    doc = res.summary()
    # one row per metric, the cost breakdown's parts as "cost_breakdown_per_mtok_usd.<part>"
    flat = {(n, m): s for n, metrics in doc["scenarios"].items() for m, s in metric_items(metrics)}
    assert frame.shape == (len(flat), 2 + len(SUMMARY_KEYS))
    assert ("h100", "cost_breakdown_per_mtok_usd.die") in flat
    assert list(frame.columns) == ["scenario", "metric", *SUMMARY_KEYS]
    assert ("h100", "failures_by_class.host.failures_per_year") in flat
    for row in frame.itertuples(index=False):
        s = flat[(row.scenario, row.metric)]
        assert all(getattr(row, k) == s[k] for k in SUMMARY_KEYS)


def test_html_repr_names_every_scenario(res):
    html = res._repr_html_()
    assert html.startswith("<table>") and "h100" in html and "lite-h100-2x-fastswap" in html
    assert "cost per M output tokens" in html


def test_repr_is_readable_not_a_dataclass_dump(res):
    text = repr(res)
    assert text.startswith("Results('h100 vs lite-h100-2x-fastswap'") and "lite-h100-2x-fastswap" in text
    assert "summaries=" not in text and "Accumulators" not in text and len(text) < 1000


def test_plot_rejects_an_unknown_kind(res):
    from mcengine.errors import InputError

    with pytest.raises(InputError, match="cost_cdf"):
        res.plot("pie")
