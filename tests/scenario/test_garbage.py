"""Random garbage at random keys never gets a traceback or exit 1: only 0 or 2."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcengine.scenario import load_scenario
from tests.conftest import run_cli


def _keys() -> list[str]:
    return load_scenario("lite-h100").dotted_keys() + ["fab.nonsense", "reliability.components.new.afr", "workload.model.layers"]


KEYS = _keys()
SCALARS = st.one_of(
    st.integers(min_value=-10**20, max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=12),
    st.sampled_from(["inf", "-inf", "nan", "auto", "gpu", "host", "llama-3-8b"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.sampled_from(["dist", "law", "low", "high", "median", "sigma", "mean", "sd", "value", "parts", "weight", "mode", "a", "b", "shape", "x"]), children, max_size=4),
    ),
    max_leaves=8,
)


def _toml_literal(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_literal(v) for v in value) + "]"
    return "{" + ", ".join(f"{k} = {_toml_literal(v)}" for k, v in value.items()) + "}"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=st.sampled_from(KEYS), value=VALUES)
def test_garbage_never_crashes(key, value):
    r = run_cli("check", "lite-h100", "--json", "--set", f"{key}={_toml_literal(value)}")
    assert r.code in (0, 2), (key, value, r.err)
    assert "Traceback" not in r.err
    if r.code == 2:
        assert r.out == "" and "error:" in r.err
    else:
        json.loads(r.out)
