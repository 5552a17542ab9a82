"""Per-event duration laws inside kernels, from fixed-width parameter tables.

A kernel gets the laws of one trial as a stack ``laws`` of shape ``(n_laws,
MAX_LAW_PARTS, 4)`` (the stage builds ``float64[n_trials, n_laws, MAX_LAW_PARTS, 4]``
from ``Law.parts()`` and the trial's drawn law parameters); law ``w`` is the table
``laws[w]``, one line per part, ``(cumulative weight, kind code, p1, p2)``:

=================  ======================  ===============  =============
kind (code)        p1                      p2               draws
=================  ======================  ===============  =============
fixed (0)          value                   unused           0
exponential (1)    mean                    unused           1
lognormal (2)      median                  sigma            ~1.03 (ziggurat)
Weibull (3)        scale = mean/Γ(1+1/k)   shape k          1
=================  ======================  ===============  =============

The cumulative weight of the last used line is exactly 1.0 and unused lines repeat 1.0.
A one-part law (``laws[w, 0, 0] == 1.0``) draws no selection uniform; a mixture draws
one uniform ``u`` and takes the first line with ``u <= cumulative weight``
(:func:`law_part`), then the part's own draws from :mod:`mcengine.rng`
(:func:`sample_law`). Kind codes are those of :mod:`mcengine.kernels.law_codes` (never
renumbered). An event loop that draws from one law many times reads it once into scalars
(:func:`resolve_law`) and draws from those (:func:`sample_resolved`): the same draws.
"""

from __future__ import annotations

from collections import namedtuple

from mcengine.jit import inline_kernel, linked_kernel
from mcengine.rng import exponential, lognormal, uniform, weibull_scale
from mcengine.kernels.law_codes import LAW_EXPONENTIAL, LAW_FIXED, LAW_LOGNORMAL

__all__ = ["CUM_WEIGHT", "KIND", "P1", "P2", "LAW_COLUMNS", "ResolvedLaw", "law_part", "resolve_law", "sample_law",
           "sample_resolved"]

#: Columns of a law-table line.
CUM_WEIGHT = 0
KIND = 1
P1 = 2
P2 = 3
LAW_COLUMNS = 4


@inline_kernel
def law_part(laws, w, u):
    """Index of the part of law ``w`` that the selection uniform ``u`` picks.

    Parameters
    ----------
    laws : float64[n_laws, MAX_LAW_PARTS, 4]
        A trial's stack of law tables.
    w : int
        Which law.
    u : float
        Uniform in (0, 1); unused (pass anything) for a one-part law.

    Returns
    -------
    int
        The first part ``j`` with ``u <= laws[w, j, CUM_WEIGHT]``.
    """
    j = 0
    last = laws.shape[1] - 1
    while j < last and u > laws[w, j, CUM_WEIGHT]:
        j += 1
    return j


@inline_kernel
def sample_law(st, laws, w):
    """One duration drawn from law ``w`` of the stack ``laws``: a one-part fixed law
    here (it draws nothing), any other by :func:`draw_law`.

    The law stack's reference draw: the life kernel draws the same values with the same
    draws from laws read once per lifetime (:func:`sample_resolved`, and
    :func:`~mcengine.kernels.life.workspace.duration` for its fixed swaps and restarts),
    and the kernel tests hold both to this one. The draws live in a function of their own
    (:func:`draw_law`), compiled once rather than inlined at each site.

    Parameters
    ----------
    st : uint64[STREAM_WORDS]
        The trial's random stream (advanced by the draws in the table above).
    laws : float64[n_laws, MAX_LAW_PARTS, 4]
        A trial's stack of law tables.
    w : int
        Which law.

    Returns
    -------
    float64
        The duration, in the law's unit (hours for every law of the scenario), >= 0.
    """
    if laws[w, 0, CUM_WEIGHT] >= 1.0 and laws[w, 0, KIND] == LAW_FIXED:
        return laws[w, 0, P1]
    return draw_law(st, laws, w)


@linked_kernel
def draw_law(st, laws, w):
    """One duration drawn from law ``w`` of the stack ``laws``, any law (arguments and
    result as :func:`sample_law`): the selection uniform of a mixture, then the part's
    own draws (:func:`draw_part`)."""
    j = 0
    if laws[w, 0, CUM_WEIGHT] < 1.0:
        j = law_part(laws, w, uniform(st))
    return draw_part(st, laws[w, j, KIND], laws[w, j, P1], laws[w, j, P2])


@linked_kernel
def draw_part(st, kind, p1, p2):
    """One duration drawn from a law's part of kind code ``kind`` (as the table holds it)
    with parameters ``p1``, ``p2``: the part's own draws (the table above)."""
    code = int(kind)
    d = p1  # LAW_FIXED
    if code == LAW_EXPONENTIAL:
        d = exponential(st, p1)
    elif code == LAW_LOGNORMAL:
        d = lognormal(st, p1, p2)
    elif code != LAW_FIXED:
        d = weibull_scale(st, p1, p2)
    return d


#: A law of the stack read once into scalars (:func:`resolve_law`) for an event loop that
#: draws from it many times (:func:`sample_resolved`): its row ``w``, its number of parts
#: (3 stands for three or more: drawn from the table), the first part's cumulative weight,
#: and the kind code and parameters of each of the first two parts.
ResolvedLaw = namedtuple("ResolvedLaw", ["w", "parts", "cum0", "kind0", "a0", "b0", "kind1", "a1", "b1"])


@inline_kernel
def resolve_law(laws, w):
    """Law ``w`` of the stack ``laws`` as a :data:`ResolvedLaw` (read once, where a
    lifetime starts)."""
    j1 = min(1, laws.shape[1] - 1)
    cum0 = laws[w, 0, CUM_WEIGHT]
    parts = 1 if cum0 >= 1.0 else 2 if laws[w, j1, CUM_WEIGHT] >= 1.0 else 3
    return ResolvedLaw(w, parts, cum0, laws[w, 0, KIND], laws[w, 0, P1], laws[w, 0, P2],
                       laws[w, j1, KIND], laws[w, j1, P1], laws[w, j1, P2])


@inline_kernel
def sample_resolved(st, laws, r):
    """:func:`sample_law` of law ``r.w`` of ``laws``, resolved by :func:`resolve_law`:
    the same draws in the same order, the same value. A law of one or two parts is drawn
    from the scalars (the selection uniform here, ``u <= cum0`` the first part as
    :func:`law_part` picks it; a fixed part's value without a call, a lognormal part
    drawn inline, as :func:`draw_part` draws it; any other part by :func:`draw_part`), one
    of more parts by :func:`draw_law`. It spares a repair draw the table's look-ups and
    a call that passes the table (about 15 words), and a lognormal part (the shipped
    repair laws' main part) the call that passes the stream (7 words) and picks the kind."""
    if r.parts > 2:
        return draw_law(st, laws, r.w)
    kind, p1, p2 = r.kind0, r.a0, r.b0
    if r.parts == 2 and uniform(st) > r.cum0:
        kind, p1, p2 = r.kind1, r.a1, r.b1
    if kind == LAW_FIXED:
        return p1
    if kind == LAW_LOGNORMAL:
        return lognormal(st, p1, p2)
    return draw_part(st, kind, p1, p2)
