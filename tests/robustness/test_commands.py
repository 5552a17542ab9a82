"""Property: every command, given any value of any numeric key (legal, NaN, +-inf, 0,
negative, huge), ends with exit 0 and finite numbers, or exit 2 naming that key, on a
tiny sample, without writing outside --out. Keys and legal ranges come from the
schema's field metadata (tests/scenario/test_hardening.py)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ..scenario.test_numeric_keys_property import INLINE_MODEL, KEYS, _literal, values

#: (command, size option) on a tiny sample; roofline is deterministic.
COMMANDS = {
    "yield": ("--wafers", "2"),
    "reliability": ("--lifetimes", "1"),
    "roofline": (),
    "run": ("--trials", "8", "--quiet"),
}


def _finite(doc, path="") -> list[str]:
    """Paths of non-finite numbers ("nan"/"-inf" strings included; "inf" is a documented value)."""
    if isinstance(doc, dict):
        return [p for k, v in doc.items() for p in _finite(v, f"{path}.{k}")]
    if isinstance(doc, list):
        return [p for i, v in enumerate(doc) for p in _finite(v, f"{path}[{i}]")]
    if isinstance(doc, float) and not math.isfinite(doc) or doc in ("nan", "-inf"):
        return [path]
    return []


def _check_command(cli, tmp_path, command: str, key: str, value) -> None:
    out = tmp_path / "out"
    before = set(tmp_path.iterdir())
    model = [INLINE_MODEL] if key.startswith("workload.model.") else []
    sets = [item for v in (*model, f"{key}={_literal(value)}") for item in ("--set", v)]
    r = cli(command, "h100", *COMMANDS[command], *sets, "--json", "--out", str(out))
    assert r.code in (0, 2), (r.code, r.err[-500:])
    if r.code == 2:
        # a model card's numbers are judged together ("workload.model does not fit HBM")
        named = key.rsplit(".", 1)[0] if key.startswith("workload.model.") else key
        assert named in r.err and r.out == "", r.err[-500:]
    else:
        assert _finite(json.loads(r.out)) == [], r.out[:300]
    assert set(tmp_path.iterdir()) - before <= {out}


def _property(command: str, examples: int):
    @pytest.mark.slow
    @settings(max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
              derandomize=True)
    @given(data=st.data())
    def test(cli, tmp_path_factory, data):
        key = data.draw(st.sampled_from(KEYS), label="key")
        value = data.draw(values(key), label="value")
        _check_command(cli, tmp_path_factory.mktemp(command), command, key, value)

    test.__name__ = f"test_{command}_with_any_value_of_any_key"
    return test


test_yield_with_any_value_of_any_key = _property("yield", 60)
test_reliability_with_any_value_of_any_key = _property("reliability", 40)
test_roofline_with_any_value_of_any_key = _property("roofline", 60)
test_run_with_any_value_of_any_key = _property("run", 40)


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(("key", "value"), [("fab.defect_density_per_cm2", math.nan), ("gpu.hbm_gb", math.inf),
                                            ("cluster.instances", 10**7), ("workload.tpot_slo_ms", -1.0)])
def test_hostile_values_are_refused_by_every_command(cli, tmp_path, command, key, value):
    _check_command(cli, tmp_path, command, key, value)
    r = cli(command, "h100", *COMMANDS[command], "--set", f"{key}={_literal(value)}", "--json")
    assert r.code == 2 and key in r.err
