"""Write docs/robustness.md: every robustness case run as a real process, with its outcome.

Usage (from the repository root): ``python -m tests.robustness.make_table [NAME ...]``:
every case, or only the cases whose name holds one of the ``NAME`` strings, their rows
replaced in the page as it stands (the others kept).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from mcengine.io import write_atomic

from .cases import CASES, problems, run_case

ROOT = Path(__file__).resolve().parents[2]
HEADER = """# Robustness: hostile inputs and faults

Each row is a real `mcengine` process (`tests/robustness/cases.py`), run by
`python -m tests.robustness.make_table`, which wrote this page; `pytest -m slow
tests/robustness` asserts the same cases. The contract: exit 0 with finite numbers, or
exit 2 naming the input and what is allowed, or 128 + signal after SIGINT/SIGTERM
saying what was saved; never a traceback, never a hang, nothing outside `--out` made,
changed or deleted. "Before" says what the case did before it was fixed.

| group | case (before) | command | exit | first line of the message | s | ok |
| --- | --- | --- | --- | --- | --- | --- |
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")[:160]


def _kept_rows(page: Path) -> dict[str, str]:
    """The page's rows by their case cell (``_cell(case.name)``)."""
    lines = page.read_text().splitlines()[HEADER.count("\n"):]
    return {line.split(" | ")[1]: line for line in lines if line.startswith("| ")}


def main(names: list[str]) -> None:
    page = ROOT / "docs" / "robustness.md"
    rows = []
    kept = _kept_rows(page) if names else {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, case in enumerate(CASES):
            if names and not any(name in case.name for name in names):
                rows.append(kept[_cell(case.name)])
                continue
            folder = Path(tmp) / f"case{i}"
            got = run_case(case, folder)
            first = next((line.strip() for line in (got.stderr or got.stdout).splitlines() if line.strip()
                          and not line.startswith("error: invalid input")), "").replace(str(folder), "DIR").replace(f"{ROOT}/", "")
            bad = problems(case, got)
            command = "mcengine " + " ".join(a.replace("{tmp}", "DIR") for a in case.argv)
            rows.append(f"| {case.group} | {_cell(case.name)} | `{_cell(command)}` | {got.exit} | {_cell(first)} | "
                        f"{got.seconds:.1f} | {'yes' if not bad else 'NO: ' + _cell('; '.join(bad))} |")
            print(rows[-1], flush=True)
    write_atomic(page, HEADER + "\n".join(rows) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
