"""`mcengine serve`: its table (:func:`render_serve`) and its latency CDF figure
(:func:`serve_figures`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .display import FigureSet
from .figures import new_figure, save_png
from .tables import _sig3

#: The figure `serve --out DIR` writes.
SERVE_FIGURE = "latency_cdf.png"


def serve_figures(doc: dict, table) -> FigureSet:
    """Empirical CDFs of TTFT and TPOT (ms) over the measured requests, each with its SLO."""
    kept = table[table.measured]
    fig = new_figure(9.0, 3.8)
    axes = fig.subplots(1, 2)
    for ax, column, slo, label in ((axes[0], "ttft_s", doc["ttft_slo_ms"], "TTFT"), (axes[1], "tpot_s", doc["tpot_slo_ms"], "TPOT")):
        values = np.sort(kept[column].to_numpy()) * 1e3
        ax.step(values, np.arange(1, len(values) + 1) / len(values), where="post", color="C0", label="simulated requests")
        if slo is not None and np.isfinite(slo):
            ax.axvline(slo, color="C3", linestyle="--", label=f"SLO {_sig3(slo)} ms")
        ax.set(xlabel=f"{label} (ms)", ylabel="share of requests at or below", ylim=(0, 1.01))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    fig.suptitle(f"{doc.get('scenario', '')}: {doc['serving']} serving at {_sig3(doc['load'] * 100)}% of capacity "
                 f"({doc['arrival']} arrivals, CV {doc['arrival_cv']:g}; {doc['requests_measured']:,} requests)", fontsize=10)
    return FigureSet({SERVE_FIGURE: fig})


def figures_for_serve(doc: dict, table, out) -> list[Path]:
    """Write the `serve` figure into ``out``; returns its path."""
    return [save_png(fig, Path(out) / name) for name, fig in serve_figures(doc, table).items()]


def render_serve(doc: dict):
    """A rich table: the plan and load, latency quantiles, goodput, attainment, utilisation."""
    from rich.table import Table

    t = Table("measure", "value", title=f"serve: {doc.get('scenario', '')}")
    pools = f" ({doc['prefill_instances']} prefill)" if "prefill_instances" in doc else ""
    ttft, tpot = doc["ttft_ms"], doc["tpot_ms"]
    for name, value in (
        ("plan", doc["plan"]),
        ("instances", f"{doc['instances']:,}{pools}"),
        ("demand (output tokens/s)", f"{_sig3(doc['demand_tokens_per_s'])} = {doc['load']:.1%} of capacity {_sig3(doc['capacity_tokens_per_s'])}"),
        ("arrivals", f"{doc['arrival']}, CV {doc['arrival_cv']:g}, {_sig3(doc['arrival_rate_per_s'])} requests/s"),
        ("mean prompt / output tokens (spread)", f"{_sig3(doc['prompt_tokens_mean'])} / {_sig3(doc['output_tokens_mean'])} (CV {doc['length_cv']:g}"
         + ("; outputs geometric)" if doc["lengths"] == "geometric" else ")")),
        ("TTFT ms P50 / P90 / P99", f"{_sig3(ttft['p50'])} / {_sig3(ttft['p90'])} / {_sig3(ttft['p99'])} (SLO {_slo(doc['ttft_slo_ms'])})"),
        ("TPOT ms P50 / P90 / P99", f"{_sig3(tpot['p50'])} / {_sig3(tpot['p90'])} / {_sig3(tpot['p99'])} (SLO {_slo(doc['tpot_slo_ms'])})"),
        ("SLO attainment (both; TTFT; TPOT)", f"{doc['slo_attainment']:.1%}; {doc['ttft_attainment']:.1%}; {doc['tpot_attainment']:.1%}"),
        ("goodput (requests/s within both SLOs)", _sig3(doc["goodput_requests_per_s"])),
        ("utilisation (served / capacity)", f"{doc['utilisation']:.1%} (instances busy {doc['busy_share']:.1%} of the time)"),
        ("preemptions per request", f"{doc['preemptions_per_request']:.3g}"),
        ("requests measured (in flight on average)", f"{doc['requests_measured']:,} ({_sig3(doc['in_flight_mean'])})" + _unsteady(doc)),
    ):
        t.add_row(name, str(value))
    for name, c in doc.get("classes", {}).items():
        t.add_row(f"class {name} ({c['share']:.0%} of requests)",
                  f"{c['plan']} x{c['instances']}: TTFT P99 {_sig3(c['ttft_ms']['p99'])} ms, TPOT P99 {_sig3(c['tpot_ms']['p99'])} ms, "
                  f"within SLOs {c['slo_attainment']:.1%}, utilisation {c['utilisation']:.1%}")
    return t


def _unsteady(doc: dict) -> str:
    """The warning of a run the simulation found unsteady (``steady`` false: its sectioning
    batches correlated, :func:`mcengine.standalone.serve.batch_correlation`) or could not
    test (``steadiness`` ``"too_few_requests"``); "" for a steady one."""
    if doc["steady"]:
        return ""
    from ..standalone.serve import SEM_BATCHES, TOO_FEW

    if doc["steadiness"] == TOO_FEW:
        return (f": too few requests to test steadiness (it needs {2 * SEM_BATCHES}, two in each of its {SEM_BATCHES} batches; "
                "docs/serve.md#statistics): raise --requests")
    shown = ", ".join(f"{name.upper()} {'n/a' if c is None else format(c, '.2f')}" for name, c in doc["batch_correlation"].items())
    return (f": not steady, its batches are correlated ({shown} against {doc['batch_correlation_limit']:.2f}; docs/serve.md#statistics): "
            "the standard errors, widened by it, may still under-state and the estimates may still drift; raise --requests and leave out more (--warmup)")


def _slo(ms) -> str:
    """An SLO in ms, or "per class" where a mix's classes set their own."""
    return "per class" if ms is None else _sig3(ms)
