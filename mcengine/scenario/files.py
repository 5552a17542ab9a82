"""Where shipped configs live and how a TOML file is read (the scenario system's file access).

Shared by scenario loading (:mod:`.load`) and model cards (:mod:`.cards`).
"""

from __future__ import annotations

import sys
import tomllib
from importlib import resources
from pathlib import Path

from ..errors import InputError, Problem
from ..io import note_input


def configs_dir() -> Path:
    """Shipped scenarios: package data when installed, ``configs/`` in a checkout."""
    packaged = Path(str(resources.files("mcengine"))) / "configs"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "configs"


def studies_dir() -> Path:
    """Shipped studies (``mcengine run NAME``)."""
    return configs_dir() / "studies"


def study_names() -> list[str]:
    return sorted(p.stem for p in studies_dir().glob("*.toml"))


#: Deepest nesting of tables and arrays a scenario file may have (the schema needs 5:
#: ``reliability.repair_hours.parts[i].median.dist``); deeper input would only reach
#: Python's recursion limit in the parser or in a copy.
MAX_TOML_DEPTH = 32


def _depth(value) -> int:
    """Nesting depth of tables and arrays (iterative: a deep value must not recurse)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_TOML_DEPTH:
            break
        if isinstance(node, dict):
            stack += [(v, depth + 1) for v in node.values()]
        elif isinstance(node, list):
            stack += [(v, depth + 1) for v in node]
    return deepest


def max_int_digits() -> int:
    """The longest integer literal Python converts (``sys.get_int_max_str_digits``; 4,300 by default)."""
    return sys.get_int_max_str_digits() or 4300


def shortened(value: str, keep: int = 40) -> str:
    """A long value for a message: its ends and its length."""
    return value if len(value) <= 2 * keep else f"{value[:keep]}...{value[-keep:]} ({len(value):,} characters)"


def parse_toml(text: str, key: str, what: str) -> dict:
    """``tomllib.loads`` with every failure an InputError naming ``key`` (a file or ``--set KEY``)."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(Problem(key, what, f"malformed TOML: {exc}")) from None
    except ValueError:  # an integer literal beyond Python's digit limit
        raise InputError(Problem(key, shortened(what), f"an integer literal is too long: more than {max_int_digits():,} digits; "
                                 f"allowed: integers of at most {max_int_digits():,} digits (every key's range is far narrower)")) from None
    except RecursionError:
        raise InputError(Problem(key, what, f"malformed TOML: nested too deeply (allowed: at most {MAX_TOML_DEPTH} levels of tables and arrays)")) from None
    if _depth(raw) > MAX_TOML_DEPTH:
        raise InputError(Problem(key, what, f"nested too deeply (allowed: at most {MAX_TOML_DEPTH} levels of tables and arrays)"))
    return raw


def read_toml(path: Path, key: str = "scenario") -> dict:
    """The TOML file at ``path``; any failure is an InputError naming ``key`` and the file.
    The file is an input of the command: no ``--out`` folder ever replaces or deletes it."""
    try:
        data = path.read_bytes()
        note_input(path)
    except FileNotFoundError:
        raise InputError(Problem(key, str(path), "no such file")) from None
    except IsADirectoryError:
        raise InputError(Problem(key, str(path), "is a directory; allowed: a scenario .toml file or a shipped name")) from None
    except OSError as exc:
        raise InputError(Problem(key, str(path), f"cannot be read: {exc.strerror}")) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            Problem(str(path), "(file)", f"not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start}; allowed: a UTF-8 TOML file"),
            str(path),
        ) from None
    try:
        return parse_toml(text, str(path), "(file)")
    except InputError as exc:
        raise InputError(exc.problems, str(path)) from None
