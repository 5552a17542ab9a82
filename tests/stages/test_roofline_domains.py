"""The roofline stage with scale-up domains (docs/sources.md#roof-scale-up-domain): Llama-3.1-405B
on a 16-H100 instance serves fewer tokens/s in two 8-GPU HGX domains than in one 16-GPU
domain, and the planner's layouts carry the scenario's domain."""

from __future__ import annotations

import pytest

from mcengine.scenario import load_scenario
from mcengine.scenario.sampling import quantile_inputs
from mcengine.stages.roofline import planner
from mcengine.stages.roofline.layout import candidate_layouts

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


def test_nccl_allreduce_impl_slows_the_h100_decode_by_its_start_latency():
    from mcengine.analytic.roofline import model as rm, steps as rt
    from mcengine.stages.roofline.layout import rates_of

    custom = load_scenario("h100")
    nccl = load_scenario("h100", ['workload.allreduce_impl="nccl"'])
    median = quantile_inputs(nccl, 0.5)
    r_custom, r_nccl = rates_of(custom, median), rates_of(nccl, median)
    assert r_custom.allreduce_start_s is None
    assert float(r_nccl.allreduce_start_s[0]) == float(median["workload.nccl_start_us"][0]) / 1e6
    card, tp8 = custom.workload.model, rm.Layout(8, 1, allreduce="auto")
    a, b = rt.decode_step(card, tp8, 16, 2176.0, r_custom), rt.decode_step(card, tp8, 16, 2176.0, r_nccl)
    # two all-reduces per layer, each later by the difference of the start latencies
    extra = 2 * card.layers * (float(r_nccl.allreduce_start_s[0]) - float(r_custom.collective_start_s[0]))
    assert float(b.comm_s[0] - a.comm_s[0]) == pytest.approx(extra, rel=1e-9)
