"""The kernel decorators of :mod:`mcengine.jit` compile a kernel once per argument types: a
kernel called from another with constants (``inner(x, 1)``, ``inner(x, 2)``) compiles one
``(int64, int64)`` specialisation, where numba's own dispatcher compiles one per literal
value. Run in a fresh process with an empty cache, so every call compiles."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_MODULE = """
import numba
from mcengine.jit import kernel

def _inner(a, b):
    return a + b

inner = kernel(_inner)
plain = numba.njit(cache=True)(_inner)

@kernel
def outer(x):
    return inner(x, 1) + inner(x, 2) + plain(x, 1) + plain(x, 2)
"""

_RUN = """
import json
from probe import inner, outer, plain
value = outer(10)
print(json.dumps({"value": value, "inner": [str(s) for s in inner.signatures], "plain": sorted(str(s) for s in plain.signatures)}))
"""


def test_a_kernel_called_with_constants_compiles_once_per_argument_types(tmp_path):
    (tmp_path / "probe.py").write_text(_MODULE)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    out = subprocess.run([sys.executable, "-c", _RUN], cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    assert doc["value"] == 2 * (11 + 12)
    assert doc["inner"] == ["(int64, int64)"]
    assert doc["plain"] == ["(int64, Literal[int](1))", "(int64, Literal[int](2))"]
