"""Loading a generator script of ``docs/`` (not a package) as a module, for the drift tests."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def docs_script(name: str):
    """The module ``docs/<name>.py``, executed."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: The statistics compared between a committed run's summary and a fresh one's (provenance
#: and elapsed time are not numbers of the model).
NUMBERS = ("scenarios", "paired_all", "slo_infeasible_share", "trials", "seed")


def drifted(committed: dict, doc: dict) -> list[str]:
    """The keys of :data:`NUMBERS` in which a fresh ``run`` summary document ``doc``, as
    summary.json holds it, differs from the ``committed`` summary."""
    from mcengine.io import dumps

    fresh = json.loads(dumps(doc))
    return [key for key in NUMBERS if fresh.get(key) != committed.get(key)]
