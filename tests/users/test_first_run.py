"""First run (issue 50, item 7): the compile notice says how long this command's own
kernels take (the fab stage's: seconds, not the chain's minute); the progress bar shows
compiling as its first phase, and its trials/s counts from the end of the first chunk,
so the compile is not in it."""

from __future__ import annotations

import io

from mcengine import cli
from tests.conftest import run_cli


def _bar(monkeypatch, compiling: bool):
    monkeypatch.setattr(cli.sys.stderr, "isatty", lambda: True, raising=False)
    now = [0.0]
    bar, update = cli._progress_bar(False, False, compiling, clock=lambda: now[0])
    bar.console.file = io.StringIO()
    return bar, update, now


def _rate(bar) -> str:
    return bar.tasks[0].fields["rate"]


def test_the_bar_shows_compiling_until_the_first_chunk_and_its_rate_leaves_the_compile_out(monkeypatch):
    bar, update, now = _bar(monkeypatch, compiling=True)
    update(0, 4096)  # the run starts
    assert bar.tasks[0].description == "compiling kernels, then trials" and _rate(bar) == ""
    now[0] = 100.0  # a 100 s compile, then the first chunk of 1,024 trials
    update(1024, 4096)
    assert bar.tasks[0].description == "trials" and _rate(bar) == ""
    now[0] = 101.0
    update(3072, 4096)  # 2,048 trials in the next second
    assert _rate(bar) == "2,048 trials/s"  # not 3,072 / 101 s = 30 trials/s


def test_a_warm_bar_says_trials_from_the_start(monkeypatch):
    bar, _, _ = _bar(monkeypatch, compiling=False)
    assert bar.tasks[0].description == "trials"


def test_the_fab_stage_notice_says_seconds_not_the_chains_minute(monkeypatch):
    monkeypatch.setattr(cli.api, "kernels_cold", lambda work: work == "fab")
    r = run_cli("yield", "h100", "--wafers", "256", "--json")
    assert r.code == 0 and r.err.splitlines()[0] == cli.COMPILE_NOTICES["fab"] and "a few seconds" in r.err
    assert cli.COMPILE_NOTICE not in r.err
    from mcengine.kernels.cache import DRIVERS

    assert set(DRIVERS["reliability"]) <= set(DRIVERS["chain"])  # after a run, reliability compiles nothing


def test_the_notice_is_printed_only_when_the_cache_is_cold(monkeypatch):
    monkeypatch.setattr(cli.api, "kernels_cold", lambda work: False)
    assert cli._note_compile("chain") is False
    monkeypatch.setattr(cli.api, "kernels_cold", lambda work: True)
    err = io.StringIO()
    monkeypatch.setattr(cli.sys, "stderr", err)
    assert cli._note_compile("chain") is True and err.getvalue() == cli.COMPILE_NOTICE + "\n"
