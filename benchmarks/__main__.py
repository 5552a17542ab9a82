"""Run the benchmark harness from the repository root; prints one JSON document.

Usage::

    python -m benchmarks [HARNESS ...] [--quick]
    python -m benchmarks compile --against REV [--quick]
    python -m benchmarks instructions [--cases h100 lite lite-pair] [--lifetimes N]
    python -m benchmarks counts [--against REV]
    python -m benchmarks plans --against REV [--quick]
    python -m benchmarks load [--against REV] [--quick] [--mix]
    python -m benchmarks memory [--against REV] [--adaptive] [--keep-trials] [--trials N ...]

HARNESS among ``fab`` (defect kernel vs a NumPy peer), ``reliability`` (life kernel vs
a SimPy peer: lifetimes/s and events per lifetime of h100 and lite-h100), ``chain``
(end-to-end throughput of the case study), ``training`` (the chain's
trials/s with h100 and lite-h100 as training jobs against the same serving),
``memory`` (peak memory of the case study at 10⁴, 10⁵ and 10⁶ trials: flat),
``compile`` (cold start: compile seconds and peak MB of a first run on an empty cache),
``rqmc`` (standard errors at equal trials, Sobol' against random inputs),
``availability`` (the variance of unavailability split into what the inputs and what a
lifetime's own events make: the ceiling of any variance reduction on either; and the
control-variate estimator's reduction per design, docs/availability-vr.md), ``load`` (chain
trials/s with a demand against "saturate", docs/load.md) and ``serve`` (the request-level
serving simulator's requests/s, beside a SimPy M/M/c peer) and ``sobol`` (the case study's
Sobol' indices at N = 1,024 base trials for two seeds: wall and CPU seconds, the widest
total-index interval, whether the drivers' ranking agrees) and ``plans`` (CPU seconds per
10⁵ trials of the case study's plan tables and of their batch-limit searches, and NumPy's
cost per trial of one probe of each step-time formula the searches evaluate); default:
all twelve.
``memory --against REV`` measures the peaks of this tree and of git revision REV
alternately, ``plans --against REV`` the plan tables' CPU of both trees in alternate fresh
processes, ``load --against REV`` the chain's time per trial with a demand against
saturation of both trees in interleaved fresh processes (each round's ratios and load
average; ``load --mix``, with or without ``--against``, times the shipped Azure 2023 mix of
request classes in place of the case study); ``memory --adaptive`` lets the adaptive rule size the chunks (the chunks it
picked are in the report), ``memory --keep-trials`` runs as ``mcengine run --out DIR
--keep-trials`` does (the per-trial table written, the verdict's drivers read back from
it), ``memory --trials N ...`` measures those trial counts (default 10⁴, 10⁵, 10⁶).
``compile --against REV`` runs the cold starts and the life kernel's rates on this tree
and on git revision REV side by side, with the ratios.
``instructions`` counts the life kernel's instructions per lifetime with valgrind's
callgrind (use it to judge a kernel change on a machine whose speed varies).
``--record docs/benchmarks.md`` also writes the figures into the benchmark record, one
section per harness with the machine and commit (:mod:`.harness.record`).
``counts`` counts the life kernel's loop iterations and heap operations per lifetime
(an instrumented copy of the package), beside its events; ``--against REV`` also of REV.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from mcengine.errors import InputError, Problem

from .harness import HARNESSES, run_all
from .harness import compile, counts, instructions, load, memory, plans, record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("harness", nargs="*", choices=[*HARNESSES, "instructions", "counts"], metavar="HARNESS")
    parser.add_argument("--quick", action="store_true", help="seconds-long version (smoke test)")
    parser.add_argument("--cases", nargs="+", default=list(instructions.CASES), help="instructions: cases to count")
    parser.add_argument("--lifetimes", type=int, default=256, help="instructions: lifetimes per counted call")
    parser.add_argument("--adaptive", action="store_true",
                        help="memory: let the adaptive rule size the chunks (default: its cap, the worst case)")
    parser.add_argument("--keep-trials", action="store_true",
                        help="memory: run as `mcengine run --out DIR --keep-trials` (the per-trial table written and read back)")
    parser.add_argument("--trials", type=int, nargs="+", metavar="N", help="memory: the trial counts to measure (default: 10^4, 10^5, 10^6)")
    parser.add_argument("--mix", action="store_true",
                        help="load: time the shipped Azure 2023 mix of request classes (h100, lite-h100) instead of the case study")
    parser.add_argument("--against", metavar="REV", help="compile, counts, memory, plans, load: also measure git revision REV, side by side")
    parser.add_argument("--record", metavar="PATH", type=Path,
                        help="also write the figures into the benchmark record at PATH (docs/benchmarks.md), "
                             "one section per harness, with the machine and commit")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    try:
        if args.mix and args.harness != ["load"]:
            raise InputError(Problem("--mix", True, "allowed with the load harness alone (python -m benchmarks load --mix [--against REV])"))
        if "counts" in args.harness:
            doc = counts.run(args.against)
        elif (args.against or args.adaptive or args.keep_trials or args.trials) and "memory" in args.harness:
            doc = memory.run(args.quick, args.against, args.adaptive, args.keep_trials, tuple(args.trials or ()))
        elif args.against and "plans" in args.harness:
            doc = plans.side_by_side(args.against, args.quick)
        elif args.against and "load" in args.harness:
            doc = load.side_by_side(args.against, args.quick, args.mix)
        elif args.mix:
            doc = run_all(quick=args.quick, stages=("load",), harnesses={"load": lambda quick: load.run(quick, mix=True)})
        elif args.against:
            doc = compile.side_by_side(args.against, args.quick)
        elif "instructions" in args.harness:
            doc = instructions.run(tuple(args.cases), args.lifetimes)
        else:
            doc = run_all(quick=args.quick, stages=tuple(args.harness))
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(doc, indent=2))
    if args.record:
        named = doc if "machine" in doc else {"-".join(args.harness or ["compile"]) + ("-mix" if args.mix else "") + ("-against" if args.against else ""): doc}
        record.write(args.record, named, load_before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
