"""The nearest world in which a claim holds: a search over declared assumptions.

A claim's *score* is a per-trial number (a paired ratio or gain) and the claim holds in
a trial when the score reaches the paper's figure. Over ``n`` paired trials,
``P(holds) >= 0.5`` exactly when the upper median of the scores reaches the figure:
``g(z) = sort(score)[n // 2] - threshold >= 0``. The search works on ``g`` instead of
``P`` because, with the same trials at every point (fixed seed, common random numbers),
each trial's score moves continuously with the inputs, and so does their median, while
``P`` moves in steps of ``1/n``.

Coordinates. Each :class:`Assumption` has a plausible range; a world is a point ``z`` of
the unit box, ``z_i = (value_i - low_i) / (high_i - low_i)`` (a choice among levels:
``level index / (levels - 1)``, snapped to the nearest level; a level may be any value,
a list of parts included). **The distance** of a world from the shipped one is the
Euclidean norm of the moves in these units, ``d = sqrt(sum_i m_i^2)``, ``m_i = z_i - z0_i``:
distance 1 is one input moved across its whole plausible range. The move of a choice
depends on its kind: an *ordered* choice (levels in a natural order, e.g. nested markup
scopes) moves ``level steps / (levels - 1)``, so its two ends are 1 apart; a *nominal*
one (levels without an order, e.g. workload mixes) moves 1 for any change of level and
0 for none.

Search (bounded: the shipped world and ``budget.screen`` screen points, then at most
``budget.max_points`` newly evaluated points for each reported world's search, and the
figure's path, each point a paired run of ``budget.trials`` trials; so at most
``1 + screen + count x max_points + path`` points per claim, plus the confirmation):

1. *Screen*: a scrambled Sobol' design (``scipy.stats.qmc.Sobol``, fixed seed) of
   ``budget.screen`` points over the box, evaluated in one batch: it says whether any
   world in the box reaches the claim and gives fallback starting points.
2. *Local search*, for every combination of choice levels: SLSQP
   (``scipy.optimize.minimize``) minimises ``d^2`` subject to ``g >= 0`` inside the box,
   from the shipped world (then from the nearest feasible screen point if that fails),
   with ``g``'s gradient by forward differences (step ``budget.step``) evaluated as one
   batch.
3. *Polish*: along the ray from the shipped world through the optimum (on beyond it,
   along the box's faces, when the optimum falls short), the smallest step where
   ``g >= 0``, by rounds of a grid of ``budget.ray_points`` (one batch each; two when the
   optimum reaches), so the reported world is an evaluated one with ``P(holds) >= 0.5``. Where
   SLSQP stopped short and that ray never reaches ``g >= 0``, one linearised step from
   where it stopped (along ``g``'s gradient to its zero) gives the ray its direction,
   or else the start (a feasible screen point reaches).

The second and third nearest worlds are the nearest ones with the first world's largest
move frozen at its shipped value, then with the first and second worlds' largest moves
frozen: distinct by construction, each one says what else would do. Each world's search
has its own budget: a world found as its budget ran out is kept and flagged, and the
next world is searched with a fresh budget.

Confirmation: the search's points are judged on ``budget.trials`` trials, so a reported
``P(holds)`` near 0.5 is a share of few trials, and the search, which stops where those
trials just reach the claim, favours worlds where they happen to (a winner's curse).
Given a ``confirm`` scorer (the same claim on more paired trials, common to every world,
and disjoint from the search's, so none of them chose the world), the shipped world and
every reported world are scored again on it, and each gains ``confirmed``: its
``P(holds)`` on those trials with the binomial standard error ``sqrt(P (1 - P) / n)``;
where that P falls below 0.5, the nearest point on the same ray from the shipped world
where the confirming trials reach the claim (``on_ray``). ``on_ray`` is itself found by a
search on the confirming trials, so it is *reached* on them, not confirmed.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

#: A move smaller than this share of an input's range is reported as no change.
CHANGED = 0.01
#: The norm, as every result states it.
NORM = ("L2: the root-sum-square of each input's move as a share of its plausible range "
        "(an ordered choice: level steps / (levels - 1); a nominal choice: 1 for any change of level); "
        "distance 1 = one input across its whole range")


@dataclass(frozen=True)
class Assumption:
    """One input the search may move: a scenario key (``A:``/``B:`` prefix = one design
    of the pair; none = both), its shipped value, its plausible range, and where the
    range comes from. ``levels`` makes it a choice among values (``low``/``high``
    unused); a level may be a label whose meaning the claim's world builder knows, or a
    tuple (a list of parts). ``ordered``: a choice's levels are in a natural order (a
    level step moves ``1 / (levels - 1)``); otherwise any change of level moves 1.
    ``integer``: the value is rounded to a whole number (a token count)."""

    key: str
    shipped: object
    low: float = 0.0
    high: float = 1.0
    source: str = ""
    levels: tuple = ()
    label: str = ""
    integer: bool = False
    ordered: bool = True

    def __post_init__(self):
        if self.levels and self.shipped not in self.levels:
            raise ValueError(f"{self.key}: the shipped level {self.shipped!r} is not one of the choice's levels {list(self.levels)}")

    @property
    def is_choice(self) -> bool:
        return bool(self.levels)

    @property
    def is_nominal(self) -> bool:
        return self.is_choice and not self.ordered

    def move(self, z: float, z0: float) -> float:
        """The move from coordinate ``z0`` to ``z`` in the distance's units (module docstring)."""
        if self.is_nominal:
            return 0.0 if self.value(z) == self.value(z0) else 1.0
        return float(z) - float(z0)

    def coordinate(self, value) -> float:
        """The normalised coordinate of ``value`` (its level's position for a choice)."""
        if self.is_choice:
            return self.levels.index(value) / max(1, len(self.levels) - 1)
        return (float(value) - self.low) / (self.high - self.low)

    def value(self, z: float):
        """The value at coordinate ``z`` (the nearest level for a choice)."""
        if self.is_choice:
            return self.levels[int(round(float(np.clip(z, 0.0, 1.0)) * (len(self.levels) - 1)))]
        v = self.low + float(z) * (self.high - self.low)
        return int(round(v)) if self.integer else v

    def describe(self) -> dict:
        out = {"key": self.key, "label": self.label or self.key, "shipped": _plain(self.shipped), "source": self.source}
        if self.is_choice:
            out["levels"] = [_plain(v) for v in self.levels]
            out["choice"] = "ordered: a level step moves 1 / (levels - 1)" if self.ordered else "nominal: any change of level moves 1"
        else:
            out.update(low=self.low, high=self.high)
        return out


def _plain(v):
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    return float(v) if isinstance(v, (int, float, np.floating)) and not isinstance(v, bool) else v


@dataclass(frozen=True)
class Budget:
    """How much the search may spend: ``trials`` paired trials per point, ``seed``,
    ``screen`` Sobol' points, ``maxiter`` SLSQP iterations per start, ``step`` of the
    finite differences, ``ray_points`` per polishing round, at most ``max_points`` newly
    evaluated points per reported world's search (then the nearest world it found so
    far is reported, flagged)."""

    trials: int = 128
    seed: int = 0
    screen: int = 32
    maxiter: int = 12
    step: float = 0.03
    ray_points: int = 8
    max_points: int = 1500

    def describe(self) -> dict:
        return {"trials_per_point": self.trials, "seed": self.seed, "screen_points": self.screen, "slsqp_maxiter": self.maxiter,
                "finite_difference_step": self.step, "ray_points": self.ray_points, "max_points": self.max_points}


class _Spent(Exception):
    """The evaluation budget ran out (caught by the search)."""


def upper_median_margin(scores: np.ndarray, threshold: float) -> float:
    """``sort(scores)[n // 2] - threshold``: >= 0 exactly when at least half the trials
    reach ``threshold`` (P(holds) >= 0.5); infinite scores clipped to a finite margin."""
    s = np.sort(np.asarray(scores, float))
    return float(np.clip(s[len(s) // 2] - threshold, -1e6, 1e6))


@dataclass
class _Evaluator:
    """Scores per point, cached, counted against the budget; ``run`` evaluates a batch."""

    assumptions: Sequence[Assumption]
    score: Callable[[list[dict]], list[np.ndarray]]
    threshold: float
    budget: Budget
    cache: dict = field(default_factory=dict)
    limit: int = 0  # the evaluated points allowed so far (raised for each world's search and the figure's path)
    spent: bool = False  # the budget ran out during a search that had found a world

    def world(self, z: np.ndarray) -> dict:
        return {a.key: a.value(zi) for a, zi in zip(self.assumptions, z)}

    def snapped(self, z: np.ndarray) -> np.ndarray:
        return np.array([a.coordinate(a.value(zi)) for a, zi in zip(self.assumptions, z)])

    def run(self, points: Sequence[np.ndarray]) -> list[np.ndarray]:
        keys = [tuple(np.round(self.snapped(np.clip(z, 0.0, 1.0)), 12)) for z in points]
        todo = list(dict.fromkeys(k for k in keys if k not in self.cache))
        if len(self.cache) + len(todo) > self.limit:
            raise _Spent()
        if todo:
            for k, s in zip(todo, self.score([self.world(np.array(k)) for k in todo])):
                self.cache[k] = np.asarray(s, float)
        return [self.cache[k] for k in keys]

    def margin(self, points: Sequence[np.ndarray]) -> list[float]:
        return [upper_median_margin(s, self.threshold) for s in self.run(points)]

    def moves(self, z: np.ndarray, z0: np.ndarray) -> np.ndarray:
        """Each input's move from ``z0`` to ``z`` (:meth:`Assumption.move`)."""
        return np.array([a.move(zi, z0i) for a, zi, z0i in zip(self.assumptions, z, z0)])

    def distance(self, z: np.ndarray, z0: np.ndarray) -> float:
        """The distance of the module docstring: the L2 norm of :meth:`moves`."""
        return float(np.sqrt(np.sum(self.moves(z, z0) ** 2)))


def _gradient(ev: _Evaluator, z: np.ndarray, free: list[int]) -> tuple[float, np.ndarray]:
    """``g`` at ``z`` and its gradient over the ``free`` coordinates by forward differences
    of ``budget.step`` (backwards at the box's top), evaluated as one batch."""
    h = ev.budget.step
    steps = [h if z[i] + h <= 1.0 else -h for i in free]
    m = ev.margin([z] + [z + s * np.eye(len(z))[i] for i, s in zip(free, steps)])
    return m[0], np.array([(m[k + 1] - m[0]) / steps[k] for k in range(len(free))])


def _linearised(ev: _Evaluator, z: np.ndarray, free: list[int]) -> np.ndarray | None:
    """The nearest point of ``g``'s linearisation at ``z``, ``z + max(0, -g) grad / |grad|^2``
    over the ``free`` coordinates (clipped to the box); None where ``g`` is flat. Where
    SLSQP stops short of ``g >= 0`` (its line search on a median of trials can stall),
    this step and the ray through it cost one gradient (often cached) and two ray grids."""
    m, grad = _gradient(ev, z, free)
    if m >= 0:
        return z
    if not np.any(grad):
        return None
    out = z.copy()
    out[free] = np.clip(z[free] - m / float(grad @ grad) * grad, 0.0, 1.0)
    return out


def _slsqp(ev: _Evaluator, z0: np.ndarray, start: np.ndarray, free: list[int], fixed: np.ndarray) -> np.ndarray | None:
    """SLSQP over the ``free`` coordinates (others as in ``fixed``): min d^2 s.t. g >= 0."""
    from scipy.optimize import minimize

    def full(u):
        z = fixed.copy()
        z[free] = np.clip(u, 0.0, 1.0)
        return z

    def g(u):
        return ev.margin([full(u)])[0]

    def g_jac(u):
        return _gradient(ev, full(u), free)[1]

    res = minimize(lambda u: float(np.sum((u - z0[free]) ** 2)), start[free], jac=lambda u: 2.0 * (u - z0[free]), method="SLSQP",
                   bounds=[(0.0, 1.0)] * len(free), constraints=[{"type": "ineq", "fun": g, "jac": g_jac}],
                   options={"maxiter": ev.budget.maxiter, "ftol": 1e-6})
    return full(res.x)


#: At most this many grids per ray (the first over the whole ray, each next inside the bracket).
RAY_ROUNDS = 4


def _polish(ev: _Evaluator, origin: np.ndarray, z: np.ndarray, rounds: int = RAY_ROUNDS) -> np.ndarray | None:
    """The nearest evaluated point with ``g >= 0`` on the path ``clip(origin + t (z - origin))``
    from ``origin`` through ``z`` (beyond ``z`` when ``z`` itself falls short: a coordinate
    that reaches the box's edge stays there while the others go on, until all have; each
    coordinate's move only grows with ``t``, so the distance does): a grid of
    ``n = budget.ray_points`` steps (geometric beyond ``z``), then finer grids inside the
    bracket until it is at most ``1 / n^2`` of the step to ``z`` wide (two grids when ``z``
    reaches; at most ``rounds``)."""
    d = z - origin
    if ev.margin([origin])[0] >= 0 or not np.any(d):
        return origin if ev.margin([origin])[0] >= 0 else None
    with np.errstate(divide="ignore", invalid="ignore"):
        room = np.where(d > 0, (1.0 - origin) / d, np.where(d < 0, -origin / d, 0.0))
    n = ev.budget.ray_points
    reaches = ev.margin([z])[0] >= 0
    lo, hi = (0.0, 1.0) if reaches else (1.0, float(np.max(room)))
    if hi <= lo:
        return None
    for k in range(rounds):
        ts = np.geomspace(lo, hi, n + 1)[1:] if k == 0 and not reaches else np.linspace(lo, hi, n + 1)[1:]
        ok = [i for i, m in enumerate(ev.margin([np.clip(origin + t * d, 0.0, 1.0) for t in ts])) if m >= 0]
        if not ok:
            return None
        lo, hi = (ts[ok[0] - 1] if ok[0] > 0 else lo), ts[ok[0]]
        if hi - lo <= 1.0 / n**2 * (1 + 1e-9):
            break
    return np.clip(origin + hi * d, 0.0, 1.0)


def _search(ev: _Evaluator, z0: np.ndarray, frozen: set[int], screen: list[tuple[np.ndarray, float]],
            warm: np.ndarray | None = None) -> np.ndarray | None:
    """The nearest feasible world with the ``frozen`` coordinates at their shipped values;
    ``warm``: the previous world, whose continuous moves start the first search."""
    choices = [i for i, a in enumerate(ev.assumptions) if a.is_choice and i not in frozen]
    cont = [i for i, a in enumerate(ev.assumptions) if not a.is_choice and i not in frozen]
    best, best_d = None, math.inf
    combos = itertools.product(*[[k / max(1, len(ev.assumptions[i].levels) - 1) for k in range(len(ev.assumptions[i].levels))] for i in choices])
    bases = []
    for combo in combos:
        base = z0.copy()
        base[choices] = combo
        bases.append(base)
    try:
        for base in sorted(bases, key=lambda b: ev.distance(b, z0)):  # the shipped levels first
            if ev.distance(base, z0) >= best_d:
                continue
            starts = [base] if warm is None else [np.where(np.isin(np.arange(len(z0)), cont), warm, base), base]
            feasible = sorted((p for p, m in screen if m >= 0), key=lambda p: ev.distance(p, z0))
            starts += [np.where(np.isin(np.arange(len(z0)), cont), p, base) for p in feasible[:1]]
            for start in starts:
                try:
                    z = _slsqp(ev, z0, start, cont, base) if cont else base
                except (ValueError, FloatingPointError, np.linalg.LinAlgError):
                    continue
                found = _polish(ev, base, z)
                if found is None and cont:  # SLSQP stopped short: a linearised step, then the start itself, as the ray's direction
                    step = _linearised(ev, z, cont)
                    found = _polish(ev, base, step) if step is not None else None
                    found = _polish(ev, base, start) if found is None else found
                if found is not None and ev.distance(found, z0) < best_d:
                    best, best_d = found, ev.distance(found, z0)
                    break
    except _Spent:  # the budget ran out: the nearest world found so far, if any, is the search's
        if best is None:
            raise
        ev.spent = True
    return best


def _describe_world(ev: _Evaluator, z0: np.ndarray, z: np.ndarray, frozen: set[int]) -> dict:
    scores = ev.run([z])[0]
    moves = ev.moves(ev.snapped(z), z0)
    changed = [{**{"key": a.key, "label": a.label or a.key, "shipped": _plain(a.shipped), "value": _plain(a.value(zi))},
                "move": float(m), "source": a.source}
               for a, zi, m in zip(ev.assumptions, z, moves) if abs(m) >= CHANGED]
    changed.sort(key=lambda c: -abs(c["move"]))
    return {"distance": ev.distance(ev.snapped(z), z0), "p_holds": float(np.mean(scores >= ev.threshold)),
            "figure_median": float(np.median(scores)), "changed": changed, "frozen": [ev.assumptions[i].key for i in sorted(frozen)],
            "coordinates": [float(v) for v in ev.snapped(z)]}


PATH_STEPS = 10


def path(ev: _Evaluator, z0: np.ndarray, z1: np.ndarray, steps: int = PATH_STEPS) -> dict:
    """P(holds) and the score's median and 90 % interval along the segment from the
    shipped world to ``z1`` (a choice switches where the segment passes half a level)."""
    ts = np.linspace(0.0, 1.0, steps + 1)
    scores = ev.run([z0 + t * (z1 - z0) for t in ts])
    return {"t": [float(t) for t in ts], "distance": [ev.distance(ev.snapped(z0 + t * (z1 - z0)), z0) for t in ts],
            "p_holds": [float(np.mean(s >= ev.threshold)) for s in scores],
            "median": [float(np.median(s)) for s in scores],
            "p05": [float(np.quantile(s, 0.05, method="nearest")) for s in scores],
            "p95": [float(np.quantile(s, 0.95, method="nearest")) for s in scores]}


def confirmed(scores: np.ndarray, threshold: float) -> dict:
    """P(holds) on a confirming sample of ``n`` paired trials with its binomial standard
    error ``sqrt(P (1 - P) / n)``, the score's median there, and whether P >= 0.5."""
    s = np.asarray(scores, float)
    p = float(np.mean(s >= threshold))
    return {"trials": int(s.size), "p_holds": p, "se": math.sqrt(p * (1.0 - p) / s.size), "figure_median": float(np.median(s)),
            "holds": p >= 0.5}


#: Ray grids on the confirming trials per world that does not hold there (``ray_points`` points each).
CONFIRM_ROUNDS = 2


def _confirm(out: dict, ev: _Evaluator, z0: np.ndarray, confirm: Callable[[list[dict]], list[np.ndarray]]) -> None:
    """Score every reported world and the shipped one on the ``confirm`` trials (one
    paired batch; nothing without a world) and add each one's :func:`confirmed`. Where a
    world does not hold on them, its ``confirmed`` gains ``on_ray``: the nearest point
    on the same ray from the shipped world (on beyond the world, :func:`_polish`, at most
    :data:`CONFIRM_ROUNDS` grids) where it does, with its distance, moves and P(holds)
    and standard error on the confirming trials (reached on them by this ray search, so
    not confirmed); ``None`` when the ray never gets there."""
    worlds = out["worlds"]
    if not worlds:
        return
    big = _Evaluator(ev.assumptions, confirm, ev.threshold, ev.budget, limit=1 + len(worlds))
    scores = big.run([z0] + [np.array(w["coordinates"]) for w in worlds])
    out["shipped"]["confirmed"] = confirmed(scores[0], ev.threshold)
    for w, s in zip(worlds, scores[1:]):
        w["confirmed"] = confirmed(s, ev.threshold)
        if w["confirmed"]["holds"]:
            continue
        big.limit = len(big.cache) + CONFIRM_ROUNDS * ev.budget.ray_points
        z = _polish(big, z0, np.array(w["coordinates"]), rounds=CONFIRM_ROUNDS)
        if z is None:
            w["confirmed"]["on_ray"] = None
            continue
        found = _describe_world(big, z0, z, set())
        w["confirmed"]["on_ray"] = {**{k: found[k] for k in ("distance", "p_holds", "figure_median", "changed", "coordinates")},
                                    "se": confirmed(big.run([z])[0], ev.threshold)["se"]}
    out["confirm_points"] = len(big.cache)


def nearest_worlds(assumptions: Sequence[Assumption], score: Callable[[list[dict]], list[np.ndarray]], threshold: float,
                   budget: Budget = Budget(), count: int = 3, confirm: Callable[[list[dict]], list[np.ndarray]] | None = None) -> dict:
    """The ``count`` nearest worlds (module docstring) in which P(score >= threshold) >= 0.5.

    ``score(worlds)`` takes a list of worlds (``{key: value}`` for every assumption) and
    returns each one's per-trial scores, the same trials at every world; ``confirm`` (if
    given) does the same on a larger paired sample disjoint from ``score``'s trials, to
    confirm the reported worlds.
    Returns ``{"norm", "budget", "assumptions", "shipped", "worlds": [...], "found",
    "best_screen", "path", "points", "points_bound", "budget_spent", "stopped",
    "elapsed_s", "cpu_s"}`` (wall and this process's CPU seconds); each world has its
    ``distance``, ``p_holds``, ``figure_median``, ``changed`` inputs (key, shipped, value,
    signed move as a share of the range, source), the ``frozen`` inputs, the ``points``
    its search evaluated (and ``budget_spent`` when its budget ran out during its search:
    the nearest world found by then, whose distance bounds the nearest one's from above),
    and ``confirmed`` (:func:`confirmed`) with ``confirm``. ``stopped``: why fewer than
    ``count`` worlds were found (``{"world": k, "reason"}``; absent otherwise). ``path``:
    the score along the segment to the nearest world (or, when none reaches the claim,
    to the evaluated point nearest to reaching it, ``best_seen``; ``path_to`` says which)."""
    from scipy.stats import qmc

    start, cpu = time.perf_counter(), time.process_time()
    assumptions = list(assumptions)
    ev = _Evaluator(assumptions, score, threshold, budget, limit=1 + budget.screen)
    z0 = np.array([a.coordinate(a.shipped) for a in assumptions])
    out = {"norm": NORM, "budget": budget.describe(), "threshold": threshold, "assumptions": [a.describe() for a in assumptions],
           "worlds": [], "budget_spent": False, "path_points": PATH_STEPS + 1,
           "points_bound": 1 + budget.screen + count * budget.max_points + PATH_STEPS + 1}
    shipped = _describe_world(ev, z0, z0, set())
    out["shipped"] = {k: shipped[k] for k in ("p_holds", "figure_median")}
    design = qmc.Sobol(len(assumptions), scramble=True, seed=budget.seed).random(budget.screen)
    design = [ev.snapped(p) for p in design]
    screen = list(zip(design, ev.margin(design)))
    best = max(screen, key=lambda pm: pm[1])
    out["best_screen"] = {"margin": best[1], "p_holds": float(np.mean(ev.run([best[0]])[0] >= threshold)),
                          "feasible_share": float(np.mean([m >= 0 for _, m in screen])),
                          "distance": ev.distance(best[0], z0), "coordinates": [float(v) for v in best[0]]}
    if shipped["p_holds"] >= 0.5:
        out["worlds"].append({**shipped, "distance": 0.0, "changed": [], "frozen": [], "coordinates": [float(v) for v in z0],
                              "note": "the claim holds in the shipped world"})
    frozen: set[int] = set()
    while not out["worlds"] or (len(out["worlds"]) < count and out["worlds"][0]["distance"] > 0):
        before = len(ev.cache)
        ev.limit, ev.spent = before + budget.max_points, False  # each world's search has its own budget
        try:
            z = _search(ev, z0, frozen, screen, np.array(out["worlds"][-1]["coordinates"]) if out["worlds"] else None)
        except _Spent:
            out["budget_spent"] = True
            out["stopped"] = {"world": len(out["worlds"]) + 1, "reason": f"none found within its budget of {budget.max_points} points"}
            break
        if z is None:
            out["stopped"] = {"world": len(out["worlds"]) + 1, "reason": "none within the plausible ranges"
                              + (" with the nearer worlds' largest moves frozen" if frozen else "")}
            break
        out["worlds"].append({**_describe_world(ev, z0, z, frozen), "points": len(ev.cache) - before})
        if ev.spent:  # found before its budget ran out: its distance bounds the nearest such world's from above
            out["budget_spent"] = out["worlds"][-1]["budget_spent"] = True
        moves = np.abs(ev.moves(ev.snapped(z), z0))
        movers = [int(i) for i in np.argsort(-moves, kind="stable") if int(i) not in frozen and moves[i] >= CHANGED]
        if not movers:
            if len(out["worlds"]) < count:
                out["stopped"] = {"world": len(out["worlds"]) + 1, "reason": "every input the last world moves is frozen"}
            break
        frozen = frozen | {movers[0]}
    out["found"] = bool(out["worlds"])
    key = max(ev.cache, key=lambda k: upper_median_margin(ev.cache[k], threshold))
    s = ev.cache[key]
    out["best_seen"] = {"distance": ev.distance(np.array(key), z0), "p_holds": float(np.mean(s >= threshold)),
                        "figure_median": float(np.median(s)), "margin": upper_median_margin(s, threshold),
                        "coordinates": [float(v) for v in key]}
    ev.limit = len(ev.cache) + PATH_STEPS + 1  # the figure's path has its own points
    if out["worlds"] and out["worlds"][0]["distance"] > 0:
        out["path"], out["path_to"] = path(ev, z0, np.array(out["worlds"][0]["coordinates"])), "the nearest world"
    elif not out["worlds"]:
        out["path"], out["path_to"] = path(ev, z0, np.array(out["best_seen"]["coordinates"])), "the best world seen (none reaches the claim)"
    out["points"] = len(ev.cache)
    if confirm is not None:
        _confirm(out, ev, z0, confirm)
    out["elapsed_s"], out["cpu_s"] = time.perf_counter() - start, time.process_time() - cpu
    return out
