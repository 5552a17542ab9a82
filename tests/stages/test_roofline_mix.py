"""A workload mix through the roofline stage and the chain (docs/model.md#mix).

Exact checks: a one-class mix is the scenario without classes to the bit (every column
the chain had before); a two-class mix's columns are the closed forms of
:mod:`mcengine.analytic.mix` applied to each class planned alone, which is the scenario
without classes at that class's lengths.
"""

from __future__ import annotations

import numpy as np
import pytest

from mcengine import api
from mcengine.pipeline import reshard_capacity, run_block
from mcengine.scenario.sampling import draw_inputs
from mcengine.stages import roofline

SMALL = ["cluster.instances=4", "cluster.spare_gpus=8"]
RESHARD = ["cluster.on_failure=reshard"]
CHAT = ["workload.classes.chat.share=0.7", "workload.classes.chat.prompt_tokens=1024", "workload.classes.chat.output_tokens=128"]
CODE = ["workload.classes.code.share=0.3", "workload.classes.code.prompt_tokens=2048", "workload.classes.code.output_tokens=32"]


def _one_class(shape: tuple[int, int]) -> list[str]:
    s, o = shape
    return ["workload.classes.only.share=1", f"workload.classes.only.prompt_tokens={s}", f"workload.classes.only.output_tokens={o}"]


@pytest.mark.parametrize("name", ["h100", "lite-h100-2x"])
def test_a_one_class_mix_is_the_scenario_without_classes_to_the_bit(name):
    plain = api.check(name, SMALL)
    mixed = api.check(name, SMALL + _one_class((plain.workload.prompt_tokens, plain.workload.output_tokens)))
    a, b = run_block(plain, 3, 512, 48), run_block(mixed, 3, 512, 48)
    assert set(a) <= set(b)
    for column in a:
        assert np.array_equal(a[column], b[column]), column
    assert np.array_equal(b["mix.only.instance_share"], np.ones(48))


def test_two_classes_serve_the_weighted_harmonic_rate_of_each_class_planned_alone():
    s = api.check("h100", SMALL + CHAT + CODE)
    inputs = draw_inputs(s, 0, 0, 32)
    got = roofline.throughput(s, inputs)
    alone = {name: roofline.throughput(api.check("h100", SMALL + [f"workload.prompt_tokens={p}", f"workload.output_tokens={o}"]), inputs)
             for name, p, o in (("chat", 1024, 128), ("code", 2048, 32))}
    t_chat, t_code = alone["chat"]["tokens_per_s_instance"], alone["code"]["tokens_per_s_instance"]
    assert (t_chat > 0).all() and (t_code > 0).all()
    w_chat = 0.7 * 128 / (0.7 * 128 + 0.3 * 32)  # the chat class's share of the output tokens
    w_code = 1.0 - w_chat
    rate = 1.0 / (w_chat / t_chat + w_code / t_code)
    np.testing.assert_allclose(got["tokens_per_s_instance"], rate, rtol=1e-13)
    np.testing.assert_allclose(got["mix.chat.instance_share"], w_chat / t_chat * rate, rtol=1e-13)
    np.testing.assert_allclose(got["mix.chat.instance_share"] + got["mix.code.instance_share"], 1.0, rtol=1e-15)
    np.testing.assert_allclose(got["output_tokens_per_request"], 0.7 * 128 + 0.3 * 32, rtol=1e-15)
    np.testing.assert_allclose(got["ttft_ms"], 0.7 * alone["chat"]["ttft_ms"] + 0.3 * alone["code"]["ttft_ms"], rtol=1e-13)
    for name in ("chat", "code"):
        assert np.array_equal(got[f"mix.{name}.tokens_per_s_instance"], alone[name]["tokens_per_s_instance"])


def test_the_econ_stage_prices_requests_and_each_class_alone():
    s = api.check("h100", SMALL + CHAT + CODE)
    cols = run_block(s, 1, 0, 16)
    np.testing.assert_allclose(cols["cost_per_request_usd"], cols["cost_per_mtok_usd"] * (0.7 * 128 + 0.3 * 32) / 1e6, rtol=1e-15)
    # a class alone: the same spend over that class's tokens
    for name in ("chat", "code"):
        ratio = cols["tokens_per_s_instance"] / cols[f"mix.{name}.tokens_per_s_instance"]
        np.testing.assert_allclose(cols[f"mix.{name}.cost_per_mtok_usd"], cols["cost_per_mtok_usd"] * ratio, rtol=1e-13)


def test_shares_are_relative_weights():
    """3:7 and 0.3:0.7 are the same mix, to the bit."""
    a = api.check("h100", SMALL + CHAT + CODE)
    b = api.check("h100", SMALL + [c.replace("share=0.7", "share=7") for c in CHAT] + [c.replace("share=0.3", "share=3") for c in CODE])
    inputs_a, inputs_b = draw_inputs(a, 0, 0, 8), draw_inputs(b, 0, 0, 8)
    ra, rb = roofline.throughput(a, inputs_a), roofline.throughput(b, inputs_b)
    np.testing.assert_allclose(ra["tokens_per_s_instance"], rb["tokens_per_s_instance"], rtol=1e-15)


def test_a_drawn_share_is_an_uncertain_input():
    s = api.check("h100", SMALL + CHAT + CODE + ['workload.classes.code.share={dist="uniform", low=0.2, high=0.4}'])
    assert "workload.classes.code.share" in s.uncertain_inputs()


@pytest.mark.parametrize("override, key", [
    ("workload.classes.code.share=0", "workload.classes.code.share"),
    ("workload.classes.code.share=-0.5", "workload.classes.code.share"),
    ("workload.classes.code.output_tokens=0", "workload.classes.code.output_tokens"),
    ("workload.classes.Code.share=1", "workload.classes.Code"),
])
def test_bad_mix_input_exits_2_naming_the_key(cli, override, key):
    r = cli("check", "h100", *[a for o in CHAT + CODE + [override] for a in ("--set", o)])
    assert r.code == 2
    assert key in r.err


def test_a_class_without_its_lengths_exits_2_naming_the_key(cli):
    r = cli("check", "h100", "--set", "workload.classes.chat.share=1")
    assert r.code == 2 and "workload.classes.chat.prompt_tokens" in r.err


def test_a_sweep_of_a_share_is_the_run_with_that_share_set():
    """``workload.classes.code.share`` is a key like any other: each sweep point is the
    run with ``--set`` at that value (same seed, same trials, same numbers)."""
    from mcengine.sensitivity.methods import sweep

    base = SMALL + CHAT + CODE
    doc = sweep("h100", "workload.classes.code.share", ["0.05", "3"], outputs=("tokens_per_s", "cost_per_request_usd"), trials=16, seed=2, overrides=base)
    for row, value in zip(doc["rows"], ("0.05", "3")):
        run = api.run(["h100"], trials=16, seed=2, overrides=base + [f"workload.classes.code.share={value}"], figures=False)
        ours = run.summary()["scenarios"]["h100"]
        assert row["tokens_per_s"]["p50"] == ours["tokens_per_s"]["p50"]
        assert row["cost_per_request_usd"]["p50"] == ours["cost_per_request_usd"]["p50"]


def test_a_drawn_share_has_a_tornado_bar():
    """The tornado moves the code share alone to its 5th and 95th percentiles (0.12 and 0.48
    of uniform(0.1, 0.5)); code requests cost far more per output token than chat (2,048
    prompt tokens for 32 output tokens), so more of them raise the mix's cost per token."""
    base = SMALL + CHAT + [c for c in CODE if ".share=" not in c] + ['workload.classes.code.share={dist="uniform", low=0.1, high=0.5}']
    bar = api.tornado("h100", trials=16, overrides=base)["bars"]["workload.classes.code.share"]
    assert (bar["input_low"], bar["input_high"]) == pytest.approx((0.12, 0.48), rel=1e-12)
    assert bar["low"] < bar["high"]


def test_mcengine_roofline_of_a_mix_shows_each_class_planned_alone(cli):
    mixed = api.roofline("h100", SMALL + CHAT + CODE)
    for name, p, o in (("chat", 1024, 128), ("code", 2048, 32)):
        alone = api.roofline("h100", SMALL + [f"workload.prompt_tokens={p}", f"workload.output_tokens={o}"])
        assert mixed["classes"][name]["tokens_per_s_instance"] == alone["tokens_per_s_instance"]
        assert mixed["classes"][name]["plan"] == alone["plan"]
    t = {n: mixed["classes"][n]["tokens_per_s_instance"] for n in ("chat", "code")}
    w_chat = 0.7 * 128 / (0.7 * 128 + 0.3 * 32)
    assert mixed["tokens_per_s_instance_mix"] == pytest.approx(1.0 / (w_chat / t["chat"] + (1.0 - w_chat) / t["code"]), rel=1e-13)
    r = cli("roofline", "h100", *[a for o in SMALL + CHAT + CODE for a in ("--set", o)])
    assert r.code == 0 and "class chat" in r.out and "class code" in r.out


def test_a_class_may_name_its_own_model():
    """A fleet: the chat class goes to Llama-3-8B; its instances serve what the scenario
    with that model would, the code class's serve the scenario's own model."""
    s = api.check("h100", SMALL + CHAT + CODE + ['workload.classes.chat.model="llama-3-8b"'])
    inputs = draw_inputs(s, 0, 0, 16)
    got = roofline.throughput(s, inputs)
    small = roofline.throughput(api.check("h100", SMALL + ['workload.model="llama-3-8b"', "workload.prompt_tokens=1024", "workload.output_tokens=128"]), inputs)
    big = roofline.throughput(api.check("h100", SMALL + ["workload.prompt_tokens=2048", "workload.output_tokens=32"]), inputs)
    assert np.array_equal(got["mix.chat.tokens_per_s_instance"], small["tokens_per_s_instance"])
    assert np.array_equal(got["mix.code.tokens_per_s_instance"], big["tokens_per_s_instance"])


def test_a_class_model_card_is_checked_naming_its_key(cli):
    r = cli("check", "h100", *[a for o in CHAT + CODE + ["workload.classes.code.model.name=x", "workload.classes.code.model.layers=2",
                                                          "workload.classes.code.model.hidden=64", "workload.classes.code.model.heads=4",
                                                          "workload.classes.code.model.kv_heads=3", "workload.classes.code.model.head_dim=16",
                                                          "workload.classes.code.model.ffn=128", "workload.classes.code.model.vocab=100"]
                               for a in ("--set", o)])
    assert r.code == 2 and "workload.classes.code.model.kv_heads" in r.err


def test_a_class_slo_overrides_the_workloads_for_that_class_alone():
    """The code class at TPOT 30 ms / TTFT 900 ms is planned as the scenario without classes
    at those SLOs and the code lengths (to the bit); the chat class keeps the workload's 50 ms."""
    own = ["workload.classes.code.tpot_slo_ms=30", "workload.classes.code.ttft_slo_ms=900"]
    s = api.check("h100", SMALL + CHAT + CODE + own)
    got = roofline.throughput(s, draw_inputs(s, 0, 0, 32))
    code = api.check("h100", SMALL + ["workload.prompt_tokens=2048", "workload.output_tokens=32", "workload.tpot_slo_ms=30", "workload.ttft_slo_ms=900"])
    chat = api.check("h100", SMALL + ["workload.prompt_tokens=1024", "workload.output_tokens=128"])
    alone = {"code": roofline.throughput(code, draw_inputs(code, 0, 0, 32)), "chat": roofline.throughput(chat, draw_inputs(chat, 0, 0, 32))}
    for name in ("chat", "code"):
        for k in ("tokens_per_s_instance", "tpot_ms", "ttft_ms", "slo_met"):
            assert np.array_equal(got[f"mix.{name}.{k}"], alone[name][k]), (name, k)
    assert (got["mix.code.tpot_ms"] <= 30.0).all() and (got["mix.code.ttft_ms"] <= 900.0).all()
    assert (got["mix.chat.tpot_ms"] > 30.0).any()  # the chat class is not held to the code class's SLO
    # without its own SLO the code class runs at the workload's 50 ms, with a larger batch
    plain = roofline.throughput(api.check("h100", SMALL + CHAT + CODE), draw_inputs(s, 0, 0, 32))
    assert (plain["mix.code.tokens_per_s_instance"] > got["mix.code.tokens_per_s_instance"]).all()


def test_a_class_slo_is_an_input_key_checked_by_name(cli):
    s = api.check("h100", CHAT + CODE + ['workload.classes.code.tpot_slo_ms={dist="uniform", low=20, high=60}'])
    assert "workload.classes.code.tpot_slo_ms" in s.uncertain_inputs() and "workload.classes.chat.tpot_slo_ms" not in s.inputs()
    r = cli("check", "h100", *[a for o in CHAT + CODE + ["workload.classes.code.tpot_slo_ms=-1"] for a in ("--set", o)])
    assert r.code == 2 and "workload.classes.code.tpot_slo_ms" in r.err
    r = cli("keys", "workload")
    assert r.code == 0 and "workload.classes.NAME.ttft_slo_ms" in r.out


def test_whole_instances_per_class_serve_the_best_split_of_the_cluster():
    """4 instances, chat and code: every split (n_chat, n_code >= 1, at most 4) serves
    min_c n_c T_c / w_c tokens/s of the mix; the stage keeps the best one, rate per instance
    = that over 4 (against the continuous 1 / sum w_c / T_c), instance shares n_c / 4."""
    whole = ['workload.class_instances="whole"']
    s = api.check("h100", SMALL + CHAT + CODE + whole)
    inputs = draw_inputs(s, 0, 0, 16)
    got = roofline.throughput(s, inputs)
    cont = roofline.throughput(api.check("h100", SMALL + CHAT + CODE), inputs)
    t = [got["mix.chat.tokens_per_s_instance"], got["mix.code.tokens_per_s_instance"]]
    w_chat = 0.7 * 128 / (0.7 * 128 + 0.3 * 32)
    w = [w_chat, 1.0 - w_chat]
    for i in range(16):
        best = max((min(n * t[0][i] / w[0], (k - n) * t[1][i] / w[1]), n, k - n) for k in (2, 3, 4) for n in range(1, k))
        assert got["tokens_per_s_instance"][i] == pytest.approx(best[0] / 4, rel=1e-12)
        assert got["tokens_per_s_instance"][i] <= cont["tokens_per_s_instance"][i] * (1 + 1e-12)
        # the counts serve that rate (a split with fewer instances can tie: the smallest counts that do are taken)
        assert min(got["mix.chat.instances"][i] * t[0][i] / w[0], got["mix.code.instances"][i] * t[1][i] / w[1]) == pytest.approx(best[0], rel=1e-12)
        assert got["mix.chat.instance_share"][i] == got["mix.chat.instances"][i] / 4
        busy = [best[0] * w[c] / t[c][i] for c in (0, 1)]  # instances' worth of time each class keeps busy
        for c, name in enumerate(("chat", "code")):
            assert got[f"mix.{name}.idle_share"][i] == pytest.approx(1 - busy[c] / got[f"mix.{name}.instances"][i], rel=1e-9, abs=1e-12)
    r = api.roofline("h100", SMALL + CHAT + CODE + whole)
    assert 0.0 <= r["rounding_loss"] < 1.0 and r["classes"]["chat"]["instances"] >= 1


def test_whole_instances_with_a_class_no_plan_serves_leave_the_mix_unserved_with_finite_columns():
    """Issue 51 case 3: with a class that meets no SLO, whole instances gave 0/0 shares
    (a NaN batch cast to int64, a non-finite reshard capacity table, a ZeroDivisionError
    in roofline). The mix is unserved: no instances, the continuous shares, rate 0."""
    never = ["workload.classes.code.tpot_slo_ms=0.001"]
    whole = ['workload.class_instances="whole"']
    s = api.check("h100", SMALL + CHAT + CODE + never + whole)
    inputs = draw_inputs(s, 0, 0, 8)
    with np.errstate(all="raise"):
        got = roofline.throughput(s, inputs)
        cont = roofline.throughput(api.check("h100", SMALL + CHAT + CODE + never), inputs)
    assert np.array_equal(got["tokens_per_s_instance"], np.zeros(8)) and np.array_equal(got["mix.code.instances"], np.zeros(8))
    assert np.array_equal(got["mix.chat.instance_share"], cont["mix.chat.instance_share"])
    assert np.array_equal(got["batch"], cont["batch"])
    table = reshard_capacity(api.check("h100", SMALL + CHAT + CODE + never + whole + RESHARD))
    assert np.all(np.isfinite(table))
    r = api.roofline("h100", SMALL + CHAT + CODE + never + whole)
    assert (r["rounding_loss"], r["tokens_per_s_instance_mix"], r["classes"]["code"]["instances"]) == (0.0, 0.0, 0.0)


def test_an_infeasible_class_length_is_named_by_the_classes_key(cli):
    """Issue 51 minor: a class's length no plan fits was named workload.prompt_tokens."""
    long = ["workload.classes.a.share=1", "workload.classes.a.prompt_tokens=10000000", "workload.classes.a.output_tokens=200"]
    for command, extra in (("run", ["--trials", "8", "--quiet"]), ("roofline", []), ("run", ["--trials", "8", "--set", 'workload.plan="median"'])):
        r = cli(command, "h100", *extra, *[a for kv in long for a in ("--set", kv)])
        assert r.code == 2 and "workload.classes.a.prompt_tokens = 10,000,000" in r.err and "workload.prompt_tokens" not in r.err, r.err


def test_whole_instances_need_one_per_class(cli):
    r = cli("check", "h100", *[a for o in CHAT + CODE + ["cluster.instances=1", "cluster.spare_gpus=0", 'workload.class_instances="whole"']
                               for a in ("--set", o)])
    assert r.code == 2 and "cluster.instances" in r.err and "workload.class_instances" in r.err



def test_reshard_with_one_class_is_the_scenario_without_classes_to_the_bit():
    plain = api.check("h100", SMALL + RESHARD)
    mixed = api.check("h100", SMALL + RESHARD + _one_class((plain.workload.prompt_tokens, plain.workload.output_tokens)))
    assert np.array_equal(reshard_capacity(mixed), reshard_capacity(plain))
    a, b = run_block(plain, 3, 512, 24), run_block(mixed, 3, 512, 24)
    for column in a:
        assert np.array_equal(a[column], b[column]), column


def test_reshard_with_two_classes_weights_each_class_table_by_its_instance_share():
    """At the median inputs: chat and code alone give rates T_c and tables K_c; the mix's
    table is (s_chat K_chat + s_code K_code) with s_c = (w_c / T_c) / sum_k (w_k / T_k)."""
    s = api.check("h100", SMALL + RESHARD + CHAT + CODE)
    alone = {name: api.check("h100", SMALL + RESHARD + [f"workload.prompt_tokens={p}", f"workload.output_tokens={o}"])
             for name, p, o in (("chat", 1024, 128), ("code", 2048, 32))}
    t = {name: api.roofline("h100", SMALL + RESHARD + [f"workload.prompt_tokens={p}", f"workload.output_tokens={o}"])["tokens_per_s_instance"]
         for name, p, o in (("chat", 1024, 128), ("code", 2048, 32))}
    w_chat = 0.7 * 128 / (0.7 * 128 + 0.3 * 32)
    need = {"chat": w_chat / t["chat"], "code": (1.0 - w_chat) / t["code"]}
    by_hand = sum(need[n] / sum(need.values()) * reshard_capacity(alone[n]) for n in need)
    got = reshard_capacity(s)
    np.testing.assert_allclose(got, by_hand, rtol=1e-12)
    assert got[0] == pytest.approx(1.0, rel=1e-15) and len(got) == s.cluster.instance_gpus + 1
    assert not np.array_equal(reshard_capacity(alone["chat"]), reshard_capacity(alone["code"]))  # the weighting matters
    cols = run_block(s, 3, 512, 24)
    assert np.all((cols["capacity_availability"] > 0.9) & (cols["capacity_availability"] <= 1.0))
