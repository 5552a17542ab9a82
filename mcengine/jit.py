"""The one kernel decorator policy of mcengine (cache, no GIL, NumPy error model, no fastmath).

Every numba function in the package is compiled through :data:`kernel`,
:data:`inline_kernel`, :data:`event_kernel` or :data:`linked_kernel`, so all of them share
the same options:

* ``cache=True``: compiled machine code is cached on disk, so the second process
  (tests, CLI runs) does not pay the compile time again;
* ``nogil=True``: kernels release the GIL, so Dask/threaded drivers can overlap;
* ``error_model="numpy"``: division by zero gives inf/NaN like NumPy instead of
  raising inside the kernel (inputs are validated before they reach a kernel);
* no ``fastmath``: ``"inf"`` is a real scenario value (Poisson clustering, unlimited
  crews), and the no-NaN/no-inf fast-math flags would silently break it.

``@njit`` appears only here; ``tests/test_policy.py`` enforces it.

Drivers over independent trials (the input draws, the fab and life kernels) split
their trials into blocks and call a serial, GIL-free kernel per block on a pool of
``numba.get_num_threads()`` threads (:func:`run_blocks`), rather than ``prange`` over
the trials: numba links every callee's code into its caller's module and optimises and
compiles that whole module again, and a ``prange`` driver stacks four such layers (the
loop body, two gufunc wrappers and the driver) over the kernel it calls. A block's
trials write only their own rows, so the numbers depend neither on the blocks nor on
the threads.

numba stamps a cached kernel with its own source file only, while every kernel here
inlines or links callees from other files (``laws.py``, ``rng.py``, ``life/workspace.py``,
...): a change to a callee alone would leave the caller's cached machine code in use.
:func:`kernel_sources_digest` stamps every cached kernel with all the kernel sources
instead (:data:`KERNEL_SOURCES`), so any change to any of them recompiles every kernel
on its next call (the locators registered below, ahead of numba's own).
"""

from __future__ import annotations

import functools
import gc
import hashlib
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import llvmlite.binding as llvm
import numba
import numpy as np
from llvmlite import ir as llvm_ir
from numba import njit
from numba.core import caching, event, types
from numba.core.codegen import JITCodeLibrary
from numba.core.compiler import Compiler
from numba.core.registry import CPUDispatcher

_PACKAGE = Path(__file__).resolve().parent

#: The files whose code a kernel can compile in: every module under ``mcengine/kernels``
#: (its packages' too) but ``cache.py`` (which looks at the cache and holds no kernel), and
#: the modules they take kernels or constants from.
KERNEL_SOURCES = (*sorted(p for p in (_PACKAGE / "kernels").rglob("*.py") if p.name != "cache.py"),
                  *(_PACKAGE / name for name in ("jit.py", "rng.py", "_pointer.py")))


def source_name(path: Path) -> str:
    """A kernel source's name in the stamp: its folder and file (``life/loop.py``)."""
    return f"{path.parent.name}/{path.name}"


@functools.lru_cache(maxsize=None)
def kernel_sources_digest(paths: tuple[Path, ...] = KERNEL_SOURCES) -> bytes:
    """SHA-256 over the names (:func:`source_name`) and contents of ``paths``: the source
    stamp of every cached kernel (read once per process)."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(source_name(path).encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.digest()


class _StampedByAllKernelSources:
    """A numba cache locator for mcengine's own kernels whose source stamp is
    :func:`kernel_sources_digest`; functions in other packages fall through to
    numba's locators."""

    def get_source_stamp(self):
        return kernel_sources_digest()

    @classmethod
    def from_function(cls, py_func, py_file):
        if _PACKAGE not in Path(py_file).resolve().parents:
            return None
        return super().from_function(py_func, py_file)


def _numba_caching(name: str):
    """A class of ``numba.core.caching`` by its public name (numba >= 0.62) or its older
    private one (``_`` + name), or None."""
    return getattr(caching, name, None) or getattr(caching, "_" + name, None)


def _stamp_kernels_with_all_sources() -> None:
    """Put the locators of :class:`_StampedByAllKernelSources` ahead of numba's own (once
    per package path); on a numba whose caching classes are not where they are looked
    for, warn and leave numba's per-file stamp."""
    impl = _numba_caching("CacheImpl")
    bases = [_numba_caching(name) for name in ("UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator")]
    locators = getattr(impl, "_locator_classes", None)
    if not isinstance(locators, list) or None in bases:
        warnings.warn("mcengine: this numba's cache locators were not found, so a cached kernel is checked against its own "
                      "source file only: clear NUMBA_CACHE_DIR after changing any file of mcengine/kernels", RuntimeWarning, stacklevel=2)
        return
    if not any(getattr(c, "package", None) == _PACKAGE for c in locators):
        locators[:0] = [type(f"KernelSources{base.__name__.lstrip('_')}", (_StampedByAllKernelSources, base), {"package": _PACKAGE})
                        for base in bases]


_stamp_kernels_with_all_sources()

#: The first threshold of Python's cyclic garbage collector while numba compiles, in a
#: process that opts in (:func:`tune_compile_gc`; CPython's default, 700, otherwise). A
#: compile makes millions of objects, most of them garbage within moments, and a collection
#: runs each time the allocations outnumber the frees by the threshold: at 700, the
#: survivors reach the oldest generation soon, and its full collections (each a walk over
#: every object alive) take a large share of a first run's compile. A speed setting (no
#: number depends on it), traded for a little more peak memory (``python -m benchmarks
#: compile`` measures both).
COMPILE_GC_THRESHOLD = 5000


class _CompileGarbage(event.Listener):
    """Raises the collector's first threshold to :data:`COMPILE_GC_THRESHOLD` for numba's
    outermost compile and puts it back after (numba compiles under its global compiler
    lock, so compiles nest but never overlap; a kernel loaded from the cache compiles
    nothing)."""

    def __init__(self):
        self.depth = 0
        self.saved = None  # the thresholds to put back, kept while the outermost compile runs

    def on_start(self, ev):
        if self.depth == 0:
            self.saved = gc.get_threshold()
            gc.set_threshold(max(self.saved[0], COMPILE_GC_THRESHOLD), *self.saved[1:])
        self.depth += 1

    def on_end(self, ev):
        self.depth -= 1
        if self.depth == 0:
            gc.set_threshold(*self.saved)


@functools.lru_cache(maxsize=None)
def tune_compile_gc() -> None:
    """Opt in, for this process: every numba compile from now on runs with the collector's
    first threshold at :data:`COMPILE_GC_THRESHOLD` (:class:`_CompileGarbage`; each
    compile's thresholds put back after it). The ``mcengine`` command calls it before a
    command that runs kernels; importing mcengine changes no collector setting. Once per
    process (later calls do nothing)."""
    event.register("numba:compile", _CompileGarbage())


_OPTIONS = dict(cache=True, nogil=True, error_model="numpy")


class _TypedByArgumentTypes(CPUDispatcher):
    """A kernel compiled once per argument *types*: called from another kernel with a
    constant (``0``, ``True``, ``STAGE_LIFE``), numba's dispatcher would compile it for that
    literal value (``Literal[int](3)``), apart from the same call with a variable of the same
    type, and again for each other constant; here the constant is typed as its type
    (``int64``, ``bool``), as a call from Python types it. No kernel reads an argument's
    literal value (:func:`numba.literally`)."""

    def get_call_template(self, args, kws):
        return super().get_call_template(tuple(types.unliteral(a) for a in args),
                                         {k: types.unliteral(v) for k, v in kws.items()})


def _policy(**options):
    """The decorator ``njit(**options)`` makes, its kernels :class:`_TypedByArgumentTypes`."""
    decorate = njit(**options)

    def make(func):
        dispatcher = decorate(func)
        dispatcher.__class__ = _TypedByArgumentTypes
        return dispatcher

    return make


#: Decorator for serial kernels (callable from other kernels).
kernel = _policy(**_OPTIONS)

#: Decorator for the samplers an event loop calls per event with arrays (the stream, a
#: law table): numba inlines them in its own IR, so there is no call and no pair of
#: reference-count updates per array around it (each inlined helper adds compile time to
#: every kernel that calls it). Also for small helpers with one or two callers: inlined,
#: a helper is not compiled on its own, nor its code linked and optimised again in every
#: caller's module (a shorter, smaller first compile).
inline_kernel = _policy(inline="always", **_OPTIONS)

#: Decorator for an event loop that allocates nothing (it works on a workspace its
#: caller passes), for the handlers it calls rather than inlines, and for the random
#: samplers of :mod:`mcengine.rng` it calls per draw: compiled without numba's reference
#: counting (``_nrt=False``), so no call to ``NRT_incref``/``NRT_decref`` is made around
#: the draws and helpers it inlines, nor the register spills around those calls.
event_kernel = _policy(_nrt=False, **_OPTIONS)

#: The prefix of the names numba gives the global variables that hold a function's
#: environment pointer (``numba.core.compiler.CompileResult`` finds them by it).
ENVIRONMENT_PREFIX = "_ZN08NumbaEnv"


class _LinkedLibrary(JITCodeLibrary):
    """The code library of a :data:`linked_kernel`: typed, lowered and optimised as any, but
    never made into machine code of its own. Its only use is its optimised module, which
    each caller links into its own module (numba's ``add_linking_library``) and compiles
    there; the function has no entry point to call. In the execution engine it stands as a
    module of its environment globals only, so numba can set their pointers (when it
    compiles the function and when it loads it from the cache), and the cache holds that
    module's machine code beside the optimised module's bitcode, in numba's own format
    (a later process links the bitcode into a caller it compiles).

    Callers link the module as the optimiser left it, where numba's libraries otherwise
    hand them the module as the machine-code pass left it (address arithmetic rewritten for
    the target); each caller's own optimisation and machine code follow as before.
    ``tests/test_jit.py`` pins the numba internals this relies on."""

    def _finalize_final_module(self):
        module = self._final_module
        self._finalize_dynamic_globals()
        self._verify_declare_only_symbols()
        self._final_module = _environments_only(module, self._codegen._create_empty_module(self.name))
        try:
            super()._finalize_final_module()
        finally:
            self._final_module = module


def _environments_only(module, empty):
    """``empty`` (an llvmlite IR module) with a definition of each environment global
    ``module`` defines (:data:`ENVIRONMENT_PREFIX`; common linkage, null, as numba's
    ``declare_env_global`` makes them), parsed."""
    pointer = llvm_ir.IntType(8).as_pointer()
    for gv in module.global_variables:
        if gv.name.startswith(ENVIRONMENT_PREFIX) and not gv.is_declaration:
            env = llvm_ir.GlobalVariable(empty, pointer, name=gv.name)
            env.linkage = "common"
            env.initializer = llvm_ir.Constant(pointer, None)
    return llvm.parse_assembly(str(empty))


class _LinkedCompiler(Compiler):
    """numba's compiler, the function's code going into a :class:`_LinkedLibrary`."""

    def compile_extra(self, func):
        if self.state.library is None:
            self.state.library = _LinkedLibrary(self.state.targetctx.codegen(), func.__qualname__)
            self.state.library.enable_object_caching()
        return super().compile_extra(func)


#: Decorator for the kernels that only other kernels call and that allocate nothing (the
#: lifetime loop, the handlers it calls rather than inlines, the repair-law sampler, the
#: helpers of the random streams, the heaps, the variants' checks, the fab's and the
#: geometry's inner searches): as :data:`event_kernel`,
#: without the two entry points numba otherwise makes for every function, a CPython
#: wrapper (which unboxes each argument from a Python object: a workspace of ~45 arrays
#: is a large one) and a C-callable one. Each is generated, optimised and compiled to
#: machine code with its function, then linked into every caller's module, and no kernel
#: uses them; nor is the function's own machine code made, which no kernel calls either
#: (each caller compiles the function's optimised module linked into its own:
#: :class:`_LinkedLibrary`): a cold first run compiles less (``python -m benchmarks
#: compile``; docs/performance.md#linked-kernels). Such a function cannot be called from
#: Python (it has no entry point for it: the call would crash), so ``tests/test_policy.py``
#: checks that no module outside the kernel modules (``mcengine/kernels``, ``mcengine/rng.py``)
#: imports or names one.
linked_kernel = _policy(_nrt=False, no_cpython_wrapper=True, no_cfunc_wrapper=True, pipeline_class=_LinkedCompiler, **_OPTIONS)

#: Blocks per thread: a few, so a slow block does not leave a thread idle for long.
BLOCKS_PER_THREAD = 4


def run_blocks(kernel, args: tuple, n: int, outs: tuple, scratch=None) -> None:
    """Call ``kernel(*args, *scratch(), i0, i1, *outs)`` for blocks ``[i0, i1)`` covering ``0 .. n - 1``.

    ``kernel`` fills rows ``i0 .. i1 - 1`` of the arrays ``outs``; the blocks run on
    ``numba.get_num_threads()`` threads. ``scratch`` (optional) makes the memory one block
    works in (a tuple of arguments, made afresh for each block, in its thread), so a
    kernel that would otherwise allocate it needs no reference counting. The kernel is
    compiled (or loaded from numba's cache) in the calling thread before the pool starts:
    memory a compile takes in a short-lived thread's malloc arena is not reused afterwards
    (it would add to a first run's peak memory).
    """
    own = scratch if scratch is not None else tuple
    threads = numba.get_num_threads()
    edges = np.linspace(0, n, min(n, threads * BLOCKS_PER_THREAD) + 1).astype(np.int64)
    blocks = [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]
    if threads == 1 or len(blocks) < 2:
        for i0, i1 in blocks:
            kernel(*args, *own(), i0, i1, *outs)
        return
    kernel.compile(tuple(numba.typeof(a) for a in (*args, *own(), 0, 0, *outs)))
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(lambda b: kernel(*args, *own(), b[0], b[1], *outs), blocks))  # (list: raises a block's error)
