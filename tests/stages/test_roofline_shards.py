"""Which tensor degrees the layout search may use: the MLP's equal column shards, and a
degraded-layout search whose size does not grow with ``instance_gpus``."""

from __future__ import annotations

import pytest

from mcengine.scenario import load_scenario
from mcengine.scenario.load import apply_overrides
from mcengine.scenario import scenario_from_dict
from mcengine.stages.roofline.layout import degraded_layouts, _shard_problem


def _scenario(*overrides: str):
    base = load_scenario("lite-h100")
    return scenario_from_dict(apply_overrides(base.to_dict(), list(overrides)), "x")


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@pytest.mark.parametrize("t, allowed", [(7, True), (14, True), (3, False), (5, False), (31, False), (4096, True)])
def test_data_attention_needs_t_to_divide_the_mlp(t, allowed):
    # Llama-3-70B: ffn 28,672 = 2^12 x 7; with heads sharded t must also divide 64 heads
    s = _scenario()
    assert (not _shard_problem(s, t, "data")) is allowed
    if not allowed:
        assert "workload.model.ffn = 28672" in _shard_problem(s, t, "data")
    assert bool(_shard_problem(s, 7, "tensor"))  # 7 divides ffn, not the 64 heads


def testdegraded_layouts_are_bounded_by_the_model_not_the_instance():
    # every (t, p, mode) with t | ffn, p <= layers: at most divisors(ffn) x layers x 2 modes
    bound = len(_divisors(28672)) * 80 * 2
    small = degraded_layouts(_scenario("cluster.instance_gpus=1024", 'cluster.on_failure="reshard"'))
    big = degraded_layouts(_scenario("cluster.instance_gpus=65536", "cluster.instances=2", 'cluster.on_failure="reshard"'))
    assert len(small) < len(big) <= bound
    assert all(28672 % layout.tensor == 0 for layout in big)


def test_a_degraded_layout_search_beyond_its_bound_is_refused_naming_it():
    """Issue 34 case 9: the search grew with workload.model.layers (unfinished at 400 s for 4,000)."""
    from mcengine.errors import InputError
    from mcengine.stages.roofline.layout import MAX_DEGRADED_LAYOUTS

    big = ("cluster.instance_gpus=65536", "cluster.instances=2", 'cluster.on_failure="reshard"')
    assert len(degraded_layouts(_scenario(*big, "workload.model.layers=80"))) <= MAX_DEGRADED_LAYOUTS
    with pytest.raises(InputError, match=f"at most {MAX_DEGRADED_LAYOUTS:,}") as err:
        degraded_layouts(_scenario(*big, "workload.model.layers=4000"))
    assert err.value.problems[0].key == "cluster.on_failure" and "workload.model.layers = 4000" in str(err.value)


def test_the_tensor_degrees_searched_are_those_of_a_scan_to_the_instance_size():
    from mcengine.stages.roofline.layout import _tensor_degrees, attention_variants

    def shardable(s, t):
        return any(not problem for _, _, problem in attention_variants(s, t))

    for overrides in ((), ("cluster.instance_gpus=65536", "cluster.instances=2"), ('workload.model="mixtral-8x7b"',),
                      ('workload.model="mixtral-8x7b"', "workload.expert_parallel=true")):
        s = _scenario(*overrides)
        n = s.cluster.instance_gpus
        scanned = [t for t in range(1, n + 1) if shardable(s, t)]
        assert [t for t in _tensor_degrees(s) if shardable(s, t)] == scanned


@pytest.mark.parametrize("model", ["gpt-3-175b", "llama-3-70b", "llama-3.1-405b", "mixtral-8x7b"])
def test_every_shipped_model_card_searches_within_the_bound_on_the_largest_instance(model):
    from mcengine.stages.roofline.layout import MAX_DEGRADED_LAYOUTS

    s = _scenario("cluster.instance_gpus=65536", "cluster.instances=2", 'cluster.on_failure="reshard"', f'workload.model="{model}"')
    assert len(degraded_layouts(s)) <= MAX_DEGRADED_LAYOUTS
