"""The kernel decorators of :mod:`mcengine.jit`:

* compile a kernel once per argument types: a kernel called from another with constants
  (``inner(x, 1)``, ``inner(x, 2)``) compiles one ``(int64, int64)`` specialisation, where
  numba's own dispatcher compiles one per literal value;
* make no machine code of a ``linked_kernel``'s own (only its callers' code holds it), and
  its cache entry still serves a caller compiled in a later process: this pins the numba
  internals :class:`mcengine.jit._LinkedLibrary` overrides (a numba that no longer finalises
  a library through them fails here).

Run in fresh processes with an empty cache, so every first call compiles."""

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


_LINKED = """
import numpy as np
from mcengine.jit import kernel, linked_kernel

def _inner(a, k):
    s = 0.0
    for i in range(k, a.size):
        s += a[i] * a[i - k] if a[i] > 0 else np.log(a[i] + 2.0)
    return s

inner = linked_kernel(_inner)

@kernel
def outer(a):
    return inner(a, 1) + inner(a, 2)
"""

_LINKED_CALLER = """
from mcengine.jit import kernel
from linked import inner

@kernel
def other(a):
    return inner(a, 3)
"""

_LINKED_RUN = """
import json, sys
import numba
import numpy as np
from numba.core import event

compiled = []

class Compiles(event.Listener):
    def on_start(self, ev):
        d = ev.data["dispatcher"]  # numba's own dispatcher only for the plain twin
        compiled.append("plain" if type(d) is numba.core.registry.CPUDispatcher else d.py_func.__name__)

    def on_end(self, ev):
        pass

event.register("numba:compile", Compiles())
from linked import _inner, inner, outer
from caller import other

plain = numba.njit(_inner)
a = np.linspace(-1.0, 1.0, 101)
doc = {}
if sys.argv[1] == "first":  # inner compiled before any caller links it into the engine
    inner.compile((numba.typeof(a), numba.int64))
    (cres,) = inner.overloads.values()
    name = cres.fndesc.llvm_func_name
    doc |= {"library": type(cres.library).__name__, "in_engine": cres.library.codegen._engine.is_symbol_defined(name),
            "pointer": cres.library.get_pointer_to_function(name), "in_module": name in cres.library.get_llvm_str()}
doc |= {"outer": outer(a), "plain_outer": plain(a, 1) + plain(a, 2)}
if sys.argv[1] != "first":
    doc |= {"other": other(a), "plain_other": plain(a, 3)}
doc["compiled"] = compiled
print(json.dumps(doc))
"""


def test_a_linked_kernel_has_no_machine_code_of_its_own_and_caches(tmp_path):
    (tmp_path / "linked.py").write_text(_LINKED)
    (tmp_path / "caller.py").write_text(_LINKED_CALLER)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}

    def run(step):
        out = subprocess.run([sys.executable, "-c", _LINKED_RUN, step], cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    first = run("first")
    assert first["library"] == "_LinkedLibrary"
    assert first["in_module"] and not first["in_engine"] and first["pointer"] == 0
    assert first["outer"] == first["plain_outer"]  # bit for bit: the same code, linked
    assert first["compiled"] == ["_inner", "outer", "plain"]
    later = run("later")  # the same cache: outer loads; other compiles, linking inner's cached module
    assert later["outer"] == first["outer"] and later["other"] == later["plain_other"]
    assert later["compiled"] == ["plain", "other"]
