"""Borrowed array views: the same memory without a reference count, for hot event loops.

numba counts references to every array it passes around with atomic operations on the
array's meminfo, and its pruning pass cannot remove the pair of increment and decrement
around a call that is not inlined (the call's error path returns early). In an event
loop that calls the samplers of :mod:`mcengine.rng` with the stream state, or the heap
and law helpers with their tables, those atomics cost more than the simulation itself
(measured: a lognormal draw 73 ns with a counted stream, 35-50 ns with a borrowed one).

:func:`borrow` returns a C-ordered view of a contiguous array whose meminfo is NULL, so
numba's increments and decrements of it are a null test. The caller keeps the owner
alive for as long as the view is used (a local of the same function, or an argument).
This is numba's documented ``carray`` over a pointer (Numba docs, "Deviations from
Python semantics" / ``numba.carray``); the pointer cast is a one-line intrinsic.
"""

from __future__ import annotations

import numpy as np
from numba import carray, types
from numba.core import cgutils
from numba.extending import intrinsic

from mcengine.jit import kernel

__all__ = ["borrow", "address_of", "uint64_words_at"]


@intrinsic
def _void_pointer(typingctx, address):
    """The integer ``address`` as a ``void*`` (for :func:`numba.carray`)."""
    signature = types.voidptr(address)

    def codegen(context, builder, sig, args):
        return builder.inttoptr(args[0], cgutils.voidptr_t)

    return signature, codegen


@intrinsic
def address_of(typingctx, arr):
    """The address of a contiguous array's first element, as an integer (no reference
    count: pass it to a call instead of the array, see :func:`uint64_words_at`)."""
    signature = types.uintp(arr)

    def codegen(context, builder, sig, args):
        data = context.make_array(sig.args[0])(context, builder, value=args[0]).data
        return builder.ptrtoint(data, context.get_value_type(types.uintp))

    return signature, codegen


@kernel
def uint64_words_at(address, n):
    """The ``n`` uint64 words at ``address`` (from :func:`address_of`), as a borrowed view."""
    return carray(_void_pointer(address), n, np.uint64)


@kernel
def borrow(arr):
    """A view of the C-contiguous ``arr`` that numba does not reference-count (see above)."""
    return carray(_void_pointer(address_of(arr)), arr.shape, arr.dtype)
