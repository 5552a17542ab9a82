"""Run the benchmark harness from the repository root; prints one JSON document.

Usage::

    python -m benchmarks [HARNESS ...] [--quick]
    python -m benchmarks instructions [--cases h100 lite lite-pair] [--lifetimes N]

HARNESS among ``fab`` (defect kernel vs a NumPy peer), ``reliability`` (life kernel vs
a SimPy peer), ``chain`` (end-to-end throughput and peak memory); default: all three.
``instructions`` counts the life kernel's instructions per lifetime with valgrind's
callgrind (use it to judge a kernel change on a machine whose speed varies).
"""

from __future__ import annotations

import argparse
import json
import sys

from mcengine.errors import InputError

from .harness import HARNESSES, run_all
from .harness import instructions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("harness", nargs="*", choices=[*HARNESSES, "instructions"], metavar="HARNESS")
    parser.add_argument("--quick", action="store_true", help="seconds-long version (smoke test)")
    parser.add_argument("--cases", nargs="+", default=list(instructions.CASES), help="instructions: cases to count")
    parser.add_argument("--lifetimes", type=int, default=256, help="instructions: lifetimes per counted call")
    args = parser.parse_args(argv)
    try:
        if "instructions" in args.harness:
            doc = instructions.run(tuple(args.cases), args.lifetimes)
        else:
            doc = run_all(quick=args.quick, stages=tuple(args.harness))
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
