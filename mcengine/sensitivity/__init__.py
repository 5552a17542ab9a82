"""Which assumptions decide the verdict, in the SALib phase layout.

* :mod:`.sampling`: Saltelli designs on a scrambled Sobol' sequence, and their evaluation;
* :mod:`.analysis`: Sobol' first-order and total indices with bootstrap intervals;
* :mod:`.test_functions`: Ishigami and linear functions with closed-form indices;
* :mod:`.studies`: sweeps, tornado charts and Sobol' studies of the chained model.
"""

from .studies import DEFAULT_OUTPUT, SWEEP_OUTPUTS, parse_values, sobol, sweep, tornado

__all__ = ["DEFAULT_OUTPUT", "SWEEP_OUTPUTS", "parse_values", "sobol", "sweep", "tornado"]
