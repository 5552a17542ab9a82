"""Warnings for a scenario whose precision, weight size and peak disagree.

``workload.precision`` picks the efficiency table and the dense peak
(``gpu.peak_tflops.PRECISION``, docs/model.md#precision); ``workload.bytes_per_param``
sizes the weights. A file (or a sweep, or a ``--set``) that changes one of them alone
describes an engine that streams weights of one size while computing at another
format's efficiencies or peak: valid input, so a warning, not an error. A precision
sweep that means "this GPU in FP8" sets the precision and the weight size together
(``--set workload.precision="fp8" --set workload.bytes_per_param=1``) and reads the FP8
peak from the GPU's peak table.
"""

from __future__ import annotations

#: Bytes per weight of each precision's number format.
PRECISION_BYTES = {"bf16": 2.0, "fp8": 1.0, "fp4": 0.5}


def consistency_warnings(scenario) -> list[str]:
    """One sentence per disagreement in ``scenario`` (module text); [] when none."""
    w, peaks = scenario.workload, scenario.gpu.peak_tflops
    used = w.precision_in_use()
    out = []
    if w.precision in PRECISION_BYTES:  # "auto" follows the weight size
        size, expected = w.bytes_per_param.median(), PRECISION_BYTES[w.precision]
        if size != expected:
            out.append(f"{scenario.name}: workload.precision = {w.precision!r} computes at {w.precision}'s efficiencies and peak (gpu.peak_tflops.{w.precision}), but "
                       f"workload.bytes_per_param = {size:g} sizes the weights as {size:g}-byte numbers ({w.precision}: {expected:g}); "
                       "set both together")
    if peaks.missing():
        out.append(f"{scenario.name}: gpu.peak_tflops gives {', '.join(peaks.given)} but not {', '.join(peaks.missing())}: "
                   f"{' and '.join(peaks.missing())} compute at the bf16 peak ({peaks.bf16.median():g} TFLOP/s); "
                   "give every precision's peak (a table replaces the one it extends whole)")
    elif peaks.scalar and used != "bf16":
        out.append(f"{scenario.name}: gpu.peak_tflops is one number ({peaks.bf16.median():g} TFLOP/s, the peak at every precision), "
                   f"so {used} computes at it; give the peak per precision, e.g. gpu.peak_tflops = {{bf16 = ..., {used} = ...}}")
    return out
