"""Bare pointers: memory without an array around it, and named tuples by reference.

The stream state of :mod:`mcengine.rng` is refilled by :func:`mcengine.rng._refill`,
which takes the state as an address (:func:`address_of`), not as an array: a call that
takes an array costs numba a reference-count call pair around it at every draw, not
only at a refill. The refill then reads and writes the words through
:func:`uint64_words_at`, a typed pointer: an array view over the address (numba's
``carray``) cannot be made inside an :data:`~mcengine.jit.event_kernel`, which is
compiled without reference counting, nor in what it calls.

numba passes a call's arguments by value, word by word: an array is 7 to 11 words, a
named tuple of arrays all of theirs, copied at every call (two instructions a word). A
kernel that calls others often with the same large named tuple passes it by reference
instead (:func:`by_reference`: one word a call): a :class:`ByRef`, whose fields read
like the tuple's (``ws.rq``), each loaded where it is used, so a callee written for the
tuple takes either. For the compiler the copy may alias any memory the callee writes, so
a field read in a loop that writes is loaded again at each turn (an array's data pointer,
shape and strides): worth it for callees that loop little, not for a pass over thousands
of elements (which takes the tuple by value).
"""

from __future__ import annotations

from numba.core import cgutils, types
from numba.core.imputils import impl_ret_borrowed
from numba.core.typing.templates import AttributeTemplate
from numba.extending import infer_getattr, intrinsic, lower_getattr_generic, models, register_model

__all__ = ["address_of", "uint64_words_at", "ByRef", "by_reference"]


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


class ByRef(types.Type):
    """numba type of a named tuple passed by reference (:func:`by_reference`): a pointer to
    it (``dtype``), whose fields read like the tuple's, each loaded where it is read; a
    field that is itself a named tuple reads as a :class:`ByRef` to it (no load)."""

    def __init__(self, dtype):
        self.dtype = dtype
        super().__init__(name=f"ByRef({dtype})")


register_model(ByRef)(models.PointerModel)


@infer_getattr
class _ByRefFields(AttributeTemplate):
    """The fields of a :class:`ByRef` have the named tuple's types (a named tuple's: a reference)."""

    key = ByRef

    def generic_resolve(self, ref, attr):
        if attr in ref.dtype.fields:
            field = ref.dtype[ref.dtype.fields.index(attr)]
            return ByRef(field) if isinstance(field, types.BaseNamedTuple) else field
        return None


@lower_getattr_generic(ByRef)
def _load_field(context, builder, ref, pointer, attr):
    """A field read through a :class:`ByRef`: loaded here (a named tuple's: its address)."""
    j = ref.dtype.fields.index(attr)
    field = ref.dtype[j]
    at = cgutils.gep_inbounds(builder, pointer, 0, j)
    if isinstance(field, types.BaseNamedTuple):
        return at
    return impl_ret_borrowed(context, builder, field, context.unpack_value(builder, field, at))


@intrinsic
def by_reference(typingctx, value):
    """The named tuple ``value`` by reference (a :class:`ByRef`): a copy of it in the
    calling kernel's stack frame, made here (call it once, ahead of a loop, and pass the
    reference to the calls in it), valid until that kernel returns (never return it). The
    copy holds no reference count: for kernels whose arrays their caller keeps alive, such
    as an :data:`~mcengine.jit.event_kernel`'s."""
    if not isinstance(value, types.BaseNamedTuple):
        return None
    signature = ByRef(value)(value)

    def codegen(context, builder, sig, args):
        pointer = cgutils.alloca_once(builder, context.get_data_type(sig.args[0]))
        context.pack_value(builder, sig.args[0], args[0], pointer)
        return pointer

    return signature, codegen
