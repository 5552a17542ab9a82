"""`mcengine validate`: the analytic cross-checks of every stage, as one table.

Each stage module offers ``validation_checks() -> list[Check]`` comparing a Monte Carlo
estimate (or an exact computation) against its closed form.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import asdict, dataclass

#: Stage modules that contribute checks, in report order.
CHECK_MODULES = ("mcengine.stages.fab", "mcengine.stages.reliability", "mcengine.stages.roofline", "mcengine.sensitivity")


@dataclass(frozen=True)
class Check:
    """One cross-check: ``got`` must be within ``tolerance`` of ``expected``.

    ``tolerance`` is absolute; for Monte Carlo estimates it is 4 standard errors.
    """

    stage: str
    name: str
    expected: float
    got: float
    tolerance: float
    detail: str = ""

    @property
    def passed(self) -> bool:
        return math.isfinite(self.got) and abs(self.got - self.expected) <= self.tolerance

    def to_dict(self) -> dict:
        return {**asdict(self), "passed": self.passed}


def all_checks() -> list[Check]:
    checks: list[Check] = []
    for name in CHECK_MODULES:
        module = importlib.import_module(name)
        checks.extend(module.validation_checks())
    return checks
