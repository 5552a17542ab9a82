"""Loading scenarios: TOML files, shipped names, ``extends`` chains and ``--set`` overrides.

* A reference is a path to a ``.toml`` file or the name of a shipped scenario
  (``configs/NAME.toml``, installed as package data ``mcengine/configs``).
* ``extends = "PARENT"`` starts from another scenario (a shipped name, or a path relative
  to the extending file) and deep-merges the child over it, table by table; a ``dist`` or
  ``law`` table of another kind replaces the parent's whole, and so does a child's
  ``gpu.peak_tflops`` (a peak table is one GPU's, never half of two). A cycle is an error.
* ``--set KEY=VALUE`` sets a dotted key after merging; VALUE is a TOML literal (a bare word
  that is not valid TOML is taken as a string); a table value replaces the whole table.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from ..errors import InputError, Problem
from .fields import did_you_mean
from .cards import DEFAULT_MODEL, card_table, load_model_card
from .derive import drop_inherited, drop_replaced, replaced_keys, without
from .files import MAX_TOML_DEPTH, configs_dir, parse_toml, read_toml, shortened
from .files import study_names  # noqa: F401 - re-exported
from .refs import resolve_ref, shipped_names  # noqa: F401 - re-exported


def shipped_scenarios() -> list[tuple[str, str]]:
    """(name, one-line description) of every shipped scenario."""
    out = []
    for name in shipped_names():
        raw = read_toml(configs_dir() / f"{name}.toml")
        out.append((name, str(raw.get("description", "")).strip().splitlines()[0] if raw.get("description") else ""))
    return out


def _kind(table: dict) -> tuple[str, Any] | None:
    """``("dist", kind)`` or ``("law", kind)`` of a distribution or law table, else None."""
    for tag in ("dist", "law"):
        if tag in table:
            return tag, table[tag]
    return None


def deep_merge(base: dict, over: dict) -> dict:
    """``over`` merged into a copy of ``base``, table by table (lists and values replace).
    A ``dist`` or ``law`` table of another kind than the one it overrides replaces it
    whole (a lognormal's ``median`` means nothing to a uniform); of the same kind, or
    without a kind, it merges key by key like any table."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        old = out.get(key)
        if isinstance(value, dict) and isinstance(old, dict) and _kind(value) in (None, _kind(old)):
            out[key] = deep_merge(old, value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def load_raw(ref: str, relative_to: Path | None = None, chain: tuple[Path, ...] = ()) -> tuple[dict, Path]:
    """The merged raw dict of a scenario and its ``extends`` ancestors."""
    path = resolve_ref(ref, relative_to).resolve()
    if path in chain:
        cycle = " -> ".join(p.name for p in (*chain, path))
        raise InputError(Problem("extends", ref, f"cycle: {cycle}; a scenario cannot extend itself"), str(path))
    raw = read_toml(path)
    name = raw.get("name", path.stem)
    parent = raw.pop("extends", None)
    if parent is not None:
        if not isinstance(parent, str):
            raise InputError(Problem("extends", parent, "allowed: a shipped scenario name or a path"), str(path))
        try:
            base, _ = load_raw(parent, path.parent, (*chain, path))
        except InputError as exc:  # name the extends key of this file, not a "scenario"
            if exc.source:
                raise
            raise InputError([Problem("extends", p.value, p.allowed, p.hint) for p in exc.problems], str(path)) from None
        base.pop("description", None)  # a description describes one file, not its children
        if isinstance(raw.get("gpu"), dict) and "peak_tflops" in raw["gpu"]:
            base = without(base, ["gpu.peak_tflops"])
        raw = deep_merge(drop_replaced(drop_inherited(base, raw), raw), raw)
    raw["name"] = name
    return raw, path


#: A bare word taken as a string when it is not a TOML literal (``replace_unit=host``,
#: ``workload.model=llama-3-8b``): starts with a letter, then letters, digits, spaces and
#: ``_ - . + / :``. Anything else that does not parse is a malformed literal.
BARE_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.+/: -]*")


def parse_override(item: str) -> tuple[str, Any]:
    """``KEY=VALUE`` → (dotted key, TOML value); a bare word is a string."""
    key, sep, text = item.partition("=")
    key, text = key.strip(), text.strip()
    if not sep or not key:
        raise InputError(Problem("--set", item, "allowed: KEY=VALUE with a dotted KEY, e.g. fab.defect_density_per_cm2=0.2"))
    if "\n" in text or "\r" in text:
        raise InputError(Problem(f"--set {key}", text, "allowed: one TOML literal on one line"))
    if key.count(".") >= MAX_TOML_DEPTH:
        raise InputError(Problem(f"--set {shortened(key)}", shortened(text), f"the key is nested too deeply ({key.count('.') + 1} parts); "
                                 f"allowed: at most {MAX_TOML_DEPTH} dotted parts, as deep as a scenario file may nest"))
    try:
        value = parse_toml(f"v = {text}", f"--set {key}", text)["v"]
    except InputError as exc:
        if BARE_WORD.fullmatch(text) and "nested too deeply" not in str(exc):
            return key, text  # a bare word: take it as a string (replace_unit=host)
        problem = exc.problems[0]
        if "integer literal is too long" in problem.allowed:  # a message of its own: no quoting advice
            raise
        where = re.sub(r"column (\d+)", lambda m: f"column {max(1, int(m.group(1)) - 4)}", problem.allowed)  # "v = " was ours
        quoted = text.replace("\\", "\\\\").replace('"', '\\"')
        raise InputError(Problem(problem.key, text, f"{where}; VALUE must be a TOML literal: a number, \"inf\", "
                                 f"a table {{...}}, or a quoted string such as --set '{key}=\"{quoted}\"'")) from None
    return key, value


def _is_model(parts: list[str]) -> bool:
    """Whether ``parts`` is the key of a model card: ``workload.model`` or a request
    class's ``workload.classes.NAME.model``."""
    return parts == ["workload", "model"] or len(parts) == 4 and parts[:2] == ["workload", "classes"] and parts[3] == "model"


def _card_to_edit(raw: dict, raw_model, key: str) -> dict:
    """The table that ``--set KEY.FIELD=...`` of a model card (``key``) changes one number
    of: the shipped card ``raw_model`` names, or, for a request class whose model is
    unset, the card the class serves (``workload.model``'s, itself perhaps edited)."""
    if raw_model is None and key != "workload.model":
        workload_model = raw.get("workload", {}).get("model")
        if isinstance(workload_model, dict):
            return copy.deepcopy(workload_model)
        return _shipped_card(workload_model, key)
    return _shipped_card(raw_model, key)


def _shipped_card(raw_model, key: str) -> dict:
    """The table of the model card that ``raw_model`` names (the default card when
    unset), so that ``--set workload.model.KEY=...`` changes one number of a shipped card."""
    name = DEFAULT_MODEL if raw_model is None else raw_model
    problems: list[Problem] = []
    if load_model_card(name, key, problems) is None:
        raise InputError(problems)
    return card_table(name)


def toml_literal(value) -> str:
    """``value`` (a number, bool, string, list or table; numpy scalars and 0-d arrays as their
    Python values) as a TOML literal on one line:
    ``0.1``, ``inf``, ``"lognormal"``, ``{dist = "lognormal", median = 0.1, sigma = 0.3}``."""
    import json
    import math

    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):  # np.float64(...) is its repr
        value = value.item()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if isinstance(value, float) and not math.isfinite(value):
            return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
        return repr(value) if isinstance(value, float) else str(int(value))
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, Mapping):
        keys = (k if re.fullmatch(r"[A-Za-z0-9_-]+", str(k)) else json.dumps(str(k)) for k in value)
        return "{" + ", ".join(f"{k} = {toml_literal(v)}" for k, v in zip(keys, value.values())) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_literal(v) for v in value) + "]"
    raise InputError(Problem("overrides", repr(value), "allowed: a number, bool, string, list or table as each value"))


def override_texts(overrides) -> list[str]:
    """``--set`` overrides as ``KEY=VALUE`` strings, from the strings themselves (one, or
    an iterable of them) or from a mapping ``{KEY: value}`` (``{"fab.defect_density_per_cm2":
    0.2, "B:econ.gpu_markup": 1.5}``; each value written as its :func:`toml_literal`)."""
    if isinstance(overrides, str):
        return [overrides]
    if isinstance(overrides, Mapping):
        return [f"{key}={toml_literal(value)}" for key, value in overrides.items()]
    return list(overrides or ())


def apply_overrides(raw: dict, overrides: Iterable[str]) -> dict:
    out = copy.deepcopy(raw)
    problems = []
    for item in overrides:
        key, value = parse_override(item)
        out = without(out, replaced_keys({key}))  # --set gpu.tdp_w=... replaces the link rule's TDP
        parts = key.split(".")
        node = out
        for i, part in enumerate(parts[:-1]):
            if _is_model(parts[: i + 1]) and not isinstance(node.get(part), dict):
                node[part] = _card_to_edit(out, node.get(part), ".".join(parts[: i + 1]))
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                problems.append(Problem(f"--set {key}", value, f"{'.'.join(parts[: i + 1])} is a value, not a table"))
                break
            node = child
        else:
            node[parts[-1]] = value
            if _is_model(parts[:-1]) and parts[-1] != "name":
                _label_changed_card(node, parts[-1], value)
    if problems:
        raise InputError(problems)
    return out


def _label_changed_card(card: dict, field: str, value) -> None:
    """Name a card changed by ``--set workload.model.FIELD=VALUE`` after its changes, so
    tables, JSON and figures do not show a shipped card's name for a different model:
    ``llama-3-70b`` becomes ``llama-3-70b (layers=40)``."""
    name = str(card.get("name", "custom"))
    base, _, changes = name.partition(" (")
    listed = [c for c in changes.rstrip(")").split(", ") if c and not c.startswith(f"{field}=")]
    card["name"] = f"{base} ({', '.join([*listed, f'{field}={value}'])})"


def split_target(item: str) -> tuple[str | None, str]:
    """``NAME:KEY=VALUE`` → (``NAME``, ``KEY=VALUE``); a plain ``KEY=VALUE`` → (None, item).
    Only the part before ``=`` is searched for ``:`` (a value may hold one)."""
    key, sep, value = item.partition("=")
    who, colon, bare = key.rpartition(":")
    if not colon:
        return None, item
    return who.strip(), f"{bare.strip()}{sep}{value}"


#: Position letters of ``--set A:KEY=VALUE``: A is the first scenario, B the second, ...
POSITIONS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class Override:
    """One ``--set`` as given, the ``KEY=VALUE`` it applies and the scenarios it reaches."""

    item: str
    assignment: str
    target: str | None
    scenarios: tuple[str, ...]

    def to_dict(self) -> dict:
        return {"set": self.item, "scenarios": list(self.scenarios)}


def plan_overrides(names: list[str], overrides: Iterable[str], refs: list[str] | None = None) -> list[Override]:
    """Which scenarios each override reaches: a plain ``KEY=VALUE`` every one of ``names``;
    ``NAME:KEY=VALUE`` the scenario of that name (or given by that reference), ``A:``/``B:``/...
    the first/second/... one. An unknown target is InputError naming the ``--set``."""
    refs = refs or names
    plans, problems = [], []
    for item in overrides:
        who, assignment = split_target(item)
        if who is None:
            plans.append(Override(item, item, None, tuple(names)))
            continue
        hits = [n for n, r in zip(names, refs) if who in (n, r)]
        if not hits and len(who) == 1 and who in POSITIONS[: len(names)]:
            hits = [names[POSITIONS.index(who)]]
        if not hits:
            allowed = [*dict.fromkeys(names), *POSITIONS[: len(names)]]
            problems.append(Problem(f"--set {item}", who, "allowed targets: " + ", ".join(allowed) + " (a scenario name, or its position)",
                                    did_you_mean(who, allowed)))
            continue
        plans.append(Override(item, assignment, who, tuple(dict.fromkeys(hits))))
    if problems:
        raise InputError(problems)
    return plans


def _blame(exc: InputError, applied: list[Override]) -> list[Problem]:
    """The problems of ``exc``, each caused by an override named by its ``--set``."""
    out = []
    for p in exc.problems:
        cause = None
        for o in applied:
            key = o.assignment.partition("=")[0].strip()
            if p.key == key or p.key.startswith(key + ".") or p.key == f"--set {key}":
                cause = o
        if cause is None:
            out.append(p)
        elif p.key.startswith("--set "):
            out.append(Problem(f"--set {shortened(cause.item)}", p.value, p.allowed, p.hint))
        else:
            out.append(Problem(p.key, p.value, p.allowed, "; ".join(h for h in (f"from --set {cause.item}", p.hint) if h)))
    return out


def _source(path: Path | None, name: str, problems: list[Problem], original: list[Problem]) -> str:
    """Where the problems are: the user's file, or the scenario's name when every problem
    came from an override or the file is a shipped one (never a path inside the package)."""
    if path is None:
        return name
    if all(p is not q for p, q in zip(problems, original)) or path.parent == configs_dir().resolve():
        return f"scenario {name}"
    return str(path)


def _build(raw: dict, path: Path | None, applied: list[Override], name: str):
    from .schema import build

    try:
        return build(apply_overrides(raw, [o.assignment for o in applied]), str(path) if path else name, load_parent)
    except InputError as exc:
        problems = _blame(exc, applied)
        raise InputError(problems, _source(path, name, problems, exc.problems)) from None


def load_scenario(ref: str, overrides: Iterable[str] = ()):
    """Load, merge, override and validate a scenario (raises InputError). An override may
    be aimed at it (``NAME:KEY=VALUE`` or ``A:KEY=VALUE``)."""
    raw, path = load_raw(ref)
    plans = plan_overrides([raw["name"]], overrides, [ref])
    return _build(raw, path, plans, raw["name"])


def scenario_from_dict(raw: dict, source: str = "<dict>"):
    """Validate a scenario given as a nested dict (notebooks, tests)."""
    from .schema import build

    raw = copy.deepcopy(raw)
    parent = raw.pop("extends", None)
    if parent is not None:
        base, _ = load_raw(parent)
        base.pop("description", None)
        raw = deep_merge(drop_replaced(drop_inherited(base, raw), raw), raw)
    return build(raw, source, load_parent)


def load_targeted(refs, overrides: Iterable[str] = ()) -> tuple[list, list[Override]]:
    """(scenarios, overrides with the scenarios each reached) of several references (names,
    paths or Scenario objects). A plain override applies to every scenario, a targeted one
    (``NAME:`` or ``A:``/``B:``...) to one; every problem of every scenario is reported at
    once. A scenario listed twice gets a distinct name (``h100#2``) so both stay in a summary."""
    import dataclasses

    from .schema import Scenario

    overrides = list(overrides)
    raws, problems = [], []
    for ref in refs:
        if isinstance(ref, Scenario):
            raws.append((ref.to_dict(), None, ref.name))
            continue
        try:
            raw, path = load_raw(ref)
            raws.append((raw, path, raw["name"]))
        except InputError as exc:
            problems += [Problem(f"{exc.source or ref}: {p.key}", p.value, p.allowed, p.hint) for p in exc.problems]
    if problems:
        raise InputError(problems)
    names = [name for _, _, name in raws]
    plans = plan_overrides(names, overrides, [getattr(r, "name", r) for r in refs])
    out = []
    for i, (ref, (raw, path, name)) in enumerate(zip(refs, raws)):
        applied = [o for o in plans if name in o.scenarios and (o.target is None or _aims_at(o.target, i, ref, name, names))]
        try:
            out.append(ref if isinstance(ref, Scenario) and not applied else _build(raw, path, applied, name))
        except InputError as exc:
            problems += [Problem(f"{exc.source or name}: {p.key}", p.value, p.allowed, p.hint) for p in exc.problems]
    if problems:
        raise InputError(problems)
    taken = {s.name for s in out}
    seen: dict[str, int] = {}
    for i, s in enumerate(out):
        seen[s.name] = seen.get(s.name, 0) + 1
        if seen[s.name] > 1:
            while f"{s.name}#{seen[s.name]}" in taken:
                seen[s.name] += 1
            taken.add(f"{s.name}#{seen[s.name]}")
            out[i] = dataclasses.replace(s, name=f"{s.name}#{seen[s.name]}")
    return out, plans


def _aims_at(target: str, index: int, ref, name: str, names: list[str]) -> bool:
    """Whether a targeted override reaches the scenario at ``index`` (a name or reference
    reaches every scenario it names; a position letter only its own)."""
    if target in (name, getattr(ref, "name", ref)):
        return True
    return target not in names and len(target) == 1 and POSITIONS.find(target) == index


#: Parents of derived designs being loaded (a derived parent is derived in turn).
_PARENTS: list[str] = []


def load_parent(ref: str):
    """The parent scenario of a ``[gpu.derive]`` design; a cycle is InputError naming
    ``gpu.derive.parent``."""
    if ref in _PARENTS:
        raise InputError(Problem("gpu.derive.parent", ref, "cycle: " + " -> ".join([*_PARENTS, ref]) + "; a design cannot derive from itself"))
    _PARENTS.append(ref)
    try:
        return load_scenario(ref)
    finally:
        _PARENTS.pop()


def load_scenarios(refs, overrides: Iterable[str] = ()) -> list:
    """The scenarios of :func:`load_targeted` (without the override plan)."""
    return load_targeted(refs, overrides)[0]


# ----------------------------------------------------------------------------- studies


def load_study(name: str) -> dict:
    """A study (shipped name or file): see :func:`mcengine.scenario.study.load_study`."""
    from .study import load_study as load

    return load(name)
