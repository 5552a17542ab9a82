"""Regenerate the measured section of docs/load.md from the code: the ``load-diurnal`` study
at :data:`TRIALS` trials, seed 0, each design buying its fleet, the same run on the
fixed 128-instance clusters, and the same run with the lengths spread at length CV 0.77
(:data:`RUNS`).

    python docs/load/make_load_tables.py          # rerun both, rewrite their summaries and the page's block
    python docs/load/make_load_tables.py --check  # exit 1 if the page's block and the summaries differ

Each run's ``summary.json`` (only that file: no trials, no figures) is written to the
folder of its name beside this script; the block of docs/load.md between
``<!-- load-measured:begin -->`` and ``<!-- load-measured:end -->`` is rendered from the
first two by :func:`render`: per design the fleet bought, its utilisation, latency at the
peak, attainment and cost per served token, the fixed clusters' capacity and the
largest demand they serve, and the paired cost ratios. The paragraph of
docs/load.md#length-spread between ``<!-- length-moves:begin -->`` and
``<!-- length-moves:end -->`` is rendered by :func:`render_spread` from the spread's run
beside the first (what a spread of the Azure traces' least CV moves). ``tests/test_load_measured.py``
checks the block against the committed summaries (fast) and a committed summary
against a fresh run of the current code (slow), so neither can drift.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PAGE = ROOT / "docs" / "load.md"
STUDY = "load-diurnal"
TRIALS = 2048
SEED = 0
#: The runs the block quotes: (folder beside this script, overrides of the study's).
RUNS = (
    ("load-diurnal", ()),
    ("load-diurnal-128", ("cluster.instances=128",)),
    ("load-diurnal-spread", ("workload.load.length_cv=0.77",)),
)
#: The designs the tables show (the study's first three; the baseline first).
DESIGNS = ("h100", "lite-h100", "lite-h100-2x")
#: The cost per served token (of the cluster each trial runs: the fleet it buys, or the
#: fixed cluster) the tables and the paired ratios quote.
COST = "cost_per_mtok_usd"
#: The width of the block's sentences (the page's).
WIDTH = 90
BEGIN, END = "<!-- load-measured:begin -->", "<!-- load-measured:end -->"
PAPER_BEGIN, PAPER_END = "<!-- load-paper:begin -->", "<!-- load-paper:end -->"
SPREAD_BEGIN, SPREAD_END = "<!-- length-moves:begin -->", "<!-- length-moves:end -->"
#: The paper's quick study (``mcengine paper --quick --json``'s numbers, written by docs/make_paper.py).
PAPER_QUICK = ROOT / "docs" / "paper" / "quick.json"
#: The claims whose ``shipped.under_load`` the paper block quotes, in order: (key, label).
PAPER_CLAIMS = (("blast_radius", "Claim 3 (blast radius)"), ("fleet", "Claim 6 (fleet)"))

sys.path.insert(0, str(ROOT))  # this checkout's mcengine
sys.path.insert(0, str(HERE.parent / "case-study"))
import make_case_study as CS  # noqa: E402  (its ratio's "median [5%–95%]" and the saturated case study's summary)


def run(overrides: tuple[str, ...]) -> dict:
    """The study's summary document at :data:`TRIALS` trials, seed :data:`SEED`, with ``overrides``."""
    import mcengine.api as mc

    return mc.run([STUDY], trials=TRIALS, seed=SEED, overrides=overrides, keep_trials=False, figures=False).summary()


def summary(name: str) -> dict:
    """The committed summary of the run ``name`` of :data:`RUNS`."""
    return json.loads((HERE / name / "summary.json").read_text(encoding="utf-8"))


def write_summaries() -> None:
    """Run each of :data:`RUNS` and write its summary.json (atomically)."""
    from mcengine.io import write_json

    for name, overrides in RUNS:
        (HERE / name).mkdir(exist_ok=True)
        write_json(HERE / name / "summary.json", run(overrides))


def _utilisation(s: dict) -> str:
    return f"{s['load']['utilisation_mean']['p50']:.2f} / {s['load']['utilisation_peak']['p50']:.2f}"


def _attainment(s: dict) -> str:
    return f"{s['load']['slo_attainment']['mean']:.3f}"


def _cost(s: dict) -> str:
    return f"${s[COST]['p50']:.3f}"


#: (label, formatter of a scenario's summary) rows of the table of the run buying its fleet:
#: medians, the attainment and the instance availability means over trials.
FLEET_ROWS = (
    ("fleet bought (of it for failures)", lambda s: f"{s['load']['fleet_instances']['p50']:.0f} ({s['load']['headroom_instances']['p50']:.0f})"),
    ("its mean / peak utilisation", _utilisation),
    ("its P99 TTFT / P99 TPOT at the peak, ms", lambda s: f"{s['load']['ttft_at_load_ms']['p50']:.0f} / {s['load']['tpot_at_load_ms']['p50']:.1f}"),
    ("its SLO attainment; goodput, tokens/s", lambda s: f"{_attainment(s)}; {s['load']['served_tokens_per_s']['p50']:,.0f}"),
    ("its cost per M tokens served", _cost),
    ("instance availability", lambda s: f"{s['instance_availability']['mean']:.5f}"),
)
#: The same of the run on the fixed clusters.
FIXED_ROWS = (
    ("saturated / capacity at SLO, tokens/s", lambda s: f"{s['load']['saturated_tokens_per_s']['p50']:,.0f} / {s['load']['capacity_at_slo_tokens_per_s']['p50']:,.0f}"),
    ("largest mean demand meeting the SLOs", lambda s: f"{s['load']['demand_at_slo_tokens_per_s']['p50']:,.0f}"),
    ("mean / peak utilisation", _utilisation),
    ("SLO attainment", _attainment),
    ("cost per M tokens served", _cost),
)


def _table(doc: dict, rows: tuple) -> list[str]:
    """A markdown table: a column per design of :data:`DESIGNS`, a row per row of ``rows``."""
    sides = [doc["scenarios"][n] for n in DESIGNS]
    return [f"| | {' | '.join(DESIGNS)} |", "|---" * (len(DESIGNS) + 1) + "|",
            *(f"| {label} | {' | '.join(fmt(s) for s in sides)} |" for label, fmt in rows)]


def _ratios(doc: dict, metric: str, bold: bool = False) -> str:
    """Each Lite design's median paired ratio over the baseline of ``metric`` [5%–95%] and P(B cheaper)."""
    base = DESIGNS[0]
    parts = []
    for name in DESIGNS[1:]:
        m = doc["paired_all"][f"{name} / {base}"][metric]
        median, interval = CS._ratio(m["ratio"]).split(" ", 1)
        parts.append(f"{name} {f'**{median}**' if bold else median} {interval}, P(B cheaper) {m['p_b_below_a']:.3f}")
    return "; ".join(parts)


def _wrap(sentence: str) -> list[str]:
    """A sentence on lines of at most :data:`WIDTH` characters, names and options unbroken."""
    return textwrap.wrap(sentence, WIDTH, break_on_hyphens=False)


def render(fleet: dict, fixed: dict, saturated: dict) -> str:
    """The page's block: the table of the run buying its fleet (``fleet``), the table of the
    run on the fixed clusters (``fixed``), and the paired ratios of the cost per served
    token of both, beside the saturated case study's (``saturated``: its summary)."""
    command = f"`mcengine run {STUDY} --trials {fleet['trials']} --seed {fleet['seed']}`"
    sets = " ".join(f"--set {o}" for o in dict(RUNS)["load-diurnal-128"])
    base = DESIGNS[0]
    at_saturation = " and ".join(f"{saturated['paired_all'][f'{n} / {base}']['cost_per_mtok_usd']['ratio']['p50']:.3f}"
                                 for n in DESIGNS[1:])
    ratios = (f"Paired ratios B/{base} of the cost per served token, median [5%–95%]: each buying its fleet, "
              f"{_ratios(fleet, COST, bold=True)}; on the fixed 128-instance clusters, {_ratios(fixed, COST)}; "
              f"at saturation (the case study's {saturated['trials']:,} trials), {at_saturation}.")
    lines = [f"{command}, each design buying its fleet:", "", *_table(fleet, FLEET_ROWS), "",
             *_wrap(f"The same run on the fixed 128-instance clusters (`{sets}`, {fixed['trials']:,} trials, seed {fixed['seed']}):"),
             "", *_table(fixed, FIXED_ROWS), "", *_wrap(ratios)]
    return "\n".join(lines)


def rendered() -> str:
    """The block of the committed summaries."""
    return render(summary(RUNS[0][0]), summary(RUNS[1][0]), CS.summary(CS.HEADLINE))


def render_spread(spread: dict, fleet: dict) -> str:
    """The paragraph of docs/load.md#length-spread: what the run with the lengths spread
    (``spread``) moves against the same run on the mean lengths (``fleet``), each design
    buying its fleet: the medians of the P99 TTFT at the peak and of the fleet bought, the
    trials that serve nothing (no load meets the SLOs: ``slo_met`` 0), and the paired
    ratios of the cost per served token."""
    base, lite, other = DESIGNS
    sets = " ".join(f"--set {o}" for o in dict(RUNS)["load-diurnal-spread"])
    command = f"`mcengine run {STUDY} --trials {spread['trials']} --seed {spread['seed']} {sets}`"

    def ttft(doc, name):
        return f"{doc['scenarios'][name]['load']['ttft_at_load_ms']['p50']:,.0f}"

    def bought(name):
        return " -> ".join(f"{doc['scenarios'][name]['load']['fleet_instances']['p50']:.0f}" for doc in (fleet, spread))

    def ratio(name):
        return " -> ".join(CS._ratio(doc["paired_all"][f"{name} / {base}"][COST]["ratio"]) for doc in (fleet, spread))

    def cheaper(name):
        return " -> ".join(f"{doc['paired_all'][f'{name} / {base}'][COST]['p_b_below_a']:.3f}" for doc in (fleet, spread))

    unserved = round((1.0 - spread["scenarios"][lite]["slo_met"]["mean"]) * spread["trials"])
    text = (f"**What it moves** ({command}; the shipped default stays 0): the median P99 TTFT at the peak is "
            f"{ttft(spread, base)} ms on the {base} fleet and {ttft(spread, lite)} ms on the {lite} fleet ({ttft(fleet, base)} and "
            f"{ttft(fleet, lite)} ms on the mean lengths), and each buys more instances (median {bought(base)} {base}, {bought(lite)} {lite}); "
            f"{unserved:,} of the {lite} fleet's {spread['trials']:,} trials ({unserved / spread['trials']:.1%}) serve nothing "
            f"(no load meets the SLOs). The {lite}/{base} cost per served token moves {ratio(lite)}, P({lite} cheaper) {cheaper(lite)}; "
            f"{other}/{base} {ratio(other)}.")
    return "\n".join(_wrap(text))


def rendered_spread() -> str:
    """The length-spread paragraph of the committed summaries."""
    return render_spread(summary(RUNS[2][0]), summary(RUNS[0][0]))


def render_paper(quick: dict) -> str:
    """The paper block: each claim of :data:`PAPER_CLAIMS` under load, as the paper's quick
    study (``quick``: docs/paper/quick.json) states it."""
    claims = {c["key"]: c for c in quick["numbers"]["claims"]}
    return "\n".join(f"* {label}: {claims[key]['shipped']['under_load']['text']}." for key, label in PAPER_CLAIMS)


def rendered_paper() -> str:
    """The paper block of the committed quick study."""
    return render_paper(json.loads(PAPER_QUICK.read_text(encoding="utf-8")))


def page_block(text: str, begin: str = BEGIN, end: str = END) -> str:
    """The page's current block between ``begin`` and ``end`` (markers excluded)."""
    return text[text.index(begin) + len(begin):text.index(end)].strip("\n")


def page_current() -> bool:
    """Whether the page's blocks are the committed files' renderings."""
    text = PAGE.read_text(encoding="utf-8")
    return (page_block(text) == rendered() and page_block(text, PAPER_BEGIN, PAPER_END) == rendered_paper()
            and page_block(text, SPREAD_BEGIN, SPREAD_END) == rendered_spread())


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        differ = not page_current()
        print("docs/load.md's measured blocks differ from docs/load/ and docs/paper/quick.json: run this script" if differ
              else "docs/load.md's measured blocks match docs/load/ and docs/paper/quick.json")
        return 1 if differ else 0
    if argv:
        print(__doc__)
        return 2
    from mcengine.io import write_block

    write_summaries()
    write_block(PAGE, BEGIN, END, rendered())
    write_block(PAGE, PAPER_BEGIN, PAPER_END, rendered_paper())
    write_block(PAGE, SPREAD_BEGIN, SPREAD_END, rendered_spread())
    print("wrote docs/load/load-diurnal*/summary.json and docs/load.md's measured blocks")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
