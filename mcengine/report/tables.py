"""Terminal tables (rich) of every command's JSON document; the documents stay the source of truth."""

from __future__ import annotations

from ..analytic.fab import YIELD_MODELS


def _flatten(doc: dict, prefix: str = "") -> list[tuple[str, object]]:
    rows = []
    for key, value in doc.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            rows += _flatten(value, name + ".")
        else:
            rows.append((name, value))
    return rows


def fmt_value(value) -> str:
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e6 else f"{value:,.0f}"
    return str(value)


def render_bench(doc: dict):
    """`mcengine bench` as one table of throughputs and ratios."""
    from rich.table import Table

    table = Table("measure", "value", title="mcengine bench")
    for name, value in _flatten(doc):
        table.add_row(name, fmt_value(value))
    return table


# ----------------------------------------------------------------------------- run / compare

#: (metric, label, format) rows of the verdict table.
VERDICT_ROWS = (
    ("cost_per_mtok_usd", "cost per M output tokens (USD)", "{:.3f}"),
    ("availability", "instance availability", "{:.5f}"),
    ("tokens_per_s", "cluster output tokens/s", "{:,.0f}"),
    ("gpu_cost_usd", "fab cost per GPU package (USD)", "{:,.0f}"),
    ("interruptions_per_year", "instance interruptions per year", "{:,.0f}"),
)


def _interval(d: dict, fmt: str) -> str:
    return f"{fmt.format(d['p50'])}  [{fmt.format(d['p05'])} – {fmt.format(d['p95'])}]"


def render_run(doc: dict):
    """The verdict: medians with 90% intervals per scenario, and the paired ratios."""
    from rich.console import Group
    from rich.table import Table

    names = list(doc["scenarios"])
    table = Table("metric (median [5% – 95%])", *names, title=f"{doc['scenario']}: {doc['trials']:,} paired trials, seed {doc['seed']}")
    for metric, label, fmt in VERDICT_ROWS:
        table.add_row(label, *(_interval(doc["scenarios"][n][metric], fmt) for n in names))
    met = [doc["scenarios"][n].get("slo_met", {}).get("mean", 1.0) for n in names]
    if min(met) < 1.0:  # a trial whose TPOT misses its SLO serves one sequence at a time
        table.add_row("share of trials meeting the TPOT SLO", *(f"{m:.3f}" + ("  (MISSED)" if m < 1.0 else "") for m in met))
    parts = [table]
    if "paired_all" in doc:
        paired = Table("paired with " + doc["baseline"], "cost/Mtok ratio", "P(cheaper per token)", "availability ratio", "P(less available)", title="paired trials (common random numbers)")
        for pair, metrics in doc["paired_all"].items():
            cost, avail = metrics["cost_per_mtok_usd"], metrics["availability"]
            paired.add_row(pair, _interval(cost["ratio"], "{:.3f}"), f"{cost['p_b_below_a']:.3f}", _interval(avail["ratio"], "{:.5f}"), f"{avail['p_b_below_a']:.3f}")
        parts.append(paired)
    return Group(*parts)




def render_scenarios(rows: list[tuple[str, str]]):
    """`mcengine scenarios`: name and one-line description of each shipped scenario."""
    from rich.table import Table

    table = Table("scenario", "description", title="shipped scenarios")
    for name, desc in rows:
        table.add_row(name, desc)
    return table


def render_validate(doc: dict):
    """`mcengine validate`: one row per cross-check."""
    from rich.table import Table

    table = Table("stage", "check", "closed form", "mcengine", "tolerance", "", title="analytic cross-checks")
    for c in doc["checks"]:
        table.add_row(c["stage"], c["name"], f"{c['expected']:.6g}", f"{c['got']:.6g}", f"{c['tolerance']:.3g}", "pass" if c["passed"] else "FAIL")
    return table


# ----------------------------------------------------------------------------- stages alone


def render_yield(body: dict):
    """A rich Table of ``mcengine yield``: Monte Carlo beside the closed forms."""
    from rich.table import Table

    def dist(s: dict, fmt: str) -> tuple[str, str]:
        return f"{s['mean']:{fmt}} ± {s['sem']:.2g}", f"{s['p05']:{fmt}} – {s['p95']:{fmt}}"

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
    table.add_row("cost / good die (USD): spend ÷ good dies", f"{pooled['cost_per_good_die_usd']:,.1f}", "", f"{cost['cost_per_good_die_usd']:,.1f}")
    table.add_row(f"  per wafer, over the {with_good:,} with a good die", *dist(body["cost_per_good_die_usd"], ",.1f"), "")
    table.add_row("GPU package (USD): spend ÷ packages", f"{pooled['gpu_cost_usd']:,.0f}", "", f"{cost['gpu_cost_usd']:,.0f}")
    table.add_row(f"  per wafer, over the {with_good:,} with a good die", *dist(body["gpu_cost_usd"], ",.0f"), "")
    if body.get("wafers_without_good_dies"):
        table.add_row("wafers without a good die", f"{body['wafers_without_good_dies']:,}", "", "")
    table.add_row("good dies with defects", f"{body['harvested_share']:.3f}", "", "")
    return table


def render_reliability(body: dict):
    """A rich Table of ``mcengine reliability``: Monte Carlo beside the renewal references."""
    from rich.table import Table

    an = body.get("analytic", {})
    name = body.get("scenario")
    table = Table(title=f"reliability stage{f': {name}' if name else ''}, {body.get('lifetimes', '?')} lifetimes",
                  caption="references: long-run renewal rates at the median inputs, ample spares; "
                          f"{body.get('events', 0):,} events simulated"
                          + (f"; over the horizon (renewal function) {an['failures_per_year_over_horizon']:,.1f} failures/yr" if "failures_per_year_over_horizon" in an else ""))
    for col in ("quantity", "MC mean ± sem", "MC p05 – p95", "reference"):
        table.add_column(col, justify="left" if col == "quantity" else "right")
    rows = (
        ("instance availability", "instance_availability", ".6f", an.get("availability_no_stockout")),
        ("failures / year", "failures_per_year", ",.2f", an.get("failures_per_year")),
        ("interruptions / year", "interruptions_per_year", ",.2f", an.get("interruptions_per_year")),
        ("swaps / year", "swaps_per_year", ",.2f", None),
        ("repairs / year", "repairs_per_year", ",.2f", None),
        ("stock-out inst-hours", "stockout_hours", ",.1f", None),
        ("max failed GPUs", "max_failed_gpus", ",.1f", None),
    )
    for label, key, fmt, ref in rows:
        if key not in body:
            continue
        d = body[key]
        table.add_row(label, f"{d['mean']:{fmt}} ± {d['sem']:.2g}", f"{d['p05']:{fmt}} – {d['p95']:{fmt}}",
                      "" if ref is None else f"{ref:{fmt}}")
    if "p_stockout" in an:
        table.add_row("P(units in repair > spares)", "", "", f"{an['p_stockout']:.3g}")
    return table


def _sig3(x: float) -> str:
    return f"{x:,.3g}" if abs(x) < 1000 else f"{x:,.0f}"


def render_roofline(body: dict):
    """Rich tables: the result, the terms per phase, the searched layouts."""
    from rich.console import Group
    from rich.table import Table

    par, lim = body["parallelism"], body["batch_limits"]
    summary = Table("measure", "value", title=f"roofline: {body.get('scenario', '')}".rstrip(": "))
    slo = "met" if body["slo_met"] else "MISSED"
    for name, value in (
        ("layout (tensor x pipeline)", f"{par['tensor']} x {par['pipeline']}" + (" + expert parallel" if par.get("expert_parallel") else "")),
        ("batch (memory limit, SLO limit)", f"{body['decode']['batch']} ({lim['memory']}, {lim['slo']})"),
        ("TTFT ms (one prompt)", f"{_sig3(body['prefill']['ttft_ms'])} ({body['prefill']['ttft_bound']})"),
        ("TPOT ms", f"{_sig3(body['decode']['tpot_ms'])} (SLO {_sig3(body['tpot_slo_ms'])}: {slo})"),
        ("output tokens/s per instance", _sig3(body["tokens_per_s_instance"])),
        ("output tokens/s per GPU", _sig3(body["tokens_per_s_per_gpu"])),
        ("output tokens/s per H100-equivalent", _sig3(body["tokens_per_s_per_h100_equivalent"])),
        ("weights GB per GPU", _sig3(body["weights_gb_per_gpu"])),
        ("KV bytes per token per GPU", _sig3(body["kv_bytes_per_token_per_gpu"])),
    ):
        summary.add_row(name, value)
    terms = Table("phase", "compute ms", "memory ms", "comm ms", "overhead ms", "total ms", "bound", title="terms: max(compute, memory) + comm + overhead")
    bounds = {"prefill": body["prefill"]["bound"], "ttft": body["prefill"]["ttft_bound"], "decode": body["decode"]["bound"]}
    labels = {"prefill": f"prefill of {body['decode']['batch']}", "ttft": "prefill of 1 (TTFT)", "decode": "decode step (TPOT)"}
    for phase, t in body["terms"].items():
        total = max(t["compute_ms"], t["memory_ms"]) + t["comm_ms"] + t["overhead_ms"]
        terms.add_row(labels[phase], *(_sig3(t[k]) for k in ("compute_ms", "memory_ms", "comm_ms", "overhead_ms")), _sig3(total), bounds[phase])
    layouts = Table("tensor", "pipeline", "fits", "batch", "TPOT ms", "SLO", "tokens/s per GPU", "", title="layouts searched (median inputs)")
    for row in body["layouts"]:
        layouts.add_row(
            str(row["tensor"]), str(row["pipeline"]), "yes" if row["fits"] else "no", str(row["batch"]),
            _sig3(row["tpot_ms"]), "met" if row["slo_met"] else "missed",
            _sig3(row["tokens_per_s_per_gpu"]) if row["fits"] else "-", "chosen" if row["chosen"] else "",
        )
    return Group(summary, terms, layouts)
