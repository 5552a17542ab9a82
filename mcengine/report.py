"""Tables and figures for people (the JSON documents stay the source of truth)."""

from __future__ import annotations


def _flatten(doc: dict, prefix: str = "") -> list[tuple[str, object]]:
    rows = []
    for key, value in doc.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            rows += _flatten(value, name + ".")
        else:
            rows.append((name, value))
    return rows


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e6 else f"{value:,.0f}"
    return str(value)


def render_bench(doc: dict):
    """`mcengine bench` as one table of throughputs and ratios."""
    from rich.table import Table

    table = Table("measure", "value", title="mcengine bench")
    for name, value in _flatten(doc):
        table.add_row(name, _fmt(value))
    return table
