"""One analytic cross-check (a Monte Carlo estimate or an exact computation against its
closed form) and the Monte Carlo variant with a tolerance of 4 standard errors."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class Check:
    """One cross-check: ``got`` must be within ``tolerance`` of ``expected``.

    ``tolerance`` is absolute; for Monte Carlo estimates it is 4 standard errors.
    ``known_miss`` (empty for a required check) says why the model is known to miss a
    published measurement: such a check is reported beside the others but does not
    fail ``mcengine validate``. ``basis`` says what ``expected`` is: ``"closed form"``
    (an analytic twin or a published computation) or ``"measured"`` (the centre of a
    measured band, ``tolerance`` its half-width: a calibration anchor).
    """

    stage: str
    name: str
    expected: float
    got: float
    tolerance: float
    detail: str = ""
    known_miss: str = ""
    basis: str = "closed form"

    @property
    def passed(self) -> bool:
        return math.isfinite(self.got) and abs(self.got - self.expected) <= self.tolerance

    @property
    def status(self) -> str:
        """"pass", "known miss" (outside tolerance, reason recorded) or "FAIL"."""
        if self.passed:
            return "pass"
        return "known miss" if self.known_miss and math.isfinite(self.got) else "FAIL"

    def to_dict(self) -> dict:
        return {**asdict(self), "passed": self.passed, "status": self.status}


def mc_check(stage: str, name: str, sample, expected: float, detail: str, unit: str) -> Check:
    """Monte Carlo mean of ``sample`` against ``expected``; tolerance 4 standard errors of
    the mean, estimated from the sample (``unit`` names what one sample element is)."""
    sample = np.asarray(sample, dtype=float)
    sem = float(sample.std(ddof=1) / math.sqrt(sample.size))
    return Check(stage, name, expected, float(sample.mean()), 4.0 * sem, f"{detail}; {sample.size} {unit}, tolerance 4 SEM")
