"""The one kernel decorator policy of mcengine (cache, no GIL, NumPy error model, no fastmath).

Every numba function in the package is compiled through :data:`kernel`,
:data:`inline_kernel` or :data:`parallel_kernel`, so all of them share the same options:

* ``cache=True``: compiled machine code is cached on disk, so the second process
  (tests, CLI runs) does not pay the compile time again;
* ``nogil=True``: kernels release the GIL, so Dask/threaded drivers can overlap;
* ``error_model="numpy"``: division by zero gives inf/NaN like NumPy instead of
  raising inside the kernel (inputs are validated before they reach a kernel);
* no ``fastmath``: ``"inf"`` is a real scenario value (Poisson clustering, unlimited
  crews), and the no-NaN/no-inf fast-math flags would silently break it.

``@njit`` appears only here; ``tests/test_policy.py`` enforces it.
"""

from __future__ import annotations

from numba import njit

_OPTIONS = dict(cache=True, nogil=True, error_model="numpy")

#: Decorator for serial kernels (callable from other kernels).
kernel = njit(**_OPTIONS)

#: Decorator for the samplers an event loop calls per event with arrays (the stream, a
#: law table): numba inlines them in its own IR, so there is no call and no pair of
#: reference-count updates per array around it (measured: the life kernel ~15-20%
#: faster; each inlined helper adds compile time to every kernel that calls it).
inline_kernel = njit(inline="always", **_OPTIONS)

#: Decorator for an event loop that allocates nothing (it works on a workspace its
#: caller passes), and for the handlers it calls rather than inlines: compiled without
#: numba's reference counting (``_nrt=False``), so no call to ``NRT_incref``/``NRT_decref``
#: is made around the draws and helpers it inlines, nor the register spills around those
#: calls.
event_kernel = njit(_nrt=False, **_OPTIONS)

#: Decorator for drivers that ``prange`` over independent trials.
parallel_kernel = njit(parallel=True, **_OPTIONS)
