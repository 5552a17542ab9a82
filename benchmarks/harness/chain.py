"""End-to-end chain throughput (:func:`mcengine.bench.chain`); the peak memory of a run
against its trial count is the ``memory`` harness (:mod:`.memory`)."""

from __future__ import annotations

from mcengine.bench import chain


def run(quick: bool = False) -> dict:
    """The chain's throughput per case."""
    return chain(quick)
