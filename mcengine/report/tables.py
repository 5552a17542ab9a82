"""Terminal tables (rich) of every command's JSON document; the documents stay the source of truth."""

from __future__ import annotations

from ..analytic.fab import YIELD_MODELS
from .metrics import fmt_value  # noqa: F401  (tables.fmt_value is used by sensitivity)


def as_text(renderable, width: int) -> str:
    """``renderable`` as a console of ``width`` columns prints it, as plain text (rich's
    recording console: the golden files, the HTML report's terminal view)."""
    import io

    from rich.console import Console

    console = Console(width=width, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def fit(table, labels: int = 1, text: tuple[int, ...] = ()):
    """``table`` readable at any width, also piped (80 columns): its first ``labels``
    columns (names, keys, values swept) and the columns ``text`` wrap, folding a long word,
    and every other column (numbers) keeps the width of its widest cell, so a number is
    never cut to ``0.9333…`` and no column shrinks to nothing. Returns the table."""
    from rich.cells import cell_len

    for i, col in enumerate(table.columns):
        if i < labels or i in text:
            col.no_wrap, col.overflow = False, "fold"
            continue
        widths = [cell_len(c.plain if hasattr(c, "plain") else str(c)) for c in (col.header, *col.cells)]
        col.no_wrap, col.min_width = True, max(widths, default=1)
    return table


def _flatten(doc: dict, prefix: str = "") -> list[tuple[str, object]]:
    rows = []
    for key, value in doc.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            rows += _flatten(value, name + ".")
        else:
            rows.append((name, value))
    return rows


def _label(key: str) -> str:
    """``trials_per_s_1_thread`` → ``trials/s 1 thread``."""
    return key.replace("_per_s", "/s").replace("_", " ")


def _bench_table(harness: str, body: dict):
    """One harness: cases as rows and measures as columns, or (one case with many
    measures, which would not fit 80 columns) measures as rows."""
    from rich.table import Table

    cases = body.get("cases", {})
    flat = {case: _flatten(values) for case, values in cases.items()}
    measures = list(dict.fromkeys(k for rows in flat.values() for k, _ in rows))
    settings = "; ".join(f"{_label(k)}: {fmt_value(v)}" for k, v in body.items() if k != "cases" and not isinstance(v, dict))
    title, caption = f"bench: {harness}", settings or None
    if len(measures) <= 4:
        table = Table("case", *(_label(m) for m in measures), title=title, caption=caption)
        for case, rows in flat.items():
            got = dict(rows)
            table.add_row(case, *(fmt_value(got[m]) if m in got else "" for m in measures))
        for col in table.columns[1:]:
            col.justify = "right"
        return fit(table)
    table = Table("measure", *cases, title=title, caption=caption)
    for m in measures:
        table.add_row(_label(m), *(fmt_value(dict(flat[c]).get(m, "")) for c in cases))
    for col in table.columns[1:]:
        col.justify = "right"
    return fit(table)


def render_bench(doc: dict):
    """`mcengine bench`: one table per harness (cases as rows, measures as columns), the
    machine as a header line."""
    from rich.console import Group
    from rich.text import Text

    parts = []
    if "machine" in doc:
        parts.append(Text("machine: " + ", ".join(f"{k} {v}" for k, v in doc["machine"].items())
                          + (" (quick run)" if doc.get("quick") else "")))
    for harness, body in doc.items():
        if isinstance(body, dict) and harness != "machine":
            parts.append(_bench_table(harness, body) if "cases" in body else _plain_table(harness, body))
    return Group(*parts)


def _plain_table(title: str, body: dict):
    from rich.table import Table

    table = Table("measure", "value", title=title)
    for name, value in _flatten(body):
        table.add_row(name, fmt_value(value))
    return fit(table)


# ----------------------------------------------------------------------------- run / compare

#: (metric, label) rows of the scenario table, each value in its one rounding
#: (:func:`mcengine.report.metrics.metric_format`).
VERDICT_ROWS = (
    ("cost_per_mtok_usd", "cost per M output tokens (USD)"),
    ("cost_per_mtok_at_cost_usd", "the same at cost, no markup (USD)"),
    ("cost_per_request_usd", "cost per request (USD)"),
    ("availability", "instance availability"),
    ("tokens_per_s", "cluster output tokens/s"),
    ("gpu_cost_usd", "fab cost per GPU package (USD)"),
    ("gpu_price_per_h100_equivalent_usd", "GPU price per H100-equivalent (USD)"),
    ("energy_j_per_token", "GPU energy per output token (J)"),
    ("power_w_per_h100_equivalent", "GPU power per H100-equivalent (W)"),
    ("interruptions_per_year", "instance interruptions per year"),
)
#: (metric, label) rows of the paired table (ratios in :data:`~mcengine.report.metrics.RATIO_FORMATS`).
PAIRED_ROWS = (
    ("cost_per_mtok_usd", "cost per M output tokens"),
    ("cost_per_mtok_at_cost_usd", "the same at cost (no markup)"),
    ("availability", "instance availability"),
    ("tokens_per_s", "cluster output tokens/s"),
)


def _interval(d: dict, fmt: str) -> str:
    return f"{fmt.format(d['p50'])}  [{fmt.format(d['p05'])} – {fmt.format(d['p95'])}]"


def _section(table, text: str) -> None:
    """A bold row naming the metric of the rows below it."""
    from rich.text import Text

    if table.row_count:
        table.add_section()
    table.add_row(Text(text, style="bold"), *([""] * (len(table.columns) - 1)))


def render_run(doc: dict):
    """The verdict, scenarios as rows under each metric (full names at any width):
    median and 90% interval per scenario, then the paired ratios to the baseline."""
    from rich.console import Group
    from rich.table import Table

    from .metrics import downtime_minutes, metric_format, paired_p_better

    names = list(doc["scenarios"])
    table = Table("scenario", "median", "5% – 95%", title=f"{doc['scenario']}: {doc['trials']:,} paired trials, seed {doc['seed']}")
    for col in table.columns[1:]:
        col.justify = "right"
    for key, label in VERDICT_ROWS:
        fmt = metric_format(key)
        if any(key not in doc["scenarios"][n] for n in names):
            continue  # a document without the metric (written before it existed)
        _section(table, label)
        for n in names:
            d = doc["scenarios"][n][key]
            table.add_row(n, fmt.format(d["p50"]), f"{fmt.format(d['p05'])} – {fmt.format(d['p95'])}")
        if key == "availability":
            _section(table, "the same as downtime (minutes a year)")
            for n in names:
                d = {q: downtime_minutes(v) for q, v in doc["scenarios"][n][key].items() if q in ("p05", "p50", "p95")}
                table.add_row(n, f"{d['p50']:,.0f}", f"{d['p95']:,.0f} – {d['p05']:,.0f}")
    missed = (doc.get("slo_infeasible_share") or doc.get("slo_missed_share")
              or {n: 1.0 - doc["scenarios"][n].get("slo_met", {}).get("mean", 1.0) for n in names})
    if max(missed.values()) > 0.0:  # a trial in which the plan misses its TPOT or TTFT SLO delivers no tokens
        _section(table, "SLO-infeasible trials (no tokens; not in the costs above)")
        for n in names:
            table.add_row(n, f"{missed[n]:.3f}" + ("  (INFEASIBLE)" if missed[n] > 0.0 else ""), "")
    parts = [fit(table)]
    if doc.get("verdict"):
        from .verdict import render_verdict

        parts.insert(0, render_verdict(doc))
    if "paired_all" in doc:
        base = doc["baseline"]
        ties = any(m.get("p_tie", 0.0) > 0.0 for metrics in doc["paired_all"].values() for m in metrics.values())
        counted = all("p_tie" in m for metrics in doc["paired_all"].values() for m in metrics.values())
        paired = Table("scenario (B)", f"B / {base}", "5% – 95%", "P(B better)", *(["P(tie)"] if ties else []),
                       title=f"paired with {base} = A (same trials, common random numbers)",
                       caption="lower cost is better; higher availability and tokens/s are better; "
                               + ("a tie (B = A) is not better" + ("; P(tie): share of trials with B = A" if ties else "")
                                  if counted else "there P(B better) counts ties: P(B ≥ A)")
                               + "; ratios over the trials in which both serve "
                               "tokens; P(B better) over all trials, a trial where only one side serves counted for it")
        for col in paired.columns[1:]:
            col.justify = "right"
        class_rows = tuple((f"mix.{c}.cost_per_mtok_usd", f"class {c} alone: cost per M output tokens")
                           for c in doc["scenarios"][base].get("mix", {}))
        for key, label in PAIRED_ROWS + class_rows:
            fmt = metric_format(key, ratio=True)
            _section(paired, label)
            for pair, metrics in doc["paired_all"].items():
                if key not in metrics:
                    continue
                d, (p, _) = metrics[key], paired_p_better(key, metrics[key])
                r = d["ratio"]
                paired.add_row(pair.split(" / ")[0], fmt.format(r["p50"]), f"{fmt.format(r['p05'])} – {fmt.format(r['p95'])}", f"{p:.3f}",
                               *([f"{d.get('p_tie', 0.0):.3f}"] if ties else []))
        parts.append(fit(paired))
    if any("mix" in doc["scenarios"][n] for n in names):
        parts.append(_mix_table(doc, names))
    if "verdict_map" in doc:
        parts.append(fit(verdict_map_table(doc["verdict_map"])))
    return Group(*parts)


def verdict_map_table(vmap: dict):
    """The verdict map (docs/verdict-map.md): a row per cell of the readings' grid (and the
    weighted total), per pair the median paired cost ratio and P(B cheaper)."""
    from rich.table import Table

    readings = list(vmap["readings"])
    pairs = list(vmap["cells"][0]["verdict"])
    table = Table(*readings, *(p.split(" / ")[0] for p in pairs),
                  title=f"verdict map: cost per token under each reading, {vmap['trials_per_cell']:,} paired trials a cell",
                  caption=f"each design: the median paired cost ratio B / {pairs[0].split(' / ')[1]}, P(B cheaper); the first row is the shipped "
                          "reading; the options and their --set in summary.json (verdict_map.readings), docs/verdict-map.md")
    for col in table.columns[:len(readings)]:
        col.no_wrap = True
    for col in table.columns[len(readings):]:
        col.justify = "right"
    for cell in vmap["cells"]:
        table.add_row(*(cell["readings"][r] for r in readings), *(f"{cell['verdict'][p]['cost_ratio']:.3f}, {cell['verdict'][p]['p_cheaper']:.3f}" for p in pairs))
    if "total" in vmap:
        table.add_row("weighted total", *([""] * (len(readings) - 1)),
                      *(f"{vmap['total'][p]['cost_ratio']:.3f}, {vmap['total'][p]['p_cheaper']:.3f}" for p in pairs))
    return table


#: (per-class metric, label, format) columns of the request-class table.
MIX_COLUMNS = (("request_share", "requests", "{:.3f}"), ("instance_share", "instances", "{:.3f}"), ("ttft_ms", "TTFT ms", "{:.3g}"),
               ("tpot_ms", "TPOT ms", "{:.3g}"), ("cost_per_mtok_usd", "USD/M tok alone", "{:.3f}"))


def _mix_table(doc: dict, names: list[str]):
    """Per request class of each scenario's mix: medians of its share of the requests
    and of the instances, its TTFT and TPOT, and its cost per M output tokens were the
    cluster to serve it alone (docs/model.md#mix)."""
    from rich.table import Table

    table = Table("scenario", "class", *(label for _, label, _ in MIX_COLUMNS),
                  title="request classes (medians; each class on its own instances, docs/model.md#mix)")
    for col in table.columns[2:]:
        col.justify, col.no_wrap = "right", True
    for n in names:
        for cls, metrics in doc["scenarios"][n].get("mix", {}).items():
            table.add_row(n, cls, *(fmt.format(metrics[key]["p50"]) if key in metrics else "-" for key, _, fmt in MIX_COLUMNS))
    return table


def render_scenarios(rows: list[tuple[str, str]]):
    """`mcengine scenarios`: name and one-line description of each shipped scenario."""
    from rich.table import Table

    table = Table("scenario", "description", title="shipped scenarios")
    for name, desc in rows:
        table.add_row(name, desc)
    return fit(table, text=(1,))


#: The verdicts of `mcengine validate`, in the order of its tally.
VALIDATE_STATUSES = ("pass", "known miss", "FAIL")


def _status(check: dict) -> str:
    """A check's status (a document without ``"status"``: pass or FAIL by ``"passed"``)."""
    return check.get("status", "pass" if check["passed"] else "FAIL")


def validate_tally(doc: dict) -> dict[str, int]:
    """How many checks passed, missed a measurement knowingly, or failed."""
    statuses = [_status(c) for c in doc["checks"]]
    return {s: statuses.count(s) for s in VALIDATE_STATUSES}


def render_validate(doc: dict, every: bool = False):
    """`mcengine validate`: the checks per stage and basis as counts of pass / known miss
    / FAIL, then every check that did not pass (the known misses with why), and the tally;
    ``every`` (``--all``): every check, the cross-checks against closed forms, then the
    calibration against measured bands (each table naming what its expected column holds)."""
    from rich.console import Group
    from rich.text import Text

    tally = validate_tally(doc)
    parts = _validate_tables(doc, lambda c: True) if every else [_validate_counts(doc), *_validate_tables(doc, lambda c: _status(c) != "pass")]
    parts.append(Text(f"{len(doc['checks'])} checks: " + ", ".join(f"{n} {s}" for s, n in tally.items())
                      + ("" if tally["FAIL"] else " (a known miss does not fail validate)")
                      + ("" if every else "; every check: mcengine validate --all")))
    return Group(*parts)


def _validate_counts(doc: dict):
    """Checks per (stage, basis): how many pass, miss a known measurement, fail."""
    from rich.table import Table

    counts: dict = {}
    for c in doc["checks"]:
        row = counts.setdefault((c["stage"], c.get("basis", "closed form")), dict.fromkeys(VALIDATE_STATUSES, 0))
        row[_status(c)] += 1
    table = Table("stage", "against", "checks", *VALIDATE_STATUSES, title="mcengine validate: checks per stage")
    for col in table.columns[2:]:
        col.justify = "right"
    for (stage, basis), row in counts.items():
        table.add_row(stage, basis, f"{sum(row.values()):,}", *(f"{row[s]:,}" for s in VALIDATE_STATUSES))
    return fit(table, labels=2)


def _validate_tables(doc: dict, keep) -> list:
    """The checks ``keep`` selects, one table per basis (closed form, measured)."""
    from rich.table import Table

    parts = []
    for basis, title, expected, tol in (
        ("closed form", "analytic cross-checks: mcengine against the closed form", "closed form", "tolerance"),
        ("measured", "calibration: mcengine against measured results (band centre ± half-width)", "measured", "± band"),
    ):
        checks = [c for c in doc["checks"] if c.get("basis", "closed form") == basis and keep(c)]
        if not checks:
            continue
        table = Table("stage", "check", expected, "mcengine", tol, "result", title=title)
        for c in checks:
            table.add_row(c["stage"], c["name"], f"{c['expected']:.6g}", f"{c['got']:.6g}", f"{c['tolerance']:.3g}", _status(c))
        why: dict[str, list[str]] = {}  # each reason once, with the checks it explains
        for c in checks:
            if c.get("status") == "known miss":
                why.setdefault(c["known_miss"], []).append(c["name"])
        if why:
            table.caption = "known miss: a published measurement the model misses, reported, not required: " + "; ".join(
                f"{', '.join(names)}: {reason}" for reason, names in why.items())
        parts.append(fit(table, labels=2))
    return parts


# ----------------------------------------------------------------------------- stages alone


def render_yield(body: dict):
    """A rich Table of ``mcengine yield``: Monte Carlo beside the closed forms."""
    from rich.table import Table

    def dist(s: dict | None, fmt: str) -> tuple[str, str]:
        if s is None:  # no wafer of the sample had a good die
            return "none", ""
        return f"{s['mean']:{fmt}} ± {s['sem']:.2g}", f"{s['p05']:{fmt}} – {s['p95']:{fmt}}"

    def value(x: float | None, fmt: str) -> str:
        return "none" if x is None else f"{x:{fmt}}"

    an, cost, pooled = body["analytic"], body["analytic_cost"], body["pooled"]
    harvest = body.get("harvesting", {})
    name = body.get("scenario")
    table = Table(title=f"fab stage{f': {name}' if name else ''}, {body.get('wafers', '?')} wafers",
                  caption="MC integrates over the uncertain inputs; closed forms are at the medians; "
                          "the named formulas are whole-die yields without harvesting")
    for col in ("quantity", "MC mean ± sem", "MC p05 – p95", "closed form"):
        table.add_column(col, justify="left" if col == "quantity" else "right")
    table.add_row("dies per wafer (exact)", str(body["dies_per_wafer"]), "",
                  f"{body['dies_per_wafer_formula']:.1f} formula")
    model = (f"{harvest.get('units_required')}/{harvest.get('units_per_die')} units"
             if harvest.get("enabled") else "no harvesting")
    table.add_row(f"die yield, {model}", *dist(body["die_yield"], ".4f"), f"{an['harvesting']:.4f}")
    for formula in YIELD_MODELS:
        table.add_row(f"  {formula.replace('_', ' ')}", "", "", f"{an[formula]:.4f}")
    table.add_row("good dies / wafer", *dist(body["good_dies_per_wafer"], ".2f"), f"{cost['good_dies_per_wafer']:.2f}")
    table.add_row("good H100-eq / wafer", *dist(body["good_h100_equivalents_per_wafer"], ".2f"), "")
    with_good = body.get("wafers", 0) - body.get("wafers_without_good_dies", 0)
    table.add_row("cost / good die (USD): spend ÷ good dies", value(pooled["cost_per_good_die_usd"], ",.1f"), "", f"{cost['cost_per_good_die_usd']:,.1f}")
    table.add_row(f"  per wafer, over the {with_good:,} with a good die", *dist(body["cost_per_good_die_usd"], ",.1f"), "")
    table.add_row("GPU package (USD): spend ÷ packages", value(pooled["gpu_cost_usd"], ",.0f"), "", f"{cost['gpu_cost_usd']:,.0f}")
    table.add_row(f"  per wafer, over the {with_good:,} with a good die", *dist(body["gpu_cost_usd"], ",.0f"), "")
    parts, priced, an_parts = body.get("gpu_cost_breakdown_usd"), body.get("gpu_price_breakdown_usd"), body.get("analytic_cost_breakdown_usd", {})
    for part, usd in (parts or {}).items():
        at_price = f"  (price {priced[part]:,.0f})" if priced else ""
        table.add_row(f"  {part}: spend ÷ packages{at_price}", f"{usd:,.0f}", "", f"{an_parts[part]:,.0f}" if part in an_parts else "")
    if body.get("wafers_without_good_dies"):
        table.add_row("wafers without a good die", f"{body['wafers_without_good_dies']:,}", "", "")
    table.add_row("good dies with defects", value(body["harvested_share"], ".3f"), "", "")
    return fit(table)


def render_reliability(body: dict):
    """A rich Table of ``mcengine reliability``: Monte Carlo beside the renewal reference
    that matches the run's horizon, the long-run one (1/MTTF, t → ∞) on a row of its own
    where it differs (:func:`mcengine.report.metrics.reliability_references`)."""
    from rich.table import Table

    from .metrics import reliability_references

    an = body.get("analytic", {})
    refs = reliability_references(an)
    name = body.get("scenario")
    table = Table(title=f"reliability stage{f': {name}' if name else ''}, {body.get('lifetimes', '?')} lifetimes",
                  caption="reference: renewal references at the median inputs over the run's horizon (a cluster started new); "
                          "long-run: 1/MTTF per class (t → ∞), shown where a wear-out or infant-mortality law makes it differ; "
                          f"instance availability: {an.get('instance_availability_basis', 'ample spares')}; "
                          + (f"capacity: {an['capacity_availability_basis']}; " if "capacity_availability_basis" in an else "")
                          + f"{body.get('events', 0):,} events simulated")
    for col in ("quantity", "MC mean ± sem", "MC p05 – p95", "reference"):
        table.add_column(col, justify="left" if col == "quantity" else "right")
    rows = (
        ("instance availability", "instance_availability", ".6f"),
        ("capacity availability", "capacity_availability", ".6f"),
        ("failures / year", "failures_per_year", ",.2f"),
        ("interruptions / year", "interruptions_per_year", ",.2f"),
        ("swaps / year", "swaps_per_year", ",.2f"),
        ("repairs / year", "repairs_per_year", ",.2f"),
        ("module swaps / year", "module_swaps_per_year", ",.2f"),
        ("host repairs / year", "host_repairs_per_year", ",.2f"),
        ("host swaps / year", "host_swaps_per_year", ",.2f"),
        ("NIC swaps / year", "nic_swaps_per_year", ",.2f"),
        ("stock-out inst-hours", "stockout_hours", ",.1f"),
        ("host stock-out inst-hours", "host_stockout_hours", ",.1f"),
        ("module stock-out inst-hours", "module_stockout_hours", ",.1f"),
        ("max failed GPUs", "max_failed_gpus", ",.1f"),
    )
    for label, key, fmt in rows:
        if key not in body:
            continue
        d = body[key]
        ref, long_run = refs.get(key, (None, None))
        table.add_row(label, f"{d['mean']:{fmt}} ± {d['sem']:.2g}", f"{d['p05']:{fmt}} – {d['p95']:{fmt}}",
                      "" if ref is None else f"{ref:{fmt}}")
        if long_run is not None:
            table.add_row("  long-run reference (t → ∞)", "", "", f"{long_run:{fmt}}")
        if key == "instance_availability" and body.get("unavailability"):
            # (the control-variate estimate of 1 - availability, docs/availability-vr.md)
            u = body["unavailability"]
            table.add_row("  1 - availability, control variates", f"{u['mean']:.4g} ± {u['sem']:.2g}",
                          f"variance ÷ {u['variance_reduction']:,.0f}", "")
    for cls, kinds in body.get("failures_by_class", {}).items():
        for kind, words in (("failures_per_year", "failures"), ("faults_per_year", "faults")):
            d = kinds[kind]
            if d["max"] > 0.0:  # (a class that never fails or faults has no row)
                table.add_row(f"  {cls} {words} / yr", f"{d['mean']:,.2f} ± {d['sem']:.2g}",
                              f"{d['p05']:,.2f} – {d['p95']:,.2f}", "")
    if "p_stockout" in an:
        table.add_row("P(units in repair > spares)", "", "", f"{an['p_stockout']:.3g}")
    return fit(table)


def _sig3(x: float) -> str:
    return f"{x:,.3g}" if abs(x) < 1000 else f"{x:,.0f}"



def _attention_text(attention: str) -> str:
    """The roofline body's attention mode in words ("grouped/4": 4 data-parallel groups)."""
    if attention == "data":
        return "data-parallel (sequences sharded)"
    if attention.startswith("grouped/"):
        return f"{attention.split('/')[1]} data-parallel groups (sequences sharded over groups, heads within each)"
    return "tensor-parallel (heads sharded)"

def render_roofline(body: dict):
    """Rich tables: the result, the terms per phase, the searched layouts, the serving modes
    (a workload mix: those of each request class in turn)."""
    from rich.console import Group
    from rich.table import Table

    if "classes" in body:
        return Group(*(render_roofline({**b, "scenario": f"{body.get('scenario', '')}, class {name} ({b['request_share']:.1%} of "
                                                         f"requests, {b['instance_share']:.1%} of instances)"})
                       for name, b in body["classes"].items()))

    par, lim = body["parallelism"], body["batch_limits"]
    summary = Table("measure", "value", title=f"roofline: {body.get('scenario', '')}".rstrip(": "))
    failed = {f["limit"]: f for f in body.get("slo_failed", [])}

    def verdict(limit: str) -> str:
        f = failed.get(limit)
        return "met" if f is None else f"MISSED by {_sig3(f['over_ms'])} ms: no tokens"

    ar = body.get("allreduce", {})
    for name, value in (
        *((("plan in use (workload.plan = " + body["plan_rule"] + ")", body["plan"]),) if "plan" in body else ()),
        ("layout (tensor x pipeline)", f"{par['tensor']} x {par['pipeline']}" + (" + expert parallel" if par.get("expert_parallel") else "")),
        ("attention", _attention_text(body.get("attention", "tensor"))),
        ("all-reduce (prefill, decode)", f"{ar.get('prefill', 'ring')}, {ar.get('decode', 'ring')}"),
        ("batch (memory limit, TPOT limit, TTFT limit)", f"{body['decode']['batch']} ({lim['memory']}, {lim['slo']}, {lim.get('ttft') if lim.get('ttft') is not None else '-'})"),
        ("TTFT ms (one prompt)", f"{_sig3(body['prefill']['ttft_ms'])} ({body['prefill']['ttft_bound']})"),
        ("TTFT ms (last of the batch)", f"{_sig3(body['prefill'].get('ttft_batch_ms', body['prefill']['batch_ms']))} (SLO {_sig3(body.get('ttft_slo_ms', float('inf')))}: {verdict('ttft')})"),
        ("TPOT ms", f"{_sig3(body['decode']['tpot_ms'])} (SLO {_sig3(body['tpot_slo_ms'])}: {verdict('tpot')})"),
        ("output tokens/s per instance", _sig3(body["tokens_per_s_instance"])),
        ("output tokens/s per GPU", _sig3(body["tokens_per_s_per_gpu"])),
        ("output tokens/s per H100-equivalent", _sig3(body["tokens_per_s_per_h100_equivalent"])),
        ("weights GB per GPU", _sig3(body["weights_gb_per_gpu"])),
        *((("KV bytes per token (the model)", _sig3(body["kv_bytes_per_token"])),) if "kv_bytes_per_token" in body else ()),
        ("KV bytes per token per GPU", _sig3(body["kv_bytes_per_token_per_gpu"])),
    ):
        summary.add_row(name, value)
    terms = Table("phase", "compute", "memory", "comm", "overhead", "total", "bound", title="terms (ms): max(max(compute, memory), o·comm) + (1−o)·comm + overhead, o = comm_overlap")
    bounds = {"prefill": body["prefill"]["bound"], "ttft": body["prefill"]["ttft_bound"], "decode": body["decode"]["bound"]}
    labels = {"prefill": f"prefill ×{body['decode']['batch']}", "ttft": "TTFT (prefill ×1)", "decode": "TPOT (decode)"}
    for phase, t in body["terms"].items():
        total = t.get("total_ms", max(t["compute_ms"], t["memory_ms"]) + t["comm_ms"] + t["overhead_ms"])
        terms.add_row(labels[phase], *(_sig3(t[k]) for k in ("compute_ms", "memory_ms", "comm_ms", "overhead_ms")), _sig3(total), bounds[phase])
    layouts = Table("TP", "PP", "attn", "fits", "batch", "TPOT ms", "SLO", "tokens/s/GPU", "", title=f"layouts searched in {body.get('serving', 'static')} serving (median inputs)",
                    caption="TP x PP: tensor x pipeline parallel ranks; attn: attention sharded by heads (tensor) or sequences (data); "
                            "*: the layout chosen")
    for row in body["layouts"]:
        layouts.add_row(
            str(row["tensor"]), str(row["pipeline"]), row.get("attention", "tensor"), "yes" if row["fits"] else "no", str(row["batch"]),
            _sig3(row["tpot_ms"]), "met" if row["slo_met"] else "missed",
            _sig3(row["tokens_per_s_per_gpu"]) if row["fits"] else "-", "*" if row["chosen"] else "",
        )
    parts = [fit(summary, text=(1,)), fit(terms), fit(layouts, labels=0)]
    return Group(*parts, _serving_table(body)) if "serving_modes" in body else Group(*parts)


def _serving_table(body: dict):
    """Each serving mode's best combination at the median inputs (docs/model.md#serving):
    one column per mode, so that it reads at 80 columns."""
    from rich.table import Table

    labels = ("layout", "batch", "TPOT ms", "TTFT ms", "SLO", "tokens/s per GPU", "per H100-eq.", "note")
    modes = body["serving_modes"]
    columns = {}
    for mode, row in modes.items():
        if not row["feasible"]:
            columns[mode] = ["-"] * (len(labels) - 1) + [f"infeasible: {row['why']}"]
            continue
        layout = f"{row['tensor']} x {row['pipeline']}"
        note = "chosen" if row["chosen"] else ""
        if "batch_binds" in row:
            note = f"{note}; batch limit: {row['batch_binds']}".strip("; ")
        if "prefill" in row:
            pre = row["prefill"]
            layout = f"decode {layout}, prefill {pre['tensor']} x {pre['pipeline']}" + (f" ({pre['batch']} prompts/pass)" if "batch" in pre else "")
            note = f"{note}; prefill share {row['prefill_share']:.2f}".strip("; ")
        columns[mode] = [layout, str(row["batch"]), _sig3(row["tpot_ms"]), _sig3(row["ttft_ms"]), "met" if row["slo_met"] else "missed",
                         _sig3(row["tokens_per_s_per_gpu"]), _sig3(row["tokens_per_s_per_h100_equivalent"]), note]
    table = Table("", *modes, title=f"serving modes (median inputs): {body['serving']} chosen")
    for i, label in enumerate(labels):
        table.add_row(label, *(columns[m][i] for m in modes))
    return fit(table, text=tuple(range(1, len(modes) + 1)))
