"""Scale-up domains of :mod:`mcengine.analytic.roofline` against values computed by hand
(docs/sources.md#roof-scale-up-domain): the hierarchical all-reduce of a tensor group
spanning domains, the pipeline boundaries that leave a domain, and a 16-GPU instance
whose two 8-GPU domains make its steps slower than one 16-GPU domain."""

from __future__ import annotations

import numpy as np
import pytest

from mcengine.analytic.roofline import model as rm, collectives as rc, steps as rt
from mcengine.scenario.cards import load_model_card

#: W_link = 4 B/s, alpha = 1 s, h = 0.5 s inside a domain; W_out = 2 B/s, h_out = 3 s between.
RATES = rm.Rates(1.0, 1.0, 4.0, 1.0, 0.5, scale_out_bytes_per_s=2.0, scale_out_hop_s=3.0)
M = 160.0


@pytest.mark.parametrize(
    "algorithm, expected",
    [
        # RS = AG = 7 h + 7/8 M/W = 3.5 + 35; AR over k = 2 of M/8 = 20 B: 2 h_out + 2(1/2) 20/W_out = 6 + 10
        ("ring", 1 + 2 * (7 * 0.5 + 7 / 8 * 160 / 4) + (2 * 3 + 2 * 1 / 2 * 20 / 2)),  # 94
        # RS = AG = h + 35; AR two_shot k = 2: 2 h_out + 10
        ("two_shot", 1 + 2 * (0.5 + 7 / 8 * 160 / 4) + (2 * 3 + 2 * 1 / 2 * 20 / 2)),  # 88
    ],
)
def test_tp16_allreduce_across_two_8gpu_domains_is_the_hierarchical_formula(algorithm, expected):
    layout = rm.Layout(16, 1, allreduce=algorithm, domain=8)
    assert layout.tensor_split == (8, 2)
    assert float(rc.hierarchical_allreduce_s(M, layout, RATES)) == pytest.approx(expected, rel=1e-12)


def test_a_group_inside_one_domain_is_the_flat_allreduce_bit_for_bit():
    m = np.array([160.0, 7.0])
    flat = rc.allreduce_s(m, 16, RATES, "ring")
    for domain in (0, 16, 32):
        assert np.array_equal(rc.hierarchical_allreduce_s(m, rm.Layout(16, 1, domain=domain), RATES), flat)


@pytest.mark.parametrize("tensor, domain, split", [(16, 8, (8, 2)), (32, 8, (8, 4)), (12, 8, (4, 3)), (4, 8, (4, 1)), (3, 8, (1, 3)), (8, 0, (8, 1))])
def test_tensor_split(tensor, domain, split):
    assert rm.Layout(tensor, 1, domain=domain).tensor_split == split


@pytest.mark.parametrize("tensor, pipeline, domain, crossing", [(4, 4, 8, 1), (2, 8, 8, 1), (8, 2, 8, 1), (16, 2, 8, 1), (8, 4, 8, 3), (4, 4, 0, 0), (4, 4, 16, 0), (8, 1, 8, 0)])
def test_crossing_hops(tensor, pipeline, domain, crossing):
    assert rm.Layout(tensor, pipeline, domain=domain).crossing_hops == crossing


def test_stage_hop_is_the_mean_of_inside_and_crossing_hops():
    # 4 x 4 in domains of 8: boundaries 1 and 3 inside (1 + 0.5 + 8/4 = 3.5), boundary 2 crosses (1 + 3 + 8/2 = 8)
    layout = rm.Layout(4, 4, domain=8)
    assert float(rc.stage_hop_s(layout, 8.0, RATES)) == pytest.approx((2 * 3.5 + 8.0) / 3, rel=1e-12)
    assert float(rc.stage_hop_s(rm.Layout(4, 4), 8.0, RATES)) == float(rc.p2p_s(8.0, RATES))


def test_other_collectives_of_a_spanning_group_run_at_scale_out_speed():
    # data-parallel attention over t = 16 in two domains: the MLP's reduce-scatter + all-gather
    # and the LM head's all-gather all at W_out, h_out: 2 (1 + 3 + 15/16 x 160/2) + (1 + 3 + 15/16 x 16/2)
    m = rm.Layout(16, 1, allreduce="two_shot", attention="data", domain=8)

    class One:
        layers, hidden, experts = 1, 40, 0

    got = rc.forward_comm_s(One, m, 2.0, RATES, head_rows=0.2)  # message 2 x 40 x 2 = 160 B, head rows 0.2 x 80 = 16 B
    assert float(got) == pytest.approx(2 * (1 + 3 + 15 / 16 * 160 / 2) + (1 + 3 + 15 / 16 * 16 / 2), rel=1e-12)


def test_16_gpu_instance_with_8_gpu_domains_is_slower_per_step():
    """Llama-3.1-405B on 16 H100s (TP16): NVLink 450 GB/s x 0.82, ConnectX-7 50 GB/s x 0.82,
    the shipped median latencies. Two 8-GPU domains make every decode and prefill slower
    than one 16-GPU domain, by the hierarchical all-reduces alone (compute and memory equal)."""
    card = load_model_card("llama-3.1-405b", "workload.model", [])
    r = rm.Rates.from_peaks(989.4, 3.35, 450.0, 0.45, 0.62, 0.82, collective_start_us=5.0, hop_latency_us=1.0,
                            step_overhead_ms=0.5, scale_out_gbps=50.0, scale_out_hop_us=4.0)
    flat, split = rm.Layout(16, 1, allreduce="auto", domain=0), rm.Layout(16, 1, allreduce="auto", domain=8)
    for batch in (1, 16, 64):
        a, b = rt.decode_step(card, flat, batch, 2176.0, r), rt.decode_step(card, split, batch, 2176.0, r)
        assert float(b.compute_s) == float(a.compute_s) and float(b.memory_s) == float(a.memory_s)
        assert float(b.total_s) > float(a.total_s)
        message = batch * card.hidden * rm.ACT_BYTES
        assert float(b.comm_s) == pytest.approx(2 * card.layers * float(rc.hierarchical_allreduce_s(message, split, r)), rel=1e-12)
    assert float(rt.prefill(card, split, 4, 2048, r).total_s) > float(rt.prefill(card, flat, 4, 2048, r).total_s)


def test_nccl_start_applies_to_the_allreduce_only():
    """``allreduce_start_s`` (workload.allreduce_impl = "nccl") starts each all-reduce; every
    other collective and the pipeline hops keep ``collective_start_s``."""
    r = rm.Rates(1.0, 1.0, 4.0, 1.0, 0.5, allreduce_start_s=30.0)

    class One:
        layers, hidden, experts = 1, 40, 0

    tensor = rm.Layout(4, 2, allreduce="ring")
    # 2 all-reduces of 160 B over 4 ranks: 30 + 3 x 2 x 0.5 + 2 x 3/4 x 160/4 = 93 each
    assert float(rc.forward_comm_s(One, tensor, 2.0, r)) == pytest.approx(2 * 93.0, rel=1e-12)
    assert float(rc.stage_hop_s(tensor, 8.0, r)) == pytest.approx(1 + 0.5 + 8 / 4, rel=1e-12)
    data = rm.Layout(4, 1, allreduce="ring", attention="data")
    assert float(rc.forward_comm_s(One, data, 2.0, r)) == float(rc.forward_comm_s(One, data, 2.0, rm.Rates(1.0, 1.0, 4.0, 1.0, 0.5)))
    assert rm.Rates(1.0, 1.0, 4.0, 1.0, 0.5).for_allreduce().collective_start_s == 1.0
