"""The layer order (docs/architecture.md) holds: checked by import-linter's contracts in
pyproject.toml, shown to catch an upward import, and no import cycle anywhere (module-
or function-level: grimp reads every import statement)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    """`lint-imports` on the package under ``root`` with ``root``'s pyproject contracts."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()", "--no-cache"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120)


def test_import_contracts_are_kept():
    r = _lint_imports(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "layers point down KEPT" in r.stdout
    assert "stages share nothing but arrays KEPT" in r.stdout


def _copy(tmp_path: Path) -> Path:
    """A copy of the package and its pyproject contracts under ``tmp_path``."""
    shutil.copytree(ROOT / "mcengine", tmp_path / "mcengine", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    return tmp_path


def test_an_upward_import_breaks_the_contract(tmp_path):
    _copy(tmp_path)
    kernel = tmp_path / "mcengine" / "kernels" / "law_codes.py"
    kernel.write_text(kernel.read_text() + "\nfrom mcengine import api  # a kernel reaching up to the API\n")
    r = _lint_imports(tmp_path)
    assert r.returncode != 0
    assert "layers point down BROKEN" in r.stdout
    assert "mcengine.kernels.law_codes -> mcengine.api" in r.stdout


def test_a_stage_importing_another_breaks_the_contract(tmp_path):
    """The stages share nothing but arrays (docs/model.md#stage-handoffs): a helper module of the
    roofline package reaching into the econ stage breaks the independence contract."""
    _copy(tmp_path)
    planner = tmp_path / "mcengine" / "stages" / "roofline" / "planner.py"
    planner.write_text(planner.read_text() + "\nfrom mcengine.stages import econ  # a stage reaching into another\n")
    r = _lint_imports(tmp_path)
    assert r.returncode != 0
    assert "stages share nothing but arrays BROKEN" in r.stdout
    assert "layers point down KEPT" in r.stdout
    assert "mcengine.stages.roofline.planner -> mcengine.stages.econ" in r.stdout


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("mcengine", include_external_packages=True)


def test_no_import_cycles(graph):
    ours = {m for m in graph.modules if m.split(".")[0] == "mcengine"}
    cycles = [(a, b) for a in sorted(ours) for b in sorted(graph.find_modules_directly_imported_by(a) & ours)
              if graph.chain_exists(importer=b, imported=a)]
    assert cycles == []


def test_the_package_does_not_import_the_benchmark_harness(graph):
    assert "numpy" in graph.modules  # (external packages are in the graph)
    assert not {"benchmarks", "simpy"} & graph.modules
