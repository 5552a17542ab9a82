"""Property: for every numeric scenario key (taken from the schema's field metadata, not
listed by hand), any value -- legal, NaN, +-inf, 0, negative, huge -- as a plain number,
inside a dist table or inside a law table either loads into a scenario whose every
number is finite and inside the key's bounds (or a documented "inf"), or raises the
library's InputError naming that key. Never another exception."""

from __future__ import annotations

import json
import math
from dataclasses import fields

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcengine.errors import InputError
from mcengine.scenario import Law, load_scenario
from mcengine.scenario.dists import Dist
from mcengine.scenario.lengths import EmpiricalLength, LengthLaw
from mcengine.scenario.sections.gpu import PeakTable

from .test_hardening import NUMERIC

SPECS = dict(NUMERIC)
KEYS = sorted(SPECS)
#: An inline model card, so that workload.model.<key> overrides reach a table.
INLINE_MODEL = ('workload.model={name="m", layers=80, hidden=8192, heads=64, kv_heads=8, head_dim=128, ffn=28672, '
                "vocab=128256}")
SPECIALS = [math.nan, math.inf, -math.inf, 0, 0.0, -1, -1.5, -1e300, 1e300, 10**30, 10**400, 5e-324, 1e-300]


def _literal(v) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    return str(v)


@st.composite
def values(draw, key):
    """A legal value of ``key`` (half the time) or a hostile one."""
    spec = SPECS[key]
    if draw(st.booleans()):
        if spec.kind == "integer":
            return draw(st.integers(int(spec.lo) + spec.lo_open, int(spec.hi) - spec.hi_open))
        return draw(st.floats(spec.lo, spec.hi, exclude_min=spec.lo_open, exclude_max=spec.hi_open, allow_nan=False))
    hostile = [*SPECIALS, spec.hi * 10, spec.hi + 1, spec.lo - 1]
    return draw(st.sampled_from(hostile) | st.floats(allow_nan=True, allow_infinity=True) | st.integers())


def _forms(key) -> list[str]:
    """Templates (``V`` = the drawn value) of the ways a key's number can be written."""
    spec = SPECS[key]
    if spec.kind == "integer":
        return ["V"]
    if spec.kind == "law":
        return ["V", '{law="lognormal", median=V, sigma=0.5}', '{law="lognormal", median=72, sigma=V}',
                '{law="weibull", mean=V, shape=2}', '{law="weibull", mean=5, shape=V}',
                '{law="exponential", mean={dist="lognormal", median=V, sigma=0.2}}',
                '{law="mixture", parts=[{weight=V, law="fixed", value=2}, {weight=1, law="exponential", mean=V}]}']
    forms = ["V"]
    if spec.kind == "length":
        forms += ['{law="lognormal", median=V, sigma=0.5}', '{law="lognormal", median=1000, sigma=V}',
                  '{law="lognormal", median={dist="uniform", low=V, high=2000}, sigma=0.5}',
                  '{law="empirical", quantiles=[0, 0.5, 1], tokens=[1, V, 10000000]}', '{law="empirical", quantiles=[0, V, 1], tokens=[1, 2, 3]}']
    if spec.uncertain:
        mid = (spec.lo + spec.hi) / 2
        forms += ['{dist="fixed", value=V}', '{dist="lognormal", median=V, sigma=0.1}', f'{{dist="lognormal", median={mid!r}, sigma=V}}',
                  f'{{dist="uniform", low=V, high={spec.hi!r}}}', f'{{dist="uniform", low={spec.lo!r}, high=V}}',
                  f'{{dist="normal", mean={mid!r}, sd=V, low={spec.lo!r}, high={spec.hi!r}}}', '{dist="normal", mean=V, sd=1e-3}',
                  f'{{dist="triangular", low={spec.lo!r}, mode=V, high={spec.hi!r}}}', '{dist="beta", a=V, b=2}']
    return forms


def _finite_and_in_bounds(s, key: str) -> None:
    """Every number of the loaded scenario is finite (or a documented inf), and the
    overridden key's draws lie inside its bounds."""
    for name, dist in s.inputs().items():
        lo, hi, lo_open, hi_open = dist.drawn_range()
        spec = SPECS.get(name)
        documented_inf = spec is not None and spec.inf_ok and dist.is_fixed and dist.value == math.inf
        assert documented_inf or (math.isfinite(lo) and math.isfinite(hi)), (name, dist)
        if spec is not None and not documented_inf:
            assert spec.in_range(lo, hi, lo_open, hi_open), (name, dist, spec.allowed())
    for table in ("run", "gpu", "fab", "cluster", "reliability", "workload", "econ"):
        section = getattr(s, table)
        for f in fields(section):
            v = getattr(section, f.name)
            full = f"{table}.{f.name}"
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                spec = SPECS[full]
                assert (math.isinf(v) and v > 0 and spec.inf_ok) or spec.lo <= v <= spec.hi, (full, v)
            elif isinstance(v, (Law, LengthLaw)):
                assert all(math.isfinite(x) for _, d in v.param_items() for x in d.drawn_range()[:2]), (full, v)
                if isinstance(v, EmpiricalLength):
                    assert all(SPECS[full].lo <= x <= SPECS[full].hi for x in v.tokens), (full, v)
            elif isinstance(v, PeakTable):  # every precision's peak in the key's range
                assert all(SPECS[full].in_range(*d.drawn_range()) for _, d in v.peaks), (full, v)
            else:
                assert v is None or isinstance(v, (str, bool, tuple, Dist, Law, LengthLaw)) or f.name in ("model", "training", "load"), (full, v)
    for table in ("training", "model"):  # the nested tables' integers
        nested = getattr(s.workload, table)
        for f in fields(nested):
            v = getattr(nested, f.name)
            if isinstance(v, int) and not isinstance(v, bool):
                spec = SPECS[f"workload.{table}.{f.name}"]
                assert spec.lo <= v <= spec.hi, (table, f.name, v)


def _check(key: str, form: str, value) -> None:
    text = form.replace("V", _literal(value))
    overrides = [INLINE_MODEL] if key.startswith("workload.model.") else []
    try:
        s = load_scenario("h100", [*overrides, f"{key}={text}"])
    except InputError as exc:
        assert key in str(exc), (key, text, str(exc))
        return
    _finite_and_in_bounds(s, key)


@st.composite
def cases(draw):
    key = draw(st.sampled_from(KEYS))
    return key, draw(st.sampled_from(_forms(key))), draw(values(key))


@settings(max_examples=200, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_any_value_of_any_numeric_key_loads_finite_or_names_the_key(case):
    _check(*case)


@pytest.mark.slow
@settings(max_examples=5000, deadline=5000, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_any_value_of_any_numeric_key_loads_finite_or_names_the_key_many(case):
    _check(*case)


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 10**400], ids=["nan", "inf", "-inf", "10**400"])
def test_every_key_refuses_nan_and_undocumented_inf(key, value):
    """The deterministic core of the property, for every key at once."""
    overrides = [INLINE_MODEL] if key.startswith("workload.model.") else []
    if value == math.inf and SPECS[key].inf_ok:
        s = load_scenario("h100", [*overrides, f"{key}={_literal(value)}"])
        _finite_and_in_bounds(s, key)
        return
    with pytest.raises(InputError) as err:
        load_scenario("h100", [*overrides, f"{key}={_literal(value)}"])
    assert key in str(err.value)


def test_the_property_can_fail():
    """The assertion is not vacuous: a scenario with a NaN input breaks it."""
    import dataclasses

    from mcengine.scenario import Fixed

    s = load_scenario("h100")
    broken = dataclasses.replace(s, gpu=dataclasses.replace(s.gpu, hbm_gb=Fixed(math.nan)))
    with pytest.raises(AssertionError):
        _finite_and_in_bounds(broken, "gpu.hbm_gb")
    assert json.dumps(_literal(math.nan)) == '"nan"'
