"""Request lengths: ``workload.prompt_tokens`` / ``output_tokens`` and each request class's.

A length key takes a number (every request of the class has that length), a ``dist``
table (the typical length is uncertain: drawn once per trial, like every uncertain
input) or a length law (aleatory: the lengths spread across the requests;
docs/model.md#lengths):

* ``{law = "lognormal", median = M, sigma = s}``: ``M`` and ``s`` may be dist tables
  (inputs ``KEY.median``, ``KEY.sigma``);
* ``{law = "empirical", quantiles = [0, ..., 1], tokens = [x0, ..., xk]}``: a quantile
  table from the shortest request (quantile 0) to the longest (quantile 1), the lengths
  uniform between two tabulated quantiles.

The closed forms of the laws (mean, quantile) are :mod:`mcengine.analytic.lengths`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

from .dists import Dist, _plain

#: Most points of an empirical quantile table (a table is read in O(points)).
MAX_TABLE_POINTS = 64


@dataclass(frozen=True)
class LengthLaw(ABC):
    """The spread of a length across requests; its parameters (dist tables or fixed)."""

    kind: ClassVar[str] = ""

    def param_items(self) -> list[tuple[str, Dist]]:
        """The law's number-valued parameters by suffix (inputs ``KEY.SUFFIX``)."""
        return []

    @abstractmethod
    def to_toml(self) -> dict:
        """The law as its TOML table."""


@dataclass(frozen=True)
class LognormalLength(LengthLaw):
    median_: Dist
    sigma: Dist
    kind: ClassVar[str] = "lognormal"

    def param_items(self):
        return [("median", self.median_), ("sigma", self.sigma)]

    def to_toml(self):
        return {"law": self.kind, "median": self.median_.to_toml(), "sigma": self.sigma.to_toml()}


@dataclass(frozen=True)
class EmpiricalLength(LengthLaw):
    quantiles: tuple[float, ...]
    tokens: tuple[float, ...]
    kind: ClassVar[str] = "empirical"

    def to_toml(self):
        return {"law": self.kind, "quantiles": [_plain(q) for q in self.quantiles], "tokens": [_plain(x) for x in self.tokens]}


#: Length laws by their ``law`` name.
LENGTH_LAWS = ("lognormal", "empirical")
