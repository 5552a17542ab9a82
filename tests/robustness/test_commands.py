"""Property: every command, given any value of any numeric key (legal, NaN, +-inf, 0,
negative, huge), ends with exit 0 and finite numbers, or exit 2 naming that key, on a
tiny sample, without writing outside --out. Keys and legal ranges come from the
schema's field metadata (tests/scenario/test_hardening.py)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mcengine.scenario.limits import MAX_TOTAL_GPUS

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
    @settings(max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
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


# ----------------------------------------------------------------------------- the reliability stage, every key at once

#: A generous but fixed budget for one `mcengine reliability --lifetimes 1`: the stage's
#: cost may grow with the GPUs and the expected events (both bounded by the schema),
#: never with a repair time, a spare count or a rate's value.
RELIABILITY_DEADLINE_MS = 60_000


def _spread(spec):
    """Values over a key's whole legal range: its closed bounds, and log-uniform in between
    (so that 1 h and 10^9 h, or 0 and 10^6 spares, are equally likely scales); an open bound
    is never drawn (the nearest legal value stands in where the log-uniform draw rounds
    onto it)."""
    if spec.kind == "integer":
        lo, hi = int(spec.lo) + spec.lo_open, int(spec.hi) - spec.hi_open
        inner = st.floats(0.0, math.log(hi + 1.0)).map(lambda x: min(hi, max(lo, int(math.exp(x)))))
        return st.sampled_from([lo, hi]) | inner
    lo = math.nextafter(spec.lo, math.inf) if spec.lo_open else spec.lo
    hi = math.nextafter(spec.hi, -math.inf) if spec.hi_open else spec.hi
    inner = st.floats(math.log(max(lo, 1e-6)), math.log(hi)).map(lambda x: min(hi, max(lo, math.exp(x))))
    closed = [b for b, is_open in ((spec.lo, spec.lo_open), (spec.hi, spec.hi_open)) if not is_open]
    return st.sampled_from(closed) | inner if closed else inner


@st.composite
def reliability_scenarios(draw):
    """``--set`` overrides of every reliability and cluster key of h100 at once."""
    from ..scenario.test_numeric_keys_property import SPECS

    sets = {}
    for key in ("cluster.instance_gpus", "cluster.spare_gpus", "cluster.gpus_per_host",
                "reliability.host_afr", "reliability.host_transient_afr", "reliability.host_weibull_shape"):
        sets[key] = draw(_spread(SPECS[key]), label=key)
    unit = draw(st.sampled_from(["gpu", "host"]))
    sets["reliability.replace_unit"] = f'"{unit}"'
    if unit == "host":  # (the pool holds whole hosts)
        sets["cluster.spare_gpus"] -= sets["cluster.spare_gpus"] % sets["cluster.gpus_per_host"]
    # instances up to the GPU bound most of the time (beyond it: exit 2 naming the key)
    room = max(1, (MAX_TOTAL_GPUS - sets["cluster.spare_gpus"]) // sets["cluster.instance_gpus"])
    sets["cluster.instances"] = draw(_spread(SPECS["cluster.instances"]).map(lambda x: min(x, room))
                                     | _spread(SPECS["cluster.instances"]), label="instances")
    die = {}  # the whole class, so that it has exactly one law key
    for name in ("count", "transient_afr", "weibull_shape",
                 draw(st.sampled_from(["afr", "mttf_hours", "scale_hours", "first_year_fraction"]), label="law key")):
        die[name] = draw(_spread(SPECS[f"reliability.components.die.{name}"]), label=name)
    die["replace_unit"] = draw(st.sampled_from(["unit", "module"]), label="die replace_unit")
    sets["reliability.components.die"] = "{" + ", ".join(f"{k}={v!r}".replace("'", '"') for k, v in die.items()) + "}"
    sets["reliability.module_swap_hours"] = draw(_spread(SPECS["reliability.module_swap_hours"]), label="module swap")
    for name in ("repair_hours", "swap_hours", "restart_hours"):
        value = draw(_spread(SPECS[f"reliability.{name}"]), label=name)
        form = draw(st.sampled_from(["V", '{law="exponential", mean=V}', '{law="lognormal", median=V, sigma=1.5}']))
        sets[f"reliability.{name}"] = form.replace("V", repr(value))
    crews = draw(st.sampled_from(["inf"]) | _spread(SPECS["reliability.repair_crews"]), label="crews")
    sets["reliability.repair_crews"] = '"inf"' if crews == "inf" else crews
    sets["run.horizon_years"] = draw(_spread(SPECS["run.horizon_years"]), label="horizon")
    sets["cluster.on_failure"] = '"' + draw(st.sampled_from(["down", "reshard"]), label="on_failure") + '"'
    sets["cluster.reshard_hours"] = draw(_spread(SPECS["cluster.reshard_hours"]), label="reshard_hours")
    return sets


def _run_reliability(cli, sets: dict) -> None:
    args = [item for k, v in sets.items() for item in ("--set", f"{k}={v if isinstance(v, str) else _literal(v)}")]
    r = cli("reliability", "h100", "--lifetimes", "1", *args, "--json")
    assert r.code in (0, 2), (r.code, r.err[-800:])
    if r.code == 2:
        # (reshard reads the roofline layout search: a model that fits no layout is named too)
        named = [*sets, "workload.model", "workload.batch"] if "reshard" in sets["cluster.on_failure"] else list(sets)
        assert any(k in r.err for k in named) and r.out == "", r.err[-500:]
    else:
        doc = json.loads(r.out)
        assert _finite(doc) == [], r.out[:300]
        assert 0.0 <= doc["instance_availability"]["mean"] <= doc["capacity_availability"]["mean"] <= 1.0


#: Legal values that once outran any budget (issue 18): a Weibull host law at shape 0.05
#: (~2,640 renewals per host in 5 years, now refused by the events bound: exit 2 naming
#: reliability.host_afr) ...
INFANT_HOSTS = {"cluster.instances": 32, "cluster.instance_gpus": 65536, "cluster.spare_gpus": 0,
                "reliability.host_afr": 0.07, "reliability.host_weibull_shape": 0.05, "cluster.on_failure": '"down"'}
#: ... and a GPU class at shape 0.05 in a stock-out with 100,000 spares (2.06e7 events, within
#: the bound): every repair completion scanned all the repairs pending, 734 s for one
#: lifetime; with the repairs in a heap, ~4 s.
INFANT_STOCKOUT = {"cluster.instances": 500, "cluster.spare_gpus": 100_000, "reliability.swap_hours": 0.0,
                   "reliability.components.die": "{afr=0.025, transient_afr=0.044, weibull_shape=0.05}",
                   "cluster.on_failure": '"down"'}


def _reliability_property(examples: int, pinned=(INFANT_HOSTS,)):
    @settings(max_examples=examples, deadline=RELIABILITY_DEADLINE_MS,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(sets=reliability_scenarios())
    def test(cli, sets):
        _run_reliability(cli, sets)

    for sets in pinned:
        test = example(sets=sets)(test)
    return test


#: Every reliability and cluster key drawn at once over its whole legal range: the command
#: ends (exit 0 with finite numbers, or exit 2 naming a drawn key) within the budget.
test_reliability_with_every_reliability_key_at_once = _reliability_property(6)
test_reliability_with_every_reliability_key_at_once_many = pytest.mark.slow(_reliability_property(80, (INFANT_HOSTS, INFANT_STOCKOUT)))
