"""Every scenario key with its meaning, unit, default and allowed range, from the field
metadata of the schema (`mcengine keys`). Component classes are listed once, as
``reliability.components.NAME.KEY``, request classes as ``workload.classes.NAME.KEY``;
model-card keys as ``workload.model.KEY``."""

from __future__ import annotations

import textwrap
from dataclasses import MISSING, fields

from ..errors import InputError, Problem
from .cards import ModelCard
from .dists import Dist, Law
from .fields import _interval, did_you_mean, spec_of
from .sections.gpu import DeriveSection
from .sections.reliability import Component
from .sections.training import TrainingSection
from .sections.workload import EfficiencyTable, LoadSection, PrefixCacheSection, RequestClass, SpeculativeSection

#: Sub-tables whose keys are listed under a placeholder name.
NESTED = {"components": ("components.NAME", Component), "model": ("model", ModelCard), "derive": ("derive", DeriveSection),
          "classes": ("classes.NAME", RequestClass), "efficiency": ("efficiency.PRECISION", EfficiencyTable),
          "load": ("load", LoadSection), "speculative": ("speculative", SpeculativeSection),
          "prefix_cache": ("prefix_cache", PrefixCacheSection), "training": ("training", TrainingSection)}


def _default(f) -> object:
    value = f.default if f.default is not MISSING else None
    if hasattr(value, "to_toml"):  # a dist, law or peak table
        value = value.to_toml()
    if isinstance(value, float) and value == float("inf"):
        value = "inf"
    if isinstance(value, tuple):
        value = list(value)
    return value


def _row(key: str, f) -> dict:
    spec = spec_of(f)
    row = {"key": key, "kind": spec.kind, "help": spec.help, "unit": spec.unit, "default": _default(f)}
    if spec.optional:
        row["default"] = None
    if spec.kind in ("number", "integer", "law", "length"):
        row["range"] = _interval(spec.lo, spec.hi, spec.lo_open, spec.hi_open and spec.kind == "number")
        row["why"] = spec.why
        row["inf_ok"], row["auto_ok"] = spec.inf_ok, spec.auto_ok
        if spec.auto_ok and spec.auto_word != "auto":
            row["word"] = spec.auto_word
        row["uncertain"] = spec.kind in ("number", "length") and spec.uncertain
        if not spec.read:
            row["read"] = False  # accepted, read by no model: no input
    if spec.choices:
        row["choices"] = list(spec.choices)
    return row


def _walk(cls, prefix: str) -> list[dict]:
    rows = []
    for f in fields(cls):
        if f.name in NESTED:
            label, sub = NESTED[f.name]
            rows += _walk(sub, f"{prefix}{label}.")
        elif spec_of(f) is not None:
            rows.append(_row(prefix + f.name, f))
    return rows


def key_rows(section: str | None = None) -> list[dict]:
    """One dict per key (``key``, ``kind``, ``help``, ``unit``, ``default``; numeric keys
    add ``range``, ``why``; choices ``choices``), optionally only under ``section``
    (a table such as ``fab`` or ``reliability.components``); InputError for an unknown one."""
    from .schema import SECTIONS

    rows = []
    for table, cls, _special in SECTIONS:
        rows += _walk(cls, table + ".")
    if section:
        prefix = section.rstrip(".") + "."
        chosen = [r for r in rows if r["key"].startswith(prefix) or r["key"] == section]
        if not chosen:
            tables = [t for t, _, _ in SECTIONS] + ["reliability.components", "workload.model"]
            raise InputError(Problem("SECTION", section, "allowed: " + ", ".join(tables), did_you_mean(section, tables)))
        rows = chosen
    return rows


def _allowed(row: dict) -> str:
    if "range" in row:
        text = row["range"]
        if row.get("inf_ok"):
            text += ' or "inf"'
        if row.get("auto_ok"):
            text += f' or "{row.get("word", "auto")}"'
        if row.get("uncertain"):
            text += " (or a dist table)"
        if row["kind"] == "law":
            text += " (or a law table)"
        if row.get("read") is False:
            text += "; read by no model: no input"
        if row["kind"] == "length":
            text += ' (or a length law: law = "lognormal" or "empirical")'
        return text
    if "choices" in row:
        return ("a list of distinct names from " if row["kind"] == "subset" else "one of ") + ", ".join(row["choices"])
    return {"flag": "true or false", "text": "a string"}.get(row["kind"], "")


def _show(value) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={_show(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return f"{value:g}" if isinstance(value, float) else str(value)


def format_keys(rows: list[dict], width: int = 80) -> str:
    """Plain text, one block per key, lines at most ``width`` characters."""
    out = []
    indent = "    "
    for row in rows:
        head = row["key"] + (f"  [{row['unit']}]" if row["unit"] else "")
        out.append(textwrap.fill(head, width, subsequent_indent=indent, break_long_words=True))
        lines = [row["help"], f"default: {_show(row['default'])}", f"allowed: {_allowed(row)}"]
        if row.get("why"):
            lines.append(f"bounds: {row['why']}")
        for line in lines:
            out.append(textwrap.fill(line, width, initial_indent=indent, subsequent_indent=indent + "  ", break_long_words=True))
    return "\n".join(out) + "\n"
