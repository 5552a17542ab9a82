"""Warnings for a scenario whose precision, weight size, peak and efficiencies disagree.

``workload.precision`` picks the efficiency table (``workload.efficiency.PRECISION``) and
the dense peak (``gpu.peak_tflops.PRECISION``, docs/model.md#precision);
``workload.bytes_per_param`` sizes the weights; a ``workload.KIND_efficiency`` set to a
number wins over the table at every precision. A file (or a sweep, or a ``--set``) that
changes one of them alone describes an engine that streams weights of one size while
computing at another format's efficiencies or peak: valid input, so a warning, not an
error (:func:`sweep_warnings` says at which points of a sweep). A precision
sweep that means "this GPU in FP8" sets the precision and the weight size together
(``--set workload.precision="fp8" --set workload.bytes_per_param=1``) and reads the FP8
peak from the GPU's peak table.

A key no model reads (``workload.load.service_cv``, :meth:`~.schema.Scenario.unread_keys`)
set in a scenario is valid input too (older files still load): a warning that it changes
nothing (:func:`unread_warnings`).
"""

from __future__ import annotations

from .sections.workload import EFFICIENCY_KINDS

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
    fixed = [k for k in EFFICIENCY_KINDS if not isinstance(getattr(w, f"{k}_efficiency"), str)]
    if fixed and used != "bf16":  # the one-number keys predate the tables and win over them at every precision
        table = dict(w.efficiency)[used]
        out.append(f"{scenario.name}: " + ", ".join(f"workload.{k}_efficiency = {getattr(w, f'{k}_efficiency').median():g}" for k in fixed)
                   + f" {'is' if len(fixed) == 1 else 'are'} set and win{'s' if len(fixed) == 1 else ''} over workload.efficiency.{used} ("
                   + ", ".join(f"{k} {getattr(table, k).median():g}" for k in fixed if getattr(table, k) is not None)
                   + f"), so {used} runs at the same efficiencies as any other precision; unset {'it' if len(fixed) == 1 else 'them'} (\"auto\") or set the {used} table")
    return out


def sweep_warnings(params: list[str], points: list[tuple], grid: list[list]) -> list[str]:
    """The :func:`consistency_warnings` of a sweep's scenarios, each text once: prefixed
    with the points it holds at (``workload.precision = "fp8"``), or bare when it holds at
    every point (the base scenario's own). ``points``: the values per point (one per key
    of ``params``); ``grid``: the scenarios of each point."""
    at: dict[str, list[tuple]] = {}
    for point, scenarios in zip(points, grid):
        for s in scenarios:
            for text in consistency_warnings(s):
                at.setdefault(text, [])
                if point not in at[text]:
                    at[text].append(point)
    where = lambda point: ", ".join(f'{k} = "{v}"' if isinstance(v, str) else f"{k} = {v}" for k, v in zip(params, point))  # noqa: E731
    return [text if len(pts) == len(points) else f"at {'; '.join(where(p) for p in pts)}: {text}" for text, pts in at.items()]


def unread_warnings(scenario) -> list[str]:
    """One sentence per key ``scenario`` sets that no model reads (module text); [] when none."""
    return [f"{scenario.name}: {key} = {value.to_toml()} is read by no model (docs/load.md#queue): it is accepted so that older "
            "scenarios load, but it is neither drawn nor a sensitivity input, and changes no output; drop it"
            for key, value in scenario.unread_keys().items()]
