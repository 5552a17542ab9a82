"""Loading scenarios: TOML files, shipped names, ``extends`` chains and ``--set`` overrides.

* A reference is a path to a ``.toml`` file or the name of a shipped scenario
  (``configs/NAME.toml``, installed as package data ``mcengine/configs``).
* ``extends = "PARENT"`` starts from another scenario (a shipped name, or a path relative
  to the extending file) and deep-merges the child over it, table by table. A cycle is an
  error.
* ``--set KEY=VALUE`` sets a dotted key after merging; VALUE is a TOML literal (a bare word
  that is not valid TOML is taken as a string); a table value replaces the whole table.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any, Iterable

from ..errors import InputError, Problem
from .fields import did_you_mean
from .cards import DEFAULT_MODEL, card_table, load_model_card
from .files import configs_dir, parse_toml, read_toml


def shipped_names() -> list[str]:
    return sorted(p.stem for p in configs_dir().glob("*.toml"))


def shipped_scenarios() -> list[tuple[str, str]]:
    """(name, one-line description) of every shipped scenario."""
    out = []
    for name in shipped_names():
        raw = read_toml(configs_dir() / f"{name}.toml")
        out.append((name, str(raw.get("description", "")).strip().splitlines()[0] if raw.get("description") else ""))
    return out


def resolve_ref(ref: str, relative_to: Path | None = None) -> Path:
    """Path of a scenario reference (a path, or a shipped name)."""
    candidates = [Path(ref)]
    if relative_to is not None:
        candidates.insert(0, relative_to / ref)
    for path in candidates:
        if path.is_file():
            return path
    for path in candidates:
        if path.is_dir():
            raise InputError(Problem("scenario", ref, "is a directory; allowed: a scenario .toml file or a shipped name"))
    looks_like_path = ref.endswith(".toml") or "/" in ref or "\\" in ref
    shipped = configs_dir() / f"{ref}.toml"
    if not looks_like_path and shipped.is_file():
        return shipped
    if looks_like_path:
        raise InputError(Problem("scenario", ref, "no such file"))
    names = shipped_names()
    raise InputError(
        Problem("scenario", ref, "not a file and not a shipped scenario; shipped: " + ", ".join(names), did_you_mean(ref, names))
    )


def deep_merge(base: dict, over: dict) -> dict:
    """``over`` merged into a copy of ``base``, table by table (lists and values replace)."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
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
        raw = deep_merge(base, raw)
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
    try:
        value = parse_toml(f"v = {text}", f"--set {key}", text)["v"]
    except InputError as exc:
        if BARE_WORD.fullmatch(text) and "nested too deeply" not in str(exc):
            return key, text  # a bare word: take it as a string (replace_unit=host)
        problem = exc.problems[0]
        where = re.sub(r"column (\d+)", lambda m: f"column {max(1, int(m.group(1)) - 4)}", problem.allowed)  # "v = " was ours
        quoted = text.replace("\\", "\\\\").replace('"', '\\"')
        raise InputError(Problem(problem.key, text, f"{where}; VALUE must be a TOML literal: a number, \"inf\", "
                                 f"a table {{...}}, or a quoted string such as --set '{key}=\"{quoted}\"'")) from None
    return key, value


def _shipped_card(raw_model, key: str) -> dict:
    """The table of the model card that ``workload.model`` names (the default card when
    unset), so that ``--set workload.model.KEY=...`` changes one number of a shipped card."""
    name = DEFAULT_MODEL if raw_model is None else raw_model
    problems: list[Problem] = []
    if load_model_card(name, key, problems) is None:
        raise InputError(problems)
    return card_table(name)


def apply_overrides(raw: dict, overrides: Iterable[str]) -> dict:
    out = copy.deepcopy(raw)
    problems = []
    for item in overrides:
        key, value = parse_override(item)
        parts = key.split(".")
        node = out
        for i, part in enumerate(parts[:-1]):
            if parts[: i + 1] == ["workload", "model"] and not isinstance(node.get(part), dict):
                node[part] = _shipped_card(node.get(part), "workload.model")
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                problems.append(Problem(f"--set {key}", value, f"{'.'.join(parts[: i + 1])} is a value, not a table"))
                break
            node = child
        else:
            node[parts[-1]] = value
    if problems:
        raise InputError(problems)
    return out


def load_scenario(ref: str, overrides: Iterable[str] = ()):
    """Load, merge, override and validate a scenario (raises InputError)."""
    from .schema import build

    raw, path = load_raw(ref)
    raw = apply_overrides(raw, overrides)
    return build(raw, str(path))


def scenario_from_dict(raw: dict, source: str = "<dict>"):
    """Validate a scenario given as a nested dict (notebooks, tests)."""
    from .schema import build

    raw = copy.deepcopy(raw)
    parent = raw.pop("extends", None)
    if parent is not None:
        base, _ = load_raw(parent)
        base.pop("description", None)
        raw = deep_merge(base, raw)
    return build(raw, source)


def load_scenarios(refs, overrides: Iterable[str] = ()) -> list:
    """Load and validate several scenarios (names, paths or Scenario objects), applying
    the same overrides to each; every problem of every scenario is reported at once. A
    scenario listed twice gets a distinct name (``h100#2``) so both stay in a summary."""
    import dataclasses

    from .schema import Scenario

    overrides = list(overrides)
    out, problems = [], []
    for ref in refs:
        try:
            if isinstance(ref, Scenario):
                out.append(scenario_from_dict(apply_overrides(ref.to_dict(), overrides), ref.name) if overrides else ref)
            else:
                out.append(load_scenario(ref, overrides))
        except InputError as exc:
            problems += [Problem(f"{exc.source or getattr(ref, 'name', ref)}: {p.key}", p.value, p.allowed, p.hint) for p in exc.problems]
    if problems:
        raise InputError(problems)
    seen: dict[str, int] = {}
    for i, s in enumerate(out):
        seen[s.name] = seen.get(s.name, 0) + 1
        if seen[s.name] > 1:
            out[i] = dataclasses.replace(s, name=f"{s.name}#{seen[s.name]}")
    return out


# ----------------------------------------------------------------------------- studies


def study_names() -> list[str]:
    return sorted(p.stem for p in (configs_dir() / "studies").glob("*.toml"))


def load_study(name: str) -> dict:
    """A shipped study: ``{"name", "description", "scenarios": [refs], "trials"}``."""
    if name not in study_names():
        raise InputError(Problem("study", name, "allowed: " + ", ".join(study_names()), did_you_mean(name, study_names())))
    raw = read_toml(configs_dir() / "studies" / f"{name}.toml")
    raw.setdefault("name", name)
    return raw
