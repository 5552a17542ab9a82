"""Source-level checks of the kernel policy (one decorator: cache, no GIL, NumPy error model, no fastmath).

* numba's jit decorators are used only in ``mcengine/jit.py``; every other module
  compiles through ``mcengine.jit.kernel`` / ``inline_kernel`` / ``event_kernel`` /
  ``linked_kernel``;
* a ``linked_kernel`` (no entry point from Python: a call from Python would crash) is
  imported or named as an attribute by no module outside the kernel modules, tests and
  benchmarks included;
* ``fastmath`` appears nowhere, except as a word in the docstrings or comments of
  ``jit.py`` (which explain why it is off);
* no kernel module (``mcengine/kernels/``, ``mcengine/rng.py``) touches NumPy's global
  random state or generators: every draw comes from the counter-based ``mcengine.rng``.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "mcengine"
JIT = PACKAGE / "jit.py"
SOURCES = sorted(PACKAGE.rglob("*.py"))

JIT_DECORATORS = re.compile(
    r"njit\s*\(|@\s*njit\b|@\s*(numba\s*\.\s*)?jit\b|numba\s*\.\s*n?jit\b"
    r"|from\s+numba\s+import\s+[^\n]*\bn?jit\b"
)
NUMPY_RANDOM = re.compile(
    r"\b(np|numpy)\s*\.\s*random\b|from\s+numpy\s+import\s+[^\n]*\brandom\b"
)


def _ids(path):
    return str(path.relative_to(PACKAGE.parent))


def _docstring_starts(source):
    """(line, col) of every module, class and function docstring literal."""
    starts = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                             ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                starts.add((first.lineno, first.col_offset))
    return starts


def test_sources_found():
    assert JIT in SOURCES and PACKAGE / "rng.py" in SOURCES


@pytest.mark.parametrize("path", [p for p in SOURCES if p != JIT], ids=_ids)
def test_jit_decorators_only_in_jit_py(path):
    text = path.read_text(encoding="utf-8")
    hits = [m.group(0) for m in JIT_DECORATORS.finditer(text)]
    assert not hits, f"{path.name} uses {hits}: use mcengine.jit.kernel / inline_kernel / event_kernel / linked_kernel"


@pytest.mark.parametrize("path", SOURCES, ids=_ids)
def test_no_fastmath(path):
    text = path.read_text(encoding="utf-8")
    if path != JIT:
        assert "fastmath" not in text.lower()
        return
    docstrings = _docstring_starts(text)
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if "fastmath" not in tok.string.lower():
            continue
        allowed = tok.type == tokenize.COMMENT or (
            tok.type == tokenize.STRING and tok.start in docstrings
        )
        assert allowed, f"jit.py line {tok.start[0]}: fastmath outside a docstring/comment"


KERNEL_SOURCES = [PACKAGE / "rng.py"] + [
    p for p in SOURCES if PACKAGE / "kernels" in p.parents
]


@pytest.mark.parametrize("path", KERNEL_SOURCES, ids=_ids)
def test_kernels_do_not_use_numpy_random(path):
    hits = [m.group(0) for m in NUMPY_RANDOM.finditer(path.read_text(encoding="utf-8"))]
    assert not hits, f"{path.name} uses {hits}: draw from mcengine.rng streams instead"


def _linked_kernels():
    """Names of the functions decorated with ``linked_kernel`` in the kernel modules."""
    names = set()
    for path in KERNEL_SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and any(
                    ast.unparse(d).split(".")[-1] == "linked_kernel" for d in node.decorator_list):
                names.add(node.name)
    return names


def test_linked_kernels_found():
    # the lifetime loop and its called handlers (a rename that drops the decorator fails here)
    assert {"simulate_one", "start_lifetime", "module_fails", "draw_law"} <= _linked_kernels()


OUTSIDE_KERNELS = [p for p in (*SOURCES, *sorted((PACKAGE.parent / "tests").rglob("*.py")),
                               *sorted((PACKAGE.parent / "benchmarks").rglob("*.py")))
                   if p not in KERNEL_SOURCES]


def test_linked_kernels_are_not_called_from_python():
    linked = _linked_kernels()
    hits = []
    for path in OUTSIDE_KERNELS:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and "kernels" in (node.module or ""):
                hits += [f"{path.name}: {a.name}" for a in node.names if a.name in linked]
            elif isinstance(node, ast.Attribute) and node.attr in linked:
                hits.append(f"{path.name}: {node.attr}")
    assert not hits, f"{hits}: a linked_kernel has no entry point from Python (only kernels call it)"
