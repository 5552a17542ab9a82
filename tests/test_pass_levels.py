"""LLVM's pass levels of a compile (:data:`mcengine.jit.PREPASS_OPT_LEVEL`): mcengine's
kernels skip numba's function prepass, any other package's function keeps numba's levels. Each case runs in a fresh process with an empty numba cache, so
every function named is compiled there (not loaded)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: In a fresh process: record each LLVM pass builder numba makes while ``call`` runs, by
#: its maker (``_function_pass_manager``: the function passes; ``_module_pass_manager``:
#: numba's cheap inlining pass, at 0, and the full module passes) and level; one JSON
#: line: those and numba's own level.
_PROBE = """
import json, sys
import numba
from numba.core import codegen, config
import mcengine.jit
made = {{"_function_pass_manager": set(), "_module_pass_manager": set()}}
build = codegen.CPUCodegen._pass_builder
def recording(self, **kwargs):
    made[sys._getframe(1).f_code.co_name].add(int(kwargs.get("opt", config.OPT)))
    return build(self, **kwargs)
codegen.CPUCodegen._pass_builder = recording
{call}
print(json.dumps({{"functions": sorted(made["_function_pass_manager"]), "modules": sorted(made["_module_pass_manager"]),
                  "numba": int(config.OPT)}}))
"""


def _levels(call: str) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        done = subprocess.run([sys.executable, "-c", _PROBE.format(call=call)], cwd=ROOT, capture_output=True, text=True,
                              timeout=600, check=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_CACHE_DIR": cache})
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_kernel_skips_the_function_prepass_and_keeps_numbas_module_level():
    from mcengine.jit import PREPASS_OPT_LEVEL

    doc = _levels("from mcengine.rng import new_stream\nassert new_stream(1, 2, 3, 4)[0] == 1")
    assert PREPASS_OPT_LEVEL != doc["numba"]
    # the kernel (and numba's np.empty compiled inside it) at PREPASS_OPT_LEVEL; numba's runtime, compiled
    # as it starts, at numba's level
    assert PREPASS_OPT_LEVEL in doc["functions"]
    assert doc["modules"] == sorted({0, doc["numba"]})  # (0: numba's cheap inlining pass)


def test_another_packages_function_keeps_numbas_levels():
    doc = _levels("f = numba.njit(lambda x: x * 2.0)\nassert f(2.0) == 4.0")
    assert doc["functions"] == [doc["numba"]]
    assert doc["modules"] == sorted({0, doc["numba"]})
