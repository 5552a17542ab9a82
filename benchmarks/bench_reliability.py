"""Reliability kernel vs its SimPy peer (and the shipped scenarios); prints one JSON document.

Usage: ``python benchmarks/bench_reliability.py [--quick]`` from the repository root.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mcengine.bench.reliability import run  # noqa: E402

if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv[1:]), indent=2))
