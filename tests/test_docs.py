"""The documentation is self-contained.

* every ``docs/FILE.md#ANCHOR`` reference in ``mcengine/``, ``configs/``, ``README.md``
  and ``tests/`` names a file of the repository and an anchor in it (an explicit
  ``<a id="...">`` / ``id="..."``, or the GitHub slug of a heading);
* no shipped file cites the research notes outside the repository: no
  ``shared/reference``, ``../shared``, note file names, "notes §1.2"-style section
  numbers, or the old bracket tags such as ``[rel 1.6]`` / ``[case]``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SELF = Path(__file__).resolve()
SUFFIXES = {".py", ".toml", ".md", ".txt", ".cfg", ".ini"}

#: ``docs/sources.md#rel-llama3-rates``; the path may not be glued to a longer path.
DOC_REF = re.compile(r"(?<![\w./-])(docs/[\w./-]+?\.md)(?:#([\w-]+))?")
EXPLICIT_ID = re.compile(r"""\bid\s*=\s*["']([^"']+)["']""")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)

#: Citations that point outside the repository. A bracket tag must not follow an
#: identifier or a closing bracket, so ``CASES[case]`` (indexing) is not a tag.
FORBIDDEN = re.compile(
    r"shared/reference"
    r"|\.\./shared\b"
    r"|(?<![\w\])])\[\s*(?:rel|yc|roof|case)\b[^\]\n]*\]"
    r"|\bnotes?\s+(?:§|\d+\.\d)"
    r"|\b(?:yield_cost|roofline|reliability|aesthetics|lite-gpu-case)\.md\b"
)


def _files(*names: str) -> list[Path]:
    out = []
    for name in names:
        path = ROOT / name
        if path.is_file():
            out.append(path)
        elif path.is_dir():
            out += [p for p in sorted(path.rglob("*")) if p.is_file() and p.suffix in SUFFIXES
                    and "__pycache__" not in p.parts]
    return [p for p in out if p.resolve() != SELF]


def _slug(heading: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    return set(EXPLICIT_ID.findall(text)) | {_slug(h) for h in HEADING.findall(text)}


def references() -> list[tuple[str, int, str, str]]:
    """(file, line, doc path, anchor or "") for every docs/ reference."""
    refs = []
    for path in _files("mcengine", "configs", "README.md", "tests"):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in DOC_REF.finditer(line):
                refs.append((str(path.relative_to(ROOT)), n, m.group(1), m.group(2) or ""))
    return refs


def test_the_patterns_can_fail():
    assert DOC_REF.search("see docs/sources.md#rel-llama3-rates).").groups() == ("docs/sources.md", "rel-llama3-rates")
    assert not DOC_REF.search("other/docs/sources.md#x")
    for bad in ("afr = 0.01  # [rel 1.6]", "[case]", '[case "Reference parts"]', "[yc 1.1]",
                "[roof 3.2 row 8]", "shared/reference/notes/x.md", "../shared/x", "notes §1.1",
                "notes 3.2 row 1", "yield_cost.md §1.2", "(reliability notes §4)"):
        assert FORBIDDEN.search(bad), bad
    for fine in ("CASES[case]", "[reliability.components.die]", "[reliability]",
                 "docs/sources.md#rel-kokolis", "release notes"):
        assert not FORBIDDEN.search(fine), fine
    assert _slug("1. Fab: wafers, yield and package cost") == "1-fab-wafers-yield-and-package-cost"


def test_there_are_references():
    # the shipped scenarios cite their sources, so an empty list means the pattern broke
    assert sum(1 for r in references() if r[0].startswith("configs/") and r[3]) >= 20


@pytest.mark.parametrize("ref", references(), ids=lambda r: f"{r[0]}:{r[1]}")
def test_reference_resolves(ref):
    where, line, doc, anchor = ref
    target = ROOT / doc
    assert target.is_file(), f"{where}:{line}: {doc} is not a file of the repository"
    if anchor:
        assert anchor in anchors(target), f"{where}:{line}: no anchor #{anchor} in {doc}"


@pytest.mark.parametrize("path", _files("mcengine", "configs", "README.md", "tests"),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_citation_outside_the_repository(path):
    hits = [f"{n}: {m.group(0)}" for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            for m in FORBIDDEN.finditer(line)]
    assert not hits, f"{path.relative_to(ROOT)} cites material outside the repository: {hits}"
