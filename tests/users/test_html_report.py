"""`mcengine report RUN_DIR` (issue 50, item 8): one self-contained HTML page, the verdict
block, the tables, every figure inline, the provenance; it opens offline, and a headless
browser decodes every figure (slow test)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.procs import env, python


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("report") / "run"
    got = subprocess.run(python("-m", "mcengine", "compare", "h100", "lite-h100-2x", "--trials", "1024", "--seed", "0", "--quiet",
                                "--keep-trials", "--out", str(folder)), capture_output=True, text=True, env=env(), timeout=600)
    assert got.returncode == 0, got.stderr
    return folder


def _report(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(python("-m", "mcengine", "report", *args), capture_output=True, text=True, env=env(), timeout=300)


def test_the_page_holds_verdict_tables_figures_inline_and_provenance(run_dir):
    got = _report(str(run_dir))
    assert got.returncode == 0, got.stderr
    page = (run_dir / "report.html").read_text()
    assert got.stdout.strip() == str(run_dir / "report.html")
    assert 'id="verdict"' in page and "lite-h100-2x vs h100: dearer per output token" in page
    assert "nearest flip (stored paper search)" in page and "drivers (quick sensitivity)" in page
    assert "paired with h100 = A" in page and '<table border="1" class="dataframe csv">' in page
    pngs = sorted(p.name for p in run_dir.glob("*.png"))
    assert len(pngs) == 4 and page.count('src="data:image/png;base64,') == len(pngs)
    assert not re.search(r'(src|href)="(https?:)?//', page)  # nothing fetched: it opens offline
    assert 'id="provenance"' in page and "command_line" in page


def test_a_folder_without_a_summary_or_a_foreign_file_is_refused(run_dir, tmp_path):
    bad = _report(str(tmp_path))
    assert bad.returncode == 2 and "RUN_DIR" in bad.stderr and "summary.json" in bad.stderr
    foreign = tmp_path / "mine.html"
    foreign.write_text("<html>my notes</html>")
    refused = _report(str(run_dir), "--output", str(foreign))
    assert refused.returncode == 2 and "not an mcengine report" in refused.stderr
    assert foreign.read_text() == "<html>my notes</html>"
    assert _report(str(run_dir), "--output", str(tmp_path / "again.html")).returncode == 0
    assert _report(str(run_dir), "--output", str(tmp_path / "again.html")).returncode == 0  # its own page is replaced


@pytest.mark.slow
def test_a_headless_browser_opens_the_page_offline_with_every_figure_decoded(run_dir, tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    assert browser, "a headless browser (apt-get install chromium)"
    page = tmp_path / "report.html"
    assert _report(str(run_dir), "--output", str(page)).returncode == 0
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--user-data-dir=" + str(tmp_path / "profile"),
                          "--virtual-time-budget=10000", "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=300)
    assert 'data-figures-loaded="4"' in dom.stdout, dom.stderr[-2000:]
