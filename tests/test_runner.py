"""Same seed, same numbers: any chunk size, thread count, resume point or Dask cluster."""

from __future__ import annotations

import json
import math
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
    doc.pop("provenance", None)  # the command line differs between a straight and a resumed run
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
    for key in ("elapsed_s", "figures", "provenance"):  # the command lines differ
        doc.pop(key)
    assert json.dumps(doc, sort_keys=True) == straight


@pytest.mark.slow
def test_dask_local_cluster_gives_identical_numbers(straight):
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None) as cluster:
        res = _run(chunk_trials=1024, scheduler=cluster.scheduler_address)
    assert _numbers(res) == straight


# ----------------------------------------------------------------------------- output folders you can trust
def _interrupted_run(out, **kw):
    """A run stopped after its first chunk (checkpoint of 1,024 trials in ``out``)."""
    def stop(done, total):
        if done:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _run(chunk_trials=1024, out=out, progress=stop, figures=False, **kw)


def test_a_second_run_on_a_locked_folder_is_refused_naming_the_holder(tmp_path):
    from mcengine.outfolder import locked

    out = tmp_path / "busy"
    with locked(out):
        with pytest.raises(InputError, match=rf"in use by another mcengine run \(process {os.getpid()}\)"):
            _run(out=out, figures=False)
    _run(trials=1024, out=out, figures=False)  # free again once the holder is gone


@pytest.mark.parametrize("tamper", ["mean", "trials_done", "truncate", "empty", "format", "run_seed"])
def test_resume_refuses_a_checkpoint_that_does_not_verify(tmp_path, tamper):
    out = tmp_path / "run"
    _interrupted_run(out)
    ck, run_file = out / "checkpoint.json", out / "run.json"
    doc = json.loads(ck.read_text())
    if tamper == "mean":
        doc["state"]["metrics"][0][2]["mean"] *= 0.5
    elif tamper == "trials_done":
        doc["state"]["trials_done"] = 2048
    elif tamper == "format":
        doc = doc["state"]  # the layout without fingerprint and checksum
    elif tamper == "run_seed":
        run = json.loads(run_file.read_text())
        run["seed"] = 12
        run_file.write_text(json.dumps(run))
    text = {"truncate": ck.read_text()[:100], "empty": ""}.get(tamper, json.dumps(doc))
    ck.write_text(text)
    with pytest.raises(InputError) as err:
        api.run(None, out=out, resume=True, figures=False)
    named = run_file if tamper == "run_seed" else ck
    assert str(named) in str(err.value)


def test_a_checkpoint_of_another_run_is_refused(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _interrupted_run(a)
    _interrupted_run(b, seed=12)
    (a / "checkpoint.json").write_text((b / "checkpoint.json").read_text())
    with pytest.raises(InputError, match="belongs to another run"):
        api.run(None, out=a, resume=True, figures=False)


@pytest.mark.parametrize(("option", "value"), [("seed", 12), ("trials", 2048)])
def test_resume_without_scenarios_refuses_a_changed_seed_or_trial_count(tmp_path, option, value):
    out = tmp_path / "run"
    _interrupted_run(out)
    with pytest.raises(InputError, match=f"--{option}: got {value}; the interrupted run used"):
        api.run(None, out=out, resume=True, figures=False, **{option: value})
    assert json.loads((out / "checkpoint.json").read_text())["state"]["trials_done"] == 1024  # nothing ran


def test_resume_refuses_keep_trials_the_run_did_not_keep_before_any_work(tmp_path, monkeypatch):
    from mcengine import runner

    out = tmp_path / "run"
    _interrupted_run(out)
    monkeypatch.setattr(runner, "run_chunk", lambda *a: pytest.fail("a chunk ran before the refusal"))
    with pytest.raises(InputError, match="keeps no per-trial table"):
        api.run(None, out=out, resume=True, keep_trials=True, figures=False)


def test_chunk_bounds_are_made_lazily():
    from mcengine.runner import chunk_bounds

    bounds = chunk_bounds(2**40, 1024)
    assert next(bounds) == (0, 1024) and next(bounds) == (1024, 1024)
    assert list(chunk_bounds(2500, 1024, 1024)) == [(1024, 1024), (2048, 452)]


def test_a_signal_request_stops_the_run_after_the_chunk_it_lands_in(tmp_path):
    from mcengine import interrupt
    from mcengine.errors import Interrupted

    out = tmp_path / "run"

    def request_during_first_chunk(done, total):
        if done == 0:
            with interrupt.deferred():
                interrupt.on_signal(signal.SIGTERM)  # as the CLI's handler does inside a kernel loop

    try:
        with pytest.raises(Interrupted) as err:
            _run(chunk_trials=1024, out=out, progress=request_during_first_chunk, figures=False)
    finally:
        interrupt.clear()
    assert err.value.signum == signal.SIGTERM
    assert json.loads((out / "checkpoint.json").read_text())["state"]["trials_done"] == 1024


SOBOL = [*SMALL, 'run.sampler="sobol"']


def test_sobol_runs_give_the_same_numbers_whatever_the_chunking_and_resume(tmp_path):
    straight = _numbers(_run(overrides=SOBOL, chunk_trials=4096))
    assert json.loads(straight)["scramblings"] == 16
    assert _numbers(_run(overrides=SOBOL, chunk_trials=1024)) == straight
    out = tmp_path / "run"
    calls = []

    def stop_after_one_chunk(done, total):
        calls.append(done)
        if len(calls) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _run(overrides=SOBOL, chunk_trials=1024, out=out, progress=stop_after_one_chunk, figures=False)
    resumed = api.run(None, out=out, resume=True, chunk_trials=2048, keep_trials=False, figures=False)
    assert _numbers(resumed) == straight


def test_sobol_converges_to_the_random_answer_within_their_standard_errors(straight):
    """The same means (each scenario's and the paired ratios') within 4 combined sem."""
    sobol, plain = json.loads(_numbers(_run(overrides=SOBOL, chunk_trials=4096))), json.loads(straight)
    pairs = [(sobol["scenarios"][n][m], plain["scenarios"][n][m]) for n in ("h100", "lite-h100")
             for m in ("cost_per_mtok_usd", "availability", "tokens_per_s", "gpu_cost_usd")]
    pairs += [(sobol["paired"][m]["ratio"], plain["paired"][m]["ratio"]) for m in ("cost_per_mtok_usd", "tokens_per_s")]
    for s, p in pairs:
        assert abs(s["mean"] - p["mean"]) <= 4 * math.hypot(s["sem"], p["sem"]), (s, p)


def test_a_sobol_run_needs_a_trial_per_scrambling():
    with pytest.raises(InputError, match="--trials"):
        _run(overrides=SOBOL, trials=8)
