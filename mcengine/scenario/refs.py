"""Scenario references: a path to a ``.toml`` file, or the name of a shipped scenario."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError, Problem
from .fields import did_you_mean
from .files import configs_dir, study_names


def shipped_names() -> list[str]:
    return sorted(p.stem for p in configs_dir().glob("*.toml"))


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
    names, studies = shipped_names(), study_names()
    hint = did_you_mean(ref, names + studies)
    raise InputError(
        Problem("scenario", ref, "not a file and not a shipped scenario; shipped: " + ", ".join(names) + "; shipped studies (for `run`): " + ", ".join(studies), hint)
    )
