"""The generated reference pages are the code's: docs/cli.md is the Typer app's commands,
help and options, docs/architecture.md the import contract's layers and every module of
the package (regenerate both with ``python docs/make_reference.py``)."""

from __future__ import annotations

import pytest

from tests.docs_scripts import ROOT, docs_script

REF = docs_script("make_reference")


@pytest.mark.parametrize("page", list(REF.PAGES), ids=lambda p: p.name)
def test_page_is_the_codes(page):
    assert page.read_text(encoding="utf-8") == REF.PAGES[page](), f"{page.name} drifted: run python docs/make_reference.py"


def test_cli_page_names_every_command_and_option():
    """Independently of the generator: each command has its section, and each of its
    options (every spelling) and its help text appear in that section."""
    import typer.main

    from mcengine.cli import app

    text = REF.CLI_PAGE.read_text(encoding="utf-8")
    for name, command in typer.main.get_command(app).commands.items():
        start = text.index(f"\n## mcengine {name}\n")
        end = text.find("\n## ", start + 1)
        section = text[start:end if end > 0 else len(text)]
        assert " ".join((command.help or "").split()) in section, name
        for param in command.params:
            for opt in [*param.opts, *param.secondary_opts] if param.param_type_name == "option" else []:
                assert f"`{opt}" in section, (name, opt)


def test_architecture_page_lists_every_module_in_its_layer():
    text = REF.ARCHITECTURE_PAGE.read_text(encoding="utf-8")
    for path in (ROOT / "mcengine").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        assert f"| `{name}` |" in text, name
    layers = REF._layers()
    assert layers[0] == ["mcengine.__main__"] and len(layers) >= 10
    for n, layer in enumerate(layers, 1):
        assert f"| {n} | {', '.join(f'`{m}`' for m in layer)} |" in text


def test_a_changed_docstring_changes_the_page(monkeypatch):
    """The check can fail: the page follows a module's docstring."""
    real = REF._first_sentence
    monkeypatch.setattr(REF, "_first_sentence", lambda path: "changed." if path.name == "units.py" else real(path))
    assert REF.architecture_page() != REF.ARCHITECTURE_PAGE.read_text(encoding="utf-8")
