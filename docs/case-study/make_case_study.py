"""Regenerate the README's case study from the code: the run, its figures and the table.

    python docs/case-study/make_case_study.py          # run the case study, rewrite README
    python docs/case-study/make_case_study.py --check  # exit 1 if README and summary.json differ

The run is the shipped study (``mcengine run``: ``configs/studies/case-study.toml``, its
own trial count, seed 0) written with ``--out`` into ``run/`` beside this script, so ``summary.json``,
``table.csv``, the resolved scenarios and every figure of ``run`` sit here. The block of
README.md between the markers ``<!-- case-study:begin -->`` and ``<!-- case-study:end -->``
is rendered from ``summary.json`` by :func:`render_block`; ``tests/test_readme_case_study.py``
checks the README against the committed summary (fast) and the committed summary against a
fresh run of the current code (slow), so neither can drift.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
README = ROOT / "README.md"
RUN = HERE / "run"
BEGIN, END = "<!-- case-study:begin -->", "<!-- case-study:end -->"
SEED = 0

#: (metric, label, formatter of a summary's statistics) rows of the per-scenario table.
SCENARIO_ROWS = (
    ("cost_per_mtok_usd", "cost per M output tokens", lambda s: f"{s['p50']:.3f} [{s['p05']:.3f}–{s['p95']:.3f}]"),
    ("instance_availability", "instance availability", lambda s: f"{s['mean']:.5f}"),
    ("tokens_per_s", "cluster output tokens/s", lambda s: f"{s['p50']:,.0f}"),
    ("gpu_cost_usd", "fab cost per GPU package", lambda s: f"${s['p50']:,.0f}"),
    ("gpu_price_per_h100_equivalent_usd", "GPU price per H100-equivalent", lambda s: f"${s['p50']:,.0f}"),
    ("energy_j_per_token", "GPU energy per output token", lambda s: f"{s['p50']:.2f} J"),
    ("power_w_per_h100_equivalent", "GPU power per H100-equivalent", lambda s: f"{s['p50']:.0f} W"),
    ("interruptions_per_year", "instance interruptions / yr", lambda s: f"{s['mean']:,.0f}"),
)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    """Plain text columns, each as wide as its widest cell plus two spaces."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return [" " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows]]


def render_block(doc: dict) -> str:
    """The README's condensed case-study tables from a ``run`` summary document.

    Per scenario: the median and 5–95 % of cost per token, mean instance availability and
    interruptions a year, medians of the rest. Paired with the baseline: the median and
    5–95 % of the cost ratio, P(B cheaper per token) and P(B less available), each over
    the trials the document's paired statistics count.
    """
    names = list(doc["scenarios"])
    rows = [[label, *(fmt(doc["scenarios"][n][key]) for n in names)]
            for key, label, fmt in SCENARIO_ROWS if all(key in doc["scenarios"][n] for n in names)]
    infeasible = {n: doc["scenarios"][n].get("slo_met", {}).get("mean", 1.0) for n in names}
    if min(infeasible.values()) < 1.0:
        rows.append(["share of trials meeting the SLOs", *(f"{infeasible[n]:.3f}" for n in names)])
    lines = [f"{doc['scenario']}: {doc['trials']:,} paired trials, seed {doc['seed']}", ""]
    lines += _table(["metric (median [5% – 95%])", *names], rows)
    paired = []
    for pair, metrics in doc["paired_all"].items():
        cost, avail = metrics["cost_per_mtok_usd"], metrics["availability"]
        r = cost["ratio"]
        paired.append([pair, f"{r['p50']:.3f} [{r['p05']:.3f}–{r['p95']:.3f}]", f"{cost['p_b_below_a']:.3f}",
                       f"{avail['p_b_below_a']:.3f}"])
    lines += [""] + _table([f"paired with {doc['baseline']}", "cost/Mtok ratio", "P(cheaper per token)", "P(less available)"], paired)
    return "\n".join(["```", *lines, "```"])


def readme_block(text: str) -> str:
    """The README's current case-study block (between the markers, markers excluded)."""
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[start:end].strip("\n")


def summary() -> dict:
    """The committed summary of the case-study run."""
    return json.loads((RUN / "summary.json").read_text(encoding="utf-8"))


def write_readme(doc: dict) -> None:
    """Replace README.md's case-study block by the rendering of ``doc`` (atomically)."""
    from mcengine.io import write_atomic

    text = README.read_text(encoding="utf-8")
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    write_atomic(README, text[:start] + "\n" + render_block(doc) + "\n" + text[end:])


def run() -> dict:
    """Run the shipped case study into ``run/`` (replacing the previous run's files)."""
    import mcengine.api as mc

    return mc.run(seed=SEED, out=RUN, force=True, keep_trials=False).summary()


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        same = readme_block(README.read_text(encoding="utf-8")) == render_block(summary())
        print("README case study matches docs/case-study/run/summary.json" if same
              else "README case study differs from docs/case-study/run/summary.json: run this script")
        return 0 if same else 1
    if argv:
        print(__doc__)
        return 2
    sys.path.insert(0, str(ROOT))  # this checkout's mcengine
    run()
    write_readme(summary())
    print("wrote docs/case-study/ and README.md's case study")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
