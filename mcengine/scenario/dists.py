"""Uncertain inputs (``dist`` tables) and per-event laws (``law`` tables).

Two kinds of randomness are kept apart (docs/interface.md#scenario-files-toml):

* an **uncertain input** (:class:`Dist`, epistemic) is drawn once per trial by inverse
  transform of a counter-based uniform, so trial *i* of two scenarios that share a key
  gets the same quantile (common random numbers); a ``dist`` table with
  ``shared = false`` is drawn per design instead (docs/model.md#per-design-inputs);
* a **law** (:class:`Law`, aleatory) is sampled per event inside a kernel. Its parameters
  are themselves :class:`Dist` values, so they may be uncertain.

Both are parsed through explicit registries (:data:`DISTS`, :data:`LAWS`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, fields
from typing import ClassVar

import numpy as np
import scipy  # scipy loads scipy.stats and scipy.integrate on first use: a first `mcengine run` imports neither
from scipy import special

from ..kernels.law_codes import LAW_EXPONENTIAL, LAW_FIXED, LAW_LOGNORMAL, LAW_WEIBULL

INF = math.inf

#: The extreme uniforms a trial can draw (:func:`mcengine.rng.uniform`: ``(m + 0.5) / 2**53``
#: for 53-bit ``m``, clamped below 1); a Dist's draws lie between its quantiles at these.
U_MIN = 2.0**-54
U_MAX = 1.0 - 2.0**-53


def _finite(**params: float) -> str:
    """What is wrong when a parameter is NaN or infinite (empty when all are finite)."""
    bad = [name for name, v in params.items() if not math.isfinite(v)]
    return "needs finite " + ", ".join(bad) if bad else ""


def _plain(x: float) -> float | int | str:
    """A TOML/JSON-friendly scalar: integral floats stay floats, inf becomes ``"inf"``."""
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return float(x)


@dataclass(frozen=True)
class Dist(ABC):
    """Base of the uncertain-input kinds. Subclasses are frozen dataclasses of floats.

    ``shared`` (``true`` unless a table says ``shared = false``): in a comparison, whether
    every design draws this input at the same quantile in a trial (common random numbers)
    or each design on its own stream (docs/model.md#per-design-inputs)."""

    shared: bool = field(default=True, kw_only=True)
    kind: ClassVar[str] = ""
    required: ClassVar[tuple[str, ...]] = ()
    optional: ClassVar[dict[str, float]] = {}

    @property
    def is_fixed(self) -> bool:
        return False

    @abstractmethod
    def ppf(self, u: np.ndarray) -> np.ndarray:
        """Quantile function, vectorised over ``u`` in (0, 1)."""

    def quantile(self, q: float) -> float:
        return float(self.ppf(np.array([q]))[0])

    def median(self) -> float:
        return self.quantile(0.5)

    @abstractmethod
    def support(self) -> tuple[float, float, bool, bool]:
        """(low, high, low_open, high_open) of the values this input can take."""

    def check(self) -> str:
        """Empty when the parameters are consistent, else what is wrong."""
        return ""

    def drawn_range(self) -> tuple[float, float, bool, bool]:
        """(low, high, low_open, high_open) of the values a trial can actually draw.

        The declared :meth:`support` where it is finite; an infinite (or, for the
        lognormal, open-at-zero) end is replaced by the quantile at the extreme uniform
        (:data:`U_MIN`, :data:`U_MAX`), so a range check covers every draw. NaN when
        the quantile function fails at the extremes (the caller refuses it).
        """
        lo, hi, lo_open, hi_open = self.support()
        with np.errstate(all="ignore"):
            if math.isinf(lo):
                lo, lo_open = self.quantile(U_MIN), False
            if math.isinf(hi):
                hi, hi_open = self.quantile(U_MAX), False
        return lo, hi, lo_open, hi_open

    def to_toml(self) -> dict | float | str:
        out: dict = {"dist": self.kind}
        for f in fields(self):
            if f.name != "shared":
                out[f.name] = _plain(getattr(self, f.name))
        return self._with_shared(out)

    def _with_shared(self, table: dict) -> dict:
        """``table`` with ``shared = false`` when the input is drawn per design."""
        return table if self.shared else {**table, "shared": False}


@dataclass(frozen=True)
class Fixed(Dist):
    """A known value (a plain number in a scenario file)."""

    value: float
    kind: ClassVar[str] = "fixed"
    required: ClassVar[tuple[str, ...]] = ("value",)

    @property
    def is_fixed(self) -> bool:
        return True

    def ppf(self, u):
        return np.full(np.shape(u), self.value, dtype=float)

    def support(self):
        return (self.value, self.value, False, False)

    def check(self):
        return "needs a number, not NaN" if math.isnan(self.value) else ""

    def to_toml(self):
        return _plain(self.value)


@dataclass(frozen=True)
class Uniform(Dist):
    low: float
    high: float
    kind: ClassVar[str] = "uniform"
    required: ClassVar[tuple[str, ...]] = ("low", "high")

    def ppf(self, u):
        return self.low + (self.high - self.low) * np.asarray(u, dtype=float)

    def support(self):
        return (self.low, self.high, False, False)

    def check(self):
        return _finite(low=self.low, high=self.high) or ("" if self.low < self.high else "needs low < high")


@dataclass(frozen=True)
class Triangular(Dist):
    low: float
    mode: float
    high: float
    kind: ClassVar[str] = "triangular"
    required: ClassVar[tuple[str, ...]] = ("low", "mode", "high")

    def ppf(self, u):
        # the closed form, as scipy.stats.triang computes it (bit for bit): no scipy.stats
        # import (its memory and start-up) in a first run of the shipped scenarios' dists
        width = self.high - self.low
        c = (self.mode - self.low) / width
        return np.where(u < c, np.sqrt(c * u), 1 - np.sqrt((1 - c) * (1 - u))) * width + self.low

    def support(self):
        return (self.low, self.high, False, False)

    def check(self):
        trouble = _finite(low=self.low, mode=self.mode, high=self.high)
        if trouble:
            return trouble
        ok = self.low < self.high and self.low <= self.mode <= self.high
        return "" if ok else "needs low <= mode <= high and low < high"


@dataclass(frozen=True)
class Normal(Dist):
    """Normal, optionally truncated to [low, high]."""

    mean: float
    sd: float
    low: float = -INF
    high: float = INF
    kind: ClassVar[str] = "normal"
    required: ClassVar[tuple[str, ...]] = ("mean", "sd")
    optional: ClassVar[dict[str, float]] = {"low": -INF, "high": INF}

    def ppf(self, u):
        a = (self.low - self.mean) / self.sd
        b = (self.high - self.mean) / self.sd
        return scipy.stats.truncnorm.ppf(u, a, b, loc=self.mean, scale=self.sd)

    def support(self):
        return (self.low, self.high, math.isinf(self.low), math.isinf(self.high))

    def check(self):
        trouble = _finite(mean=self.mean, sd=self.sd)
        if trouble:
            return trouble
        if not self.sd > 0:
            return "needs sd > 0"
        if math.isnan(self.low) or math.isnan(self.high) or not self.low < self.high:
            return "needs low < high (either may be -inf / inf)"
        return ""


@dataclass(frozen=True)
class Lognormal(Dist):
    """exp(N(log median, sigma^2))."""

    median_: float
    sigma: float
    kind: ClassVar[str] = "lognormal"
    required: ClassVar[tuple[str, ...]] = ("median", "sigma")

    def ppf(self, u):
        return self.median_ * np.exp(self.sigma * special.ndtri(u))

    def support(self):
        return (0.0, INF, True, True)

    def drawn_range(self):
        # the declared support (0, inf) is open at 0, but a wide sigma underflows to 0
        with np.errstate(all="ignore"):
            return (self.quantile(U_MIN), self.quantile(U_MAX), False, False)

    def check(self):
        trouble = _finite(median=self.median_, sigma=self.sigma)
        if trouble:
            return trouble
        if not self.median_ > 0:
            return "needs median > 0"
        return "" if self.sigma > 0 else "needs sigma > 0"

    def to_toml(self):
        return self._with_shared({"dist": self.kind, "median": _plain(self.median_), "sigma": _plain(self.sigma)})


@dataclass(frozen=True)
class Beta(Dist):
    """Beta(a, b) scaled to [low, high]."""

    a: float
    b: float
    low: float = 0.0
    high: float = 1.0
    kind: ClassVar[str] = "beta"
    required: ClassVar[tuple[str, ...]] = ("a", "b")
    optional: ClassVar[dict[str, float]] = {"low": 0.0, "high": 1.0}

    def ppf(self, u):
        return self.low + (self.high - self.low) * scipy.stats.beta.ppf(u, self.a, self.b)

    def support(self):
        return (self.low, self.high, False, False)

    def check(self):
        trouble = _finite(a=self.a, b=self.b)
        if trouble:
            return trouble
        if not (self.a > 0 and self.b > 0):
            return "needs a > 0 and b > 0"
        if math.isinf(self.low) or math.isinf(self.high) or not self.low < self.high:
            return "needs finite low < high"
        return ""


@dataclass(frozen=True)
class Choice(Dist):
    """A categorical input: option ``i`` with probability ``weights[i] / sum(weights)``
    (``{dist = "choice", values = [...], weights = [...]}``, for a key whose value is not a
    number, e.g. ``econ.markup_applies_to``). A trial draws it, like any input, by inverse
    transform of its uniform; the drawn value is the option's index (a float column), and
    :meth:`option` gives the option."""

    options: tuple
    weights: tuple[float, ...]
    kind: ClassVar[str] = "choice"

    def _cumulative(self) -> np.ndarray:
        w = np.asarray(self.weights, dtype=float)
        return np.cumsum(w) / w.sum()

    def ppf(self, u):
        index = np.searchsorted(self._cumulative(), np.asarray(u, dtype=float), side="right")
        return np.minimum(index, len(self.options) - 1).astype(float)

    def support(self):
        return (0.0, float(len(self.options) - 1), False, False)

    def option(self, index: float):
        """The option at a drawn index."""
        return self.options[int(index)]

    def to_toml(self):
        values = [list(o) if isinstance(o, tuple) else o for o in self.options]
        return self._with_shared({"dist": self.kind, "values": values, "weights": [_plain(w) for w in self.weights]})


#: Registry of uncertain-input kinds, by the ``dist`` name used in scenario files.
DISTS: dict[str, type[Dist]] = {c.kind: c for c in (Fixed, Uniform, Triangular, Normal, Lognormal, Beta)}

_FIELD_OF_PARAM = {"median": "median_"}


def make_dist(kind: str, params: dict[str, float], shared: bool = True) -> Dist:
    """Build a registered Dist from its scenario-file parameter names."""
    cls = DISTS[kind]
    return cls(**{_FIELD_OF_PARAM.get(k, k): v for k, v in params.items()}, shared=shared)


# --------------------------------------------------------------------------- laws

# Kernel codes of the law kinds live with the kernels that switch on them.


@dataclass(frozen=True)
class Law(ABC):
    """A per-event duration law. ``params`` are Dists (possibly uncertain)."""

    kind: ClassVar[str] = ""
    code: ClassVar[int] = -1
    required: ClassVar[tuple[str, ...]] = ()

    def param_items(self) -> list[tuple[str, Dist]]:
        """(dotted suffix, Dist) of every parameter, e.g. ``("parts.1.median", ...)``."""
        return [(name, getattr(self, _FIELD_OF_PARAM.get(name, name))) for name in self.required]

    def parts(self) -> list[tuple[float, "Law"]]:
        """(weight, simple law) pairs; a plain law is one part of weight 1."""
        return [(1.0, self)]

    @abstractmethod
    def mean_at(self, values: dict[str, float]) -> float:
        """Mean of the law given its parameter values (by suffix)."""

    def to_toml(self):
        out: dict = {"law": self.kind}
        for name, dist in self.param_items():
            out[name] = dist.to_toml()
        return out


@dataclass(frozen=True)
class FixedLaw(Law):
    value: Dist
    kind: ClassVar[str] = "fixed"
    code: ClassVar[int] = LAW_FIXED
    required: ClassVar[tuple[str, ...]] = ("value",)

    def mean_at(self, values):
        return values["value"]

    def to_toml(self):
        return self.value.to_toml() if self.value.is_fixed else super().to_toml()


@dataclass(frozen=True)
class ExponentialLaw(Law):
    mean: Dist
    kind: ClassVar[str] = "exponential"
    code: ClassVar[int] = LAW_EXPONENTIAL
    required: ClassVar[tuple[str, ...]] = ("mean",)

    def mean_at(self, values):
        return values["mean"]


@dataclass(frozen=True)
class LognormalLaw(Law):
    median_: Dist
    sigma: Dist
    kind: ClassVar[str] = "lognormal"
    code: ClassVar[int] = LAW_LOGNORMAL
    required: ClassVar[tuple[str, ...]] = ("median", "sigma")

    def mean_at(self, values):
        return values["median"] * math.exp(0.5 * values["sigma"] ** 2)


@dataclass(frozen=True)
class WeibullLaw(Law):
    """Weibull parameterised by its mean and shape (scale = mean / Γ(1 + 1/shape))."""

    mean: Dist
    shape: Dist
    kind: ClassVar[str] = "weibull"
    code: ClassVar[int] = LAW_WEIBULL
    required: ClassVar[tuple[str, ...]] = ("mean", "shape")

    def mean_at(self, values):
        return values["mean"]


@dataclass(frozen=True)
class MixtureLaw(Law):
    """A finite mixture: each event draws its part with probability ``weight``.

    Weights must be positive; they are normalised to sum to one.
    """

    weights: tuple[float, ...]
    components: tuple[Law, ...]
    kind: ClassVar[str] = "mixture"

    def param_items(self):
        return [
            (f"parts.{i}.{name}", dist)
            for i, law in enumerate(self.components)
            for name, dist in law.param_items()
        ]

    def parts(self):
        total = sum(self.weights)
        return [(w / total, law) for w, law in zip(self.weights, self.components)]

    def mean_at(self, values):
        total = 0.0
        for i, (w, law) in enumerate(self.parts()):
            prefix = f"parts.{i}."
            sub = {k[len(prefix):]: v for k, v in values.items() if k.startswith(prefix)}
            total += w * law.mean_at(sub)
        return total

    def to_toml(self):
        parts = []
        for w, law in zip(self.weights, self.components):
            body = Law.to_toml(law)
            parts.append({"weight": _plain(w), **body})
        return {"law": "mixture", "parts": parts}


#: Registry of simple law kinds (``mixture`` is parsed apart: it holds other laws).
LAWS: dict[str, type[Law]] = {c.kind: c for c in (FixedLaw, ExponentialLaw, LognormalLaw, WeibullLaw)}


def make_law(kind: str, params: dict[str, Dist]) -> Law:
    cls = LAWS[kind]
    return cls(**{_FIELD_OF_PARAM.get(k, k): v for k, v in params.items()})


def fixed_law(value: float) -> Law:
    return FixedLaw(Fixed(float(value)))
