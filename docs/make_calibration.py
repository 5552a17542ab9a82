"""Write the calibration paragraph of docs/model.md from the code's current fit.

The text between the ``calibration`` markers of docs/model.md is generated from
:mod:`mcengine.validation.roofline` (the anchors, their roles and known misses) and the
shipped h100 efficiency tables (the fitted medians, which ``mcengine validate`` checks are
the least-squares refit within its tolerance): each precision's medians, and every
anchor's error at them. ``tests/test_calibration_doc.py`` fails when the page drifts.

    python docs/make_calibration.py
"""

from __future__ import annotations

import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parent / "model.md"
sys.path.insert(0, str(PAGE.parents[1]))  # this checkout's mcengine
BEGIN, END = "<!-- calibration:begin (docs/make_calibration.py) -->", "<!-- calibration:end -->"


def _pct(x: float) -> str:
    return f"{x:+.1%}".replace("-", "−")


def calibration_text() -> str:
    """The generated paragraph (markers excluded)."""
    from mcengine.scenario import load_scenario
    from mcengine.validation.roofline import CALIBRATION, KNOWN_MISSES

    tables = dict(load_scenario("h100").workload.efficiency)
    anchors = (*CALIBRATION, *KNOWN_MISSES)
    parts = []
    for precision in sorted({a.precision for a in anchors}, key=("bf16", "fp8").index):
        t = tables[precision]
        kv = "its memory efficiency" if t.kv is None else f"{t.kv.median():.2f}"
        mine = [a for a in anchors if a.precision == precision]
        rows = {role: [a for a in mine if a.role == role and not a.known_miss] for role in ("fit", "held-out")}
        misses = [a for a in mine if a.known_miss]
        errors = {a.name: a.value() / a.measured - 1.0 for a in mine}

        def listed(label, group):
            return f"{len(group)} {label}" + (f" ({'; '.join(f'{a.name} {_pct(errors[a.name])}' for a in group)})" if group else "")

        parts.append(f"**{precision}** (medians: compute {t.compute.median():.2f}, memory {t.memory.median():.2f}, "
                     f"KV read {kv}): {listed('fit', rows['fit'])}; {listed('held out and passing', rows['held-out'])}; "
                     f"{listed('known misses, each with the input that moves it', misses)}.")
    return ("The efficiencies are fitted per precision, each table to its own measured H100 anchors "
            "(docs/sources.md#roof-calibration), and `mcengine validate` refits them and reports every anchor "
            "(its model / measured − 1 at the shipped medians below; a known miss is reported, not required):\n\n"
            + "\n\n".join(parts))


def page_text() -> str:
    """docs/model.md with its calibration paragraph regenerated."""
    text = PAGE.read_text(encoding="utf-8")
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{calibration_text()}\n{END}{tail}"


if __name__ == "__main__":
    from mcengine.io import write_atomic

    write_atomic(PAGE, page_text())
    print(f"wrote {PAGE}")
