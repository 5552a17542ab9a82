"""Study files: several scenarios run together, with the study's sample size and seed.

A study is a TOML file (or a shipped one under ``configs/studies``, run by name) with
the keys of :data:`STUDY_KEYS`::

    name = "case-study"
    description = "H100 vs Lite-H100"
    scenarios = ["h100", "lite-h100"]   # shipped names, or paths relative to this file
    trials = 20000                       # optional: trials per scenario
    seed = 7                             # optional: master seed (else the first scenario's run.seed)
    outputs = ["cost_per_mtok_usd"]      # optional: the metrics the study's table reports
    set = ["workload.classes.chat.share=0.7"]  # optional: KEY=VALUE overrides of every scenario
                                         # (applied like --set, before the command line's)

Every problem of a study file is reported at once (unknown keys with a suggestion, bad
scenario references, bad sample size or seed).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError, Problem
from ..options import MAX_SAMPLE
from .fields import did_you_mean, unknown_keys
from .files import configs_dir, read_toml, studies_dir, study_names
from .refs import resolve_ref

STUDY_KEYS = ("name", "description", "scenarios", "trials", "seed", "outputs", "set")


def shipped_studies() -> list[tuple[str, str]]:
    """(name, one-line description) of every shipped study."""
    out = []
    for name in study_names():
        raw = read_toml(studies_dir() / f"{name}.toml", "study")
        text = str(raw.get("description", "")).strip()
        out.append((name, text.splitlines()[0] if text else ""))
    return out


def study_path(ref: str) -> Path | None:
    """The study file ``ref`` names (a shipped study's name, or a TOML file with a top-level
    ``scenarios`` list), or None when ``ref`` is not a study. A shipped scenario's name
    stays a scenario."""
    if not isinstance(ref, str):
        return None
    path = Path(ref)
    if path.is_file():
        try:
            raw = read_toml(path, "study")
        except InputError:
            return None  # not readable as a study: the scenario loader reports it
        return path if "scenarios" in raw else None
    looks_like_path = ref.endswith(".toml") or "/" in ref or "\\" in ref
    if not looks_like_path and not (configs_dir() / f"{ref}.toml").is_file() and ref in study_names():
        return studies_dir() / f"{ref}.toml"
    return None


def load_study(ref: str | Path) -> dict:
    """A validated study: ``{"name", "description", "scenarios": [paths or shipped names],
    "trials", "seed", "outputs", "set", "source"}`` (``trials``/``seed``/``outputs`` None
    when unset; ``set`` the study's overrides, empty when unset)."""
    from .schema import name_problems

    path = Path(ref) if isinstance(ref, Path) else study_path(ref)
    if path is None:
        names = study_names()
        raise InputError(Problem("study", ref, "not a study file and not a shipped study; shipped: " + ", ".join(names), did_you_mean(str(ref), names)))
    raw = read_toml(path, "study")
    problems: list[Problem] = []
    unknown_keys(raw, list(STUDY_KEYS), "", problems)
    name = raw.get("name", path.stem)
    problems += name_problems(name)
    description = raw.get("description", "")
    if not isinstance(description, str):
        problems.append(Problem("description", description, "allowed: a string"))
    refs = raw.get("scenarios")
    scenarios: list[str] = []
    if not isinstance(refs, list) or not refs or not all(isinstance(r, str) for r in refs):
        problems.append(Problem("scenarios", refs, "allowed: a non-empty list of scenario references (shipped names or paths relative to the study file)"))
    else:
        for i, r in enumerate(refs):
            try:
                found = resolve_ref(r, path.parent)
            except InputError as exc:
                problems += [Problem(f"scenarios[{i}]", r, p.allowed, p.hint) for p in exc.problems]
                continue
            scenarios.append(r if found.parent == configs_dir() and not (path.parent / r).is_file() else str(found))
    trials = raw.get("trials")
    if trials is not None and (isinstance(trials, bool) or not isinstance(trials, int) or not 1 <= trials <= MAX_SAMPLE):
        problems.append(Problem("trials", trials, f"allowed: a positive integer up to {MAX_SAMPLE:,}"))
    seed = raw.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64):
        problems.append(Problem("seed", seed, "allowed: an integer in [0, 2**64 - 1]"))
    outputs = raw.get("outputs")
    if outputs is not None and (not isinstance(outputs, list) or not outputs or not all(isinstance(o, str) for o in outputs)):
        problems.append(Problem("outputs", outputs, "allowed: a non-empty list of metric names (e.g. [\"cost_per_mtok_usd\", \"availability\"])"))
    overrides = raw.get("set", [])
    if not isinstance(overrides, list) or not all(isinstance(o, str) and "=" in o for o in overrides):
        problems.append(Problem("set", overrides, 'allowed: a list of "KEY=VALUE" overrides, as given to --set'))
    if problems:
        raise InputError(problems, str(path) if path.parent != studies_dir() else f"shipped study {path.stem}")
    return {"name": name, "description": description, "scenarios": scenarios, "trials": trials, "seed": seed,
            "outputs": outputs, "set": tuple(overrides), "source": str(path)}
