"""Loading a generator script of ``docs/`` (not a package) as a module, for the drift tests."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def docs_script(name: str):
    """The module ``docs/<name>.py``, executed."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
