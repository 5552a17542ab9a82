"""The benchmark harness: mcengine next to its peers, instruction counts, memory.

Each module's ``run(quick)`` returns one JSON-able document; the scripts
``benchmarks/bench_*.py`` print them. mcengine's own throughput comes from
:mod:`mcengine.bench` (what `mcengine bench` prints); the peers (a NumPy fab
model, a SimPy machine-repairman model), the valgrind instruction counter and the
peak-memory probe live only here, so the package never imports simpy or valgrind.
"""

from __future__ import annotations

import mcengine.bench as bench  # (the submodule: `from mcengine import bench` gives the API function of the same name)

from . import availability, chain, compile, fab, load, memory, plans, reliability, rqmc, serve, sobol

#: Harnesses with a peer or a probe, in report order.
HARNESSES = {"fab": fab.run, "reliability": reliability.run, "chain": chain.run, "memory": memory.run, "training": bench.training_chain,
             "compile": compile.run, "rqmc": rqmc.run, "availability": availability.run, "load": load.run, "serve": serve.run,
             "sobol": sobol.run, "plans": plans.run}


def run_all(quick: bool = False, stages: tuple[str, ...] = (), harnesses: dict | None = None) -> dict:
    """Every harness (or those named), with the machine they ran on; ``harnesses`` in place
    of :data:`HARNESSES`' own where given."""
    return bench.run_all(quick, stages, {**HARNESSES, **(harnesses or {})})
