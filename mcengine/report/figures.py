"""Figures of `run` / `compare` (PNG files in ``--out``)."""

from __future__ import annotations


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


def save_png(fig, path):
    import io

    from ..io import write_atomic

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
    paths.append(save_png(fig, out / "cost_per_mtok_cdf.png"))
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for n in names:
        x, p = _sketch_points(acc.metrics[(n, "availability")])
        ax.step(1.0 - x, 1.0 - p, where="pre", label=n)
    ax.set(xscale="log", xlabel="unavailability (1 − time-averaged share of instances up)", ylabel="share of trials with unavailability < x", title="Availability over cluster lifetimes (left is better)")
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    paths.append(save_png(fig, out / "availability.png"))
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
    paths.append(save_png(fig, out / "cost_breakdown.png"))
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
        paths.append(save_png(fig, out / "paired_ratio.png"))
        plt.close(fig)
    return paths
