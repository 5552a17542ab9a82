"""`mcengine validate` check of the Sobol' machinery on a test function with known indices."""

from __future__ import annotations

from ..sensitivity.analysis import sobol_indices
from ..sensitivity.sampling import DEFAULT_SCRAMBLINGS
from ..sensitivity.known_answers import ishigami, ishigami_indices
from .check import Check


# ----------------------------------------------------------------------------- validate
def checks() -> list[Check]:
    """Sobol' machinery on the Ishigami function (a=7, b=0.1, plus a dummy 4th input)
    against its analytic indices; tolerance 4 standard errors (the jackknife over the design's
    independent scramblings)."""
    s1, st, _ = ishigami_indices()
    names = ["x1", "x2", "x3", "dummy"]
    est = sobol_indices(lambda u, _t: ishigami(u), names, 4096, seed=20100101, noise=False)
    checks = []
    for i, name in enumerate(names):
        for label, got, se, exact in (("S1", est.s1, est.s1_se, s1), ("ST", est.st, est.st_se, st)):
            expected = float(exact[i]) if i < 3 else 0.0
            tol = 4.0 * float(se[i]) if i < 3 else 1e-12
            checks.append(Check("sensitivity", f"ishigami {label} {name}", expected, float(got[i]), tol, f"Saltelli design, N=4096 in {DEFAULT_SCRAMBLINGS} scramblings, Saltelli 2010 / Jansen 1999"))
    return checks
