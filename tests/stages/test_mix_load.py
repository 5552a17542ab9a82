"""A mix of request classes under a demand (docs/load.md#chain, "A mix of request classes"):
each class planned and answered under its share of the demand, on its own instances, with
its own plan's per-mode model; the mix's fleet the sum of the classes', each with its own
headroom; at saturation, the mix's columns of before."""

from __future__ import annotations

import numpy as np
import pytest

from mcengine import api
from mcengine.analytic import mix as mx
from mcengine.analytic import queueing as qu
from mcengine.pipeline import planning_demand, run_block
from mcengine.scenario.sampling import draw_inputs
from mcengine.stages import econ, load, roofline
from tests.stages.test_planner_load import MIX_LITE

N = 6
DEMAND = 60000.0
THROUGHPUT = 'workload.plan_objective="throughput"'  # no econ weight: the class and the scenario alone plan alike
LENGTHS = ("prompt_tokens=1024", "output_tokens=256")
TWINS = [f"workload.classes.{name}.{k}" for name in ("a", "b") for k in ("share=1", *LENGTHS)]
CHAT_CODE = ["workload.classes.chat.share=2", "workload.classes.chat.prompt_tokens=1024", "workload.classes.chat.output_tokens=256",
             "workload.classes.code.share=1", "workload.classes.code.prompt_tokens=4096", "workload.classes.code.output_tokens=64"]


def alone(got: dict, cluster: str) -> dict:
    """The scenario without classes (a twin's lengths) at half the demand on ``cluster``
    (``instances=8`` or ``"auto"``), planned and loaded at the mix's served availability."""
    s = api.check("h100", [f"workload.load.demand={DEMAND / 2}", f"cluster.instances={cluster}", THROUGHPUT, *(f"workload.{k}" for k in LENGTHS)])
    inputs = draw_inputs(s, 0, 0, N)
    availability = econ.served_availability(s, got)
    columns = roofline.throughput(s, inputs, None, None, roofline.AheadWeights(), planning_demand(s, inputs, availability, got["instance_availability"]))
    return load.load_columns(s, inputs, {**columns, "instance_availability": got["instance_availability"]}, availability)


def test_two_identical_classes_at_half_the_demand_each_are_the_class_alone_on_half_the_cluster():
    """Two identical classes (shares 1:1) of a 16-instance cluster at demand D: each class
    takes D/2 on 8 instances (the split of equal needs), so its plan, TTFT and TPOT at the
    quantile, fewest up instances and SLO attainment are the scenario's alone at D/2 on 8
    instances, bit for bit; the mix's capacity at SLO is twice that one's (each class's over
    its token share 1/2, exactly) and its fleet twice the headroom law on a class's up
    instances (each class holds its own headroom). Not the class alone at D on 16: the classes do not pool their
    instances (each serves its own), which is what the split costs."""
    got = run_block(api.check("h100", [*TWINS, f"workload.load.demand={DEMAND}", "cluster.instances=16", THROUGHPUT]), 0, 0, N)
    one = alone(got, "8")
    for name in ("a", "b"):
        np.testing.assert_array_equal(got[f"mix.{name}.load_instances"], 8.0)
        np.testing.assert_array_equal(got[f"mix.{name}.ttft_at_load_ms"], one["load.ttft_at_load_ms"])
        np.testing.assert_array_equal(got[f"mix.{name}.tpot_at_load_ms"], one["load.tpot_at_load_ms"])
        np.testing.assert_array_equal(got[f"mix.{name}.up_instances"], one["load.fleet_instances"] - one["load.headroom_instances"])
        np.testing.assert_array_equal(got[f"mix.{name}.slo_attainment"], one["load.slo_attainment"])
    np.testing.assert_array_equal(got["load.capacity_at_slo_tokens_per_s"], 2.0 * one["load.capacity_at_slo_tokens_per_s"])
    np.testing.assert_array_equal(got["load.ttft_at_load_ms"], one["load.ttft_at_load_ms"])
    up = 2.0 * got["mix.a.up_instances"]
    assert (up > 0).all()
    np.testing.assert_array_equal(got["load.fleet_instances"], 2.0 * qu.fleet_instances(got["mix.a.up_instances"], 1.0 - got["instance_availability"], 0.999))
    np.testing.assert_array_equal(got["load.headroom_instances"], got["load.fleet_instances"] - up)


def test_a_fleet_bought_for_a_mix_is_the_sum_of_its_classes_fleets_each_with_its_own_headroom():
    """With the fleet bought, each twin class buys the fewest up instances the class alone
    buys at D/2 (``U``, the planner's own search handed over) and the fleet the class alone
    buys (``U`` and the headroom for the instances down at cluster.headroom_quantile among
    its own: a class's instances serve only it); the mix buys twice that; every class meets
    its SLO quantiles at its peak on its instances."""
    got = run_block(api.check("h100", [*TWINS, f"workload.load.demand={DEMAND}", 'cluster.instances="auto"', THROUGHPUT]), 0, 0, N)
    one = alone(got, '"auto"')
    up = one["load.fleet_instances"] - one["load.headroom_instances"]
    assert (up > 0).all()
    for name in ("a", "b"):
        np.testing.assert_array_equal(got[f"mix.{name}.up_instances"], up)
        assert (got[f"mix.{name}.ttft_at_load_ms"] <= 2000.0).all() and (got[f"mix.{name}.tpot_at_load_ms"] <= 50.0).all()
    np.testing.assert_array_equal(got["mix.a.load_instances"], one["load.fleet_instances"])
    np.testing.assert_array_equal(got["mix.b.load_instances"], one["load.fleet_instances"])
    np.testing.assert_array_equal(got["load.fleet_instances"], 2.0 * one["load.fleet_instances"])
    np.testing.assert_array_equal(got["load.instances"], 2.0 * one["load.fleet_instances"])
    np.testing.assert_array_equal(got["load.headroom_instances"], 2.0 * one["load.fleet_instances"] - 2.0 * up)
    np.testing.assert_array_equal(got["load.slo_attainment"], 1.0)


def test_a_fixed_cluster_is_split_in_whole_instances_by_the_capacity_each_class_needs():
    """On a fixed cluster of 16 instances, chat (2 requests in 3, 256 output tokens) and code
    (1 in 3, 64): each class serves on the same whole instances in every trial, the
    cluster's 16 split by largest remainder, at least one each, in proportion to the
    instance shares at the median inputs (each class's token share over its saturated
    rate), and the split sums to the cluster; the mix's SLO attainment is the least of its
    classes'."""
    s = api.check("h100", [*CHAT_CODE, f"workload.load.demand={DEMAND}", "cluster.instances=16"])
    got = run_block(s, 0, 0, N)
    from mcengine.pipeline import ahead_weights

    shares = roofline.median_instance_shares(s, ahead_weights(s))
    want = mx.whole_split(16, list(shares), least=1)
    assert sum(shares) == pytest.approx(1.0)
    for name, n, share in zip(("chat", "code"), want, shares):
        np.testing.assert_array_equal(got[f"mix.{name}.load_instances"], n)
        assert abs(n - 16 * share) < 1.0
    np.testing.assert_array_equal(got["mix.chat.load_instances"] + got["mix.code.load_instances"], 16.0)
    # the mix's capacity is the demand at which its first class reaches its own: its attainment the least of theirs
    least = np.minimum(*(got[f"mix.{name}.slo_attainment"] for name in ("chat", "code")))
    np.testing.assert_allclose(got["load.slo_attainment"], least, rtol=1e-12)


def test_whole_split_by_hand():
    """Largest remainder: 10 among needs 1:2 with one each first is 1 + 2 and 1 + 6 (8 left:
    2.67 and 5.33, the larger remainder to the first); three equal needs of 10 give 4, 3, 3;
    a total below one each splits without the floor; the counts always sum to the total."""
    np.testing.assert_array_equal(mx.whole_split(10, [1.0, 2.0], least=1), [4.0, 6.0])
    np.testing.assert_array_equal(mx.whole_split(10, [1.0, 1.0, 1.0], least=1), [4.0, 3.0, 3.0])
    np.testing.assert_array_equal(mx.whole_split(1, [0.3, 0.7], least=1), [0.0, 1.0])
    got = mx.whole_split(np.array([7.0, 0.0, 5.0]), [np.array([3.0, 1.0, 0.0]), np.array([4.0, 1.0, 0.0])])
    np.testing.assert_array_equal(got, [[3.0, 0.0, 3.0], [4.0, 0.0, 2.0]])


#: A mix's columns at saturation (lite-h100, chat and code, trials 0-2 of seed 0), as the
#: chain gave them before mixes were planned under a demand (e6cc89d): continuous and whole
#: instances.
SATURATED = {
    "continuous": {"tokens_per_s_instance": [1993.120567104254, 2563.5211230361783, 1849.3171377893502],
                   "ttft_ms": [662.3279539000255, 1327.5778702103255, 677.7139595483866],
                   "busy_fraction": [0.9103555384561601, 0.8991484832533629, 0.809002083147567],
                   "mix.code.instance_share": [0.6189780068653696, 0.5713224758889675, 0.5992482690419078],
                   "cost_per_mtok_usd": [1.0162534164545258, 0.8802949001471846, 1.2467529191037747]},
    "whole": {"tokens_per_s_instance": [1987.3551020645796, 2558.9893662186355, 1838.6378402567582],
              "tpot_ms": [49.89668649817099, 49.81264379840521, 49.96848583466566],
              "busy_fraction": [0.90772216889625, 0.8975589811297601, 0.8043303187574165],
              "mix.code.instance_share": [0.6171875, 0.5703125, 0.6015625],
              "cost_per_mtok_usd": [1.018919868199617, 0.8817577032860676, 1.2535181579224028]},
}


@pytest.mark.parametrize("split", ["continuous", "whole"])
def test_a_mix_at_saturation_is_bit_identical(split):
    """``demand = "saturate"`` (the default): a mix reports what it reported before, bit for
    bit, and hands the load stage nothing (no ``load.``, ``mix_steps.`` or per-class load columns)."""
    got = run_block(api.check("lite-h100", [*CHAT_CODE, f'workload.class_instances="{split}"', 'workload.load.demand="saturate"']), 0, 0, 3)
    for column, values in SATURATED[split].items():
        np.testing.assert_array_equal(got[column], values, err_msg=column)
    assert not [k for k in got if k.startswith(("load.", "mix_steps.", "load_steps.")) or k.endswith(("_at_load_ms", "up_instances"))]


@pytest.mark.parametrize("command", ["check", "run"])
def test_a_mix_under_a_demand_on_a_fixed_cluster_needs_an_instance_per_class(cli, command):
    """Two classes on a fixed cluster of one instance under a demand: ``mcengine check`` and
    ``run`` (its scenario check, before any stage computes) exit 2 naming the key, its
    value and what is allowed, no traceback."""
    extra = ("--trials", "8") if command == "run" else ()
    r = cli(command, "h100", *extra, *(a for k in TWINS for a in ("--set", k)), "--set", "workload.load.demand=1000", "--set", "cluster.instances=1")
    assert r.code == 2 and "invalid input" in r.err and "h100" in r.err and "Traceback" not in r.err, r.err
    assert "cluster.instances: got 1; allowed: at least 2, one instance for each request class" in r.err, r.err


def test_a_fleet_bought_for_a_mix_needs_no_instance_per_class_of_the_simulated_cluster(cli):
    """With the fleet bought, each class buys its own fleet (at least one instance): two
    classes with ``cluster.simulated_instances = 1`` (the cluster a trial no fleet serves
    falls back to) pass ``mcengine check``, and every trial buys each class at least one
    up instance and its own headroom."""
    keys = [*TWINS, f"workload.load.demand={DEMAND}", 'cluster.instances="auto"', "cluster.simulated_instances=1", THROUGHPUT]
    r = cli("check", "h100", *(a for k in keys for a in ("--set", k)))
    assert r.code == 0, r.err
    got = run_block(api.check("h100", keys), 0, 0, N)
    up = got["mix.a.up_instances"] + got["mix.b.up_instances"]
    assert (got["mix.a.up_instances"] >= 1).all() and (got["mix.b.up_instances"] >= 1).all()
    down = 1.0 - got["instance_availability"]
    np.testing.assert_array_equal(got["load.instances"], sum(qu.fleet_instances(got[f"mix.{c}.up_instances"], down, 0.999) for c in ("a", "b")))
    np.testing.assert_array_equal(got["mix.a.load_instances"] + got["mix.b.load_instances"], got["load.instances"])


def test_a_mix_whose_classes_are_at_their_peaks_meets_its_slos_all_day(monkeypatch):
    """Each class's capacity at SLO exactly its peak ``(w_c D) p`` (the floor a fleet bought
    for it holds): every class and the mix read SLO attainment 1, exactly. At 60,008
    tokens/s, peak-to-mean 1.3 and token shares 8/9 and 1/9, a class's ``s = (m p - m) / (m
    (p - 1))`` rounds below 1 and the mix's capacity ``min_c C_c / w_c`` an ulp below ``D
    p``: read off ``arcsin``, about 1 - 1e-8."""
    original = load.at_peak_of

    def at_peak(plans, per_instance, availability, peak, *args, **kwargs):
        return peak.copy(), peak.copy(), original(plans, per_instance, availability, peak, *args, **kwargs)[2]

    monkeypatch.setattr(load, "at_peak_of", at_peak)
    keys = [*CHAT_CODE, "workload.load.demand=60008", "workload.load.peak_to_mean=1.3", 'cluster.instances="auto"', THROUGHPUT]
    got = run_block(api.check("h100", keys), 0, 0, N)
    w = np.array([8.0, 1.0]) / 9.0
    assert (qu._phase(60008.0 * w, 1.3, 60008.0 * w * 1.3)[0] < 1.0).any()
    assert (got["load.capacity_at_slo_tokens_per_s"] < 60008.0 * 1.3).all()
    for key in ("load.slo_attainment", "mix.chat.slo_attainment", "mix.code.slo_attainment"):
        np.testing.assert_array_equal(got[key], 1.0)


@pytest.mark.slow
def test_every_fleet_bought_for_a_mix_serves_its_day():
    """The shipped Azure 2023 mix on lite-h100 (docs/case-study/mix-azure-2023) at 200,000
    tokens/s, peak-to-mean 1.5, each trial buying its fleet, 2,048 trials: every class's
    instances carry its peak at the served availability (load.class_fleets), so every
    class's capacity at SLO reaches its peak and the mix's its peak, 300,000 tokens/s: SLO
    attainment 1 in every trial (each class's too). Testing the up instances alone
    (e73207d), 22 of these trials reported attainment 0.989-0.995; with each class's own
    headroom, ``fleet_instances(U_c)``, every class's ``N_c`` already carries its peak: the
    fleet is the sum of those, in every trial."""
    s = api.check(str(MIX_LITE), ["workload.load.demand=200000", "workload.load.peak_to_mean=1.5", 'cluster.instances="auto"'])
    got = run_block(s, 0, 0, 2048)
    assert (got["load.fleet_instances"] > 0).all()
    assert (got["load.fleet_capacity_at_slo_tokens_per_s"] >= 300000.0).all() and (got["load.slo_attainment"] == 1.0).all()
    for name in ("conversation", "code"):
        assert (got[f"mix.{name}.slo_attainment"] == 1.0).all()
    up = got["mix.conversation.up_instances"] + got["mix.code.up_instances"]
    np.testing.assert_array_equal(got["load.headroom_instances"], got["load.fleet_instances"] - up)
    own = [qu.fleet_instances(got[f"mix.{name}.up_instances"], 1.0 - got["instance_availability"], 0.999) for name in ("conversation", "code")]
    np.testing.assert_array_equal(got["load.fleet_instances"], own[0] + own[1])


def test_each_class_of_a_mix_holds_its_own_headroom():
    """The Azure 2023 mix on lite-h100 at 200,000 tokens/s, peak-to-mean 1.5, fleet bought
    (reviewC's case): the code class needs about 44 up instances. One headroom law on the
    classes' summed ``U_c``, split in proportion to ``U_c``, gives it none in these trials
    (its ``N_c = U_c`` then miss the peak whenever one instance is down, about 0.7 % of the
    time against cluster.headroom_quantile's 0.1 %); its own law gives it one, and each
    class's instances are at least ``fleet_instances(U_c)`` at 0.999."""
    got = run_block(api.check(str(MIX_LITE), ["workload.load.demand=200000", "workload.load.peak_to_mean=1.5", 'cluster.instances="auto"']), 0, 0, 8)
    down = 1.0 - got["instance_availability"]
    up = [got[f"mix.{c}.up_instances"] for c in ("conversation", "code")]
    total = up[0] + up[1]
    shared = mx.whole_split(qu.fleet_instances(total, down, 0.999) - total, up)
    own = [qu.fleet_instances(u, down, 0.999) for u in up]
    np.testing.assert_array_equal(shared[1], 0.0)
    np.testing.assert_array_equal(own[1] - up[1], 1.0)
    for c, o in zip(("conversation", "code"), own):
        assert (got[f"mix.{c}.load_instances"] >= o).all()
    np.testing.assert_array_equal(got["load.fleet_instances"], got["mix.conversation.load_instances"] + got["mix.code.load_instances"])
    assert (got["load.fleet_instances"] > total + shared[0]).all()
