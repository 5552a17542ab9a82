"""Regenerate docs/facility.md's table from the code: the shipped ``facility`` study
(configs/studies/facility.toml, seed 0) against the case study without it.

    python docs/facility/make_facility.py          # run the study, rewrite docs/facility.md's table
    python docs/facility/make_facility.py --check  # exit 1 if docs/facility.md and the run differ

The run is written with ``--out`` into ``docs/facility/facility/`` (summary.json, table.csv,
the resolved scenarios, the figures); the block of docs/facility.md between
``<!-- facility:begin -->`` and ``<!-- facility:end -->`` is rendered by :func:`render_block`
from that summary and the committed case study (docs/case-study/case-study/summary.json).
``tests/test_facility_doc.py`` checks the page against the committed summary (fast) and
the committed summary against a fresh run (slow).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PAGE = ROOT / "docs" / "facility.md"
STUDY = "facility"
BEGIN, END = "<!-- facility:begin -->", "<!-- facility:end -->"

#: (breakdown part, label) rows: every part of the cost per token, the study's new ones last.
PARTS = (("die", "die"), ("hbm", "HBM"), ("packaging", "packaging"), ("test", "test"), ("optics", "optics"), ("hosts", "hosts"),
         ("network", "NICs"), ("switch_tiers", "switch tiers"), ("fabric", "scale-up fabric"), ("markup", "markup"), ("energy", "energy"),
         ("repairs", "repairs"), ("facility", "facility (power, racks)"), ("cooling", "cooling"), ("floor", "floor"),
         ("capital", "cost of capital"))


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    """Plain text columns, each as wide as its widest cell plus two spaces."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return [" " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows]]


def designs(names: list[str]) -> list[list[str]]:
    """Per design at the study's settings: scale-out NICs, their switch ports (a switch's
    ports x their speed), their tiers, the scale-up tiers, a rack's rated power, the racks
    and the rated IT power (median inputs)."""
    sys.path.insert(0, str(ROOT))
    from mcengine.scenario.study import load_study
    from mcengine.scenario import load_scenario
    from mcengine.scenario.fabric import scale_out
    from mcengine.scenario.sampling import quantile_inputs
    from mcengine.stages import econ

    scenarios = [load_scenario(n, load_study(STUDY)["set"]) for n in names]
    halls = [econ.hall(s, quantile_inputs(s)) for s in scenarios]
    fabrics = [scale_out(s) for s in scenarios]
    return [["scale-out NICs (endpoints)", *(f"{f.endpoints:,}" for f in fabrics)],
            ["switch ports", *(f"{f.radix} x {f.port_gbps:g}G" for f in fabrics)],
            ["scale-out / scale-up tiers", *(f"{f.tiers} / {econ.scale_up_tiers(s)}" for f, s in zip(fabrics, scenarios))],
            ["rack power (4 hosts)", *(f"{float(h['rack_kw'][0]):.1f} kW" for h in halls)],
            ["racks", *(f"{int(h['racks']):,}" for h in halls)],
            ["rated IT power", *(f"{float(h['it_power_w'][0]) / 1e6:.2f} MW" for h in halls)]]


def render_block(doc: dict, case: dict, layout: list[list[str]]) -> str:
    """The page's table: per design the layout rows, the mean cost per token by part, the
    median and 5–95 % of the cost per token with the study on and in the case study; per
    pair with the baseline the median cost ratio and P(cheaper per token), on and off."""
    names = list(doc["scenarios"])
    sides = [doc["scenarios"][n] for n in names]
    rows = list(layout)
    for part, label in PARTS:
        means = [s["cost_breakdown_per_mtok_usd"].get(part, {}).get("mean", 0.0) for s in sides]
        if any(means):
            rows.append([f"  {label}", *(f"{m:.4f}" for m in means)])
    stat = lambda s: f"{s['p50']:.3f} [{s['p05']:.3f}–{s['p95']:.3f}]"  # noqa: E731
    rows.append(["cost per M output tokens", *(stat(s["cost_per_mtok_usd"]) for s in sides)])
    rows.append(["  in the case study (all off)", *(stat(case["scenarios"][n]["cost_per_mtok_usd"]) for n in names)])
    lines = [f"{doc['scenario']}: {doc['trials']:,} paired trials, seed {doc['seed']}; parts are means in USD per M output tokens", ""]
    lines += _table(["metric", *names], rows)
    paired = []
    for pair, metrics in doc["paired_all"].items():
        on, off = metrics["cost_per_mtok_usd"], case["paired_all"][pair]["cost_per_mtok_usd"]
        paired.append([pair, f"{on['ratio']['p50']:.3f}", f"{on['p_b_below_a']:.3f}", f"{off['ratio']['p50']:.3f}", f"{off['p_b_below_a']:.3f}"])
    lines += [""] + _table([f"paired with {doc['baseline']}", "cost ratio", "P(cheaper)", "case study: ratio", "P(cheaper)"], paired)
    return "\n".join(["```", *lines, "```"])


def summary(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text(encoding="utf-8"))


def rendered() -> str:
    """The block the committed runs give."""
    doc = summary(HERE / STUDY)
    return render_block(doc, summary(ROOT / "docs" / "case-study" / "case-study"), designs(list(doc["scenarios"])))


def page_block(text: str) -> str:
    return text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip("\n")


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        stale = page_block(PAGE.read_text(encoding="utf-8")) != rendered()
        print("docs/facility.md differs from docs/facility/: run this script" if stale else "docs/facility.md matches docs/facility/")
        return 1 if stale else 0
    if argv:
        print(__doc__)
        return 2
    sys.path.insert(0, str(ROOT))  # this checkout's mcengine
    sys.path.insert(0, str(HERE.parent / "case-study"))
    import make_case_study as CS

    from mcengine.io import write_atomic

    CS.run(STUDY, HERE)  # at the case study's seed
    text = PAGE.read_text(encoding="utf-8")
    start, stop = text.index(BEGIN) + len(BEGIN), text.index(END)
    write_atomic(PAGE, text[:start] + "\n" + rendered() + "\n" + text[stop:])
    print("wrote docs/facility/facility/ and docs/facility.md's table")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
