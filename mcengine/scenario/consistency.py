"""Warnings for a scenario whose precision and weight size disagree.

``workload.precision`` picks the efficiency table (docs/model.md#roofline) and
``workload.bytes_per_param`` sizes the weights; ``gpu.peak_tflops`` is the dense peak at
that precision. A file (or a sweep, or a ``--set``) that changes one of them alone
describes an engine that streams weights of one size while computing at another
format's efficiencies: valid input, so a warning, not an error. A precision sweep that
means "this GPU in FP8" sets all of them together (``--set workload.precision="fp8"
--set workload.bytes_per_param=1 --set gpu.peak_tflops=...``).
"""

from __future__ import annotations

#: Bytes per weight of each precision's number format.
PRECISION_BYTES = {"bf16": 2.0, "fp8": 1.0}


def consistency_warnings(scenario) -> list[str]:
    """One sentence per disagreement in ``scenario`` (module text); [] when none."""
    w = scenario.workload
    if w.precision not in PRECISION_BYTES:  # "auto" follows the weight size
        return []
    size, expected = w.bytes_per_param.median(), PRECISION_BYTES[w.precision]
    if size == expected:
        return []
    return [f"{scenario.name}: workload.precision = {w.precision!r} computes at {w.precision}'s efficiencies, but "
            f"workload.bytes_per_param = {size:g} sizes the weights as {size:g}-byte numbers ({w.precision}: {expected:g}); "
            f"set both (and gpu.peak_tflops, the dense peak at {w.precision}) together"]
