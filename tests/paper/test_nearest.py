"""The nearest-world search on synthetic claims whose nearest world is known in closed form.

A linear score ``s_i(v) = w . v + e_i`` over trials ``i`` (fixed offsets ``e_i``) holds
with P >= 0.5 exactly where ``w . v + e_med >= t`` (``e_med`` the upper median of the
offsets): a half-space. In normalised coordinates ``z`` (``v = low + z r``) its normal is
``a = w r`` and the nearest point from ``z0`` is the projection
``z* = z0 + (t - c - a . z0) / |a|^2 a``, ``c = w . low + e_med``, at distance
``(t - c - a . z0) / |a|``. The search reports an evaluated world found on a ray by two
grids of 8 steps, so its distance lies in ``[d*, d* (1 + 1/64)]``: the tolerance 2 %.
"""

from __future__ import annotations

import numpy as np
import pytest

from mcengine.paper.nearest import Assumption, Budget, nearest_worlds, upper_median_margin

OFFSETS = np.linspace(-0.5, 0.5, 64)
ASSUMPTIONS = (Assumption("x", 1.0, 0.0, 4.0), Assumption("y", 10.0, 5.0, 25.0), Assumption("z", 0.3, 0.0, 1.0))
W = np.array([0.5, 0.05, 1.0])
TOLERANCE = 0.02


def linear(worlds):
    return [W @ np.array([w["x"], w["y"], w["z"]]) + OFFSETS for w in worlds]


def closed_form(threshold, free=(0, 1, 2), offsets=OFFSETS):
    low = np.array([a.low for a in ASSUMPTIONS])
    r = np.array([a.high - a.low for a in ASSUMPTIONS])
    z0 = np.array([a.coordinate(a.shipped) for a in ASSUMPTIONS])
    a = (W * r)[list(free)]
    c = W @ low + np.sort(offsets)[len(offsets) // 2] + (W * r) @ z0 - a @ z0[list(free)]
    gap = threshold - c - a @ z0[list(free)]
    z = z0.copy()
    z[list(free)] += gap / (a @ a) * a
    return z, gap / np.sqrt(a @ a)


def test_upper_median_margin_is_p_half():
    s = np.array([0.0, 1.0, 2.0, 3.0])
    assert upper_median_margin(s, 2.0) == 0.0 and np.mean(s >= 2.0) == 0.5
    assert upper_median_margin(s, 2.01) < 0 and np.mean(s >= 2.01) < 0.5


def test_nearest_world_of_a_linear_claim():
    threshold = 3.0
    z_star, d_star = closed_form(threshold)
    assert np.all((z_star >= 0) & (z_star <= 1))  # the projection is inside the box
    out = nearest_worlds(ASSUMPTIONS, linear, threshold, Budget(screen=16))
    first = out["worlds"][0]
    assert d_star * (1 - 1e-9) <= first["distance"] <= d_star * (1 + TOLERANCE)
    assert np.allclose(first["coordinates"], z_star, atol=TOLERANCE)
    assert first["p_holds"] >= 0.5
    assert not out["budget_spent"]


def test_second_and_third_worlds_freeze_the_largest_moves():
    """At t = 2.5 the nearest world moves x most; with x frozen the projection on (y, z)
    is inside the box; with x and the next mover frozen no single input reaches: no third."""
    threshold = 2.5
    out = nearest_worlds(ASSUMPTIONS, linear, threshold, Budget(screen=16))
    z_star, _ = closed_form(threshold)
    z0 = np.array([a.coordinate(a.shipped) for a in ASSUMPTIONS])
    top = int(np.argmax(np.abs(z_star - z0)))
    free = [i for i in range(3) if i != top]
    z2, d2 = closed_form(threshold, free)
    second = out["worlds"][1]
    assert second["frozen"] == [ASSUMPTIONS[top].key]
    assert d2 * (1 - 1e-9) <= second["distance"] <= d2 * (1 + TOLERANCE)
    assert np.allclose(second["coordinates"], z2, atol=TOLERANCE)
    assert np.all((z2 >= 0) & (z2 <= 1))
    assert len(out["worlds"]) == 2


def test_a_claim_out_of_reach_has_no_world():
    out = nearest_worlds(ASSUMPTIONS, linear, 100.0, Budget(screen=8, maxiter=4))
    assert out["worlds"] == [] and not out["found"]
    assert out["best_screen"]["p_holds"] == 0.0 and out["best_seen"]["p_holds"] == 0.0
    # the best world seen is the box's corner that maximises the linear score (w > 0)
    assert np.allclose(out["best_seen"]["coordinates"], 1.0, atol=0.05) and out["path_to"].startswith("the best world seen")


def test_a_claim_that_holds_is_its_own_nearest_world():
    out = nearest_worlds(ASSUMPTIONS, linear, 0.0, Budget(screen=8))
    assert [w["distance"] for w in out["worlds"]] == [0.0] and out["worlds"][0]["p_holds"] == 1.0


def test_a_choice_is_a_whole_step():
    """A choice that adds 0.6 to every score: switching it (distance 1) beats moving the
    others when their projection is farther than 1, and the search says so."""
    choice = Assumption("fp8", "no", levels=("no", "yes"))

    def score(worlds):
        return [s + (0.6 if w["fp8"] == "yes" else 0.0) for s, w in zip(linear(worlds), worlds)]

    threshold = 3.0
    _, d_star = closed_form(threshold)
    _, d_with = closed_form(threshold - 0.6)
    out = nearest_worlds((*ASSUMPTIONS, choice), score, threshold, Budget(screen=16))
    expected = min(d_star, np.hypot(1.0, d_with))
    assert expected * (1 - 1e-9) <= out["worlds"][0]["distance"] <= expected * (1 + TOLERANCE)


def test_the_budget_bounds_the_search():
    """At most the shipped world, the screen, ``max_points`` per world and the figure's path."""
    out = nearest_worlds(ASSUMPTIONS, linear, 3.0, Budget(screen=16, max_points=20))
    assert out["budget_spent"] and out["points_bound"] == 1 + 16 + 3 * 20 + out["path_points"]
    assert out["points"] <= out["points_bound"] and all(w["points"] <= 20 for w in out["worlds"])
    assert out["stopped"]["world"] == len(out["worlds"]) + 1


def test_each_world_has_its_own_budget():
    """With a budget per world as large as the most any one world's search needs, the
    same worlds are found, though together they take more points than one such budget."""
    threshold = 2.5
    full = nearest_worlds(ASSUMPTIONS, linear, threshold, Budget(screen=16))
    assert len(full["worlds"]) == 2 and full["stopped"] == {"world": 3, "reason": "none within the plausible ranges with the nearer worlds' largest moves frozen"}
    most = max(w["points"] for w in full["worlds"])
    tight = nearest_worlds(ASSUMPTIONS, linear, threshold, Budget(screen=16, max_points=most))
    assert [w["coordinates"] for w in tight["worlds"]] == [w["coordinates"] for w in full["worlds"]]
    assert sum(w["points"] for w in tight["worlds"]) > most and not any(w.get("budget_spent") for w in tight["worlds"])


def test_each_world_is_confirmed_on_more_trials():
    """The worlds found on 64 trials, scored again on 1,024 paired trials: P(holds) there
    is the share of the 1,024 offsets above the world's gap to the threshold, with the
    binomial standard error. The nearest world sits where the 64 offsets' upper median
    (0.0079) closes the gap, so on 1,024 evenly spread offsets P is just below 0.5: the
    confirmation says so."""
    big = np.linspace(-0.5, 0.5, 1024)

    def confirm(worlds):
        return [W @ np.array([w["x"], w["y"], w["z"]]) + big for w in worlds]

    threshold = 2.5
    out = nearest_worlds(ASSUMPTIONS, linear, threshold, Budget(screen=16), confirm=confirm)
    low = np.array([a.low for a in ASSUMPTIONS])
    r = np.array([a.high - a.low for a in ASSUMPTIONS])

    def p_at(coordinates):
        return np.mean(W @ (low + r * np.array(coordinates)) + big >= threshold)

    for w in out["worlds"]:
        v = low + r * np.array(w["coordinates"])
        p = p_at(w["coordinates"])
        assert {k: v for k, v in w["confirmed"].items() if k not in ("on_ray", "figure_median")} == {
            "trials": 1024, "p_holds": p, "se": np.sqrt(p * (1 - p) / 1024), "holds": p >= 0.5}
        assert w["confirmed"]["figure_median"] == pytest.approx(np.median(W @ v + big), rel=1e-12)
        assert 0.5 - 0.0079 - 0.02 <= w["confirmed"]["p_holds"] < 0.5  # within the ray's tolerance of the 64 trials' boundary
    v0 = np.array([a.shipped for a in ASSUMPTIONS])
    assert out["shipped"]["confirmed"]["p_holds"] == np.mean(W @ v0 + big >= threshold)
    # on the 1,024 offsets the boundary is their upper median's (0.0005): the ray through each world reaches it a
    # little farther out, at the closed-form projection's distance for those offsets (the ray of the nearest world
    # is that projection's direction; the second world's, with x frozen, the projection on y and z), found by two
    # grids of 8 (geometric beyond the world, then linear inside the bracket): within 5 %
    for w, free in zip(out["worlds"], [(0, 1, 2), (1, 2)]):
        ray = w["confirmed"]["on_ray"]
        _, d_big = closed_form(threshold, free, big)
        assert d_big * (1 - 1e-9) <= ray["distance"] <= d_big * 1.05 and ray["distance"] > w["distance"]
        assert ray["p_holds"] == p_at(ray["coordinates"]) >= 0.5 and ray["se"] == pytest.approx(np.sqrt(ray["p_holds"] * (1 - ray["p_holds"]) / 1024))
    assert out["confirm_points"] <= 1 + 2 + 2 * 2 * 8


@pytest.mark.parametrize("threshold", [2.5, 3.5])
def test_the_path_reaches_the_world(threshold):
    out = nearest_worlds(ASSUMPTIONS, linear, threshold, Budget(screen=16))
    p = out["path"]
    assert p["p_holds"][0] == out["shipped"]["p_holds"] < 0.5 and p["p_holds"][-1] >= 0.5
    assert p["distance"][-1] == pytest.approx(out["worlds"][0]["distance"])


def _scope_claim(levels, bonus, ordered):
    """The linear claim plus a choice among lists of parts (a markup scope), each list
    adding its ``bonus`` to every score; shipped: the first list."""
    scope = Assumption("scope", levels[0], levels=levels, ordered=ordered)

    def score(worlds):
        return [s + bonus.get(w["scope"], 0.0) for s, w in zip(linear(worlds), worlds)]

    return (*ASSUMPTIONS, scope), score


def test_a_nominal_choice_of_lists_moves_one_for_any_level():
    """Nominal: switching to any other list is distance 1, whatever its position. At
    t = 4 the continuous projection is 1.10 away; the list ("die", "hbm", "test") adds
    3, enough alone, so the nearest world switches to it and moves nothing else:
    distance exactly 1, though the list sits in the middle of the levels."""
    levels = (("die",), ("die", "hbm", "test"), ("die", "test"))
    assumptions, score = _scope_claim(levels, {levels[1]: 3.0, levels[2]: 0.3}, ordered=False)
    threshold = 4.0
    _, d_star = closed_form(threshold)
    assert d_star > 1.05 and closed_form(threshold - 3.0)[1] < 0
    out = nearest_worlds(assumptions, score, threshold, Budget(screen=16))
    first = out["worlds"][0]
    assert first["distance"] == pytest.approx(1.0, abs=1e-12) and first["p_holds"] >= 0.5
    assert [(c["key"], c["value"], c["move"]) for c in first["changed"]] == [("scope", list(levels[1]), 1.0)]
    assert out["assumptions"][-1]["levels"] == [list(v) for v in levels] and out["assumptions"][-1]["choice"].startswith("nominal")


def test_an_ordered_choice_of_lists_moves_by_level_steps():
    """Ordered (nested scopes): one step of three levels moves 0.5. The middle list adds
    1.2, so its nearest world is the middle list plus the continuous projection of the
    rest, sqrt(0.5^2 + d(t - 1.2)^2) = 0.54, nearer than the continuous world alone
    (0.69) or the last list (1.0, which reaches alone); as a nominal choice the same
    lists would not win (sqrt(1 + 0.2^2) > 0.69)."""
    levels = (("die",), ("die", "test"), ("die", "hbm", "test"))
    threshold = 3.0
    _, d_star = closed_form(threshold)
    z_with, d_with = closed_form(threshold - 1.2)
    expected = np.hypot(0.5, d_with)
    assert expected < d_star < np.hypot(1.0, d_with)
    ordered, score = _scope_claim(levels, {levels[1]: 1.2, levels[2]: 1.5}, ordered=True)
    first = nearest_worlds(ordered, score, threshold, Budget(screen=16))["worlds"][0]
    assert expected * (1 - 1e-9) <= first["distance"] <= expected * (1 + TOLERANCE)
    assert np.allclose(first["coordinates"][:3], z_with, atol=TOLERANCE) and first["coordinates"][3] == 0.5
    assert {c["key"]: c["value"] for c in first["changed"]}["scope"] == list(levels[1])
    nominal, score = _scope_claim(levels, {levels[1]: 1.2, levels[2]: 1.5}, ordered=False)
    first = nearest_worlds(nominal, score, threshold, Budget(screen=16))["worlds"][0]
    assert d_star * (1 - 1e-9) <= first["distance"] <= d_star * (1 + TOLERANCE)


def test_a_plateaued_score_still_reaches_a_world():
    """Scores in steps of 0.25 (a median over few distinct values): finite differences of
    0.03 see no slope, so SLSQP stalls where it starts. The holds-region is still the
    half-space w . v >= 3 (threshold 3, e_med < 0.25), nearest at the projection d*; the
    search must report a world no nearer than d* (it cannot beat the closed form) and no
    farther than the nearest feasible screen point (the ray towards that start reaches it)."""
    from scipy.stats import qmc

    def stepped(worlds):
        return [np.floor(W @ np.array([w["x"], w["y"], w["z"]]) / 0.25) * 0.25 + OFFSETS for w in worlds]

    e_med = np.sort(OFFSETS)[len(OFFSETS) // 2]
    _, d_star = closed_form(3.0 + e_med)
    budget = Budget(screen=16, maxiter=2)
    out = nearest_worlds(ASSUMPTIONS, stepped, 3.0, budget)
    z0 = np.array([a.coordinate(a.shipped) for a in ASSUMPTIONS])
    lows, spans = np.array([a.low for a in ASSUMPTIONS]), np.array([a.high - a.low for a in ASSUMPTIONS])
    design = qmc.Sobol(3, scramble=True, seed=budget.seed).random(budget.screen)
    feasible = [p for p, s in zip(design, stepped([dict(zip("xyz", lows + p * spans)) for p in design])) if np.sort(s)[32] >= 3.0]
    first = out["worlds"][0]
    assert feasible and first["p_holds"] >= 0.5
    assert d_star * (1 - 1e-9) <= first["distance"] <= min(np.linalg.norm(p - z0) for p in feasible) * (1 + 1e-9)
