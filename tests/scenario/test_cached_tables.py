"""Tables read once and cached (``functools.lru_cache``) are handed out read only: a caller
that changed one would change every later caller's view of the shipped files."""

from __future__ import annotations

import pytest

from mcengine.report import metrics
from mcengine.scenario import cards, parts


def test_the_shipped_parts_tables_are_read_only():
    for table in (parts.hbm_generations(), parts.io_technologies()):
        name = next(iter(table))
        with pytest.raises(TypeError):
            table[name] = None
        assert parts.hbm_generations() is parts.hbm_generations()  # (the cached mapping itself)


def test_a_model_card_table_is_a_copy_of_a_read_only_cache():
    name = cards.model_names()[0]
    with pytest.raises(TypeError):
        cards._model_raw(name)["name"] = "changed"
    table = cards.card_table(name)
    table["name"] = "changed"
    for value in table.values():
        if isinstance(value, dict):
            value.clear()  # a nested table of the copy, not of the cache
    assert cards.card_table(name) == dict(cards._model_raw(name)) != table


def test_the_key_rows_are_read_only():
    rows = metrics._key_rows()
    key = next(iter(rows))
    with pytest.raises(TypeError):
        rows[key]["unit"] = "changed"
