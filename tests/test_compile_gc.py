"""The cyclic collector's threshold while numba compiles (:data:`mcengine.jit.COMPILE_GC_THRESHOLD`)."""

from __future__ import annotations

import gc

import numba
from numba.core import event

from mcengine import jit


class _Seen(event.Listener):
    """The collector's thresholds at the start and end of each compile, as seen after jit's
    listener (registered first, so notified first)."""

    def __init__(self):
        self.thresholds = []

    def on_start(self, ev):
        self.thresholds.append(gc.get_threshold())

    def on_end(self, ev):
        self.thresholds.append(gc.get_threshold())


def test_a_compile_raises_the_first_threshold_and_puts_every_threshold_back():
    before = gc.get_threshold()
    seen = _Seen()
    event.register("numba:compile", seen)
    try:
        def inner(x):
            return x + 1

        compiled_inner = numba.njit(cache=False)(inner)

        def outer(x):
            return compiled_inner(x) * 2

        assert numba.njit(cache=False)(outer)(3) == 8  # outer's compile nests inner's
    finally:
        event.unregister("numba:compile", seen)
    raised = (max(before[0], jit.COMPILE_GC_THRESHOLD), *before[1:])
    # outer starts, inner starts and ends inside it, outer ends: put back by then
    assert seen.thresholds == [raised, raised, raised, before]
    assert gc.get_threshold() == before
