"""The cyclic collector's threshold while numba compiles (:data:`mcengine.jit.COMPILE_GC_THRESHOLD`):
opt-in (:func:`mcengine.jit.tune_compile_gc`, called by the ``mcengine`` command), never a
side effect of importing the package. Each case runs in a fresh process, so the test
session's own collector settings stay as they are."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: In a fresh process: ``setup`` (a statement), then the collector's thresholds before, and
#: at the start and end of each compile (an outer function whose compile nests an inner
#: one's), and after; one JSON line.
_PROBE = """
import gc, json
import numba
from numba.core import event
{setup}

class Seen(event.Listener):
    def __init__(self):
        self.thresholds = []
    def on_start(self, ev):
        self.thresholds.append(gc.get_threshold())
    def on_end(self, ev):
        self.thresholds.append(gc.get_threshold())

before = gc.get_threshold()
seen = Seen()
event.register("numba:compile", seen)  # after mcengine's listener, if any: notified after it

def inner(x):
    return x + 1

compiled_inner = numba.njit(cache=False)(inner)

def outer(x):
    return compiled_inner(x) * 2

assert numba.njit(cache=False)(outer)(3) == 8
print(json.dumps({{"before": before, "seen": seen.thresholds, "after": gc.get_threshold(),
                  "threshold": __import__("mcengine.jit").jit.COMPILE_GC_THRESHOLD}}))
"""


def _thresholds(setup: str) -> dict:
    done = subprocess.run([sys.executable, "-c", _PROBE.format(setup=setup)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    doc = json.loads(done.stdout.strip().splitlines()[-1])
    return {k: tuple(v) if k in ("before", "after") else [tuple(x) for x in v] if k == "seen" else v for k, v in doc.items()}


def test_importing_mcengine_changes_no_collector_setting():
    doc = _thresholds("import mcengine, mcengine.api, mcengine.jit, mcengine.kernels.life, mcengine.stages.reliability")
    before = doc["before"]
    assert doc["seen"] == [before] * 4
    assert doc["after"] == before


def test_tune_compile_gc_raises_the_first_threshold_for_the_outermost_compile_and_puts_every_threshold_back():
    doc = _thresholds("from mcengine import jit; jit.tune_compile_gc(); jit.tune_compile_gc()  # (once per process)")
    before = doc["before"]
    raised = (max(before[0], doc["threshold"]), *before[1:])
    # outer starts, inner starts and ends inside it, outer ends: put back by then
    assert doc["seen"] == [raised, raised, raised, before]
    assert doc["after"] == before


def test_the_mcengine_command_opts_in():
    doc = _thresholds("from mcengine.cli import main\n"
                      "assert main(['yield', 'lite-h100', '--wafers', '8', '--seed', '0', '--json']) == 0")
    before = doc["before"]
    assert doc["seen"][0] == (max(before[0], doc["threshold"]), *before[1:])
    assert doc["after"] == before
