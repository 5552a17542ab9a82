"""Bare pointers for the random stream's refill: memory without an array around it.

The stream state of :mod:`mcengine.rng` is refilled by :func:`mcengine.rng._refill`,
which takes the state as an address (:func:`address_of`), not as an array: a call that
takes an array costs numba a reference-count call pair around it at every draw, not
only at a refill. The refill then reads and writes the words through
:func:`uint64_words_at`, a typed pointer: an array view over the address (numba's
``carray``) cannot be made inside an :data:`~mcengine.jit.event_kernel`, which is
compiled without reference counting, nor in what it calls.
"""

from __future__ import annotations

from numba import types
from numba.extending import intrinsic

__all__ = ["address_of", "uint64_words_at"]


@intrinsic
def address_of(typingctx, arr):
    """The address of a contiguous array's first element, as an integer (no reference
    count: pass it to a call instead of the array, see :func:`uint64_words_at`)."""
    signature = types.uintp(arr)

    def codegen(context, builder, sig, args):
        data = context.make_array(sig.args[0])(context, builder, value=args[0]).data
        return builder.ptrtoint(data, context.get_value_type(types.uintp))

    return signature, codegen


@intrinsic
def uint64_words_at(typingctx, address):
    """The uint64 words at ``address`` (from :func:`address_of`) as a bare pointer,
    indexed like an array (``p[j]``, ``p[j] = x``; no bounds, no reference count: a
    kernel compiled without reference counting, such as an
    :data:`~mcengine.jit.event_kernel` and what it calls, cannot make an array view)."""
    signature = types.CPointer(types.uint64)(address)

    def codegen(context, builder, sig, args):
        return builder.inttoptr(args[0], context.get_value_type(sig.return_type))

    return signature, codegen
