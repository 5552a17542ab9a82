"""The claims' nearest-world layer (mcengine/paper/worlds.py, readings.py) and its
output: moves of a world applied to scenarios as declared, the search's columns equal to
the chain's, the readings' figures by hand, and the nearest-world column and figure."""

from __future__ import annotations

import numpy as np
import pytest

from mcengine.paper import readings, worlds
from mcengine.errors import InputError
from mcengine.paper._common import Settings, chain, fab_columns, scenario, variant
from mcengine.paper.nearest import Assumption, Budget, nearest_worlds
from mcengine.report.paper import claim_number_rows, claim_rows, nearest_figure, nearest_text, table_header

from ..report.figure_checks import check_figure


def test_a_move_shifts_a_dist_median_and_keeps_its_spread():
    base = scenario("lite-h100-2x")
    s = worlds.moved(base, "x", {"workload.memory_efficiency": 0.68, "gpu.hbm_tbps": 1.2, "workload.output_tokens": 512})
    eff = s.workload.memory_efficiency
    # "auto": the bf16 table's uniform 0.82-0.88 (median 0.85), scaled by 0.68 / 0.85 = 0.8
    assert (eff.low, eff.high) == pytest.approx((0.82 * 0.8, 0.88 * 0.8)) and eff.median() == pytest.approx(0.68)
    assert s.gpu.hbm_tbps.median() == 1.2 and s.workload.output_tokens == 512 and s.name == "x"
    assert base.workload.memory_efficiency == "auto" and base.workload.efficiency_of("memory").median() == pytest.approx(0.85)


def test_fp8_halves_the_bytes_and_doubles_the_peak():
    base = scenario("h100")
    s = worlds.moved(base, "fp8", {worlds.PRECISION_KEY: "fp8"})
    assert (s.workload.bytes_per_param.median(), s.workload.kv_bytes.median()) == (1.0, 1.0)
    assert s.peak_in_use().median() == pytest.approx(2 * 989.4)


def test_a_markup_scope_keeps_the_h100s_price():
    """Each scope comes with the markup re-fitted so that the H100's median price
    (markup x the parts in scope + the rest at cost) stays the shipped one."""
    from mcengine.standalone.fab import analytic_at_median

    h100 = scenario("h100")
    parts = analytic_at_median(h100)["cost_parts"]

    def price(markup, scope):
        return sum(v * (markup if p in scope else 1.0) for p, v in parts.items())

    shipped = price(12.625, ("die", "packaging", "test"))
    assert worlds.markup_for_scope(h100.econ.markup_applies_to) == pytest.approx(h100.econ.gpu_markup.median())
    for scope in worlds.MARKUP_SCOPES:
        assert price(worlds.markup_for_scope(scope), scope) == pytest.approx(shipped, rel=1e-12)
    s = worlds.moved(scenario("lite-h100-2x"), "die", {worlds.MARKUP_KEY: ("die",)})
    m = worlds.markup_for_scope(("die",))
    assert s.econ.markup_applies_to == ("die",) and m > 60
    assert (s.econ.gpu_markup.low, s.econ.gpu_markup.high) == pytest.approx((10.5 * m / 12.625, 14.75 * m / 12.625))


def test_a_mix_level_sets_its_studys_classes_and_a_domain_its_size():
    s = worlds.moved(scenario("lite-h100-2x"), "mix", {worlds.MIX_KEY: "mix-reasoning", worlds.DOMAIN_KEY: 16})
    classes = dict(s.workload.classes)
    assert set(classes) == {"conversation", "reasoning"} and classes["reasoning"].output_tokens == 4096
    assert s.cluster.scale_up_domain_gpus == 16
    same = worlds.moved(scenario("lite-h100-2x"), "none", {worlds.MIX_KEY: worlds.NO_MIX})
    assert not same.workload.classes
    pair = worlds.CLAIM_WORLDS["verdict"].pair()
    levels = {a.key: a for a in worlds.CLAIM_WORLDS["verdict"].assumptions(pair) if a.is_choice}
    assert levels["B:" + worlds.DOMAIN_KEY].shipped == 32 and levels[worlds.MIX_KEY].shipped == worlds.NO_MIX
    assert levels[worlds.MIX_KEY].is_nominal and not levels[worlds.MARKUP_KEY].is_nominal


def test_a_shipped_level_outside_the_choices_levels_is_added():
    """An "auto" scale-up domain on a 64-GPU instance is the level 64, put after 32; a
    Lite with request classes of its own has the mix level "own classes", put first."""
    from mcengine.scenario.study import load_study

    base = scenario("lite-h100-2x")
    wide = variant(base, "wide", ["cluster.instance_gpus=64"])
    domain = worlds._lite_domain((scenario("h100"), wide))
    assert domain.shipped == 64 and domain.levels == (8, 16, 32, 64) and domain.coordinate(64) == 1.0
    own = variant(base, "own", list(load_study("mix-azure-2023")["set"]))
    mix = worlds._mix((scenario("h100"), own))
    assert mix.shipped == worlds.OWN_MIX and mix.levels == (worlds.OWN_MIX, *worlds.MIXES) and mix.is_nominal
    assert worlds.moved(own, "n", {worlds.MIX_KEY: worlds.NO_MIX}).workload.classes == ()
    reasoning = dict(worlds.moved(own, "r", {worlds.MIX_KEY: "mix-reasoning"}).workload.classes)
    assert set(reasoning) == {"conversation", "reasoning"} and reasoning["reasoning"].output_tokens == 4096
    assert worlds.moved(own, "o", {worlds.MIX_KEY: worlds.OWN_MIX}).workload.classes == own.workload.classes


def test_a_shipped_level_with_no_place_among_ordered_levels_is_refused():
    with pytest.raises(InputError, match=r"econ.markup_applies_to: got \('hbm',\); the nearest-world search's levels"):
        worlds._with_level(worlds.MARKUP_KEY, worlds.MARKUP_SCOPES, ("hbm",), True)
    with pytest.raises(ValueError, match="k: the shipped level 'c' is not one of the choice's levels"):
        Assumption("k", "c", levels=("a", "b"))


def test_a_world_splits_by_design():
    a, b = worlds.split({"A:x": 1, "B:x": 2, "y": 3})
    assert a == {"x": 1, "y": 3} and b == {"x": 2, "y": 3}


def test_the_link_rule_follows_a_moved_link_energy():
    s = worlds.moved(scenario("lite-h100-2x"), "pj", {"gpu.link_pj_per_bit": 5.0})
    assert s.gpu.tdp_w.median() == pytest.approx(170.5 + 5.0 * 225 * 8 / 1000)


def test_every_claims_assumptions_hold_their_shipped_value_in_range():
    for key, world in worlds.CLAIM_WORLDS.items():
        pair = world.pair()
        for a in world.assumptions(pair):
            assert a.source.startswith("docs/sources.md#"), (key, a.key)
            if a.is_choice:
                assert a.shipped in a.levels, (key, a.key)
            else:
                assert a.low <= a.shipped <= a.high, (key, a.key, a.shipped)


def test_the_searchs_columns_are_the_chains():
    """The memo kept across a search's calls gives the chain's numbers (same seed, trials),
    and keeps the plan evaluations of the roofline keys of the last call alone (the
    shipped pair's recur; a moved world's are dropped once a call does not read them)."""
    from mcengine.pipeline import roofline_key
    from mcengine.scenario.sampling import draw_inputs

    settings = Settings(trials=16, seed=4)
    world = worlds.CLAIM_WORLDS["performance"]
    pair = world.pair()
    moved = worlds.moved(pair[1], "hbm", {"gpu.hbm_tbps": 1.1})
    memo: dict = {}
    worlds.columns([pair[0], pair[1]], settings, memo, False)
    got = worlds.columns([pair[0], moved], settings, memo, False)
    kept = {k for k in memo if k[0] == "roofline"}
    assert kept == {roofline_key(s, draw_inputs(s, settings.seed, 0, settings.trials)) for s in (pair[0], moved)}
    want = chain([pair[0], moved], settings)
    for name in (pair[0].name, "hbm"):
        for col in ("tokens_per_s_per_h100_equivalent", "cost_per_mtok_usd", "energy_j_per_token", "capacity_availability"):
            assert np.array_equal(got[name][col], want[name][col]), (name, col)
    fab = worlds.columns([pair[0]], settings, {}, True)[pair[0].name]
    assert np.array_equal(fab["die_yield"], fab_columns(pair[0], settings)["die_yield"])


def test_the_confirmation_runs_on_the_trials_after_the_searchs(monkeypatch):
    """The confirming trials follow the search's (disjoint, so none of them chose the
    world): the confirmation of a point is the chain run directly from trial
    ``budget.trials``, and the search's score of it the chain from trial 0."""
    from mcengine.pipeline import run_block

    settings = Settings(trials=48, seed=4, quick=True)  # searched on 16 trials, confirmed on 32
    got = {}
    monkeypatch.setattr(worlds, "nearest_worlds", lambda assumptions, score, threshold, b, confirm: got.update(
        score=score, confirm=confirm, b=b) or {"worlds": [{}]})
    assert worlds.search("yield", settings)["confirm_trial_start"] == 16
    world = worlds.CLAIM_WORLDS["yield"]
    a, b = world.pair()
    point = {"fab.defect_density_per_cm2": 0.2, "A:fab.units_required": 144}
    moved_a = worlds.moved(a, "a", {"fab.defect_density_per_cm2": 0.2, "fab.units_required": 144})
    moved_b = worlds.moved(b, "b", {"fab.defect_density_per_cm2": 0.2})
    for scorer, start, n in ((got["score"], 0, 16), (got["confirm"], 16, 32)):
        ca, cb = (run_block(s, settings.seed, start, n) for s in (moved_a, moved_b))
        assert np.array_equal(scorer([point])[0], world.score(ca, cb, moved_a, moved_b)), start


def test_packaging_readings_scale_the_package_by_hand():
    doc = {"key": "cost"}
    got = readings.readings(doc, Settings(trials=16, seed=0))
    by_name = {r["name"]: r for r in got["readings"]}
    assert set(by_name) == {f"packaging ~ fraction^{k:g}, {s}" for k in readings.PACKAGING_EXPONENTS for s in ("paper", "shipped")}
    assert "$47 (H100 $750 x 0.25^2)" in by_name["packaging ~ fraction^2, paper"]["reading"]
    # a cheaper package never lowers the reduction: the same trials, only the Lite's package moves
    med = {k: by_name[f"packaging ~ fraction^{k:g}, paper"]["figure"]["median"] for k in readings.PACKAGING_EXPONENTS}
    assert med[1.0] < med[1.5] < med[2.0]
    assert got["text_states"] and got["text_does_not_state"]


def test_collectives_at_full_power_by_hand():
    s = scenario("lite-h100-2x")
    cols = {"input.gpu.idle_w": np.array([20.0, 20.0]), "availability": np.array([1.0, 0.5]),
            "gpu_power_w": np.array([100.0, 50.0]), "energy_j_per_token": np.array([2.0, 3.0])}
    full = 20.0 + (184.0 - 20.0) * np.array([1.0, 0.5])
    assert np.allclose(readings.joules_collectives_at_full_power(cols, s), cols["energy_j_per_token"] * full / cols["gpu_power_w"])


def test_collectives_at_link_power_by_hand():
    """The 2x Lite's links: 7.5 pJ/bit x 8 x 225 GB/s = 13.5 W (its TDP's link share,
    184 - 170.5 W), drawn while the GPU waits (1 - busy) and is up."""
    s = scenario("lite-h100-2x")
    assert readings.link_watts(s) == pytest.approx(13.5) == pytest.approx(s.gpu.tdp_w.median() - 170.5)
    cols = {"busy_fraction": np.array([1.0, 0.6]), "availability": np.array([1.0, 0.5]),
            "gpu_power_w": np.array([100.0, 50.0]), "energy_j_per_token": np.array([2.0, 3.0])}
    want = cols["energy_j_per_token"] * (cols["gpu_power_w"] + 13.5 * np.array([0.0, 0.4 * 0.5])) / cols["gpu_power_w"]
    assert np.allclose(readings.joules_links_during_collectives(cols, s), want)
    assert readings.link_watts(scenario("h100")) == pytest.approx(18.0)


def _linear_claim() -> dict:
    asm = (Assumption("x", 1.0, 0.0, 4.0, "assumed"), Assumption("y", 0.3, 0.0, 1.0, "assumed"))
    nearest = nearest_worlds(asm, lambda ws: [0.5 * w["x"] + w["y"] + np.linspace(-0.2, 0.2, 16) for w in ws], 2.0,
                             Budget(trials=16, screen=8))
    nearest["figure"] = "a linear score"
    side = {"figure": {"median": 0.5, "p05": 0.4, "p95": 0.6}, "p_holds": 0.0}
    return {"number": 9, "key": "linear", "claim": "c", "unit": "ratio", "paper_figure": 2.0, "paper_figure_text": "2x",
            "paper_figure_confirmed": True, "paper_assumptions": side, "shipped": side, "holds_when": "h", "nearest_world": nearest}


def test_the_nearest_world_column_and_figure():
    c = _linear_claim()
    w = c["nearest_world"]["worlds"][0]
    text = nearest_text(c["nearest_world"])
    assert text.startswith(f"d = {w['distance']:.2f}, P(holds) {w['p_holds']:.2f}: ") and "x 1 -> " in text
    rows = claim_rows({"claims": [c]})
    assert rows[0]["nearest_world"] == text
    assert table_header(rows) == "| claim | paper's figure | mcengine (paper's assumptions) | mcengine (shipped) | holds when | nearest world |"
    number = claim_number_rows({"claims": [c]})[0]
    assert number["nearest_world_distance"] == w["distance"] and number["nearest_world_p_holds"] == w["p_holds"]
    fig = nearest_figure(c)
    top, bottom = fig.axes
    assert list(bottom.get_lines()[0].get_ydata()) == c["nearest_world"]["path"]["p_holds"]
    assert check_figure(fig) == []


def test_a_list_value_reads_as_its_parts():
    w = {"distance": 0.33, "p_holds": 0.6, "changed": [{"key": "econ.markup_applies_to", "shipped": ["die", "packaging", "test"],
                                                       "value": ["die"]}]}
    assert nearest_text({"worlds": [w]}) == "d = 0.33, P(holds) 0.60: econ.markup_applies_to die+packaging+test -> die"


def test_a_confirmed_world_reads_with_its_standard_error():
    w = {"distance": 0.5, "p_holds": 0.52, "changed": [{"key": "x", "shipped": 1.0, "value": 2.0}],
         "confirmed": {"trials": 1024, "p_holds": 0.4912109375, "se": 0.015622, "figure_median": 1.0, "holds": False}}
    assert nearest_text({"worlds": [w]}) == ("d = 0.50, P(holds) 0.52; 0.491 ± 0.016 on 1,024 confirming trials, which do not reach it "
                                             "on the same ray: x 1 -> 2")
    w["confirmed"]["on_ray"] = {"distance": 0.53, "p_holds": 0.5009765625, "se": 0.015625}
    assert nearest_text({"worlds": [w]}) == ("d = 0.50, P(holds) 0.52; 0.491 ± 0.016 on 1,024 confirming trials, which reach it on the same "
                                             "ray at d = 0.53 (P 0.501 ± 0.016 reached on the confirming trials, not confirmed): x 1 -> 2")
    w["confirmed"] = {**w["confirmed"], "p_holds": 0.5, "se": 0.015625, "holds": True}
    assert nearest_text({"worlds": [w]}) == "d = 0.50, P(holds) 0.52; 0.500 ± 0.016 on 1,024 confirming trials: x 1 -> 2"
    row = claim_number_rows({"claims": [{**_linear_claim(), "nearest_world": {"worlds": [w]}}]})[0]
    assert (row["nearest_world_p_holds_confirmed"], row["nearest_world_p_holds_se"]) == (0.5, 0.015625)


def test_no_world_reads_as_none():
    best = {"p_holds": 0.0, "figure_median": 0.36}
    assert nearest_text({"worlds": [], "best_seen": best}, "ratio") == "none within the plausible ranges (best seen: P(holds) 0.00, median figure 0.36x)"
    assert nearest_text({"worlds": [], "budget_spent": True, "best_seen": best}).startswith("not found within the search's budget")
