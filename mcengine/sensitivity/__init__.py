"""Which assumptions decide the verdict, in the SALib phase layout.

* :mod:`.sampling`: Saltelli designs on a scrambled Sobol' sequence, and their evaluation;
* :mod:`.analysis`: Sobol' first-order and total indices with intervals from independent
  scramblings of the design (a jackknife over them);
* :mod:`.known_answers`: Ishigami and linear functions with closed-form indices;
* :mod:`.methods`: sweeps, tornado charts and Sobol' indices of the chained model.
"""

from .methods import DEFAULT_OUTPUT, SWEEP_OUTPUTS, parse_values, sobol, sweep, tornado

__all__ = ["DEFAULT_OUTPUT", "SWEEP_OUTPUTS", "parse_values", "sobol", "sweep", "tornado"]
