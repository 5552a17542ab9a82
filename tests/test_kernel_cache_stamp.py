"""numba's cache is stamped with every kernel source (mcengine/jit.py): a kernel whose
own file is unchanged is compiled again when a file it could compile in changes, since
numba alone would check the kernel's own file only and reuse stale machine code."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from mcengine import jit
from mcengine.kernels import fab, life, plan

ROOT = Path(__file__).resolve().parents[1]

#: In a fresh process: is plan.fold_best's cache current, and (with "call") compile it.
_PROBE = """
import sys
import numpy as np
from mcengine.kernels import cache, plan
if sys.argv[1] == "call":
    n = 3
    plan.fold_best(np.ones((2, n)), np.ones((2, n)), np.ones(n), True, 0, np.zeros(n, np.int64), np.full(n, -np.inf), np.zeros(n))
print(cache._cached(plan.fold_best))
"""


def test_every_kernel_is_stamped_with_all_kernel_sources():
    for dispatcher in (life.run_block, fab._wafer_block, plan.fold_best):
        locator = dispatcher._cache._impl._locator
        assert type(locator).__name__.startswith("KernelSources")
        assert locator.get_source_stamp() == jit.kernel_sources_digest()
    assert {jit.source_name(p) for p in jit.KERNEL_SOURCES} >= {
        "life/loop.py", "life/handlers.py", "life/heap.py", "life/workspace.py", "kernels/laws.py", "mcengine/rng.py",
        "mcengine/jit.py"}


def test_the_stamp_moves_with_any_one_source(tmp_path):
    copies = []
    for path in jit.KERNEL_SOURCES:
        copy = tmp_path / jit.source_name(path)
        copy.parent.mkdir(exist_ok=True)
        shutil.copyfile(path, copy)
        copies.append(copy)
    before = jit.kernel_sources_digest(tuple(copies))
    assert before == jit.kernel_sources_digest()  # the same bytes, the same stamp
    for copy in copies:
        text = copy.read_bytes()
        copy.write_bytes(text + b"\n")
        jit.kernel_sources_digest.cache_clear()
        assert jit.kernel_sources_digest(tuple(copies)) != before, copy
        copy.write_bytes(text)
    jit.kernel_sources_digest.cache_clear()


def test_a_callee_file_changed_alone_recompiles_its_callers(tmp_path):
    shutil.copytree(ROOT / "mcengine", tmp_path / "mcengine", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "NUMBA_CACHE_DIR": str(tmp_path / "cache")}

    def probe(mode: str) -> str:
        done = subprocess.run([sys.executable, "-c", _PROBE, mode], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=True)
        return done.stdout.strip()

    assert probe("call") == "True"  # compiled and cached
    assert probe("look") == "True"  # a second process finds it current
    laws = tmp_path / "mcengine" / "kernels" / "laws.py"  # a file plan.py does not even import
    laws.write_text(laws.read_text() + "\n# changed\n")
    assert probe("look") == "False"  # stale: the next call compiles


def test_a_numba_without_the_locators_warns_and_keeps_its_own_stamp(monkeypatch):
    monkeypatch.setattr(jit, "caching", SimpleNamespace())
    with pytest.warns(RuntimeWarning, match="NUMBA_CACHE_DIR"):
        jit._stamp_kernels_with_all_sources()


def test_the_locators_are_registered_once_per_package(monkeypatch):
    fake = SimpleNamespace(**{name: getattr(jit.caching, name) for name in
                              ("UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator")})
    fake._CacheImpl = SimpleNamespace(_locator_classes=[])  # an older numba's private name
    monkeypatch.setattr(jit, "caching", fake)
    jit._stamp_kernels_with_all_sources()
    jit._stamp_kernels_with_all_sources()
    assert [c.__name__ for c in fake._CacheImpl._locator_classes] == [
        "KernelSourcesUserProvidedCacheLocator", "KernelSourcesInTreeCacheLocator", "KernelSourcesUserWideCacheLocator"]
