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


def _defaulted(doc: dict, plain: dict) -> list[tuple[str, str, dict]]:
    """The (section, table, its keys) of each sub-table of a section ``doc`` shows that the
    scenario's own dict ``plain`` leaves out (a table at its defaults, ``[workload.load]``)."""
    return [(section, key, value) for section, body in doc.items() if isinstance(body, dict)
            for key, value in body.items() if isinstance(value, dict) and key not in plain.get(section, {})]


def resolved_toml(doc: dict, plain: dict | None = None) -> str:
    """TOML of ``Scenario.to_dict(with_unset=True)``: unset keys as ``# KEY: unset`` lines;
    a table the scenario's own dict ``plain`` (``Scenario.to_dict()``) leaves out, at its
    defaults, as commented lines (shown, and the text still reads back as ``plain``)."""
    import tomli_w

    defaulted = _defaulted(doc, plain) if plain is not None else []
    doc = {section: {k: v for k, v in body.items() if not any(section == s and k == t for s, t, _ in defaulted)}
           if isinstance(body, dict) else body for section, body in doc.items()}
    kept, unset = _split(doc)
    lines = tomli_w.dumps(kept).splitlines()
    for section, table, body in defaulted:
        lines += ["", f"# [{section}.{table}]: every key at its default (uncomment to set)",
                  *(f"# {line}" if line else "#" for line in tomli_w.dumps(body).splitlines())]
    for path, key in reversed(unset):
        note = f"# {key}: not set (optional)"
        header = "[" + ".".join(path) + "]" if path else None
        at = next((i + 1 for i, line in enumerate(lines) if line == header), None) if header else 0
        if at is None:  # a table holding only unset keys: give it its header
            lines += ["", header]
            at = len(lines)
        lines.insert(at, note)
    return "\n".join(lines) + "\n"
