"""Same seed, same numbers: any chunk size, thread count, resume point or Dask cluster."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import time

import numba
import pytest

from mcengine import api, runner
from mcengine.errors import InputError
from tests import procs
from tests.conftest import with_threads

SMALL = ["cluster.instances=4", "cluster.spare_gpus=8"]


def _numbers(res) -> str:
    doc = dict(res.summary())
    doc.pop("elapsed_s")
    doc.pop("figures", None)
    doc.pop("provenance", None)  # the command line differs between a straight and a resumed run
    return json.dumps(doc, sort_keys=True)


def _without_drivers(numbers: str) -> str:
    """:func:`_numbers` without the verdict's drivers and its printed lines (they rank the
    inputs from the per-trial table when the run kept one)."""
    doc = json.loads(numbers)
    for pair in doc.get("verdict", {}).values():
        pair.pop("drivers", None)
        pair.pop("lines", None)
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
    assert runner.saved_trials(out) == (2048, 3000)  # checkpoint.json and the log after it
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
    args = [*procs.python("-m", "mcengine.cli"), "compare", "h100", "lite-h100", "--trials", "3000", "--seed", "11",
            "--chunk-trials", "1024", "--out", str(out), "--quiet", *sum((["--set", o] for o in SMALL), [])]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=procs.env())
    ck = out / "checkpoint.json"
    deadline = time.time() + 300
    while time.time() < deadline and not (ck.is_file() and json.loads(ck.read_text() or "{}").get("state", {}).get("trials_done", 0) >= 1024):
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done = json.loads(ck.read_text())["state"]["trials_done"]
    assert done in (1024, 2048, 3000)
    r = subprocess.run([*args[:4], "compare", "h100", "lite-h100", "--trials", "3000", "--seed", "11", "--resume", str(out),
                        "--json", "--quiet", *sum((["--set", o] for o in SMALL), [])], capture_output=True, text=True, env=procs.env())
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
        with pytest.raises(InputError, match=rf"in use by another mcengine command \(`mcengine run`, process {os.getpid()}\)"):
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
    from mcengine.runner import execution

    out = tmp_path / "run"
    _interrupted_run(out)
    monkeypatch.setattr(execution, "run_chunk", lambda *a: pytest.fail("a chunk ran before the refusal"))
    with pytest.raises(InputError, match="--keep-trials: got True; the interrupted run used False"):
        api.run(None, out=out, resume=True, keep_trials=True, figures=False)


def test_chunk_bounds_are_made_lazily():
    from mcengine.runner import chunk_bounds

    bounds = chunk_bounds(2**40, 1024)
    assert next(bounds) == (0, 1024) and next(bounds) == (1024, 1024)
    assert list(chunk_bounds(2500, 1024, 1024)) == [(1024, 1024), (2048, 452)]


def _signal_in_chunk(monkeypatch, first_trial: int) -> None:
    """The CLI's handler runs (as for SIGTERM) while the chunk from ``first_trial`` computes."""
    from mcengine import interrupt
    from mcengine.runner import execution

    real = execution.run_chunk

    def chunk(scenarios, seed, start, n, *ahead):
        if start == first_trial:
            interrupt.on_signal(signal.SIGTERM)
        return real(scenarios, seed, start, n, *ahead)

    monkeypatch.setattr(execution, "run_chunk", chunk)


def _signal_in_fold(monkeypatch, first_trial: int) -> None:
    """The CLI's handler runs (as for SIGTERM) while the chunk from ``first_trial`` is folded
    into the summaries (on the main thread, where signals land; the next chunk may be
    computing beside it)."""
    from mcengine import interrupt, runner

    real = runner.Accumulators.add

    def add(acc, chunk):
        if int(next(iter(chunk.values()))["trial"][0]) == first_trial:
            interrupt.on_signal(signal.SIGTERM)
        return real(acc, chunk)

    monkeypatch.setattr(runner.Accumulators, "add", add)


@pytest.mark.parametrize(("threads", "first_trial", "saved"), [(2, 0, 1024), (1, 0, 1024), (2, 2048, 3000), (2, 1024, 2048)],
                         ids=["first chunk", "first chunk, one thread", "last chunk", "middle chunk, next one computing"])
def test_a_signal_request_stops_the_run_after_the_chunk_it_lands_in(tmp_path, monkeypatch, threads, first_trial, saved):
    """Whatever is computing beside it (the next chunk, with two threads), a signal that
    lands while a chunk is computed or saved stops the run once that chunk is saved."""
    from mcengine import interrupt
    from mcengine.errors import Interrupted

    out = tmp_path / "run"
    (_signal_in_chunk if first_trial == 0 else _signal_in_fold)(monkeypatch, first_trial)
    try:
        with pytest.raises(Interrupted) as err:
            with_threads(threads, lambda: _run(chunk_trials=1024, out=out, figures=False))
    finally:
        interrupt.clear()
    assert err.value.signum == signal.SIGTERM
    assert runner.saved_trials(out)[0] == saved  # checkpoint.json and the log after it


def _recording_chunks(monkeypatch, fail_at: int | None = None) -> list[tuple[int, str, int]]:
    """(first trial, thread name, numba threads) of every chunk computation as it starts;
    the chunk from ``fail_at`` raises InputError (a refused input)."""
    import threading

    from mcengine.runner import execution
    from mcengine.errors import Problem

    real, started = execution.run_chunk, []

    def chunk(scenarios, seed, start, n, *ahead):
        started.append((start, threading.current_thread().name, numba.get_num_threads()))
        if start == fail_at:
            raise InputError(Problem("workload.x", start, "refused by the test"))
        return real(scenarios, seed, start, n, *ahead)

    monkeypatch.setattr(execution, "run_chunk", chunk)
    return started


def test_overlapped_chunks_give_the_serial_numbers_and_compute_at_most_one_ahead(tmp_path, monkeypatch, straight):
    """With two threads the chunks are computed on one other thread, each while the one
    before is folded and saved: same numbers, at most one chunk computed beyond those
    saved (memory stays bounded), and the run resumes from its checkpoint to the same numbers."""
    started = _recording_chunks(monkeypatch)
    ahead = []

    def progress(done, total):
        ahead.append(len(started) - -(-done // 1024))

    assert _numbers(with_threads(2, lambda: _run(chunk_trials=1024, out=tmp_path / "run", progress=progress, figures=False))) == straight
    assert [s for s, _, _ in started] == [0, 1024, 2048]
    assert [name for _, name, _ in started] == ["mcengine-chunks"] * 3
    assert max(ahead) <= 1 and ahead[-1] == 0


def test_the_next_chunks_thread_uses_the_callers_numba_thread_count(monkeypatch):
    """numba's thread count is per thread (a new thread starts at NUMBA_NUM_THREADS): the
    chunk computed ahead runs with the count of the thread that asked for it."""
    from mcengine import runner
    from mcengine.runner import execution
    from mcengine.scenario import load_scenario

    started = _recording_chunks(monkeypatch)
    spec = runner.RunSpec((load_scenario("h100", SMALL),), 11, 2048)
    worker = with_threads(1, execution._ChunkWorker, spec)
    worker.ask(0, 1024)
    worker.ask(1024, 1024)
    worker.outcome(), worker.outcome()
    worker.stop()
    worker.join(60)
    assert numba.config.NUMBA_NUM_THREADS > 1 and started == [(0, "mcengine-chunks", 1), (1024, "mcengine-chunks", 1)]
    assert not worker.is_alive()


@pytest.mark.parametrize("threads", [2, 1])
def test_an_error_of_a_chunk_computed_ahead_is_raised_in_order(tmp_path, monkeypatch, threads):
    """A chunk refused for its inputs stops the run where the serial loop would: every
    chunk before it saved, the error raised to the caller as it was raised."""
    _recording_chunks(monkeypatch, fail_at=2048)
    out = tmp_path / "run"
    with pytest.raises(InputError, match="workload.x: got 2048; refused by the test"):
        with_threads(threads, lambda: _run(chunk_trials=1024, out=out, figures=False))
    assert runner.saved_trials(out) == (2048, 3000)  # checkpoint.json and the log after it


def test_cli_exits_2_on_an_input_error_of_a_chunk_computed_ahead(tmp_path, cli, monkeypatch):
    _recording_chunks(monkeypatch, fail_at=1024)
    r = cli("run", "h100", "--trials", "3000", "--chunk-trials", "1024", "--threads", "2", "--out", str(tmp_path / "o"), "--quiet",
            *sum((["--set", s] for s in SMALL), []))
    assert r.code == 2 and "workload.x: got 1024; refused by the test" in r.err and "Traceback" not in r.err


def test_a_signal_in_a_sweep_point_of_one_chunk_stops_the_sweep_there(monkeypatch):
    """Issue 34 case 8: a sweep whose points are one chunk each ignored the first signal."""
    from mcengine import interrupt
    from mcengine.errors import Interrupted

    _signal_in_chunk(monkeypatch, 0)
    points = []
    try:
        with pytest.raises(Interrupted):
            api.sweep("h100", "econ.pue", ["1.1", "1.2", "1.3"], outputs=["energy_usd"], trials=1024, overrides=SMALL,
                      progress=lambda done, total: points.append(done))
    finally:
        interrupt.clear()
    assert points == [0, 1024]  # stopped after the first point


# ----------------------------------------------------------------------------- a resume honours everything or refuses
def _recompute(ck, edit) -> None:
    """Edit the checkpoint's state and recompute its checksum (a forgery the sha256 cannot see)."""
    from mcengine.runner.checkpoint import _state_sha256

    doc = json.loads(ck.read_text())
    edit(doc["state"])
    doc["sha256"] = _state_sha256(doc["state"])
    ck.write_text(json.dumps(doc))


@pytest.mark.parametrize("edit", [
    lambda st: st.update(trials_done=65536),  # issue 34 case 6: statistics of 1,024 trials reported as 65,536
    lambda st: st.update(trials_done=2048),
    lambda st: st.update(trials_done=1000),  # not a chunk boundary
    lambda st: st["metrics"][0][2].update(count=999),
    lambda st: st["missed"].update({"h100": 5000}),
    lambda st: st["below"][0].__setitem__(2, -1),
    lambda st: st["metrics"].pop(0),
    lambda st: st["ratios"][0][2].pop("sketch"),
], ids=["65536", "2048", "1000", "count", "missed", "below", "missing", "malformed"])
def test_resume_refuses_a_state_whose_counts_disagree_even_with_its_checksum_recomputed(tmp_path, edit, monkeypatch):
    from mcengine.runner import execution

    out = tmp_path / "run"
    _interrupted_run(out)
    _recompute(out / "checkpoint.json", edit)
    monkeypatch.setattr(execution, "run_chunk", lambda *a: pytest.fail("a chunk ran before the refusal"))
    with pytest.raises(InputError, match="does not describe this run") as err:
        api.run(None, out=out, resume=True, figures=False)
    assert str(out / "checkpoint.json") in str(err.value)


@pytest.mark.parametrize("damage", ["deleted", "not parquet"])
def test_resume_refuses_kept_parts_that_do_not_cover_the_trials_done(tmp_path, damage):
    out = tmp_path / "run"

    def stop(done, total):
        if done >= 2048:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _run(chunk_trials=1024, out=out, progress=stop, figures=False, keep_trials=True)
    part = out / "trials.parquet" / "part-000000001024.parquet"
    if damage == "deleted":
        part.unlink()
    else:
        part.write_bytes(b"not a parquet file")
    with pytest.raises(InputError, match="hold trials 0 to 1024, not the 2048 trials"):
        api.run(None, out=out, resume=True, figures=False)


def test_resume_refuses_a_set_that_changes_the_run_and_names_it(tmp_path, monkeypatch):
    """Issue 34 case 5: `--resume DIR --set cluster.reshard_hours=0.3` ran the old settings."""
    from mcengine.runner import execution

    out = tmp_path / "run"
    _interrupted_run(out)
    monkeypatch.setattr(execution, "run_chunk", lambda *a: pytest.fail("a chunk ran before the refusal"))
    with pytest.raises(InputError) as err:
        api.run(None, out=out, resume=True, figures=False, overrides=["cluster.reshard_hours=0.3", SMALL[0]])
    assert [p.key for p in err.value.problems] == ["--set cluster.reshard_hours=0.3"]  # the run's own --set is no change
    with pytest.raises(InputError, match="SCENARIO with --set"):
        _run(chunk_trials=1024, out=out, resume=True, overrides=[*SMALL, "cluster.reshard_hours=0.3"], figures=False)


def test_resume_with_the_runs_own_set_continues(tmp_path, straight):
    out = tmp_path / "run"
    _interrupted_run(out)
    resumed = api.run(None, out=out, resume=True, figures=False, overrides=SMALL)
    assert _numbers(resumed) == straight


# ------------------------------------------------------------ progress that moves (issue 33)
def test_default_chunks_do_not_change_numbers(straight):
    """chunk_trials=None: chunks sized from the measured time (1,024 first); same numbers."""
    assert _numbers(_run()) == straight


def test_chunk_plan_starts_small_and_sizes_chunks_to_the_target_time():
    """With a clock where every trial takes 2**-10 s, a 2 s target wants 2,048-trial chunks;
    the plan starts at one block, grows at most 4x, caps at max_trials, covers every trial once."""
    from mcengine.summaries import BLOCK_TRIALS
    from mcengine.runner import chunk_plan

    now = [0.0]
    plan = chunk_plan(20_000, 0, max_trials=16 * BLOCK_TRIALS, target_s=2.0, clock=lambda: now[0])
    sizes = []
    for first, n in plan:
        assert first == sum(sizes)
        sizes.append(n)
        now[0] += n * 2.0**-10
    assert sizes[0] == BLOCK_TRIALS and sum(sizes) == 20_000
    assert sizes[1:4] == [2048, 2048, 2048] and all(n % BLOCK_TRIALS == 0 for n in sizes[:-1])
    fast = chunk_plan(10**6, 0, max_trials=16 * BLOCK_TRIALS, target_s=2.0, clock=lambda: now[0])
    grown = [n for _, (_, n) in zip(range(4), fast)]  # a clock that never moves: as fast as allowed
    assert grown == [1024, 4096, 16384, 16384]


def test_interrupt_says_how_many_trials_were_saved(tmp_path, cli, monkeypatch):
    """Interrupted in the first chunk: the checkpoint holds that chunk, and the message
    says so (N of M trials saved), not "finished chunks are saved" in general."""
    from mcengine import interrupt
    from mcengine.errors import Interrupted

    out = tmp_path / "run"

    _signal_in_chunk(monkeypatch, 0)
    try:
        with pytest.raises(Interrupted) as err:
            _run(chunk_trials=1024, out=out, figures=False)
    finally:
        interrupt.clear()
    assert (err.value.trials_saved, err.value.trials) == (1024, 3000)
    from mcengine.cli import _saved_hint

    assert _saved_hint(out, 1024, 3000) == f"1,024 of 3,000 trials saved in {out}; continue with: mcengine run --resume {out}"
    assert _saved_hint(out, 0, 3000) == "nothing saved yet (no chunk had finished): run the command again"
    assert _saved_hint(None, 0, 3000).startswith("nothing saved")


def test_cli_interrupt_before_any_chunk_says_nothing_was_saved(tmp_path, cli, monkeypatch):
    """A signal before the first chunk finishes in a second signal's way (at once): the
    CLI says nothing was saved, never "finished chunks are saved"."""
    from mcengine.runner import execution
    from mcengine.errors import Interrupted

    def stop_at_once(*args, **kwargs):
        raise Interrupted(signal.SIGINT)

    monkeypatch.setattr(execution, "run_chunk", stop_at_once)
    r = cli("run", "h100", "--trials", "2048", "--out", str(tmp_path / "o"), "--quiet", *sum((["--set", s] for s in SMALL), []))
    assert r.code == 130
    assert "nothing saved yet (no chunk had finished)" in r.err and "finished chunks are saved" not in r.err


def test_compile_notice_only_when_the_cache_is_cold(tmp_path, cli, monkeypatch):
    """A fresh NUMBA_CACHE_DIR is cold (numba's own index, read in a new process); this
    process, having run the chain, is warm and prints nothing; a cold cache prints the
    notice on stderr even off a terminal (stdout keeps its one JSON document)."""
    from mcengine import kernels  # noqa: F401
    from mcengine.cli import COMPILE_NOTICE
    from mcengine.kernels.cache import cold

    env = procs.env(NUMBA_CACHE_DIR=str(tmp_path / "fresh"))
    probe = "from mcengine.kernels.cache import cold; print(cold('fab'), cold('reliability'), cold('chain'))"
    done = subprocess.run(procs.python("-c", probe), env=env, capture_output=True, text=True, timeout=300)
    assert done.stdout.split() == ["True", "True", "True"], done.stderr
    _run(trials=1024)
    assert not cold("chain")
    r = cli("run", "h100", "--trials", "1024", "--json", *sum((["--set", s] for s in SMALL), []))
    assert r.code == 0 and COMPILE_NOTICE not in r.err
    monkeypatch.setattr(api, "kernels_cold", lambda work: True)
    r = cli("run", "h100", "--trials", "1024", "--json", *sum((["--set", s] for s in SMALL), []))
    assert r.code == 0 and r.err.splitlines()[0] == COMPILE_NOTICE and json.loads(r.out)["trials"] == 1024


@pytest.mark.slow
def test_first_run_on_a_cold_cache_says_it_compiles(tmp_path):
    """A real first run (fresh numba cache, output piped): the notice of the command's own
    kernels (the fab stage's for ``yield``) is stderr's first line, before anything is
    compiled; the second run prints none."""
    from mcengine.cli import COMPILE_NOTICES

    notice = COMPILE_NOTICES["fab"]
    env = procs.env(NUMBA_CACHE_DIR=str(tmp_path / "fresh"))
    cmd = [*procs.python("-m", "mcengine"), "yield", "h100", "--wafers", "1024", "--json"]
    first = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200)
    assert first.returncode == 0 and first.stderr.splitlines()[0] == notice
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and notice not in again.stderr


def test_a_run_that_keeps_no_trials_imports_neither_pandas_nor_scipy_stats(straight):
    """A first run's process holds only what it uses: with no per-trial table kept, no
    pandas (nor pyarrow, which pandas loads), and neither scipy.stats nor scipy.integrate
    (the closed forms that use them import them where used). A child process on the
    tests' numba cache (warm: ``straight`` ran the same kernels)."""
    code = ("import sys; from mcengine import api; "
            f"api.run(['h100', 'lite-h100'], trials=1024, overrides={SMALL!r}, keep_trials=False, figures=False); "
            "print(*sorted(m for m in ('pandas', 'pyarrow', 'scipy.stats', 'scipy.integrate') if m in sys.modules))")
    done = subprocess.run(procs.python("-c", code), env=procs.env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.split() == [], done.stderr


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


def test_a_run_whose_pairs_serve_on_one_side_only_resumes_to_the_straight_numbers(tmp_path):
    """Paired ratios leave out the trials in which one side serves no tokens; the
    checkpoint counts those trials (``Summary.skipped``), so the resume's consistency check
    accepts it and the resumed run equals a straight one."""
    one_sided = [*SMALL, 'B:workload.tpot_slo_ms={dist="uniform", low=1, high=60}']
    straight = _run(overrides=one_sided, chunk_trials=4096)
    serving = straight.summary()["paired"]["cost_per_mtok_usd"]["serving"]
    assert 0 < serving["only_a"] < 1 and serving["both"] > 0  # the case is one-sided in some trials
    out = tmp_path / "run"
    _interrupted_run(out, overrides=one_sided)
    resumed = api.run(None, out=out, resume=True, figures=False)
    assert _numbers(resumed) == _numbers(straight)


def test_the_memory_and_folder_backends_give_the_same_run(tmp_path, straight):
    """One loop, two backends: the same summaries, and the same per-trial table kept in
    memory as written to the folder's Parquet parts."""
    import pandas as pd

    memory = _run(chunk_trials=1024, keep_trials=True)
    folder = _run(chunk_trials=1024, keep_trials=True, out=tmp_path / "run", figures=False)
    assert _numbers(memory) == _numbers(folder)
    # a run that keeps its per-trial table also ranks the verdict's drivers from it: the
    # numbers are the straight run's (which kept none) but for that
    assert _without_drivers(_numbers(memory)) == _without_drivers(straight)
    assert sorted(os.listdir(tmp_path / "run" / "trials.parquet")) == [f"part-{s:012d}.parquet" for s in (0, 1024, 2048)]
    pd.testing.assert_frame_equal(memory.trials, folder.trials)


def test_the_memory_backend_saves_nothing_and_cannot_resume():
    from mcengine.runner import MemoryBackend

    backend = MemoryBackend()
    assert backend.trials_saved(None) == 0 and backend.frames == []
    with pytest.raises(InputError, match="--resume: .*needs the folder of the interrupted run"):
        backend.resume(None, {})


def test_a_parquet_part_is_the_pandas_table_of_its_chunk():
    """A chunk's part, made from each scenario's NumPy columns, holds what
    ``pyarrow.Table.from_pandas`` makes of the chunk's joined DataFrame: the same schema and
    metadata, the same values and nulls (a NaN, a column one scenario lacks, an integer
    column widened to float, a boolean one to object where another scenario lacks it)."""
    import io

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mcengine.runner import trials_frame
    from mcengine.runner.backends import parquet_bytes

    chunk = {"a": {"trial": np.arange(3), "x": np.array([1.0, np.nan, 3.0]), "k": np.array([4, 5, 6]), "ok": np.array([True, False, True])},
             "b": {"trial": np.arange(3), "x": np.array([0.5, 2.0, np.nan]), "y": np.array([7.0, 8.0, 9.0])}}
    provenance = {"commit": "abc"}
    part = pq.ParquetFile(io.BytesIO(parquet_bytes(chunk, provenance)))
    expected = pa.Table.from_pandas(trials_frame(chunk), preserve_index=False)
    read = part.read()
    assert part.metadata.num_row_groups == 1
    assert read.equals(expected.replace_schema_metadata(read.schema.metadata))
    assert read.column("x").null_count == 2 and read.column("k").type == pa.float64() and read.column("ok").to_pylist() == [True, False, True, None, None, None]
    assert read.schema.metadata[b"pandas"] == expected.schema.metadata[b"pandas"]
    assert json.loads(read.schema.metadata[b"mcengine.provenance"]) == provenance
