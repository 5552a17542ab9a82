"""Per-trial columns and the summaries of INTERFACE.md.

Every distribution is summarised as ``{"mean", "std", "sem", "p01", "p05", "p50",
"p95", "p99", "min", "max"}``. :class:`Summary` accumulates chunks in order: moments merge
exactly with Chan et al.'s parallel update, and the quantiles are exact order statistics
of the merged values (so a chunked run and a straight run give identical numbers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .errors import NumericalError

QUANTILES = (("p01", 0.01), ("p05", 0.05), ("p50", 0.50), ("p95", 0.95), ("p99", 0.99))
SUMMARY_KEYS = ("mean", "std", "sem", *(k for k, _ in QUANTILES), "min", "max")


@dataclass
class Summary:
    """Mergeable summary of one metric: count, mean, M2 (Chan), min, max, values."""

    count: int = 0
    mean: float = 0.0
    m2: float = 0.0
    chunks: list = field(default_factory=list)

    def add(self, values: np.ndarray, name: str = "metric") -> "Summary":
        values = np.asarray(values, dtype=float).ravel()
        if values.size == 0:
            return self
        bad = ~np.isfinite(values)
        if bad.any():
            raise NumericalError(f"{name}: {int(bad.sum())} non-finite values (first at index {int(np.argmax(bad))})")
        n_b = values.size
        mean_b = float(values.mean())
        m2_b = float(((values - mean_b) ** 2).sum())
        n = self.count + n_b
        delta = mean_b - self.mean
        self.mean += delta * n_b / n
        self.m2 += m2_b + delta * delta * self.count * n_b / n
        self.count = n
        self.chunks.append(values)
        return self

    def merge(self, other: "Summary") -> "Summary":
        for chunk in other.chunks:
            self.add(chunk)
        return self

    def to_dict(self) -> dict:
        if self.count == 0:
            raise NumericalError("summary of an empty sample")
        values = np.concatenate(self.chunks)
        std = math.sqrt(self.m2 / (self.count - 1)) if self.count > 1 else 0.0
        out = {"mean": self.mean, "std": std, "sem": std / math.sqrt(self.count)}
        qs = np.quantile(values, [q for _, q in QUANTILES])
        out.update({k: float(v) for (k, _), v in zip(QUANTILES, qs)})
        out["min"] = float(values.min())
        out["max"] = float(values.max())
        return out


def summarize(values: np.ndarray, name: str = "metric") -> dict:
    """The INTERFACE.md summary of one sample."""
    return Summary().add(values, name).to_dict()
