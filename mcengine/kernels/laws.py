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
renumbered).
"""

from __future__ import annotations

from mcengine.jit import inline_kernel, linked_kernel
from mcengine.rng import exponential, lognormal, uniform, weibull_scale
from mcengine.kernels.law_codes import LAW_EXPONENTIAL, LAW_FIXED, LAW_LOGNORMAL

__all__ = ["CUM_WEIGHT", "KIND", "P1", "P2", "LAW_COLUMNS", "law_part", "sample_law"]

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

    Inlined where it is called, with the draws in a function of their own: an event loop
    pays no call for its fixed laws (the shipped swaps and restarts), and compiles the
    samplers once, not at each of its call sites: the samplers (the ziggurat of
    :func:`~mcengine.rng.normal` above all) inlined at every site would make the
    reliability stage's first compile much longer and larger, for a call that costs the
    life kernel little (the shipped repairs draw from a lognormal mixture).

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
    own draws (the table above)."""
    j = 0
    if laws[w, 0, CUM_WEIGHT] < 1.0:
        j = law_part(laws, w, uniform(st))
    kind = int(laws[w, j, KIND])
    d = laws[w, j, P1]  # LAW_FIXED
    if kind == LAW_EXPONENTIAL:
        d = exponential(st, laws[w, j, P1])
    elif kind == LAW_LOGNORMAL:
        d = lognormal(st, laws[w, j, P1], laws[w, j, P2])
    elif kind != LAW_FIXED:
        d = weibull_scale(st, laws[w, j, P1], laws[w, j, P2])
    return d
