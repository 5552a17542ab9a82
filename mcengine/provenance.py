"""What produced a result: the ``"provenance"`` object of every JSON document and
``summary.json``, and the schema metadata of every ``trials.parquet`` part.

It records the mcengine version, the command line, the seed, the sample size, the
overrides (with the scenarios each reached), a sha256 fingerprint of each resolved
scenario (of ``Scenario.to_dict()`` as canonical JSON), the roofline calibration each
scenario runs with (:func:`calibration`) and the numpy, numba and Python versions. It never
enters a run's fingerprint: the numbers do not depend on it.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import platform
import sys
from importlib import metadata
from typing import Callable, Iterable, Iterator, Sequence

from . import __version__

#: Key of the provenance JSON in a Parquet part's schema metadata.
PARQUET_KEY = b"mcengine.provenance"

_command_line: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("mcengine_command_line", default=None)
_command_omits: contextvars.ContextVar[dict | None] = contextvars.ContextVar("mcengine_command_omits", default=None)


def set_command_line(argv: Sequence[str]) -> contextvars.Token:
    """Record the command line being run (the CLI calls this with the line as typed)."""
    return _command_line.set(list(argv))


def reset_command_line(token: contextvars.Token) -> None:
    _command_line.reset(token)


@contextlib.contextmanager
def command_of_call(command: Callable[[], tuple[Sequence[str], dict]]) -> Iterator[None]:
    """Within it, the command line being run is ``command()``'s first item (the command of an
    API call's own arguments, :mod:`mcengine.api`) and its second what that command leaves out
    (:func:`command_omits`), unless a command line is recorded already: the CLI's, or that of
    the API call this one runs inside."""
    if _command_line.get() is not None:
        yield
        return
    argv, omitted = command()
    token, omits_token = set_command_line(argv), _command_omits.set(dict(omitted))
    try:
        yield
    finally:
        _command_omits.reset(omits_token)
        reset_command_line(token)


def command_line() -> list[str]:
    """The command line recorded (the CLI's, or an API call's: :func:`command_of_call`);
    where none is, a copy of ``sys.argv``."""
    argv = _command_line.get()
    return list(argv) if argv is not None else list(sys.argv)


def command_omits() -> dict:
    """What the recorded command of an API call from Python cannot carry and that moves
    numbers (``{argument: value}``, docs/interface.md: ``"command_omits"``); empty under the CLI."""
    return dict(_command_omits.get() or {})


def canonical_json(doc) -> str:
    """JSON with sorted keys and no spaces: the same document always gives the same bytes."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def sha256_of(doc) -> str:
    return hashlib.sha256(canonical_json(doc).encode("utf-8")).hexdigest()


def scenario_sha256(scenario) -> str:
    """Fingerprint of a resolved scenario: sha256 of its ``to_dict()`` as canonical JSON."""
    return sha256_of(scenario.to_dict() if hasattr(scenario, "to_dict") else scenario)


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def versions() -> dict:
    return {"mcengine": __version__, "python": platform.python_version(), "numpy": _version("numpy"), "numba": _version("numba")}


def calibration(scenario) -> dict:
    """The roofline calibration a scenario runs with (docs/sources.md#roof-calibration): the
    precision whose efficiency table is in use, the compute, memory and KV-read efficiencies
    (as TOML values) with where they come from (``"table"``: ``workload.efficiency.PRECISION``;
    ``"set"``: the keys given; ``"memory"``: the KV cache read at the memory efficiency in
    use, as ``WorkloadSection.efficiency_of`` states), and the all-reduce implementation."""
    w = scenario.workload
    kv = w.efficiency_of("kv")
    return {
        "precision": w.precision_in_use(),
        **{f"{kind}_efficiency": w.efficiency_of(kind).to_toml() for kind in ("compute", "memory")},
        "kv_efficiency": (kv or w.efficiency_of("memory")).to_toml(),
        "efficiency_from": {**{kind: "table" if isinstance(getattr(w, f"{kind}_efficiency"), str) else "set" for kind in ("compute", "memory")},
                            "kv": "memory" if kv is None else "table" if isinstance(w.kv_efficiency, str) else "set"},
        "allreduce_impl": w.allreduce_impl,
    }


def provenance(scenarios: Iterable = (), seed: int | None = None, size_key: str | None = None, size: int | None = None,
               overrides: Iterable = ()) -> dict:
    """The provenance object. ``overrides`` holds ``--set`` texts or objects with
    ``to_dict()`` (``{"set", "scenarios"}``: the override and the scenarios it reached)."""
    doc = {
        "mcengine_version": __version__,
        "command_line": command_line(),
        "seed": seed,
        "sample_size": {size_key: size} if size_key else None,
        "overrides": [o.to_dict() if hasattr(o, "to_dict") else {"set": str(o)} for o in overrides],
        "scenarios_sha256": {s.name: scenario_sha256(s) for s in scenarios},
        "calibration": {s.name: calibration(s) for s in scenarios},
        "versions": versions(),
    }
    if omitted := command_omits():
        doc["command_omits"] = omitted
    return doc


def parquet_metadata(prov: dict | None) -> dict[bytes, bytes]:
    return {PARQUET_KEY: canonical_json(prov).encode("utf-8")} if prov else {}
