"""Instructions per lifetime of the reliability kernel (valgrind callgrind); one JSON document.

Usage: ``python benchmarks/bench_instructions.py [--lifetimes N] [CASE ...]`` from the
repository root, CASE among ``h100``, ``lite``, ``lite-pair`` (default: all). Needs
valgrind. Use it to judge a kernel change on a machine whose speed varies: counts repeat
to ~0.01% on an idle machine (see :mod:`mcengine.bench.instructions`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mcengine.bench.instructions import CASES, run  # noqa: E402
from mcengine.errors import InputError  # noqa: E402

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", default=list(CASES), metavar="CASE")
    parser.add_argument("--lifetimes", type=int, default=256)
    args = parser.parse_args()
    try:
        print(json.dumps(run(tuple(args.cases), args.lifetimes), indent=2))
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
