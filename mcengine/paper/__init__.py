"""The paper study (``mcengine paper``): Canakci et al.'s claims, one registered unit each.

Each claim is a module with a ``compute(settings) -> dict`` that returns its JSON entry
(:func:`mcengine.paper._common.entry`): the paper's figure and where it comes from,
mcengine's figure under the paper's assumptions (configs/paper/) and under the shipped
scenarios, each with its 90 % interval, and the 1-D sweep where the claim flips. Then
every entry gains the readings of the paper it is evaluated under
(:func:`mcengine.paper.readings.readings`) and its nearest world: the smallest move of its
declared assumptions under which P(claim holds) >= 0.5 (:mod:`mcengine.paper.worlds`,
:mod:`mcengine.paper.nearest`). Adding or upgrading a claim touches its module and its
line in :data:`CLAIMS` (and its search in :data:`mcengine.paper.worlds.CLAIM_WORLDS`).
"""

from __future__ import annotations

import time

from ..options import SAMPLE_DEFAULTS, check_seed, positive
from . import blast_radius, cost_claim, fault_tolerance, fleet, frontier, performance, power, yield_claim
from ._common import Settings
from .nearest import NORM

#: The claims in the paper's order: (number, key, module).
CLAIMS = (
    (1, "yield", yield_claim),
    (2, "cost", cost_claim),
    (3, "blast_radius", blast_radius),
    (4, "power", power),
    (5, "performance", performance),
    (6, "fleet", fleet),
    # not one of the paper's figures: its fault-tolerance argument read for a synchronous training job
    (7, "fault_tolerance", fault_tolerance),
)
#: The case study's own question, searched like a claim (not one of the paper's): the
#: nearest world in which the 2x-link Lite cluster serves a token for no more than the
#: H100 cluster, over the cost, calibration and workload inputs the claims do not move.
VERDICT = {"number": 0, "key": "verdict", "unit": "ratio", "paper_figure_text": "same cost per token",
           "question": "is lite-h100-2x no dearer per output token than h100 (cost per M tokens, h100 / lite-h100-2x >= 1)?"}
DEFAULT_TRIALS = SAMPLE_DEFAULTS["paper"].size
QUICK_TRIALS = SAMPLE_DEFAULTS["paper_quick"].size
DEFAULT_SEED = 0
#: One line for `mcengine scenarios` (the study runs with `mcengine paper` or `mcengine run paper`).
DESCRIPTION = "The paper's claims one by one: its figure, mcengine's under its assumptions and the shipped ones, where each flips"


def nearest_world(claim: dict, settings: Settings) -> dict:
    """The claim's nearest-world search (:func:`mcengine.paper.worlds.search`); a claim
    without a search that holds as shipped is its own nearest world."""
    from .worlds import search

    found = search(claim["key"], settings)
    if found:
        return found
    p = claim["shipped"].get("p_holds")
    worlds = [{"distance": 0.0, "p_holds": p, "changed": [], "note": "the claim holds in the shipped world (no search)"}] if p is not None and p >= 0.5 else []
    return {"norm": NORM, "worlds": worlds, "found": bool(worlds), "searched": False}


def study(trials: int | None = None, seed: int | None = None, quick: bool = False, progress=None) -> dict:
    """The paper study's document: ``"claims"`` (one entry per claim, with its
    ``"readings"`` and ``"nearest_world"``), ``"frontier"``, ``"trials"``, ``"seed"``,
    ``"quick"``, ``"verdict"`` (:data:`VERDICT` with its ``"nearest_world"``), ``"elapsed_s"``
    and the searches' wall and CPU time per claim,
    ``"nearest_world_elapsed_s"``, ``"nearest_world_cpu_s"`` (kept out of the claims, which are the same numbers
    for the same seed whatever the threads)."""
    start = time.perf_counter()
    trials = positive("--trials", trials if trials is not None else (QUICK_TRIALS if quick else DEFAULT_TRIALS))
    seed = check_seed(DEFAULT_SEED if seed is None else seed)
    settings = Settings(trials=trials, seed=seed, quick=quick, progress=progress)
    claims = [module.compute(settings) for _, _, module in CLAIMS]
    from .readings import readings

    searched, cpu = {}, {}
    for c in claims:
        c.update(readings(c, settings))
        c["nearest_world"] = nearest_world(c, settings)
        searched[c["key"]], cpu[c["key"]] = c["nearest_world"].pop("elapsed_s", 0.0), c["nearest_world"].pop("cpu_s", 0.0)
    verdict = {**VERDICT, "nearest_world": nearest_world({**VERDICT, "shipped": {}}, settings)}
    searched["verdict"], cpu["verdict"] = verdict["nearest_world"].pop("elapsed_s", 0.0), verdict["nearest_world"].pop("cpu_s", 0.0)
    doc = {"scenario": "paper", "seed": seed, "trials": trials, "quick": quick, "claims": claims, "verdict": verdict,
           "frontier": frontier.compute(settings), "nearest_world_elapsed_s": searched, "nearest_world_cpu_s": cpu}
    doc["elapsed_s"] = time.perf_counter() - start
    return doc


__all__ = ["CLAIMS", "study"]
