"""The resolved scenario as `mcengine check` prints it: TOML with every default filled,
and each optional key left unset shown as a comment under its table (TOML has no null)."""

from __future__ import annotations


def _split(doc: dict, path: tuple[str, ...] = ()) -> tuple[dict, list[tuple[tuple[str, ...], str]]]:
    """``doc`` without its ``None`` values, and the (table path, key) of each of them."""
    kept, unset = {}, []
    for key, value in doc.items():
        if value is None:
            unset.append((path, key))
        elif isinstance(value, dict):
            kept[key], more = _split(value, (*path, key))
            unset += more
        else:
            kept[key] = value
    return kept, unset


def resolved_toml(doc: dict) -> str:
    """TOML of ``Scenario.to_dict(with_unset=True)``: unset keys as ``# KEY: unset`` lines."""
    import tomli_w

    kept, unset = _split(doc)
    lines = tomli_w.dumps(kept).splitlines()
    for path, key in reversed(unset):
        note = f"# {key}: not set (optional)"
        header = "[" + ".".join(path) + "]" if path else None
        at = next((i + 1 for i, line in enumerate(lines) if line == header), None) if header else 0
        if at is None:  # a table holding only unset keys: give it its header
            lines += ["", header]
            at = len(lines)
        lines.insert(at, note)
    return "\n".join(lines) + "\n"
