"""Where shipped configs live and how a TOML file is read (the scenario system's file access).

Shared by scenario loading (:mod:`.load`) and model cards (:mod:`.cards`).
"""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

from ..errors import InputError, Problem


def configs_dir() -> Path:
    """Shipped scenarios: package data when installed, ``configs/`` in a checkout."""
    packaged = Path(str(resources.files("mcengine"))) / "configs"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "configs"


def read_toml(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(Problem("scenario", str(path), "no such file")) from None
    except OSError as exc:
        raise InputError(Problem("scenario", str(path), f"cannot be read: {exc.strerror}")) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(Problem(str(path), "(file)", f"malformed TOML: {exc}"), str(path)) from None
