"""docs/gallery.md cannot go stale unseen: it links exactly the figures
docs/gallery/make_gallery.py writes (and nothing else lies in docs/gallery/), the paper
figures it links are the ones `mcengine paper --out` writes, and the script runs on the
current code (a tiny sample, in the slow suite)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from mcengine.paper import CLAIMS
from mcengine.report.paper import FRONTIER_FILE

DOCS = Path(__file__).resolve().parents[1] / "docs"
LINK = re.compile(r"!\[[^\]]*\]\(([^)]+)\)")


def links(folder: str) -> set[str]:
    """File names gallery.md shows from ``docs/<folder>/``."""
    return {Path(t).name for t in LINK.findall((DOCS / "gallery.md").read_text()) if Path(t).parent.as_posix() == folder}


def test_gallery_md_links_every_figure_in_the_gallery_folder_and_no_other():
    assert links("gallery") == {p.name for p in (DOCS / "gallery").glob("*.png")}
    assert len(links("gallery")) >= 15


def test_gallery_md_links_every_paper_figure():
    expected = {f"claim-{n}-{key}.png" for n, key, _ in CLAIMS} | {FRONTIER_FILE}
    assert links("paper") == expected
    assert all((DOCS / "paper" / name).is_file() for name in expected)


@pytest.mark.slow
def test_make_gallery_runs_on_the_current_code_and_writes_what_gallery_md_links(tmp_path):
    spec = importlib.util.spec_from_file_location("make_gallery", DOCS / "gallery" / "make_gallery.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    written = script.main(tmp_path, script.SMOKE)
    names = [p.name for p in written]
    assert len(names) == len(set(names))  # no figure overwrites another
    assert set(names) == links("gallery")
    assert all((tmp_path / n).stat().st_size > 10_000 for n in names)
