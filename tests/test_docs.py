"""The documentation is self-contained.

* every ``docs/FILE.md#ANCHOR`` reference in ``mcengine/``, ``configs/``, ``docs/``,
  ``README.md`` and ``tests/`` names a file of the repository and an anchor in it (an
  explicit ``<a id="...">`` / ``id="..."``, or the GitHub slug of a heading);
* every relative Markdown link and image of README.md and of the pages under ``docs/``
  (``[text](path#anchor)``, ``(#anchor)`` within the page) names a file or folder of the
  repository and, with an anchor, an anchor of that page;
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
#: The sources page quotes other repositories' paths (``docs/source/performance.md``) and
#: names the pattern (``docs/sources.md#ANCHOR``): its own links are checked as links.
SOURCES = ROOT / "docs" / "sources.md"

#: ``docs/sources.md#rel-llama3-rates``; the path may not be glued to a longer path.
DOC_REF = re.compile(r"(?<![\w./-])(docs/[\w./-]+?\.md)(?:#([\w-]+))?")
EXPLICIT_ID = re.compile(r"""\bid\s*=\s*["']([^"']+)["']""")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)
#: A fenced block (its lines are not headings or links) and an inline code span.
FENCE = re.compile(r"^```.*?^```[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")
#: A Markdown link or image: ``[text](target)`` or ``[text](target "title")``.
LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
#: The pages whose links must resolve.
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: Citations that point outside the repository. A bracket tag must not follow an
#: identifier or a closing bracket, so ``CASES[case]`` (indexing) is not a tag.
FORBIDDEN = re.compile(
    r"shared/reference"
    r"|\.\./shared\b"
    r"|(?<![\w\])])\[\s*(?:rel|yc|roof|case)\b(?!-)[^\]\n]*\]"
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
    """Explicit ids and heading slugs (outside fenced blocks); a repeated slug gets -1,
    -2, ... as on GitHub."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    out, seen = set(EXPLICIT_ID.findall(text)), {}
    for heading in HEADING.findall(text):
        slug = _slug(heading)
        out.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return out


def references() -> list[tuple[str, int, str, str]]:
    """(file, line, doc path, anchor or "") for every docs/ reference."""
    refs = []
    for path in _files("mcengine", "configs", "docs", "README.md", "tests"):
        if path == SOURCES:
            continue
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
    for fine in ("CASES[case]", "[reliability.components.die]", "[reliability]", "[case-study.md](docs/case-study.md)",
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


def links(page: Path) -> list[tuple[int, str]]:
    """(line, target) of every relative link and image of a Markdown page, outside fenced
    blocks and code spans."""
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), page.read_text(encoding="utf-8"))
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        for m in LINK.finditer(CODE_SPAN.sub("code", line)):
            if not re.match(r"[a-z]+:", m.group(1)):
                out.append((n, m.group(1)))
    return out


def test_the_link_pattern_can_fail():
    page = ROOT / "README.md"
    assert links(page), "README.md has no relative link: the pattern broke"
    assert LINK.findall('see [the model](docs/model.md#plan "title") and ![x](a.png)') == ["docs/model.md#plan", "a.png"]
    assert not _link_problem(page, "docs/model.md#plan") and not _link_problem(page, "#set-up-and-run")
    assert "no anchor" in _link_problem(page, "docs/model.md#no-such-place")
    assert "not a file" in _link_problem(page, "docs/no-such-page.md")
    assert "no anchor" in _link_problem(ROOT / "docs" / "cli.md", "#no-such-command")


def _link_problem(page: Path, target: str) -> str:
    """What is wrong with ``target`` linked from ``page`` ("" when it resolves)."""
    path, _, anchor = target.partition("#")
    resolved = (page.parent / path).resolve() if path else page
    if not resolved.exists() or ROOT not in [resolved, *resolved.parents]:
        return f"{path} is not a file or folder of the repository"
    if anchor and (resolved.suffix != ".md" or anchor not in anchors(resolved)):
        return f"no anchor #{anchor} in {resolved.relative_to(ROOT)}"
    return ""


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_resolves(page):
    problems = [f"{page.relative_to(ROOT)}:{n}: ({target}) {problem}" for n, target in links(page)
                if (problem := _link_problem(page, target))]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", _files("mcengine", "configs", "docs", "README.md", "tests"),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_citation_outside_the_repository(path):
    hits = [f"{n}: {m.group(0)}" for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            for m in FORBIDDEN.finditer(line)]
    assert not hits, f"{path.relative_to(ROOT)} cites material outside the repository: {hits}"
