"""``pip install '.[test]' && pytest`` compiles the kernels once: the tests import the
installed copy of this checkout (tests/conftest.py), so they and the ``mcengine`` command
share numba's cache (keyed by the source file's path); a copy that differs from the
checkout is never the one tested."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import procs
from tests.conftest import ROOT, installed_copy


def fake_install(site: Path) -> Path:
    """What ``pip install .`` leaves in site-packages: the package, its configs as package
    data, and the distribution's metadata."""
    package = site / "mcengine"
    shutil.copytree(ROOT / "mcengine", package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "configs", package / "configs")
    meta = site / "mcengine-0.1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: mcengine\nVersion: 0.1.0\n")
    return package


def test_an_install_of_this_checkout_is_the_copy_the_tests_import(tmp_path, monkeypatch):
    package = fake_install(tmp_path / "site")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert installed_copy() == package
    (package / "configs" / "h100.toml").write_text((ROOT / "configs" / "h100.toml").read_text() + "\n# edited\n")
    assert installed_copy() is None  # a copy that differs is never tested
    shutil.rmtree(package)
    assert installed_copy() is None  # an editable install: metadata without the package folder


@pytest.mark.parametrize("installed", [True, False])
def test_the_tests_and_their_child_processes_import_one_copy(tmp_path, installed):
    """conftest run in a fresh interpreter with the fake install on the path: mcengine
    comes from the install (else from the checkout), and a child started as the tests
    start them (tests/procs.py) imports the same file; without it, the environment's own
    install of this checkout if there is one, else the checkout."""
    site = tmp_path / "site"
    if installed:
        fake_install(site)
    else:
        site.mkdir()
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); import tests.conftest; import mcengine, subprocess; "
             "from tests import procs; print(mcengine.__file__); "
             "print(subprocess.run(procs.python('-c', 'import mcengine; print(mcengine.__file__)'), env=procs.env(), "
             "capture_output=True, text=True, cwd=sys.argv[1]).stdout.strip())")
    done = subprocess.run([sys.executable, "-P", "-c", probe, str(ROOT)], capture_output=True, text=True, timeout=300,
                          env={**procs.env(), "PYTHONPATH": str(site)})
    assert done.returncode == 0, done.stderr
    tests_copy, child_copy = done.stdout.split()
    # without the fake install: the environment's own install of this checkout (CI's
    # `pip install '.[test]'`) when there is one, else the checkout
    expected = (site / "mcengine" if installed else installed_copy() or ROOT / "mcengine") / "__init__.py"
    assert Path(tests_copy) == expected and Path(child_copy) == expected
