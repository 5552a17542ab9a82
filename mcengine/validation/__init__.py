"""`mcengine validate`: the analytic cross-checks of every stage, as one list.

Each module here offers ``checks() -> list[Check]`` comparing a Monte Carlo estimate
(or an exact computation) against its closed form, or the model against a published
measurement (the roofline calibration anchors).
"""

from __future__ import annotations

from .. import interrupt
from . import fab, generation, reliability, roofline, sensitivity, training
from .check import Check, mc_check

__all__ = ["Check", "all_checks", "mc_check"]


def all_checks() -> list[Check]:
    """Every check, in report order: fab, reliability, roofline (the current generation's
    anchors, :mod:`.generation`, last among them), training, sensitivity. A SIGINT or
    SIGTERM stops between two stages' checks (:mod:`mcengine.interrupt`)."""
    checks: list[Check] = []
    with interrupt.deferred():
        for stage in (fab, reliability, roofline, generation, training, sensitivity):
            checks += stage.checks()
            interrupt.check()
    return checks
