"""Instructions per lifetime of the reliability kernel, counted by valgrind's callgrind.

Wall-clock timings on a shared machine can vary by tens of percent between hours, so
a kernel change of a few percent cannot be judged by time. An instruction count can: callgrind counts the
instructions of one :func:`mcengine.kernels.life.simulate_lifetimes` call, the same to
about 0.01% from run to run on an idle machine (about 2% with the other core busy),
whatever the machine's speed.

How: a child process runs under ``valgrind --tool=callgrind --instr-atstart=no``
(instrumentation off, so imports, compilation and the warm-up call are not counted); it
builds the kernel arguments of a case from the shipped scenarios, makes one warm-up
call, and then waits. The parent switches instrumentation on with ``callgrind_control
-i on PID``, lets the child make the measured call, switches it off, and reads the
total from callgrind's report. The child waits by polling a flag file, so valgrind gets
control to take the command. Counts are single-threaded (one numba thread), of the
kernel only (the input draws and tables are built before the count starts).

The counted code is numba's build for a generic x86-64 CPU (``NUMBA_CPU_NAME=generic``):
valgrind emulates a CPU of its own (without AVX-512), so a build for the host's CPU
would be compiled again under valgrind (minutes, at valgrind's pace) each time a kernel
source changes. The generic build is the same whatever CPU runs it, so a native process
compiles it first into a cache of its own (seconds), and the child under valgrind loads
it: right for comparing two versions, close to but not the instructions of a native run.

Cases: ``h100`` (one variant), ``lite`` (``lite-h100-2x`` alone), ``lite-pair``
(``lite-h100-2x`` with its fast-swap variant in one pass, as in the case study) and
``h100-heavy`` (the failure-heavy cluster, :data:`~.reliability.FAILURE_HEAVY`: h100 with
its GPUs' rates ten times the shipped ones).

Valgrind is a Linux/macOS developer tool, not a dependency: without ``valgrind`` and
``callgrind_control`` on the PATH, :func:`run` raises :class:`InputError`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcengine.errors import InputError, Problem

from .reliability import FAILURE_HEAVY

#: Case name -> the scenarios whose lifetimes one kernel call simulates (variants): a
#: shipped name, or (name, its ``--set`` overrides).
CASES = {
    "h100": ("h100",),
    "lite": ("lite-h100-2x",),
    "lite-pair": ("lite-h100-2x", "lite-h100-2x-fastswap"),
    "h100-heavy": (FAILURE_HEAVY,),
}
#: Seed of the measured lifetimes (any fixed value: counts depend on it slightly).
SEED = 7
_POLL_S = 0.05
_TIMEOUT_S = 1800.0


def kernel_arguments(case: str, lifetimes: int) -> dict:
    """The arguments of :func:`~mcengine.kernels.life.simulate_lifetimes` for ``case``
    (its variants' law tables side by side), trials ``0 .. lifetimes - 1``."""
    from mcengine.scenario import load_scenario
    from mcengine.scenario.sampling import draw_inputs
    from mcengine.stages.reliability import _params, group_arguments

    scenarios = [load_scenario(ref) if isinstance(ref, str) else load_scenario(*ref) for ref in CASES[case]]
    return group_arguments([_params(s, draw_inputs(s, SEED, 0, lifetimes)) for s in scenarios])


def _warm(case: str):
    """Load or compile the kernel ``case`` calls (one call of two lifetimes); return it."""
    import numba
    import numpy as np

    from mcengine.kernels.life import simulate_lifetimes

    numba.set_num_threads(1)
    simulate_lifetimes(np.uint64(SEED), 0, **kernel_arguments(case, 2))
    return simulate_lifetimes


def _child(case: str, lifetimes: int, flags: Path) -> None:
    """Run under callgrind: warm up, signal ``ready``, wait for ``go``, make the measured
    call, signal ``done``, wait for ``end``."""
    import numpy as np

    simulate_lifetimes = _warm(case)  # loads the build the native warm-up cached, uncounted
    args = kernel_arguments(case, lifetimes)
    _signal_and_wait(flags, "ready", "go")
    simulate_lifetimes(np.uint64(SEED), 0, **args)
    _signal_and_wait(flags, "done", "end")


def _signal_and_wait(flags: Path, signal: str, wait_for: str) -> None:
    (flags / signal).touch()
    while not (flags / wait_for).exists():
        time.sleep(_POLL_S)


def _wait_for(flags: Path, name: str, child: subprocess.Popen) -> None:
    start = time.monotonic()
    while not (flags / name).exists():
        if child.poll() is not None:
            raise RuntimeError(f"the callgrind child exited ({child.returncode}) before {name!r}")
        if time.monotonic() - start > _TIMEOUT_S:
            child.kill()
            raise RuntimeError(f"the callgrind child took over {_TIMEOUT_S:.0f} s to reach {name!r}")
        time.sleep(_POLL_S)


def count(case: str, lifetimes: int) -> int:
    """Instructions of one single-threaded kernel call of ``lifetimes`` lifetimes."""
    with tempfile.TemporaryDirectory() as tmp:
        flags = Path(tmp)
        out = flags / "callgrind.out"
        env = {**os.environ, "NUMBA_NUM_THREADS": "1", "PYTHONPATH": _child_path(), "NUMBA_CACHE_DIR": str(VALGRIND_CACHE),
               "NUMBA_CPU_NAME": "generic"}
        harness = [sys.executable, "-m", "benchmarks.harness.instructions"]
        subprocess.run([*harness, "--warm", case], env=env, check=True, capture_output=True, timeout=_TIMEOUT_S)
        cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
               *harness, "--child", case, str(lifetimes), str(flags)]
        child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        try:
            _wait_for(flags, "ready", child)
            _control(child.pid, "on")
            (flags / "go").touch()
            _wait_for(flags, "done", child)
            _control(child.pid, "off")
            (flags / "end").touch()
            _, err = child.communicate(timeout=_TIMEOUT_S)
        finally:
            if child.poll() is None:
                child.kill()
        if child.returncode != 0:
            raise RuntimeError(f"callgrind child failed ({child.returncode}):\n{err[-2000:]}")
        match = re.search(r"Collected\s*:\s*(\d+)", err)
        if match is None:
            raise RuntimeError(f"no instruction total in callgrind's report:\n{err[-2000:]}")
        return int(match.group(1))


#: numba's cache for the generic build: apart from the native cache, which would
#: otherwise hand later native runs the slower build (about 20% on the life kernel).
VALGRIND_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mcengine-valgrind-numba"


def _child_path() -> str:
    """PYTHONPATH of the child: the repository root (for ``benchmarks``) before the caller's."""
    root = str(Path(__file__).resolve().parents[2])
    return os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)


def _control(pid: int, state: str) -> None:
    subprocess.run(["callgrind_control", "-i", state, str(pid)], check=True, capture_output=True)


def run(cases: tuple[str, ...] = tuple(CASES), lifetimes: int = 256) -> dict:
    """Instructions per lifetime of each case (one call of ``lifetimes`` lifetimes)."""
    missing = [tool for tool in ("valgrind", "callgrind_control") if shutil.which(tool) is None]
    if missing:
        raise InputError(Problem("valgrind", ", ".join(missing), "install valgrind (its callgrind tool) to count instructions"))
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        raise InputError(Problem("case", ", ".join(unknown), f"allowed: {', '.join(CASES)}"))
    if lifetimes < 1:
        raise InputError(Problem("--lifetimes", lifetimes, "allowed: a positive number of lifetimes"))
    rows = {}
    for case in cases:
        total = count(case, lifetimes)
        rows[case] = {"scenarios": [ref if isinstance(ref, str) else f"{ref[0]} {' '.join(ref[1])}" for ref in CASES[case]],
                      "lifetimes": lifetimes, "instructions": total,
                      "instructions_per_lifetime": total / lifetimes}
    return {"tool": "valgrind callgrind", "seed": SEED, "threads": 1, "cases": rows}


if __name__ == "__main__" and sys.argv[1:2] == ["--child"]:
    _child(sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]))
elif __name__ == "__main__" and sys.argv[1:2] == ["--warm"]:
    _warm(sys.argv[2])
