"""The roofline stage with scale-up domains (docs/sources.md#roof-scale-up-domain): Llama-3.1-405B
on a 16-H100 instance serves fewer tokens/s in two 8-GPU HGX domains than in one 16-GPU
domain, and the planner's layouts carry the scenario's domain."""

from __future__ import annotations

from mcengine.scenario import load_scenario
from mcengine.scenario.sampling import quantile_inputs
from mcengine.stages import planner
from mcengine.stages._roofline_layout import candidate_layouts

ON_405B = ['workload.model="llama-3.1-405b"', "cluster.instance_gpus=16", "cluster.instances=64"]


def test_two_hgx_domains_serve_less_than_one_16_gpu_domain():
    split = load_scenario("h100", ON_405B)
    flat = load_scenario("h100", ON_405B + ["cluster.scale_up_domain_gpus=16"])
    assert {layout.domain for layout in candidate_layouts(split)} == {8}
    assert {layout.domain for layout in candidate_layouts(flat)} == {0}
    median = quantile_inputs(split, 0.5)
    assert planner.best_tokens(split, median) < planner.best_tokens(flat, median)


def test_auto_domain_is_the_flat_instance():
    lite = load_scenario("lite-h100")
    assert lite.cluster.scale_up_domain_gpus == "auto"
    assert {layout.domain for layout in candidate_layouts(lite)} == {0}
