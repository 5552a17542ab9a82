"""Same seed, same numbers: any chunk size, thread count, resume point or Dask cluster."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numba
import pytest

from mcengine import api
from mcengine.errors import InputError

SMALL = ["cluster.instances=4", "cluster.spare_gpus=8"]


def _numbers(res) -> str:
    doc = dict(res.summary())
    doc.pop("elapsed_s")
    doc.pop("figures", None)
    return json.dumps(doc, sort_keys=True)


def _run(**kw):
    kw.setdefault("trials", 3000)
    kw.setdefault("seed", 11)
    kw.setdefault("overrides", SMALL)
    kw.setdefault("keep_trials", False)
    return api.run(["h100", "lite-h100"], **kw)


@pytest.fixture(scope="module")
def straight():
    return _numbers(_run(chunk_trials=4096))


def test_chunk_size_does_not_change_numbers(straight):
    assert _numbers(_run(chunk_trials=1024)) == straight


def test_thread_count_does_not_change_numbers(straight):
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = _numbers(_run(chunk_trials=2048))
    finally:
        numba.set_num_threads(before)
    assert one == straight


def test_resume_after_interrupt_gives_straight_numbers(tmp_path, straight):
    out = tmp_path / "run"
    calls = []

    def stop_after_two_chunks(done, total):
        calls.append(done)
        if len(calls) == 3:  # initial call + two finished chunks
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _run(chunk_trials=1024, out=out, progress=stop_after_two_chunks, figures=False)
    assert json.loads((out / "checkpoint.json").read_text())["state"]["trials_done"] == 2048
    with pytest.raises(InputError, match="unfinished run"):
        _run(chunk_trials=1024, out=out, figures=False)
    resumed = api.run(None, out=out, resume=True, chunk_trials=2048, keep_trials=False, figures=False)
    assert _numbers(resumed) == straight


def test_resume_refuses_a_changed_scenario(tmp_path):
    out = tmp_path / "run"

    def stop(done, total):
        if done:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _run(chunk_trials=1024, out=out, progress=stop, figures=False)
    with pytest.raises(InputError, match="differ"):
        _run(chunk_trials=1024, out=out, resume=True, overrides=[*SMALL, "cluster.spare_gpus=9"])


@pytest.mark.slow
def test_sigkill_then_resume_gives_straight_numbers(tmp_path, straight):
    out = tmp_path / "killed"
    args = [sys.executable, "-m", "mcengine.cli", "compare", "h100", "lite-h100", "--trials", "3000", "--seed", "11",
            "--chunk-trials", "1024", "--out", str(out), "--quiet", *sum((["--set", o] for o in SMALL), [])]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ck = out / "checkpoint.json"
    deadline = time.time() + 300
    while time.time() < deadline and not (ck.is_file() and json.loads(ck.read_text() or "{}").get("state", {}).get("trials_done", 0) >= 1024):
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done = json.loads(ck.read_text())["state"]["trials_done"]
    assert done in (1024, 2048, 3000)
    r = subprocess.run([*args[:3], "compare", "h100", "lite-h100", "--trials", "3000", "--seed", "11", "--resume", str(out),
                        "--json", "--quiet", *sum((["--set", o] for o in SMALL), [])], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    doc.pop("elapsed_s")
    doc.pop("figures")
    assert json.dumps(doc, sort_keys=True) == straight


@pytest.mark.slow
def test_dask_local_cluster_gives_identical_numbers(straight):
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None) as cluster:
        res = _run(chunk_trials=1024, scheduler=cluster.scheduler_address)
    assert _numbers(res) == straight
