"""Field specs of the scenario schema: type, default, range and help text of every key.

A section is a frozen dataclass whose fields are declared with the helpers below
(:func:`number`, :func:`integer`, :func:`law`, :func:`choice`, :func:`text`,
:func:`flag`). Each helper stores a :class:`Spec` in the field's metadata; the spec
parses one raw TOML value, appends a :class:`~mcengine.errors.Problem` for anything
wrong (the key, the value, what is allowed) and returns the typed value.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field, fields, replace
from typing import Any, Callable

from ..errors import Problem
from ..kernels.law_codes import MAX_LAW_PARTS
from .dists import DISTS, LAWS, Choice, Dist, Fixed, Law, MixtureLaw, fixed_law, make_dist, make_law
from .lengths import LENGTH_LAWS, MAX_TABLE_POINTS, EmpiricalLength, LengthLaw, LognormalLength

AUTO = "auto"
INF_WORDS = ("inf", "+inf", "infinity")


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _as_float(x: Any, inf_ok: bool) -> float | None:
    """A TOML number (or the string "inf" where allowed) as float, else None.

    NaN is never a number here: every range comparison is false for it, so it would
    pass any bound and reach the kernels (a NaN defect density hangs the fab kernel).
    """
    if _is_number(x):
        if isinstance(x, float) and math.isnan(x):
            return None
        try:
            return float(x)
        except OverflowError:  # a TOML integer beyond any float (10**400)
            return None
    if isinstance(x, str) and x.strip().lower() in INF_WORDS and inf_ok:
        return math.inf
    if isinstance(x, str) and x.strip().lower() in ("-inf", "-infinity") and inf_ok:
        return -math.inf
    return None


def did_you_mean(word: str, options: list[str] | tuple[str, ...]) -> str:
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else ""


def unknown_keys(raw: dict, known: list[str], prefix: str, problems: list[Problem]) -> None:
    for key in raw:
        if key not in known:
            problems.append(
                Problem(
                    f"{prefix}{key}",
                    raw[key],
                    "unknown key; allowed here: " + ", ".join(sorted(known)),
                    did_you_mean(key, known),
                )
            )


def _num(x: float) -> str:
    """A bound as users type it: integers in full (a 64-bit seed bound too), other numbers in %g."""
    if isinstance(x, int):
        return f"{x}"
    return f"{int(x)}" if float(x).is_integer() and abs(x) < 1e16 else f"{x:g}"


def _interval(lo, hi, lo_open, hi_open) -> str:
    left = "(" if lo_open or lo is None else "["
    right = ")" if hi_open or hi is None else "]"
    lo_s = "-inf" if lo is None else _num(lo)
    hi_s = "inf" if hi is None else _num(hi)
    return f"{left}{lo_s}, {hi_s}{right}"


@dataclass(frozen=True)
class Spec:
    """How one key is parsed and checked."""

    kind: str  # number | integer | law | length | choice | subset | text | flag
    help: str
    unit: str = ""
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    inf_ok: bool = False
    auto_ok: bool = False
    auto_word: str = AUTO  #: the word that, with ``auto_ok``, asks the scenario to derive the value ("auto", "all", "optimal")
    uncertain: bool = True
    #: False: no model reads the key; it is accepted (a file setting it still loads) but is no
    #: input: never drawn, never a sensitivity factor (:meth:`~.schema.Scenario.unread_keys`).
    read: bool = True
    optional: bool = False
    choices: tuple[str, ...] = ()
    why: str = ""  # why the bounds are where they are (one short phrase, shown in errors)

    def __post_init__(self):
        # every numeric key has finite bounds: no legal value may make a run unbounded
        if self.kind in ("number", "integer", "law", "length") and self.help and (self.lo is None or self.hi is None or not self.why):
            raise TypeError(f"numeric key {self.help!r}: give finite lo, hi and the reason (why=...)")

    # ---------------------------------------------------------------- descriptions
    def allowed(self) -> str:
        text = self._allowed()
        return f"{text}; bounds: {self.why}" if self.why else text

    def _allowed(self) -> str:
        if self.kind == "number":
            what = f"a number in {_interval(self.lo, self.hi, self.lo_open, self.hi_open)}"
            if self.inf_ok:
                what += ' or "inf"'
            if self.auto_ok:
                what += f' or "{self.auto_word}"'
            if self.uncertain:
                what += " (or a dist table: " + ", ".join(DISTS) + ")"
            return "allowed: " + what
        if self.kind == "integer":
            what = f"an integer in {_interval(self.lo, self.hi, False, False)}"
            if self.inf_ok:
                what += ' or "inf"'
            if self.auto_ok:
                what += f' or "{self.auto_word}"'
            return "allowed: " + what
        if self.kind == "law":
            return (
                f"allowed: a duration in {_interval(self.lo, self.hi, self.lo_open, False)} or a law table "
                "(law = " + ", ".join([*LAWS, "mixture"]) + ")"
            )
        if self.kind == "length":
            return (
                f"allowed: a length in {_interval(self.lo, self.hi, False, False)} (every request's), a dist table (the typical "
                "length, uncertain: " + ", ".join(DISTS) + ") or a length law table (the spread across requests: "
                '{law = "lognormal", median, sigma} or {law = "empirical", quantiles = [0, ..., 1], tokens = [...]})'
            )
        if self.kind == "choice":
            return "allowed: one of " + ", ".join(repr(c) for c in self.choices)
        if self.kind == "subset":
            return ("allowed: a list of distinct names from " + ", ".join(repr(c) for c in self.choices)
                    + ', or a choice among such lists: {dist = "choice", values = [[...], [...]], weights = [...]}')
        if self.kind == "flag":
            return "allowed: true or false"
        return "allowed: a string"

    def in_range(self, lo: float, hi: float, lo_open: bool, hi_open: bool) -> bool:
        """Whether values in [lo, hi] (with the given openness) all lie in the spec's range."""
        if math.isnan(lo) or math.isnan(hi):
            return False
        if self.lo is not None:
            if lo < self.lo or (lo == self.lo and self.lo_open and not lo_open):
                return False
        if self.hi is not None:
            if math.isinf(hi) and self.inf_ok and lo == hi:
                return True
            if hi > self.hi or (hi == self.hi and self.hi_open and not hi_open):
                return False
        return True

    # ---------------------------------------------------------------- parsing
    def parse(self, raw: Any, key: str, problems: list[Problem]) -> Any:
        parser: Callable = getattr(self, "_parse_" + self.kind)
        return parser(raw, key, problems)

    def _parse_number(self, raw, key, problems) -> Dist | str | None:
        if self.auto_ok and raw == self.auto_word:
            return self.auto_word
        if isinstance(raw, dict):
            if not self.uncertain:
                problems.append(Problem(key, raw, self.allowed().replace(" (or a dist", " (not a dist") , "this key is structural: give one number"))
                return None
            dist = parse_dist(raw, key, problems)
            if dist is None:
                return None
            if not self.in_range(*dist.drawn_range()):
                lo, hi, _, _ = dist.drawn_range()
                problems.append(
                    Problem(key, raw, self.allowed(), f"this {dist.kind} can take values in [{lo:g}, {hi:g}]")
                )
                return None
            return dist
        value = _as_float(raw, self.inf_ok)
        if value is None or (math.isinf(value) and not self.inf_ok):
            problems.append(Problem(key, raw, self.allowed()))
            return None
        if not self.in_range(value, value, False, False):
            problems.append(Problem(key, raw, self.allowed()))
            return None
        return Fixed(value)

    def _parse_integer(self, raw, key, problems) -> int | float | str | None:
        if self.auto_ok and raw == self.auto_word:
            return self.auto_word
        if self.inf_ok and isinstance(raw, str) and raw.strip().lower() in INF_WORDS:
            return math.inf
        if self.inf_ok and isinstance(raw, float) and raw == math.inf:  # the TOML literal inf
            return math.inf
        if isinstance(raw, bool) or not isinstance(raw, int):
            problems.append(Problem(key, raw, self.allowed()))
            return None
        if (self.lo is not None and raw < self.lo) or (self.hi is not None and raw > self.hi):
            problems.append(Problem(key, raw, self.allowed()))
            return None
        return int(raw)

    def _parse_law(self, raw, key, problems) -> Law | None:
        law = parse_law(raw, key, problems)
        if law is None:
            return None
        duration = Spec("number", "", lo=self.lo, hi=self.hi, lo_open=self.lo_open, why=self.why)
        ok = True
        for suffix, dist in law.param_items():
            name = suffix.split(".")[-1]
            spec = duration if name in ("value", "mean", "median") else LAW_SHAPE_SPECS[name]
            if not spec.in_range(*dist.drawn_range()):
                problems.append(Problem(f"{key}.{suffix}", dist.to_toml(), spec.allowed()))
                ok = False
        return law if ok else None

    def _parse_length(self, raw, key, problems) -> int | float | Dist | LengthLaw | None:
        """A request length (:mod:`.lengths`): a number (an integer stays an int), a dist
        table, or a length law whose median, sigma and tabulated lengths lie in range."""
        if isinstance(raw, dict) and "law" in raw:
            return self._parse_length_law(raw, key, problems)
        if isinstance(raw, dict):
            return replace(self, kind="number")._parse_number(raw, key, problems)
        value = _as_float(raw, inf_ok=False)
        if value is None or not self.in_range(value, value, False, False):
            problems.append(Problem(key, raw, self.allowed()))
            return None
        return raw if isinstance(raw, int) else value

    def _parse_length_law(self, raw: dict, key: str, problems: list[Problem]) -> LengthLaw | None:
        kind = raw["law"]
        if kind not in LENGTH_LAWS:
            problems.append(Problem(f"{key}.law", kind, "allowed: " + ", ".join(LENGTH_LAWS) + " (a length law)",
                                    did_you_mean(str(kind), list(LENGTH_LAWS))))
            return None
        if kind == "lognormal":
            if not _check_params(raw, "law", ("median", "sigma"), (), key, problems):
                return None
            median, sigma = (_law_param(raw[p], f"{key}.{p}", problems) for p in ("median", "sigma"))
            if median is None or sigma is None:
                return None
            ok = True
            for name, dist, spec in (("median", median, replace(self, kind="number")), ("sigma", sigma, LAW_SHAPE_SPECS["sigma"])):
                if not spec.in_range(*dist.drawn_range()):
                    problems.append(Problem(f"{key}.{name}", dist.to_toml(), spec.allowed()))
                    ok = False
            return LognormalLength(median, sigma) if ok else None
        if not _check_params(raw, "law", ("quantiles", "tokens"), (), key, problems):
            return None
        q, x = raw["quantiles"], raw["tokens"]
        numbers = all(isinstance(v, list) and all(_as_float(e, inf_ok=False) is not None for e in v) for v in (q, x))
        if not numbers or not 2 <= len(q) <= MAX_TABLE_POINTS or len(x) != len(q):
            problems.append(Problem(key, raw, f"allowed: quantiles and tokens, two lists of 2 to {MAX_TABLE_POINTS} numbers of one length"))
            return None
        q, x = [float(e) for e in q], [float(e) for e in x]
        if q[0] != 0.0 or q[-1] != 1.0 or any(b <= a for a, b in zip(q, q[1:])):
            problems.append(Problem(f"{key}.quantiles", raw["quantiles"], "allowed: increasing from 0 (the shortest request) to 1 (the longest)"))
            return None
        if any(b < a for a, b in zip(x, x[1:])) or not all(self.in_range(e, e, False, False) for e in x):
            problems.append(Problem(f"{key}.tokens", raw["tokens"], f"allowed: non-decreasing lengths in {_interval(self.lo, self.hi, False, False)}"))
            return None
        return EmpiricalLength(tuple(q), tuple(x))

    def _parse_choice(self, raw, key, problems) -> str | None:
        if raw not in self.choices:
            hint = did_you_mean(raw, self.choices) if isinstance(raw, str) else ""
            problems.append(Problem(key, raw, self.allowed(), hint))
            return None
        return raw

    def _parse_subset(self, raw, key, problems) -> tuple[str, ...] | Choice | None:
        if isinstance(raw, dict):
            return self._parse_subset_choice(raw, key, problems)
        if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw) or len(set(raw)) != len(raw):
            problems.append(Problem(key, raw, self.allowed()))
            return None
        bad = [x for x in raw if x not in self.choices]
        if bad:
            problems.append(Problem(key, raw, self.allowed(), did_you_mean(bad[0], self.choices)))
            return None
        return tuple(raw)

    def _parse_subset_choice(self, raw: dict, key: str, problems: list[Problem]) -> Choice | None:
        """``{dist = "choice", values = [list, ...], weights = [w, ...]}``: an uncertain
        subset; weights positive (normalised), equal when left out."""
        before = len(problems)
        if raw.get("dist") != "choice":
            problems.append(Problem(f"{key}.dist", raw.get("dist"), 'allowed: "choice" (a list of names, or a choice among lists)'))
            return None
        unknown_keys(raw, ["dist", "values", "weights", "shared"], f"{key}.", problems)
        shared = parse_shared(raw, key, problems)
        values = raw.get("values")
        if not isinstance(values, list) or len(values) < 2:
            problems.append(Problem(f"{key}.values", values, "allowed: a list of at least two options, each a list of distinct names from "
                                    + ", ".join(repr(c) for c in self.choices)))
            return None
        options = [self._parse_subset(v if isinstance(v, list) else None, f"{key}.values.{i}", problems) for i, v in enumerate(values)]
        weights = raw.get("weights", [1.0] * len(values))
        if (not isinstance(weights, list) or len(weights) != len(values)
                or not all(_is_number(w) and math.isfinite(w) and 0 < w <= MAX_LAW_WEIGHT for w in weights)):
            problems.append(Problem(f"{key}.weights", weights, f"allowed: one positive number up to {MAX_LAW_WEIGHT:g} per option "
                                    f"({len(values)} here; they are normalised)"))
        if len(problems) > before:
            return None
        return Choice(tuple(options), tuple(float(w) for w in weights), shared=shared)

    def _parse_text(self, raw, key, problems) -> str | None:
        if not isinstance(raw, str):
            problems.append(Problem(key, raw, self.allowed()))
            return None
        trouble = text_problem(raw)
        if trouble:
            problems.append(Problem(key, raw, f"allowed: a string of {trouble}"))
            return None
        return raw

    def _parse_flag(self, raw, key, problems) -> bool | None:
        if not isinstance(raw, bool):
            problems.append(Problem(key, raw, self.allowed()))
            return None
        return raw


#: Bounds of the law parameters that are not durations (by parameter name).
LAW_SHAPE_SPECS = {
    "sigma": Spec("number", "Lognormal law sigma.", lo=0.0, lo_open=True, hi=5.0,
                  why="at sigma 5 the mean is already 270,000x the median"),
    "shape": Spec("number", "Weibull law shape.", lo=0.05, hi=20.0,
                  why="as for weibull_shape: Gamma(1 + 1/shape) overflows below 0.05"),
}

#: Mixture weights are normalised; the bound keeps their sum finite.
MAX_LAW_WEIGHT = 1e6

#: Longest free-text value (labels), and no control characters in it.
MAX_TEXT_CHARS = 200


def text_problem(raw: str, limit: int = MAX_TEXT_CHARS) -> str:
    """What is wrong with a label (empty when it is fine)."""
    if len(raw) > limit:
        return f"at most {limit} characters"
    if any(ord(c) < 32 or ord(c) == 127 for c in raw):
        return "no control characters (NUL, newline, ...)"
    return ""


# ----------------------------------------------------------------------------- dists, laws


def _param_float(raw: Any, key: str, problems: list[Problem]) -> float | None:
    value = _as_float(raw, inf_ok=True)
    if value is None:
        problems.append(Problem(key, raw, "allowed: a number (not NaN)"))
    return value


def _check_params(raw: dict, kind_key: str, required, optional, key, problems) -> bool:
    allowed = [kind_key, *required, *optional]
    missing = [p for p in required if p not in raw]
    for p in missing:
        problems.append(Problem(f"{key}.{p}", None, f"missing; {raw[kind_key]!r} needs " + ", ".join(required)))
    before = len(problems)
    unknown_keys(raw, allowed, f"{key}.", problems)
    return not missing and len(problems) == before


def parse_dist(raw: dict, key: str, problems: list[Problem]) -> Dist | None:
    """Parse a ``{dist = ..., ...}`` table through the :data:`DISTS` registry."""
    if "dist" not in raw:
        hint = "a per-event law belongs in a law key" if "law" in raw else ""
        problems.append(Problem(key, raw, "allowed: a number or a table with dist = " + ", ".join(DISTS), hint))
        return None
    kind = raw["dist"]
    if not isinstance(kind, str) or kind not in DISTS:
        problems.append(Problem(f"{key}.dist", kind, "allowed: " + ", ".join(DISTS), did_you_mean(str(kind), list(DISTS))))
        return None
    cls = DISTS[kind]
    shared = parse_shared(raw, key, problems)
    raw = {k: v for k, v in raw.items() if k != "shared"}
    if not _check_params(raw, "dist", cls.required, cls.optional, key, problems) or shared is None:
        return None
    params = {}
    for p in (*cls.required, *cls.optional):
        if p in raw:
            value = _param_float(raw[p], f"{key}.{p}", problems)
            if value is None:
                return None
            params[p] = value
    dist = make_dist(kind, params, shared)
    trouble = dist.check()
    if trouble:
        problems.append(Problem(key, raw, f"{kind}: {trouble}"))
        return None
    return dist


def parse_shared(raw: dict, key: str, problems: list[Problem]) -> bool | None:
    """A dist table's ``shared`` flag (default true), or None after a problem."""
    shared = raw.get("shared", True)
    if not isinstance(shared, bool):
        problems.append(Problem(f"{key}.shared", shared, "allowed: true (every design draws the input at the same quantile in a trial: "
                                "common random numbers) or false (each design draws it on its own stream)"))
        return None
    return shared


def _law_param(raw: Any, key: str, problems: list[Problem]) -> Dist | None:
    if isinstance(raw, dict):
        return parse_dist(raw, key, problems)
    value = _as_float(raw, inf_ok=False)
    if value is None:
        problems.append(Problem(key, raw, "allowed: a number (not NaN) or a dist table"))
        return None
    return Fixed(value)


def parse_law(raw: Any, key: str, problems: list[Problem], nested: bool = False) -> Law | None:
    """Parse a plain duration or a ``{law = ..., ...}`` table (``mixture`` included)."""
    if _is_number(raw):
        value = _as_float(raw, inf_ok=False)
        if value is None or not math.isfinite(value):
            problems.append(Problem(key, raw, "allowed: a finite duration (a number) or a table with law = " + ", ".join([*LAWS, "mixture"])))
            return None
        return fixed_law(value)
    if not isinstance(raw, dict) or "law" not in raw:
        hint = "an uncertain input is not a law: wrap it, e.g. {law = \"fixed\", value = {dist = ...}}" if isinstance(raw, dict) and "dist" in raw else ""
        problems.append(Problem(key, raw, "allowed: a number or a table with law = " + ", ".join([*LAWS, "mixture"]), hint))
        return None
    kind = raw["law"]
    if kind == "mixture" and not nested:
        return _parse_mixture(raw, key, problems)
    if not isinstance(kind, str) or kind not in LAWS:
        allowed = list(LAWS) if nested else [*LAWS, "mixture"]
        problems.append(Problem(f"{key}.law", kind, "allowed: " + ", ".join(allowed), did_you_mean(str(kind), allowed)))
        return None
    cls = LAWS[kind]
    extra = ("weight",) if nested else ()
    if not _check_params(raw, "law", cls.required, extra, key, problems):
        return None
    params = {}
    for p in cls.required:
        dist = _law_param(raw[p], f"{key}.{p}", problems)
        if dist is None:
            return None
        params[p] = dist
    return make_law(kind, params)


def _parse_mixture(raw: dict, key: str, problems: list[Problem]) -> Law | None:
    if not _check_params(raw, "law", ("parts",), (), key, problems):
        return None
    parts = raw["parts"]
    if not isinstance(parts, list) or not 1 <= len(parts) <= MAX_LAW_PARTS or not all(isinstance(p, dict) for p in parts):
        problems.append(Problem(f"{key}.parts", parts, f"allowed: a list of 1 to {MAX_LAW_PARTS} law tables, each with a weight"))
        return None
    weights, laws = [], []
    for i, part in enumerate(parts):
        pkey = f"{key}.parts.{i}"
        weight = part.get("weight")
        if not _is_number(weight) or not 0 < weight <= MAX_LAW_WEIGHT:
            problems.append(Problem(f"{pkey}.weight", weight, f"allowed: a positive number up to {MAX_LAW_WEIGHT:g} (weights are normalised; the bound keeps their sum finite)"))
            return None
        law = parse_law(part, pkey, problems, nested=True)
        if law is None:
            return None
        weights.append(float(weight))
        laws.append(law)
    return MixtureLaw(tuple(weights), tuple(laws))


# ----------------------------------------------------------------------------- field helpers


def _field(default, spec: Spec):
    return field(default=default, metadata={"spec": spec})


def number(default: float | None, help: str, unit: str = "", **kw):
    """A float key; uncertain (dist table) unless ``uncertain=False``; ``None`` default = optional;
    ``"auto"`` (with ``auto_ok=True``; another word with ``auto_word=``) = a value the scenario derives from other keys."""
    spec = Spec("number", help, unit=unit, optional=default is None, **kw)
    return _field(default if default is None or isinstance(default, str) else Fixed(float(default)), spec)


def integer(default, help: str, unit: str = "", **kw):
    return _field(default, Spec("integer", help, unit=unit, uncertain=False, **kw))


def length(default: int, help: str, **kw):
    """A request length in tokens: a number, a dist table or a length law (:mod:`.lengths`)."""
    return _field(default, Spec("length", help, unit="tokens", **kw))


def law(default: float, help: str, unit: str = "hours", **kw):
    return _field(fixed_law(default), Spec("law", help, unit=unit, **kw))


def choice(default: str, help: str, choices: tuple[str, ...]):
    return _field(default, Spec("choice", help, choices=choices, uncertain=False))


def subset(default: tuple[str, ...], help: str, choices: tuple[str, ...]):
    """A list of distinct names from ``choices`` (stored as a tuple, in the given order)."""
    return _field(tuple(default), Spec("subset", help, choices=choices, uncertain=False))


def text(default: str, help: str):
    return _field(default, Spec("text", help, uncertain=False))


def flag(default: bool, help: str):
    return _field(default, Spec("flag", help, uncertain=False))


def spec_of(f) -> Spec | None:
    return f.metadata.get("spec")


def parse_section(cls, raw: Any, prefix: str, problems: list[Problem], special: dict | None = None):
    """Parse one TOML table into the frozen dataclass ``cls``; None if anything was wrong.

    ``special`` maps field names to parsers ``(raw, key, problems) -> value`` for fields
    that are tables of their own (component classes, the model card).
    """
    special = special or {}
    if not isinstance(raw, dict):
        problems.append(Problem(prefix.rstrip("."), raw, "allowed: a table"))
        return None
    names = [f.name for f in fields(cls)]
    before = len(problems)
    unknown_keys(raw, names, prefix, problems)
    values = {}
    for f in fields(cls):
        key = prefix + f.name
        if f.name in special:  # parsed even when absent: the parser knows its default
            values[f.name] = special[f.name](raw.get(f.name), key, problems)
        elif f.name in raw:
            values[f.name] = spec_of(f).parse(raw[f.name], key, problems)
    if len(problems) > before:
        return None
    return cls(**values)
