"""Regenerate the paper study the pages quote, and the quick study that keeps it checked.

    python docs/make_paper.py          # docs/paper/ (the full study), docs/paper/quick.json and the golden
    python docs/make_paper.py --check  # exit 1 if docs/paper/quick.json is not the current code's
    python docs/make_paper.py --golden # rewrite the golden rendering only

The full study (``mcengine paper --out docs/paper --force``: 2,048 paired trials, seed 0,
every nearest-world search) takes minutes; rerunning it is too slow to check on every
change. So this script writes, beside it, ``docs/paper/quick.json``: the numbers of
``mcengine paper --quick`` (:data:`QUICK_TRIALS` trials, seed 0, run on two threads)
and the fingerprint of the full study's numbers written in the same regeneration.
``tests/paper/test_docs_paper_current.py`` reruns the quick study on one thread and
compares its numbers with ``quick.json`` (any change to the model moves them, and one
thread against two checks that the thread count moves nothing), and checks that the
fingerprint is the committed full study's: the two can only be current together, so a
change that moves the model fails the test until this script has rerun both. It also
writes :data:`GOLDEN`, the full study's compact table as ``mcengine paper`` prints it at
80 columns, which ``tests/users/test_readable.py`` compares with the rendering of today.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PAPER = HERE / "paper"
SUMMARY = PAPER / "summary.json"
QUICK = PAPER / "quick.json"
#: The full study's table rendered at 80 columns (:func:`write_golden`).
GOLDEN = ROOT / "tests" / "users" / "golden" / "paper_80.txt"
SEED = 0
#: The full study's command, run in the checkout: its --out is relative to it, so summary.json
#: records the command as given and no path of the machine that regenerated it.
FULL = ("paper", "--out", PAPER.relative_to(ROOT).as_posix(), "--force", "--seed", str(SEED), "--quiet")
#: The quick study's trials: enough that every claim's figure and search run.
QUICK_TRIALS = 64
#: The model's numbers of a paper study (provenance, elapsed times and file names are not).
NUMBERS = ("claims", "verdict", "frontier", "trials", "seed", "quick")


def numbers(doc: dict) -> dict:
    """The model's numbers of a paper study's JSON."""
    return {key: doc.get(key) for key in NUMBERS}


def fingerprint(doc: dict) -> str:
    """SHA-256 of a study's numbers, serialised with sorted keys."""
    return hashlib.sha256(json.dumps(numbers(doc), sort_keys=True).encode()).hexdigest()


def quick_study(threads: int) -> dict:
    """``mcengine paper --quick`` of this checkout in a process of its own, as JSON."""
    argv = [sys.executable, "-m", "mcengine", "paper", "--quick", "--trials", str(QUICK_TRIALS), "--seed", str(SEED),
            "--threads", str(threads), "--json", "--quiet"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])
    return json.loads(done.stdout)


def committed_full() -> dict:
    return json.loads(SUMMARY.read_text(encoding="utf-8"))


def write_golden() -> None:
    """The committed full study's table as ``mcengine paper`` prints it on an 80-column console."""
    from mcengine.io import write_atomic
    from mcengine.report.paper import render_paper
    from mcengine.report.tables import as_text

    write_atomic(GOLDEN, as_text(render_paper(committed_full()), 80))


def main(argv: list[str]) -> int:
    if argv == ["--golden"]:
        sys.path.insert(0, str(ROOT))  # this checkout's mcengine
        write_golden()
        return 0
    if "--check" in argv:
        stored = json.loads(QUICK.read_text(encoding="utf-8"))
        fresh = numbers(quick_study(threads=1))
        stale = [key for key in NUMBERS if fresh[key] != stored["numbers"][key]]
        if stored["full_sha256"] != fingerprint(committed_full()):
            stale.append("full study fingerprint")
        for key in stale:
            print(f"docs/paper: {key} drifted: run python docs/make_paper.py", file=sys.stderr)
        return 1 if stale else 0
    subprocess.run([sys.executable, "-m", "mcengine", *FULL], cwd=ROOT, check=True)
    doc = {"numbers": numbers(quick_study(threads=2)), "full_sha256": fingerprint(committed_full())}
    sys.path.insert(0, str(ROOT))  # this checkout's mcengine
    from mcengine.io import write_atomic

    write_atomic(QUICK, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    write_golden()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
