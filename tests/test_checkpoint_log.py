"""checkpoint.log: a run killed (SIGKILL) at any write resumes to the straight run's
summary.json and trials.parquet, bit for bit, at 1 or 2 threads; a run whose log was
rewritten into checkpoint.json mid-run resumes the same (mcengine/runner/backends.py)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pandas as pd
import pytest

from mcengine import api
from mcengine.runner import backends, saved_trials
from tests import procs

SMALL = ["--set", "cluster.instances=4", "--set", "cluster.spare_gpus=8"]
RUN = ["run", "h100", "lite-h100", "--trials", "6144", "--seed", "11", "--chunk-trials", "1024", "--keep-trials", "--quiet", *SMALL]


def _mcengine(*argv: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([*procs.python("-m", "mcengine"), *argv], capture_output=True, text=True, env=procs.env(**env), timeout=600)


def _outputs(out) -> tuple[str, pd.DataFrame]:
    doc = json.loads((out / "summary.json").read_text())
    for key in ("elapsed_s", "provenance"):  # the command lines differ
        doc.pop(key)
    return json.dumps(doc, sort_keys=True), pd.read_parquet(out / "trials.parquet")


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    out = tmp_path_factory.mktemp("straight") / "run"
    assert _mcengine(*RUN, "--out", str(out)).returncode == 0
    return _outputs(out)


# The writes of RUN (mcengine/io.py's count): 4 checkpoint.json after the first chunk,
# 6, 8, 10, 12 checkpoint.log after the next four (killed with half the record appended),
# 14 checkpoint.json at the end.
@pytest.mark.slow
@pytest.mark.parametrize(("write", "threads"), [(4, "2"), (6, "2"), (8, "1"), (12, "2"), (14, "1")])
def test_sigkill_at_any_write_resumes_to_the_straight_outputs(tmp_path, straight, write, threads):
    out = tmp_path / "run"
    killed = _mcengine(*RUN, "--out", str(out), MCENGINE_FAULT_AT_WRITE=f"{write}:KILL")
    assert killed.returncode == -9, killed.stderr
    done, _ = saved_trials(out)
    assert done == {4: 0, 6: 1024, 8: 2048, 12: 4096, 14: 5120}[write]
    resumed = _mcengine("run", "--resume", str(out), "--chunk-trials", "1024", "--threads", threads, "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    numbers, table = _outputs(out)
    assert numbers == straight[0]
    pd.testing.assert_frame_equal(table, straight[1], check_exact=True)


def test_a_log_rewritten_mid_run_resumes_to_the_straight_numbers(tmp_path, monkeypatch):
    monkeypatch.setattr(backends, "LOG_REWRITE", 1)  # checkpoint.json again once the log is as large

    def run(**kw):
        return api.run(["h100", "lite-h100"], trials=6144, seed=11, overrides=SMALL[1::2], keep_trials=False, chunk_trials=1024,
                       figures=False, **kw)

    def numbers(res) -> str:
        doc = dict(res.summary())
        for key in ("elapsed_s", "figures", "provenance"):
            doc.pop(key, None)
        return json.dumps(doc, sort_keys=True)

    want = numbers(run())
    for stop_after in (2, 3, 4, 5):
        out = tmp_path / f"run{stop_after}"
        calls = []

        def stop(done, total):
            calls.append(done)
            if len(calls) == stop_after + 1:  # the first call, then one per chunk
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            run(out=out, progress=stop)
        assert saved_trials(out) == (1024 * stop_after, 6144)
        assert numbers(api.run(None, out=out, resume=True, chunk_trials=2048, keep_trials=False, figures=False)) == want
        shutil.rmtree(out)
