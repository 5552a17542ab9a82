"""The paper study (``mcengine paper``): Canakci et al.'s claims, one registered unit each.

Each claim is a module with a ``compute(settings) -> dict`` that returns its JSON entry
(:func:`mcengine.paper._common.entry`): the paper's figure and where it comes from,
mcengine's figure under the paper's assumptions (configs/paper/) and under the shipped
scenarios, each with its 90 % interval, and the 1-D sweep where the claim flips. Adding
or upgrading a claim touches its module and its line in :data:`CLAIMS`.
"""

from __future__ import annotations

import time

from ..options import check_seed, positive
from . import blast_radius, cost_claim, fleet, frontier, performance, power, yield_claim
from ._common import Settings

#: The claims in the paper's order: (number, key, module).
CLAIMS = (
    (1, "yield", yield_claim),
    (2, "cost", cost_claim),
    (3, "blast_radius", blast_radius),
    (4, "power", power),
    (5, "performance", performance),
    (6, "fleet", fleet),
)
DEFAULT_TRIALS = 2048
QUICK_TRIALS = 128
DEFAULT_SEED = 0
#: One line for `mcengine scenarios` (the study runs with `mcengine paper` or `mcengine run paper`).
DESCRIPTION = "The paper's claims one by one: its figure, mcengine's under its assumptions and the shipped ones, where each flips"


def study(trials: int | None = None, seed: int | None = None, quick: bool = False, progress=None) -> dict:
    """The paper study's document: ``"claims"`` (one entry per claim), ``"frontier"``,
    ``"trials"``, ``"seed"``, ``"quick"``, ``"elapsed_s"``."""
    start = time.perf_counter()
    trials = positive("--trials", trials if trials is not None else (QUICK_TRIALS if quick else DEFAULT_TRIALS))
    seed = check_seed(DEFAULT_SEED if seed is None else seed)
    settings = Settings(trials=trials, seed=seed, quick=quick, progress=progress)
    claims = [module.compute(settings) for _, _, module in CLAIMS]
    doc = {"scenario": "paper", "seed": seed, "trials": trials, "quick": quick,
           "claims": claims, "frontier": frontier.compute(settings)}
    doc["elapsed_s"] = time.perf_counter() - start
    return doc


__all__ = ["CLAIMS", "study"]
