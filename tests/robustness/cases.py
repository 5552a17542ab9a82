"""The robustness cases: hostile inputs and faults, each run as a real ``mcengine``
process, with the outcome the contract promises.

Every case must end within its time budget with its exit status (0 with finite
numbers, 2 naming the input, 128 + signal after SIGINT/SIGTERM), print no traceback,
and write nothing outside its ``--out`` folder. :func:`run_case` runs one;
``tests/robustness/test_cases.py`` asserts them all (slow) and
``python -m tests.robustness.make_table`` writes ``docs/robustness.md`` from the same
runs.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from tests import procs

#: A case that has not ended within this many seconds has hung.
BUDGET_S = 180.0
SMALL = ["--set", "cluster.instances=4", "--set", "cluster.spare_gpus=8"]


@dataclass(frozen=True)
class Case:
    """One hostile input or fault. ``argv`` may hold ``{tmp}`` (the case's folder);
    ``prepare(tmp)`` makes its files first (and may return more ``{name}`` substitutions
    for ``argv``, such as the address of a server it started); ``signal_after`` sends a
    signal once the named file exists (or after that many seconds, for a float);
    ``check(stdout)`` tests a successful run's output."""

    name: str
    argv: tuple[str, ...]
    exit: int
    says: tuple[str, ...] = ()
    prepare: Callable[[Path], dict | None] | None = None
    signal_after: tuple[int, str | float] | None = None
    check: Callable[[str], None] | None = None
    outside: tuple[str, ...] = ()  # paths that must not exist afterwards
    group: str = "input"
    busy: bool = False  # another command (``holder``) holds {tmp}/run while this one starts
    holder: tuple[str, ...] = ("run", "h100", "--trials", "400000", "--quiet", *SMALL)  # ... --out {tmp}/run
    holder_ready: str = "checkpoint.json"  # the holder holds the lock once this file is in {tmp}/run
    fault: str | None = None  # MCENGINE_FAULT_AT_WRITE for the command (mcengine/io.py)


@dataclass
class Outcome:
    exit: int
    stdout: str
    stderr: str
    seconds: float
    new_files: list[str] = field(default_factory=list)


def _write(path: Path, data: bytes | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode())


def _scenario(name_line: str) -> Callable[[Path], None]:
    return lambda tmp: _write(tmp / "s.toml", f'{name_line}\nextends = "h100"\n')


def _unfinished_run(tmp: Path, scenarios: tuple[str, ...] = ("h100",), trials: int = 400000) -> None:
    """A run folder left by a run of ``scenarios`` killed (SIGKILL) after its first checkpoint."""
    proc = subprocess.Popen([*procs.python("-m", "mcengine"), "run", *scenarios, "--trials", str(trials), "--chunk-trials", "1024",
                             "--out", str(tmp / "run"), "--quiet", *SMALL], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=procs.env())
    try:
        _wait_for(tmp / "run" / "checkpoint.json", proc)
    finally:
        proc.kill()
        proc.wait()


def _corrupt_checkpoint(tmp: Path) -> None:
    _unfinished_run(tmp)
    (tmp / "run" / "checkpoint.json").write_text("{")


def _tampered_checkpoint(tmp: Path) -> None:
    _unfinished_run(tmp)
    ck = tmp / "run" / "checkpoint.json"
    doc = json.loads(ck.read_text())
    doc["state"]["metrics"][0][2]["mean"] = 1.0
    ck.write_text(json.dumps(doc))


def _outside_run_folder(tmp: Path) -> None:
    """Issue 34 case 1: `o/trials.parquet` links to `v/`, which holds a user's part."""
    _write(tmp / "v" / "part-000000000000.parquet", b"user data")
    (tmp / "o").mkdir()
    (tmp / "o" / "trials.parquet").symlink_to("../v")


def _linked_lock(tmp: Path) -> None:
    """Issue 34 case 2: `o3/.mcengine.lock` links to a user's file."""
    _write(tmp / "v.txt", "DATA\n")
    (tmp / "o3").mkdir()
    (tmp / "o3" / ".mcengine.lock").symlink_to(tmp / "v.txt")


#: A run whose results (figures, tables) are written at the end.
FINAL_WRITES = ("run", "h100", "--trials", "2048", "--quiet", *SMALL, "--out", "{tmp}/run")
#: A sweep of two points.
SWEEP_2 = ("sweep", "h100", "--param", "econ.pue", "--values", "1.1,1.3", "--trials", "64", "--quiet", *SMALL, "--out", "{tmp}/run")


def _stopped(argv: tuple[str, ...], fault: str) -> Callable[[Path], None]:
    """A folder left by ``argv`` stopped by ``fault`` (MCENGINE_FAULT_AT_WRITE, mcengine/io.py)."""
    def prepare(tmp: Path) -> None:
        subprocess.run([*procs.python("-m", "mcengine"), *(a.replace("{tmp}", str(tmp)) for a in argv)], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env=procs.env(MCENGINE_FAULT_AT_WRITE=fault), timeout=BUDGET_S)

    return prepare


def _many_classes(tmp: Path) -> None:
    """Issue 51 case 8: a scenario of 1,000 request classes."""
    classes = "".join(f"[workload.classes.c{i}]\nshare = 1\nprompt_tokens = {500 + i}\noutput_tokens = 100\n" for i in range(1000))
    _write(tmp / "s.toml", f'name = "many"\nextends = "h100"\n{classes}')


def _hard_linked_lock(tmp: Path) -> None:
    """Issue 51 case 2: `H/o/.mcengine.lock` a hard link to a user's file."""
    _write(tmp / "victim", "DATA\n")
    (tmp / "H" / "o").mkdir(parents=True)
    os.link(tmp / "victim", tmp / "H" / "o" / ".mcengine.lock")


def _forged(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    """A checkpoint whose state ``edit`` changes, its checksum recomputed."""
    def prepare(tmp: Path) -> None:
        import hashlib

        _unfinished_run(tmp)
        ck = tmp / "run" / "checkpoint.json"
        doc = json.loads(ck.read_text())
        edit(doc["state"])
        doc["sha256"] = hashlib.sha256(json.dumps(doc["state"], sort_keys=True).encode()).hexdigest()
        ck.write_text(json.dumps(doc))

    return prepare


def _first_summary(state: dict) -> dict:
    return state["metrics"][0][2]


#: Issue 34 case 6: trials done raised to 65,536 and the checksum recomputed.
_forged_checkpoint = _forged(lambda state: state.update(trials_done=65536))


def _dask_message(msg: dict) -> bytes:
    """``msg`` framed as a Dask comm sends it over TCP (8 bytes of length, then its frames)."""
    import struct

    from distributed.protocol.core import dumps
    from distributed.protocol.utils import pack_frames

    body = pack_frames(dumps(msg))
    return struct.pack("Q", len(body)) + body


def _server(handler: str) -> Callable[[Path], dict]:
    """A local server for ``--scheduler {address}`` in a daemon thread of the test process:
    ``"http"`` a web server (Python's http.server), ``"silent"`` a socket that accepts and
    never replies, ``"greets"`` one that sends a Dask handshake and then nothing,
    ``"malformed"`` one that sends a Dask handshake and then bytes no Dask message is."""
    def prepare(tmp: Path) -> dict:
        import http.server
        import socket
        import sys
        import threading

        if handler == "http":
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            port = server.server_address[1]
        else:
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sock.listen(8)

            def hold() -> None:
                held = []  # accepted connections, kept open
                while True:
                    conn, _ = sock.accept()
                    held.append(conn)
                    if handler != "silent":  # the handshake a scheduler greets with
                        conn.sendall(_dask_message({"compression": None, "python": tuple(sys.version_info[:3]), "pickle-protocol": 5}))
                    if handler == "malformed":  # replies of the right framing that no Dask operation gives
                        conn.sendall(_dask_message({"op": "nonsense"}) * 3)

            threading.Thread(target=hold, daemon=True).start()
            port = sock.getsockname()[1]
        return {"address": f"tcp://127.0.0.1:{port}"}

    return prepare


RESHARD_65536 = ("--set", 'cluster.on_failure="reshard"', "--set", "cluster.instance_gpus=65536", "--set", "cluster.instances=2",
                 "--set", "cluster.gpus_per_host=1024")
#: Two request classes on whole instances, class b with a TPOT SLO no plan meets (issue 51 case 3).
UNSERVED_WHOLE = tuple(a for kv in ("workload.classes.a.share=0.5", "workload.classes.a.prompt_tokens=1000",
                                    "workload.classes.a.output_tokens=200", "workload.classes.b.share=0.5",
                                    "workload.classes.b.prompt_tokens=1000", "workload.classes.b.output_tokens=200",
                                    "workload.classes.b.tpot_slo_ms=0.001", 'workload.class_instances="whole"') for a in ("--set", kv))
#: 40 sweep points of one chunk each (issue 34 case 8: SIGTERM at 8 s, all 40 ran, exit 0).
SWEEP_40 = ",".join(f"{0.02 * i:.2f}" for i in range(1, 41))


def _finite_json(stdout: str) -> None:
    def walk(x):
        if isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
        elif isinstance(x, float):
            assert math.isfinite(x), stdout[:200]
        elif isinstance(x, str):
            assert x not in ("nan", "-inf"), stdout[:200]

    walk(json.loads(stdout))


def _pooled_headline(stdout: str) -> None:
    doc = json.loads(stdout)
    assert doc["wafers_without_good_dies"] > 0
    assert doc["pooled"]["cost_per_good_die_usd"] > doc["cost_per_good_die_usd"]["mean"]  # empty wafers count


def _class_card_is_the_8b(stdout: str) -> None:
    doc = json.loads(stdout)["workload"]
    assert doc["classes"]["a"]["model"] == {**doc["model"], "layers": 40, "name": "llama-3-8b (layers=40)"}, doc["classes"]["a"]["model"]


ONE_CLASS = tuple(a for kv in ("workload.classes.a.share=1", "workload.classes.a.prompt_tokens=1000",
                               "workload.classes.a.output_tokens=200") for a in ("--set", kv))


CASES: tuple[Case, ...] = (
    # ------------------------------------------------------------ NaN, inf, unbounded values
    Case("NaN defect density (hung the fab kernel)", ("yield", "h100", "--wafers", "10", "--set", "fab.defect_density_per_cm2=nan"),
         2, ("fab.defect_density_per_cm2", "nan")),
    Case("NaN HBM size in check (printed nan, exit 0)", ("check", "h100", "--set", "gpu.hbm_gb=nan"), 2, ("gpu.hbm_gb",)),
    Case("lognormal sigma = inf in a dist table", ("check", "h100", "--set",
         'fab.defect_density_per_cm2={dist="lognormal", median=0.1, sigma=inf}'), 2, ("fab.defect_density_per_cm2",)),
    Case("repair_hours = inf", ("check", "h100", "--set", "reliability.repair_hours=inf"), 2, ("reliability.repair_hours",)),
    Case("die AFR 1e308 (run time grew with it)", ("reliability", "h100", "--lifetimes", "2", "--set",
         "reliability.components.die.afr=1e308"), 2, ("reliability.components.die.afr",)),
    Case("1 µm die (geometry grew with 1/size²)", ("yield", "h100", "--wafers", "4", "--set", "fab.die_width_mm=0.001"), 2,
         ("fab.die_width_mm",)),
    Case("a million instances (superlinear, killed at 120 s)", ("reliability", "h100", "--lifetimes", "1", "--set",
         "cluster.instances=1000000"), 2, ("cluster.instances",)),
    Case("defect clustering 1e-9 (closed form 1.4e-7 vs 1.0)", ("yield", "h100", "--wafers", "10", "--set",
         "fab.defect_clustering=1e-9"), 2, ("fab.defect_clustering",)),
    Case("--trials 2^40 (7 GB before the first trial)", ("run", "h100", "--trials", "1099511627776"), 2, ("--trials",)),
    Case("an infeasible fab (infeasible only after ~10 min)", ("run", "h100", "--trials", "1024", "--set",
         "fab.defect_density_per_cm2=100", "--quiet"), 2, ("fab.defect_density_per_cm2", "wafers")),
    Case("repair never within the horizon (hung the reference)", ("reliability", "h100", "--lifetimes", "2", "--json",
         "--set", "cluster.instances=500", "--set", "cluster.instance_gpus=1", "--set", "cluster.gpus_per_host=1",
         "--set", "cluster.spare_gpus=0", "--set", "reliability.host_afr=0", "--set", "reliability.host_transient_afr=0",
         "--set", 'reliability.repair_crews="inf"', "--set", "reliability.repair_hours=1e9"), 0, check=_finite_json),
    Case("peak 1e-300 TFLOP/s (std nan, a zero std where min != max)", ("run", "h100", "--trials", "64", "--json", "--quiet",
         "--set", "gpu.peak_tflops=1e-300"), 0, check=_finite_json, group="numbers"),
    # ------------------------------------------------------------ honest numbers
    Case("wafers without a good die count in the cost", ("yield", "h100", "--wafers", "200", "--json", "--set",
         "fab.defect_density_per_cm2=20"), 0, check=_pooled_headline, group="numbers"),
    Case("a missed TPOT SLO is flagged", ("run", "h100", "--trials", "64", "--quiet", "--set", "workload.tpot_slo_ms=5"), 0,
         ("INFEASIBLE",), group="numbers"),
    # ------------------------------------------------------------ files and names
    Case("scenario name is an absolute path", ("check", "{tmp}/s.toml"), 2, ("name",),
         prepare=_scenario('name = "/tmp/mcengine-robustness-owned"'), outside=("/tmp/mcengine-robustness-owned.toml",), group="files"),
    Case("scenario name climbs out of --out", ("run", "{tmp}/s.toml", "--trials", "64", "--out", "{tmp}/out", "--quiet"), 2,
         ("name",), prepare=_scenario('name = "../../x"'), group="files"),
    Case("NUL in a scenario name", ("check", "{tmp}/s.toml"), 2, ("name",), prepare=_scenario('name = "a\\u0000b"'), group="files"),
    Case("non-UTF-8 scenario file", ("check", "{tmp}/s.toml"), 2, ("UTF-8",),
         prepare=lambda tmp: _write(tmp / "s.toml", b'name = "caf\xe9"\n'), group="files"),
    Case("deeply nested TOML", ("check", "{tmp}/s.toml"), 2, ("nested",),
         prepare=lambda tmp: _write(tmp / "s.toml", "x = " + "[" * 2000 + "]" * 2000 + "\n"), group="files"),
    Case("a directory given as the scenario", ("check", "{tmp}"), 2, ("directory",), group="files"),
    Case("malformed --set literal", ("check", "h100", "--set", 'gpu.name="unclosed'), 2, ("malformed",), group="files"),
    Case("--out is a dangling link", ("reliability", "h100", "--lifetimes", "2", "--out", "{tmp}/link"), 2, ("--out",),
         prepare=lambda tmp: (tmp / "link").symlink_to(tmp / "nowhere"), group="files"),
    Case("--out is a file (computed everything first)", ("reliability", "h100", "--lifetimes", "2", "--out", "{tmp}/file"), 2,
         ("--out",), prepare=lambda tmp: _write(tmp / "file", "x"), group="files"),
    Case("malformed --scheduler", ("run", "h100", "--trials", "64", "--scheduler", "notaurl"), 2, ("--scheduler",), group="files"),
    # ------------------------------------------------------------ output folders and resume
    Case("corrupt checkpoint.json", ("run", "--resume", "{tmp}/run", "--quiet"), 2, ("checkpoint.json",),
         prepare=_corrupt_checkpoint, group="resume"),
    Case("tampered checkpoint.json (numbers flowed into the output)", ("run", "--resume", "{tmp}/run", "--quiet"), 2,
         ("checkpoint.json", "checksum"), prepare=_tampered_checkpoint, group="resume"),
    Case("--resume with another --trials (silently ignored)", ("run", "--resume", "{tmp}/run", "--trials", "8192", "--quiet"), 2,
         ("--trials",), prepare=_unfinished_run, group="resume"),
    Case("a resume of a scenario listed twice (exit 2: name h100#2)", ("run", "--resume", "{tmp}/run", "--quiet"), 0,
         ("32,768 paired trials",), prepare=lambda tmp: _unfinished_run(tmp, ("h100", "h100"), 32768), group="resume"),
    Case("--resume A --out B (--out ignored)", ("run", "--resume", "{tmp}/run", "--out", "{tmp}/other", "--quiet"), 2,
         ("--out",), prepare=_unfinished_run, group="resume"),
    Case("--resume --keep-trials the run did not keep (failed at the end)", ("run", "--resume", "{tmp}/run", "--keep-trials",
         "--quiet"), 2, ("--keep-trials",), prepare=_unfinished_run, group="resume"),
    # ------------------------------------------------------------ signals
    Case("SIGTERM during a run (exit 143, silent)", ("run", "h100", "--trials", "400000", "--out", "{tmp}/run", "--quiet", *SMALL),
         143, ("--resume",), signal_after=(signal.SIGTERM, "run/checkpoint.json"), group="signals"),
    Case("SIGINT during a run (SystemError, exit 1)", ("run", "h100", "--trials", "400000", "--out", "{tmp}/run", "--quiet", *SMALL),
         130, ("--resume",), signal_after=(signal.SIGINT, "run/checkpoint.json"), group="signals"),
    Case("SIGTERM while the results are written (exit 143: 'nothing saved yet', the folder never resumed)", FINAL_WRITES, 143,
         ("every result was written",), fault="cost_per_mtok_cdf.png:TERM", group="signals"),
    Case("--resume after SIGKILL while the results were written (refused: an entry mcengine did not write)", ("run", "--resume",
         "{tmp}/run", "--quiet"), 0, ("2,048 paired trials",), prepare=_stopped(FINAL_WRITES, "cost_per_mtok_cdf.png:KILL"), group="resume"),
    Case("the same command after a full disk while the results were written (refused once space was freed)", FINAL_WRITES, 0,
         ("2,048 paired trials",), prepare=_stopped(FINAL_WRITES, "summary.json:ENOSPC"), group="resume"),
    Case("the same sweep after SIGKILL while its results were written (refused)", SWEEP_2, 0, ("econ.pue",),
         prepare=_stopped(SWEEP_2, "summary.json:KILL"), group="resume"),
    Case("SIGINT during start-up (traceback)", ("run", "h100", "--trials", "64", "--quiet"), 130, ("interrupted",),
         signal_after=(signal.SIGINT, 0.3), group="signals"),
    Case("a second run on a busy --out (mixed two runs)", ("run", "h100", "--trials", "2048", "--out", "{tmp}/run", "--quiet"), 2,
         ("in use", "`mcengine run`"), busy=True, group="signals"),
    Case("a second sweep with --force on a busy sweep's --out (replaced its summary.json)", ("sweep", "h100", "--param",
         "econ.pue", "--values", "1.1,1.2", "--trials", "64", "--quiet", "--out", "{tmp}/run", "--force", *SMALL), 2, ("in use", "`mcengine sweep`"),
         busy=True, holder=("sweep", "lite-h100", "--param", "fab.defect_density_per_cm2", "--values", SWEEP_40, "--trials", "8192", "--quiet"),
         holder_ready="mcengine.json", group="signals"),
    # ------------------------------------------------------------ --out touches only what mcengine wrote (issue 34, 33)
    Case("trials.parquet a link to a folder outside --out (deleted the user's part there)", ("run", "h100", "--trials", "64",
         "--quiet", "--out", "{tmp}/o", "--force", *SMALL), 2, ("--out", "trials.parquet is not mcengine's"), prepare=_outside_run_folder,
         group="files"),
    Case(".mcengine.lock a link to a user's file (truncated it to a PID)", ("run", "h100", "--trials", "64", "--quiet", "--out",
         "{tmp}/o3", "--force", *SMALL), 2, ("--out", ".mcengine.lock is a link"), prepare=_linked_lock, group="files"),
    Case(".mcengine.lock a hard link to a user's file (wrote a PID into it, exit 0)", ("run", "h100", "--trials", "64", "--quiet",
         "--out", "{tmp}/H/o", *SMALL), 2, ("--out", ".mcengine.lock is a hard link"), prepare=_hard_linked_lock, group="files"),
    Case("run mine.toml --out . --force (replaced mine.toml, listed it, a later --force deleted it)", ("run", "mine.toml", "--trials",
         "64", "--quiet", "--out", ".", "--force", *SMALL), 2, ("--out", "mine.toml is an input of this command"),
         prepare=lambda tmp: _write(tmp / "mine.toml", '# mine\nname = "mine"\nextends = "h100"\n'), group="files"),
    Case("a folder of the user's files without a manifest (h100.toml and summary.json replaced)", ("yield", "h100.toml", "--wafers",
         "8", "--out", "."), 2, ("--out", "mcengine did not write", "h100.toml, summary.json"),
         prepare=lambda tmp: (_write(tmp / "h100.toml", '# mine\nname = "h100"\nextends = "h100"\n'), _write(tmp / "summary.json", "{}")),
         group="files"),
    Case("mcengine.json/ a folder where the manifest goes (raw exit 1: Is a directory)", ("yield", "h100", "--wafers", "8", "--out",
         "{tmp}/m1", "--force"), 2, ("--out", "mcengine.json"), prepare=lambda tmp: (tmp / "m1" / "mcengine.json").mkdir(parents=True),
         group="files"),
    # ------------------------------------------------------------ resume honours everything or refuses (issue 34)
    Case("--resume --set cluster.reshard_hours=0.3 (silently ignored)", ("run", "--resume", "{tmp}/run", "--set",
         "cluster.reshard_hours=0.3", "--quiet"), 2, ("--set cluster.reshard_hours=0.3",), prepare=_unfinished_run, group="resume"),
    Case("checkpoint trials_done 65,536 with its sha256 recomputed (accepted)", ("run", "--resume", "{tmp}/run", "--quiet"), 2,
         ("checkpoint.json", "does not describe this run", "65536"), prepare=_forged_checkpoint, group="resume"),
    Case("checkpoint m2 = -5, checksum recomputed (exit 1)", ("run", "--resume", "{tmp}/run", "--quiet"), 2,
         ("checkpoint.json", "m2 is -5"), prepare=_forged(lambda st: _first_summary(st).update(m2=-5.0)), group="resume"),
    Case("checkpoint sketch bucket key of 11 digits (exit 1)", ("run", "--resume", "{tmp}/run", "--quiet"), 2,
         ("checkpoint.json", "bucket 12345678901"), prepare=_forged(lambda st: _first_summary(st)["sketch"]["positive"].update({"12345678901": 1})),
         group="resume"),
    Case("checkpoint mean = NaN (accepted, printed wrong numbers)", ("run", "--resume", "{tmp}/run", "--quiet"), 2,
         ("checkpoint.json", "mean is nan"), prepare=_forged(lambda st: _first_summary(st).update(mean=math.nan)), group="resume"),
    Case("checkpoint sketch alpha = 0 (accepted, printed wrong numbers)", ("run", "--resume", "{tmp}/run", "--quiet"), 2,
         ("checkpoint.json", "alpha is 0"), prepare=_forged(lambda st: _first_summary(st)["sketch"].update(alpha=0)), group="resume"),
    Case("checkpoint min > max (accepted, printed wrong numbers)", ("run", "--resume", "{tmp}/run", "--quiet"), 2,
         ("checkpoint.json", "is above its max"), prepare=_forged(lambda st: _first_summary(st).update(min=_first_summary(st)["max"] + 1)),
         group="resume"),
    Case("checkpoint scale = 0 (accepted, printed wrong numbers)", ("run", "--resume", "{tmp}/run", "--quiet"), 2,
         ("checkpoint.json", "scale is 0"), prepare=_forged(lambda st: _first_summary(st).update(scale=0.0)), group="resume"),
    # ------------------------------------------------------------ every wait has a deadline; every command hears signals (issue 34)
    Case("--scheduler a web server (never exited)", ("run", "h100", "--trials", "64", "--quiet", "--scheduler", "{address}"), 2,
         ("--scheduler", "Dask"), prepare=_server("http"), group="signals"),
    Case("--scheduler a socket that accepts and never replies (never exited)", ("run", "h100", "--trials", "64", "--quiet",
         "--scheduler", "{address}"), 2, ("--scheduler", "within 10 s"), prepare=_server("silent"), group="signals"),
    Case("--scheduler a server that greets like Dask, then replies malformed (exit 1: AssertionError)", ("run", "h100", "--trials",
         "64", "--quiet", "--scheduler", "{address}"), 2, ("--scheduler", "does not reply like one"), prepare=_server("malformed"),
         group="signals"),
    Case("--scheduler a server that greets like Dask, then is silent (empty brackets)", ("run", "h100", "--trials", "64", "--quiet",
         "--scheduler", "{address}"), 2, ("--scheduler", "(TimeoutError)"), prepare=_server("greets"), group="signals"),
    Case("SIGTERM during a sweep of one-chunk points (all 40 ran, exit 0)", ("sweep", "lite-h100", "--param",
         "fab.defect_density_per_cm2", "--values", SWEEP_40, "--trials", "8192", "--quiet", "--out", "{tmp}/o"), 143,
         ("nothing saved",), signal_after=(signal.SIGTERM, 10.0), group="signals"),  # ~40 s of work: still running at 10 s
    Case("SIGTERM during paper --quick (ignored)", ("paper", "--quick", "--quiet", "--out", "{tmp}/o"), 143, ("nothing saved",),
         signal_after=(signal.SIGTERM, 10.0), group="signals"),
    # validate takes 2-4 s with the kernels cached: the signal lands while it imports or
    # checks (the handler is installed first thing, so either way it is exit 130)
    Case("SIGINT during validate", ("validate",), 130, ("interrupted",), signal_after=(signal.SIGINT, 1.0), group="signals"),
    # bench --quick takes about 5 s with the kernels cached: the signal lands while it measures
    Case("SIGTERM during bench --quick (SystemError, exit 1)", ("bench", "--quick"), 143, ("interrupted",),
         signal_after=(signal.SIGTERM, 2.0), group="signals"),
    # ------------------------------------------------------------ bounded cost, bad input (issue 34)
    # the served plan's capacity table (workload.plan = "per_trial") degrades by replicas of
    # one size and stays bounded; the static search of the median plan refuses beyond its bound
    Case("reshard on 65,536 GPUs with 4,000 layers (unfinished at 400 s)", ("run", "lite-h100", "--trials", "64", "--quiet",
         *RESHARD_65536, "--set", "workload.model.layers=4000"), 0, ("64 paired trials",), group="input"),
    Case("the same with workload.plan = median (unfinished at 400 s)", ("run", "lite-h100", "--trials", "64", "--quiet",
         *RESHARD_65536, "--set", "workload.model.layers=4000", "--set", 'workload.plan="median"'), 2,
         ("cluster.on_failure", "at most 4,096"), group="input"),
    Case("an integer of 5,000 digits (raw exit 1: Exceeds the limit)", ("check", "h100", "--set", "cluster.instances=" + "9" * 5000), 2,
         ("cluster.instances", "4,300 digits"), group="input"),
    Case("a key of 2,001 dotted parts (RecursionError)", ("check", "h100", "--set", ".".join(["a"] * 2001) + "=1"), 2,
         ("--set a.a.a", "at most 32"), group="input"),
    Case("sweep --param name (KeyError)", ("sweep", "h100", "--param", "name", "--values", "a,b", "--trials", "64"), 2,
         ("--param", "name"), group="input"),
    Case("whole-instance mix with a class no plan serves, reshard (exit 1: non-finite capacity_availability)", ("run", "h100",
         "--trials", "64", "--quiet", "--json", *SMALL, *UNSERVED_WHOLE, "--set", 'cluster.on_failure="reshard"'), 0,
         check=_finite_json, group="numbers"),
    Case("the same without reshard (numpy RuntimeWarnings: 0/0, NaN cast to int64)", ("run", "h100", "--trials", "64", "--quiet",
         "--json", *SMALL, *UNSERVED_WHOLE), 0, check=_finite_json, group="numbers"),
    Case("the same in roofline (ZeroDivisionError)", ("roofline", "h100", "--json", *SMALL, *UNSERVED_WHOLE), 0,
         check=_finite_json, group="numbers"),
    Case("a class's model edit with workload.model llama-3-8b (a 'custom' card with the 70B's hidden size)", ("check", "h100",
         "--json", "--set", 'workload.model="llama-3-8b"', *ONE_CLASS, "--set", "workload.classes.a.model.layers=40"), 0,
         check=_class_card_is_the_8b, group="input"),
    Case("a class length no plan fits (named workload.prompt_tokens)", ("run", "h100", "--trials", "64", "--quiet", "--set",
         "workload.classes.a.share=1", "--set", "workload.classes.a.prompt_tokens=10000000", "--set", "workload.classes.a.output_tokens=200"),
         2, ("workload.classes.a.prompt_tokens = 10,000,000",), group="input"),
    Case("cluster.gpus_per_nic = 64 with 8 GPUs per host (accepted against its own bound)", ("check", "h100", "--set",
         "cluster.gpus_per_nic=64"), 2, ("cluster.gpus_per_nic", "cluster.gpus_per_host"), group="input"),
    Case("1,000 request classes (100 s for 64 trials; a SIGTERM waited 134 s)", ("run", "{tmp}/s.toml", "--trials", "64", "--quiet",
         *SMALL), 2, ("workload.classes", "at most 32"), prepare=_many_classes, group="input"),
    Case("sweep --param run.trials (identical rows)", ("sweep", "h100", "--param", "run.trials", "--values", "64,128", "--trials",
         "64", "--quiet", *SMALL), 2, ("--param", "run.trials", "--trials"), group="input"),
    Case("sweep --param run.seed (identical rows)", ("sweep", "h100", "--param", "run.seed", "--values", "1,2", "--trials", "64",
         "--quiet", *SMALL), 2, ("--param", "run.seed", "--seed"), group="input"),
    Case("compare with per-scenario run.trials and run.seed (ran 128 trials at seed 0)", ("compare", "h100", "lite-h100", "--set",
         "A:run.trials=128", "--set", "B:run.trials=256", "--set", "B:run.seed=9", "--quiet", *SMALL), 2, ("run.trials", "run.seed"),
         group="input"),
    Case("run.horizon_years = 1e-310 (RuntimeWarning, exit 1: cost inf)", ("run", "h100", "--trials", "64", "--quiet", *SMALL,
         "--set", "run.horizon_years=1e-310"), 2, ("run.horizon_years",), group="input"),
    Case("run.horizon_years = 1e-305 (exit 0: 3.7e305 USD per M tokens)", ("run", "h100", "--trials", "64", "--quiet", *SMALL,
         "--set", "run.horizon_years=1e-305"), 2, ("run.horizon_years",), group="input"),
)


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def run_case(case: Case, tmp: Path) -> Outcome:
    """Run ``case`` as a real process in ``tmp`` (its working folder)."""
    tmp.mkdir(parents=True, exist_ok=True)
    made = case.prepare(tmp) if case.prepare else None
    subs = {"tmp": str(tmp), **(made if isinstance(made, dict) else {})}
    argv = list(case.argv)
    for name, value in subs.items():
        argv = [a.replace("{" + name + "}", value) for a in argv]
    before = _files(tmp)
    allowed = {str(Path(a).relative_to(tmp)) for a in argv if a.startswith(str(tmp)) and a != str(tmp)}
    kept = _contents(tmp, allowed)
    holder = None
    if case.busy:
        holder = subprocess.Popen([*procs.python("-m", "mcengine"), *case.holder, "--out", str(tmp / "run")],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=procs.env())
        _wait_for(tmp / "run" / case.holder_ready, holder)
    start = time.perf_counter()
    fault = {"MCENGINE_FAULT_AT_WRITE": case.fault} if case.fault else {}
    proc = subprocess.Popen([*procs.python("-m", "mcengine"), *argv], cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=procs.env(COLUMNS="120", **fault))
    try:
        if case.signal_after is not None:
            signum, when = case.signal_after
            if isinstance(when, str):
                _wait_for(tmp / when, proc)
            else:
                time.sleep(when)
            proc.send_signal(signum)
        out, err = proc.communicate(timeout=BUDGET_S)
    finally:
        if proc.poll() is None:
            proc.kill()
        if holder is not None:
            holder.kill()
            holder.wait()
    seconds = time.perf_counter() - start
    new = sorted(f for f in _files(tmp) - before if not _inside(f, allowed))
    new += [p for p in case.outside if Path(p).exists()]
    after = _contents(tmp, allowed)
    new += [f"{f} (changed or deleted)" for f in sorted(kept) if after.get(f) != kept[f]]
    return Outcome(proc.returncode, out, err, seconds, new)


def _inside(rel: str, allowed: set[str]) -> bool:
    return any(rel == a or rel.startswith(a + "/") for a in allowed)


def _contents(root: Path, allowed: set[str]) -> dict:
    """Every entry under ``root`` outside the ``allowed`` folders: a file's bytes, a link's
    target (never followed), or "dir"."""
    out = {}
    for p in root.rglob("*"):
        rel = str(p.relative_to(root))
        if _inside(rel, allowed):
            continue
        out[rel] = ("link", os.readlink(p)) if p.is_symlink() else "dir" if p.is_dir() else p.read_bytes()
    return out


def _wait_for(path: Path, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + BUDGET_S
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{path} never appeared")
        time.sleep(0.05)


def problems(case: Case, got: Outcome) -> list[str]:
    """What is wrong with ``got`` for ``case`` (empty when it keeps the contract)."""
    out = []
    if got.exit != case.exit:
        out.append(f"exit {got.exit}, expected {case.exit}")
    text = got.stderr if case.exit else got.stdout + got.stderr
    out += [f"does not say {s!r}" for s in case.says if s not in text]
    if "Traceback" in got.stderr:
        out.append("printed a traceback")
    if "Warning:" in got.stderr:
        out.append("printed a raw warning")
    if got.new_files:
        out.append(f"wrote outside --out: {got.new_files}")
    if case.check is not None and got.exit == 0:
        try:
            case.check(got.stdout)
        except AssertionError as exc:
            out.append(f"check failed: {exc}")
    return out
