"""The paper study (mcengine/paper/): each claim's figure under the paper's assumptions
against its closed form or a hand computation, the fleet's rounding loss, the sweep's
crossing, and bad fleet input."""

from __future__ import annotations

import math

import pytest

from mcengine.errors import InputError
from mcengine.paper import blast_radius, cost_claim, fleet, power, yield_claim
from mcengine.paper._common import Settings, crossings, fab_columns, scenario
from mcengine.stages.fab import fab_model


def test_yield_closed_form_by_hand():
    # 25.9 x 31.4 mm = 8.1326 cm², 12.95 x 15.7 mm = 2.03315 cm²; D0 = 0.1
    got = yield_claim.closed_form_gain(0.1, 8.1326, 2.03315)
    assert got == pytest.approx(math.exp(0.1 * 6.09945) - 1.0, rel=1e-12)
    assert got == pytest.approx(0.8403, abs=1e-4)
    # the defect density at which the gain is the paper's 41 %
    assert math.log1p(0.41) / 6.09945 == pytest.approx(0.05633, abs=1e-4)


def test_yield_under_paper_assumptions_matches_poisson():
    s = Settings(trials=48, seed=3)
    pair = tuple(scenario(r) for r in yield_claim.PAPER)
    for sc in pair:
        area = fab_model(sc).wafer.die_area_cm2
        y = fab_columns(sc, s)["die_yield"]
        sem = y.std(ddof=1) / math.sqrt(y.size)
        assert abs(y.mean() - math.exp(-0.1 * area)) <= 4 * sem + 1e-12, sc.name
    g = yield_claim.gain(pair, s)["die_yield"]
    expected = yield_claim.closed_form_gain(0.1, *(fab_model(x).wafer.die_area_cm2 for x in pair))
    assert abs(g.mean() - expected) <= 4 * g.std(ddof=1) / math.sqrt(g.size) + 2e-3  # + Jensen bias of a ratio of run means


def test_cost_under_paper_assumptions_matches_closed_form_per_trial():
    from mcengine.analytic.fab import cost_per_good_package
    from mcengine.scenario.sampling import draw_inputs
    from mcengine.stages.fab import hbm_stack_price_usd, optics_price_usd

    s = Settings(trials=48, seed=5)
    pair = tuple(scenario(r) for r in cost_claim.PAPER)
    got = cost_claim.reduction(pair, s)["reduction"]
    per_h100e = []
    for sc in pair:
        f, model = sc.fab, fab_model(sc)
        inputs = draw_inputs(sc, s.seed, 0, s.trials)
        good = model.wafer.dies * math.exp(-0.1 * model.wafer.die_area_cm2)  # Poisson, no harvesting
        cost = cost_per_good_package(inputs["fab.wafer_cost_usd"], good, f.hbm_stacks, hbm_stack_price_usd(sc, inputs), f.hbm_stack_yield.median(),
                                     f.package_cost_usd.median(), f.test_cost_usd.median(), f.assembly_yield.median(),
                                     optics_price_usd(inputs))
        per_h100e.append(cost / sc.gpu.h100_equivalents.value)
    expected = 1.0 - per_h100e[1] / per_h100e[0]
    d = got - expected
    assert abs(d.mean()) <= 4 * d.std(ddof=1) / math.sqrt(d.size) + 2e-3


def test_blast_radius_closed_forms_by_hand():
    h100, lite = scenario("h100"), scenario("lite-h100")
    forms = blast_radius.closed_forms(h100, lite)
    # one package: 1/1024 of the H100 cluster against 0.25/1024 of the Lite one
    assert forms["package_only"] == pytest.approx((1 / 1024) / (0.25 / 1024))
    assert forms["package_only"] == pytest.approx(4.0)
    # the whole instance: 8 H100s against 32 quarter-H100s, the same silicon
    assert forms["whole_instance"] == pytest.approx((8 / 1024) / (32 * 0.25 / 1024)) == 1.0
    assert blast_radius.share_lost_per_failure(8, 1.0, 1024) == 8 / 1024


def test_blast_radius_per_failure_under_reshard_by_hand():
    import numpy as np

    h100, lite = scenario("h100"), scenario("lite-h100")
    # an 8-GPU instance keeping 5/8 of its throughput on 7 GPUs loses 3/8 of 8 H100s per failure;
    # a 32-GPU one keeping half loses 16 quarter-H100s: 3/8 x 8 / 1024 against 1/2 x 32 x 0.25 / 1024
    tables = {"h100": np.array([1.0, 5 / 8]), "lite": np.array([1.0, 0.5])}
    assert blast_radius.per_failure_reshard(h100, tables["h100"]) == pytest.approx(3 / 1024)
    assert blast_radius.per_failure_reshard(lite, tables["lite"]) == pytest.approx(4 / 1024)
    assert blast_radius.closed_forms(h100, lite, tables)["reshard"] == pytest.approx(0.75)
    # a layout that loses exactly the failed GPU gives the paper's package-only figure
    exact = {"h100": np.array([1.0, 7 / 8]), "lite": np.array([1.0, 31 / 32])}
    assert blast_radius.closed_forms(h100, lite, exact)["reshard"] == pytest.approx(4.0)


def test_power_parity_gain_and_paired_gain_by_hand():
    import numpy as np

    # a quarter of everything (TDP 700/4, idle 80/4) at rated clocks: power per
    # H100-equivalent equal at any busy fraction, so J/token equal at throughput parity
    for u in (0.0, 0.3, 1.0):
        assert power.parity_gain(80.0, 700.0, 20.0, 175.0, 0.25, 1.0, u) == pytest.approx(0.0, abs=1e-15)
    # Lite at s = 0.8, u = 0.5: H100 80 + 620 x 0.5 = 390 W; Lite (20 + 155 x 0.512 x 0.5) / 0.25 = 238.72 W per H100e
    assert power.parity_gain(80.0, 700.0, 20.0, 175.0, 0.25, 0.8, 0.5) == pytest.approx(390.0 / 238.72 - 1.0, rel=1e-12)
    assert power.parity_gain(80.0, 700.0, 20.0, 175.0, 0.25, 0.8, 0.5) == pytest.approx(0.63371, abs=1e-5)
    # idle alone (u = 0): 80 W against 4 x 25 W = 100 W per H100e: -20 %
    assert power.parity_gain(80.0, 700.0, 25.0, 175.0, 0.25, 1.0, 0.0) == pytest.approx(-0.2)
    # from the run's J/token, paired: 2.0 / 1.6 - 1; only B delivers: inf; neither delivers: 0
    g = power.gain({"energy_j_per_token": np.array([2.0, np.inf, np.inf])}, {"energy_j_per_token": np.array([1.6, 1.0, np.inf])})
    assert g[0] == pytest.approx(0.25) and g[1] == np.inf and g[2] == 0.0


def test_power_paper_gain_is_the_power_ratio_over_the_throughput_ratio():
    """The chain's J/token: active GPUs x P / (tokens/s per instance x instances x A), so
    per trial J_h/J_l = (P_h/P_l) x (N_h/N_l) x (tok/s_l x n_l x A_l)/(tok/s_h x n_h x A_h)."""
    import numpy as np

    from mcengine.paper.performance import designs_run

    s = Settings(trials=16, seed=2)
    cols = designs_run(s)
    h, lite = scenario("paper-h100"), scenario("paper-lite-h100-2x")
    ch, cl = cols["paper-h100.llama-3-70b"], cols["paper-lite-h100-2x.llama-3-70b"]
    tokens = lambda c, sc: c["tokens_per_s_instance"] * sc.cluster.instances * c["instance_availability"]  # noqa: E731
    by_hand = (h.active_gpus * ch["gpu_power_w"] / tokens(ch, h)) / (lite.active_gpus * cl["gpu_power_w"] / tokens(cl, lite)) - 1.0
    ok = np.isfinite(by_hand)
    assert ok.any()
    np.testing.assert_allclose(power.gain(ch, cl)[ok], by_hand[ok], rtol=1e-9)


def test_power_under_the_facility_by_hand():
    """Two trials: A's 40 kW racks liquid-cooled, B's 20 kW air-cooled in one of two. At
    the wall A spends $100 for 1,000 tokens and B $150 (then $80) for 1,000 (then 500):
    gains 0.1 / 0.15 - 1 = -1/3 and 0.1 / 0.16 - 1 = -0.375. Cost ratios 1.3 and 1.1; B
    liquid-cooled costs 1.25 and 1.2, so its own cooling is cheaper in the second trial."""
    import numpy as np

    from mcengine.columns import BREAKDOWN_COLUMN

    def cols(rack, liquid, energy, tokens, cost, cooling):
        out = {"rack_kw": np.array(rack), "liquid_cooled": np.array(liquid), "racks": np.array([10.0, 10.0]),
               "it_power_mw": np.array([1.0, 1.0]), "energy_usd": np.array(energy), "tokens_total": np.array(tokens),
               "cost_per_mtok_usd": np.array(cost)}
        return out | {BREAKDOWN_COLUMN.format(p): np.array(v) for p, v in (("cooling", cooling), ("floor", [0.1, 0.1]), ("facility", [0.2, 0.2]))}

    a = cols([40.0, 40.0], [1.0, 1.0], [100.0, 100.0], [1000.0, 1000.0], [1.0, 1.0], [0.02, 0.02])
    b = cols([20.0, 20.0], [0.0, 1.0], [150.0, 80.0], [1000.0, 500.0], [1.3, 1.1], [0.01, 0.02])
    liquid = cols([20.0, 20.0], [1.0, 1.0], [120.0, 60.0], [1000.0, 500.0], [1.25, 1.2], [0.02, 0.02])
    out = power.facility_side(a, b, "a", "b", liquid)
    assert out["by_design"]["a"]["cooling"] == "liquid" and out["by_design"]["b"]["liquid_share"] == 0.5
    assert out["by_design"]["b"]["cooling_per_mtok_usd"] == pytest.approx(0.015)
    assert out["wall_gain"]["p05"] == pytest.approx(-0.375) and out["wall_gain"]["p95"] == pytest.approx(-1 / 3)
    assert out["cost_ratio"]["p05"] == pytest.approx(1.1) and out["cost_ratio"]["p95"] == pytest.approx(1.3)
    assert out["p_lite_cheaper"] == 0.0 and out["p_own_cooling_cheaper"] == 0.5
    assert out["lite_own_cooling_over_liquid"]["p05"] == pytest.approx(1.1 / 1.2)


def test_fleet_need_and_rounding_by_hand():
    from mcengine.analytic.roofline.weights import params_total
    from mcengine.scenario.cards import load_model_card

    card = load_model_card("llama-3-70b", "m", [])
    weights = params_total(card) * 2
    h100, lite = scenario("h100"), scenario("lite-h100-2x")
    need_h = fleet.need_of(h100, "llama-3-70b")
    assert need_h == pytest.approx(weights / (80e9 * 0.9))
    assert fleet.need_of(lite, "llama-3-70b") == pytest.approx(4 * need_h)
    assert fleet.rounding_loss(1.96, 2) == pytest.approx(0.02)
    assert fleet.rounding_loss(0.223, 1) == pytest.approx(0.777)
    # llama-3-8b (16 GB of weights) fits one H100 with room for KV, and meets 50 ms there
    assert fleet.smallest_instance(h100, "llama-3-8b", 8) == (1, True)
    f = fleet.load_fleet()
    assert sum(f.shares) == pytest.approx(1.0)
    shares = fleet.swept_shares(f, 0.8)
    assert shares[0] == 0.8 and sum(shares) == pytest.approx(1.0)
    assert shares[1] / shares[2] == pytest.approx(f.shares[1] / f.shares[2])


def test_fleet_bad_input_names_every_key(tmp_path):
    bad = tmp_path / "fleet.toml"
    bad.write_text('[fleet]\ndesigns = ["h100"]\n[[fleet.models]]\nmodel = "nope"\nshare = 2\n')
    with pytest.raises(InputError) as exc:
        fleet.load_fleet(bad)
    text = str(exc.value)
    assert "fleet.designs" in text and "fleet.models[0].model" in text and "fleet.models[0].share" in text


def test_crossings_interpolate():
    assert crossings([0.0, 1.0, 2.0], [0.2, 0.4, 0.8]) == [pytest.approx(1.25)]
    assert crossings([0.0, 1.0], [0.9, 0.1]) == [pytest.approx(0.5)]
    assert crossings([0.0, 1.0], [0.9, 0.8]) == []


def test_fleet_paper_rounding_loss_by_hand():
    """Demand-weighted loss of rounding each model's weights up to whole packages."""
    from mcengine.analytic.roofline.weights import params_total
    from mcengine.scenario.cards import load_model_card

    f = fleet.load_fleet()
    for design, hbm_gb in (("h100", 80.0), ("lite-h100-2x", 20.0)):
        base = scenario(design)
        rows = {m: {"paper_rounding_loss": fleet.rounding_loss(fleet.need_of(base, m), math.ceil(fleet.need_of(base, m)))} for m in f.models}
        by_hand = 0.0
        for m, share in zip(f.models, f.shares):
            need = params_total(load_model_card(m, "m", [])) * 2 / (hbm_gb * 1e9 * 0.9)
            by_hand += share * (1 - need / math.ceil(need))
        assert fleet.weighted(f, rows, "paper_rounding_loss") == pytest.approx(by_hand, rel=1e-12)
    # the shipped mix: 0.5 x (1 - 0.2231) + 0.35 x (1 - 1.9598/2) + 0.15 x (1 - 11.2737/12) on H100
    h = scenario("h100")
    rows = {m: {"paper_rounding_loss": fleet.rounding_loss(fleet.need_of(h, m), math.ceil(fleet.need_of(h, m)))} for m in f.models}
    assert fleet.weighted(f, rows, "paper_rounding_loss") == pytest.approx(0.4046, abs=1e-4)


def test_fleet_candidate_sizes_by_hand():
    """The smallest size, powers of two and host multiples above it, each rounded to whole hosts."""
    assert fleet.candidate_sizes(1, 128, 8) == (1, 2, 4, 8, 16, 32, 64, 128)
    assert fleet.candidate_sizes(16, 128, 8) == (16, 32, 64, 128)
    # hosts of 12: 3 -> 12, 4 -> 12, 8 -> 12, 16 -> 24, 32 -> 36, 64 -> 72; 12, 24, 48 are host multiples
    assert fleet.candidate_sizes(3, 64, 12) == (3, 4, 8, 12, 16, 24, 32, 36, 48, 64, 72)
    assert fleet.candidate_sizes(46, 128, 16) == (46, 48, 64, 128)
    assert fleet.host_rounded(46, 16) == 48 and fleet.host_rounded(48, 16) == 48


def test_fleet_cost_optimal_size_takes_the_lowest_median_ties_to_the_smaller():
    import numpy as np

    inf = np.inf
    # medians (nearest rank, 3 trials): 3, 1, 1, inf -> 2 (tie with 4, the smaller wins)
    costs = {1: np.array([3.0, 3.0, 3.0]), 2: np.array([1.0, 1.0, inf]), 4: np.array([1.0, 1.0, 1.0]), 8: np.array([inf, inf, 0.5])}
    assert fleet.cost_optimal_size(costs) == 2
    costs[8] = np.array([0.5, 0.5, inf])
    assert fleet.cost_optimal_size(costs) == 8


def test_fleet_flags_a_size_at_the_bound():
    import dataclasses

    import numpy as np

    f = dataclasses.replace(fleet.load_fleet(), designs=("h100", "h100"), models=("llama-3-8b",), shares=(1.0,))
    alloc = {"h100": {"llama-3-8b": {"instance_gpus": 1, "packages_needed": 0.5, "candidate_instance_gpus": [1, 8]}}}
    cols = {"h100.llama-3-8b.n1": {"cost_per_mtok_usd": np.array([2.0])}, "h100.llama-3-8b.n8": {"cost_per_mtok_usd": np.array([1.0])}}
    fleet.size_fleet(f, alloc, cols)
    assert alloc["h100"]["llama-3-8b"]["sized_at_largest"] is True


def test_fleet_size_fleet_aliases_the_chosen_runs_under_either_sizing():
    import dataclasses

    import numpy as np

    f = dataclasses.replace(fleet.load_fleet(), models=("llama-3-8b",), shares=(1.0,))
    cost = {1: [4.0, 4.0], 2: [3.0, 3.0], 8: [2.0, 2.5], 16: [2.2, 2.0]}  # medians (nearest rank) 4, 3, 2, 2: 8 wins the tie
    for sizing, chosen, hosts in (("cost_optimal", {"h100": 8, "lite-h100-2x": 8}, {"h100": 8, "lite-h100-2x": 16}),
                                  ("smallest", {"h100": 1, "lite-h100-2x": 1}, {"h100": 8, "lite-h100-2x": 16})):
        alloc = {d: {"llama-3-8b": {"instance_gpus": 1, "packages_needed": 0.5, "candidate_instance_gpus": [1, 2, 8, 16]}} for d in f.designs}
        cols = {f"{d}.llama-3-8b.n{k}": {"cost_per_mtok_usd": np.array(v)} for d in f.designs for k, v in cost.items()}
        fleet.size_fleet(dataclasses.replace(f, sizing=sizing), alloc, cols)
        for d in f.designs:
            a = alloc[d]["llama-3-8b"]
            assert (a["sized_instance_gpus"], a["host_instance_gpus"]) == (chosen[d], hosts[d])
            assert a["weights_share_of_hbm"] == 0.5 / chosen[d]
            assert a["sized_at_largest"] is False
            assert a["median_cost_per_mtok_usd"] == {"1": 4.0, "2": 3.0, "8": 2.0, "16": 2.0}
            assert cols[f"{d}.llama-3-8b.fleet"] is cols[f"{d}.llama-3-8b.n{chosen[d]}"]
            assert cols[f"{d}.llama-3-8b.hosts"] is cols[f"{d}.llama-3-8b.n{hosts[d]}"]
            assert cols[f"{d}.llama-3-8b.smallest"] is cols[f"{d}.llama-3-8b.n1"]


def test_fleet_sizing_is_checked(tmp_path):
    bad = tmp_path / "fleet.toml"
    bad.write_text('[fleet]\ndesigns = ["h100", "lite-h100"]\nsizing = "biggest"\n[[fleet.models]]\nmodel = "llama-3-8b"\nshare = 1\n')
    with pytest.raises(InputError) as exc:
        fleet.load_fleet(bad)
    assert "fleet.sizing" in str(exc.value) and "biggest" in str(exc.value) and "cost_optimal" in str(exc.value)
    assert fleet.load_fleet().sizing == "cost_optimal"


def test_fleet_without_a_whole_host_size_is_refused_naming_the_bound():
    import dataclasses

    import numpy as np

    f = dataclasses.replace(fleet.load_fleet(), designs=("h100", "h100"), models=("llama-3-8b",), shares=(1.0,))
    alloc = {"h100": {"llama-3-8b": {"instance_gpus": 1, "packages_needed": 0.5, "candidate_instance_gpus": [1, 2]}}}
    cols = {f"h100.llama-3-8b.n{k}": {"cost_per_mtok_usd": np.array([1.0])} for k in (1, 2)}
    with pytest.raises(InputError) as exc:
        fleet.size_fleet(f, alloc, cols)
    assert "fleet.largest_instance_gpus" in str(exc.value)


@pytest.mark.slow
def test_fault_tolerance_in_training_pairs_the_jobs_and_the_restart_decides_the_penalty():
    """Claim 7: the figure is the paired ETTR ratio of the training study's jobs; the Lite
    job, interrupted more often, loses more the longer each restart (per trial, ratio
    falling along the sweep); its lost hours are its packages' (gpu unit), not its hosts'."""
    import numpy as np

    from mcengine.paper import fault_tolerance
    from mcengine.paper._common import interval, paired_ratio

    s = Settings(trials=16, seed=2, quick=True)
    doc = fault_tolerance.compute(s)
    cols = s.memo["fault_tolerance"]
    assert doc["shipped"]["figure"] == interval(paired_ratio(cols["lite-h100"]["ettr"], cols["h100"]["ettr"]))
    values = doc["boundary"]["values"]
    ratios = [paired_ratio(cols[f"lite-h100.restart-{v:g}"]["ettr"], cols[f"h100.restart-{v:g}"]["ettr"]) for v in values]
    assert all(np.all(a > b) for a, b in zip(ratios, ratios[1:]))
    more = cols["lite-h100"]["job_interruptions_per_day"] / cols["h100"]["job_interruptions_per_day"]
    assert np.all(more > 1.0) and doc["shipped"]["p_holds"] == 0.0
    lost = doc["shipped"]["lost_hours_per_day_by_unit"]
    assert lost["lite-h100"]["gpu"] > 1.4 * lost["h100"]["gpu"] and abs(lost["lite-h100"]["host"] / lost["h100"]["host"] - 1) < 0.2


def test_blast_radius_headroom_under_load_by_hand():
    """Claim 3 at the load-diurnal demand: each design's fleet and failure headroom; an
    instance is 8 H100-equivalents in both (8 H100s, 32 quarter-H100 Lites), so the
    headroom in H100-equivalents is 8 x the instances bought for failures, and at
    instance unavailabilities near 1e-4 a fleet of ~100 has an instance down more than
    0.1 % of the time: one instance of headroom at the 0.999 quantile."""
    out = blast_radius.headroom_under_load(Settings(trials=16, seed=0, quick=True))
    assert out["study"] == "load-diurnal" and out["demand_tokens_per_s"] == 200000.0
    for design in ("h100", "lite-h100"):
        s = scenario(design)
        assert s.cluster.instance_gpus * s.gpu.h100_equivalents.value == 8.0
        r = out["designs"][design]
        assert r["headroom_h100_equivalents"]["median"] == 8.0 * r["headroom_instances"]["median"] == 8.0
        assert 90 <= r["fleet_instances"]["median"] <= 140
    assert out["headroom_ratio_h100e"]["median"] == 1.0
