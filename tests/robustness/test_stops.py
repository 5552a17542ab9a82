"""Property: a command stopped at any of its file writes, by SIGTERM, by SIGKILL or by a
full disk, leaves a folder that its ``--resume`` (a run) or the same command run again
finishes, to the straight run's numbers (issue 51 case 1): a chain run, the analyses
(a sweep, a tornado) and the stage commands (``yield``, ``reliability``, ``roofline``);
``paper`` (about a minute even with ``--quick``) saves through the same code, api._save.

The stop comes from the fault hook of :mod:`mcengine.io` (``MCENGINE_FAULT_AT_WRITE=K:KIND``:
at the K-th file write, once its bytes are in the temporary file); K is drawn among the
writes the command makes (counted by running it once in this process) with a fixed seed.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest

from mcengine import io as mio
from tests import procs

SMALL = ("--set", "cluster.instances=4", "--set", "cluster.spare_gpus=8")
#: Each command on a small sample, writing JSON to stdout and its files to the folder OUT.
COMMANDS = {
    "run": ("run", "h100", "lite-h100", "--trials", "2048", "--chunk-trials", "1024", "--quiet", *SMALL),
    "sweep": ("sweep", "h100", "--param", "econ.pue", "--values", "1.1,1.3", "--trials", "64", "--quiet", *SMALL),
    "tornado": ("tornado", "h100", "--trials", "16", "--quiet", *SMALL),
    "yield": ("yield", "h100", "--wafers", "4"),
    "reliability": ("reliability", "h100", "--lifetimes", "4", *SMALL),
    "roofline": ("roofline", "h100"),
}
KINDS = {"TERM": (143,), "KILL": (-9,), "ENOSPC": (1,)}


def _numbers(stdout: str) -> dict:
    doc = json.loads(stdout)
    for key in ("elapsed_s", "provenance", "figures"):
        doc.pop(key, None)
    return doc


@pytest.fixture(scope="module")
def straight(tmp_path_factory) -> dict:
    """Per command: (its numbers, the file writes it makes) from one run in this process."""
    from tests.conftest import run_cli

    out = {}
    for name, argv in COMMANDS.items():
        before = mio._writes
        r = run_cli(*argv, "--json", "--out", str(tmp_path_factory.mktemp(name) / "o"))
        assert r.code == 0, r.err
        out[name] = (_numbers(r.out), mio._writes - before)
    return out


def _mcengine(*argv: str, fault: str | None = None) -> subprocess.CompletedProcess:
    extra = {mio.FAULT_ENV: fault} if fault else {}
    return subprocess.run([*procs.python("-m", "mcengine"), *argv], capture_output=True, text=True, env=procs.env(**extra), timeout=300)


def _write_number(name: str, kind: str, writes: int) -> int:
    """The write a stop lands on: drawn among the command's writes (a fixed seed per
    command and kind), and for a run's SIGKILL one of its last writes (the results)."""
    if (name, kind) == ("run", "KILL"):
        return writes - 2
    return 1 + random.Random(f"{name}:{kind}").randrange(writes)


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_stop_at_any_write_leaves_a_folder_that_finishes_to_the_straight_numbers(straight, tmp_path, name, kind):
    numbers, writes = straight[name]
    k = _write_number(name, kind, writes)
    out = str(tmp_path / "o")
    argv = (*COMMANDS[name], "--json", "--out", out)
    stopped = _mcengine(*argv, fault=f"{k}:{kind}")
    assert stopped.returncode in KINDS[kind], (k, writes, stopped.stderr[-1500:])
    assert "Traceback" not in stopped.stderr
    if kind == "TERM":  # one line saying what was saved
        assert stopped.stderr.splitlines()[-1].startswith("interrupted: "), stopped.stderr
    resumable = name == "run" and (Path(out) / "run.json").exists()
    again = _mcengine("run", "--resume", out, "--json") if resumable else _mcengine(*argv)
    assert again.returncode == 0, (k, writes, stopped.stderr[-500:], again.stderr[-1500:])
    assert _numbers(again.stdout) == numbers
