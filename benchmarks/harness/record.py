"""The benchmark record: ``python -m benchmarks ... --record docs/benchmarks.md`` writes
each harness's figures as a Markdown table under its own heading, with the machine
(CPU model, cores, load average before and after, Python and numba) and the commit it
measured, and keeps the sections of the harnesses it did not run: the page holds the
latest measurement of each. Figures are printed as measured (6 significant digits);
README quotes none of them (docs/performance.md explains how to read them).
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import subprocess
from pathlib import Path

from mcengine.io import write_atomic

ROOT = Path(__file__).resolve().parents[2]
TITLE = "# Benchmark record"
INTRO = ("Written by `python -m benchmarks [HARNESS ...] --record docs/benchmarks.md` (benchmarks/harness/record.py): "
         "one section per harness, each the latest measurement, with its machine and commit. How to read and "
         "re-measure them: [performance.md](performance.md). `compile-against`'s rates are lifetimes per CPU second "
         "on one numba thread, each cluster's call (20,000 h100 lifetimes, 5,000 lite-h100 and failure-heavy ones) "
         "repeated until it has run at least 3 s of CPU, best of 3 alternated rounds (`rate_probe`); a record without "
         "`rate_probe` timed one call of 2,000 h100 lifetimes (about 70 ms) by the wall clock, too short to trust.")


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; the platform's processor elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def commit() -> str:
    """This tree's commit (short hash, ``+changes`` when the work tree differs from it)."""
    def git(*args) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def context(load_before: tuple[float, ...]) -> str:
    """The line saying where and when a section was measured."""
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = lambda xs: "/".join(f"{x:.1f}" for x in xs)  # noqa: E731
    return (f"Commit {commit()}, {when}; {cpu_model()}, {os.cpu_count()} cores, load average (1/5/15 min) "
            f"{load(load_before)} before, {load(os.getloadavg())} after; Python {platform.python_version()}, "
            f"numba {__import__('numba').__version__}.")


def _cell(value) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return f"{value:.6g}"


def rows(doc, prefix: str = "") -> list[tuple[str, str]]:
    """Every leaf of ``doc`` as (dotted path, value); a list of records by their index."""
    if isinstance(doc, dict):
        return [row for key, value in doc.items() for row in rows(value, f"{prefix}.{key}" if prefix else str(key))]
    if isinstance(doc, list):
        return [row for i, value in enumerate(doc) for row in rows(value, f"{prefix}[{i}]")]
    return [(prefix, _cell(doc))]


def section(name: str, figures: dict, about: str) -> str:
    table = "\n".join(f"| {path} | {value} |" for path, value in rows(figures))
    return f"## {name}\n\n{about}\n\n| figure | value |\n| --- | --- |\n{table}\n"


def write(path: Path, doc: dict, load_before: tuple[float, ...]) -> None:
    """Put each harness of ``doc`` (its keys other than ``machine`` and ``quick``) into the
    record at ``path`` in place of its earlier section; other sections are kept."""
    about = context(load_before) + (" Quick run (`--quick`): a smoke test, not a result." if doc.get("quick") else "")
    old = path.read_text() if path.exists() else ""
    sections = dict(re.findall(r"^## (\S+)\n(.*?)(?=^## |\Z)", old, flags=re.S | re.M))
    sections = {name: f"## {name}\n{body}" for name, body in sections.items()}
    for name, figures in doc.items():
        if name not in ("machine", "quick"):
            sections[name] = section(name, figures, about)
    write_atomic(path, "\n".join([TITLE, "", INTRO, "", *(sections[k].rstrip("\n") + "\n" for k in sorted(sections))]))
