"""Tables and figures for people (the JSON documents stay the source of truth)."""

from __future__ import annotations


def _flatten(doc: dict, prefix: str = "") -> list[tuple[str, object]]:
    rows = []
    for key, value in doc.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            rows += _flatten(value, name + ".")
        else:
            rows.append((name, value))
    return rows


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e6 else f"{value:,.0f}"
    return str(value)


def render_bench(doc: dict):
    """`mcengine bench` as one table of throughputs and ratios."""
    from rich.table import Table

    table = Table("measure", "value", title="mcengine bench")
    for name, value in _flatten(doc):
        table.add_row(name, _fmt(value))
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
    parts = [table]
    if "paired_all" in doc:
        paired = Table("paired with " + doc["baseline"], "cost/Mtok ratio", "P(cheaper per token)", "availability ratio", "P(less available)", title="paired trials (common random numbers)")
        for pair, metrics in doc["paired_all"].items():
            cost, avail = metrics["cost_per_mtok_usd"], metrics["availability"]
            paired.add_row(pair, _interval(cost["ratio"], "{:.3f}"), f"{cost['p_b_below_a']:.3f}", _interval(avail["ratio"], "{:.5f}"), f"{avail['p_b_below_a']:.3f}")
        parts.append(paired)
    return Group(*parts)


def _sketch_points(summary) -> tuple:
    """(values, cumulative probability) of a streaming Summary's quantile sketch."""
    import numpy as np

    sk = summary.sketch
    keys = [(-1, k, sk.negative[k]) for k in sorted(sk.negative, reverse=True)]
    keys += [(0, 0, sk.zeros)] if sk.zeros else []
    keys += [(1, k, sk.positive[k]) for k in sorted(sk.positive)]
    values = np.array([0.0 if sign == 0 else sk._value(sign, k) for sign, k, _ in keys]) + summary.offset
    counts = np.array([c for _, _, c in keys], dtype=float)
    return np.clip(values, summary.min, summary.max), np.cumsum(counts) / counts.sum()


def _save(fig, path):
    import io

    from .io import write_atomic

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
    write_atomic(path, buf.getvalue())
    return path


def write_figures(results, out):
    """CDF of cost per Mtok, availability distribution, cost breakdown, paired ratios (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    acc, doc = results.summaries, results.doc
    names = list(doc["scenarios"])
    paths = []

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for n in names:
        x, p = _sketch_points(acc.metrics[(n, "cost_per_mtok_usd")])
        ax.step(x, p, where="post", label=n)
    ax.set(xlabel="cost per million output tokens (USD)", ylabel="share of trials ≤ x", title="Cost per token: distribution over uncertain worlds")
    ax.grid(alpha=0.3)
    ax.legend()
    paths.append(_save(fig, out / "cost_per_mtok_cdf.png"))
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for n in names:
        x, p = _sketch_points(acc.metrics[(n, "availability")])
        ax.step(1.0 - x, 1.0 - p, where="pre", label=n)
    ax.set(xscale="log", xlabel="unavailability (1 − time-averaged share of instances up)", ylabel="share of trials with unavailability < x", title="Availability over cluster lifetimes (left is better)")
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    paths.append(_save(fig, out / "availability.png"))
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4.2))
    bottom = np.zeros(len(names))
    for metric, label in (("capex_usd", "capex"), ("energy_usd", "energy"), ("repair_usd", "repairs")):
        heights = np.array([doc["scenarios"][n][metric]["mean"] for n in names]) / 1e6
        ax.bar(names, heights, bottom=bottom, label=label)
        bottom += heights
    ax.set(ylabel="mean cost over the horizon (million USD)", title="Cost breakdown")
    ax.legend()
    ax.tick_params(axis="x", labelrotation=15)
    paths.append(_save(fig, out / "cost_breakdown.png"))
    plt.close(fig)

    if len(names) > 1:
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for n in names[1:]:
            x, p = _sketch_points(acc.ratios[(n, "cost_per_mtok_usd")])
            ax.hist(x, bins=60, weights=np.diff(p, prepend=0.0), histtype="step", lw=1.5, label=f"{n} / {names[0]}")
        ax.axvline(1.0, color="k", lw=0.8)
        ax.set(xlabel=f"paired ratio of cost per token to {names[0]}", ylabel="share of trials", title="Paired comparison (left of 1: cheaper than the baseline)")
        ax.grid(alpha=0.3)
        ax.legend()
        paths.append(_save(fig, out / "paired_ratio.png"))
        plt.close(fig)
    return paths
