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


def refused(main, argv, capsys) -> str:
    """What a script's ``main(argv)`` writes to stderr as it exits 2 on an option outside
    its grid; fails unless it exits 2 naming the option (``argv[0]``) and what is allowed."""
    import pytest

    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert argv[0] in err and "allowed" in err
    return err
