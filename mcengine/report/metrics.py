"""What each output metric is called, its unit, and which direction is better.

Tables and figures read this one table so that every label, axis unit and
"P(B better)" agrees: a paired document stores P(B < A) only, which means "B better"
for a cost and "B worse" for availability or tokens/s.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    label: str  #: words for a table row or an axis
    unit: str  #: unit for an axis label ("" for a share)
    better: str | None  #: "lower", "higher" or None (no direction)
    short: str  #: a few words for titles ("cheaper per token")

    def axis(self) -> str:
        """Axis label with its unit in parentheses."""
        return f"{self.label} ({self.unit})" if self.unit else self.label


METRICS: dict[str, Metric] = {
    "cost_per_mtok_usd": Metric("cost per million output tokens", "USD per Mtok", "lower", "cost per token"),
    "cost_per_mtok_at_cost_usd": Metric("cost per million output tokens at cost (no markup)", "USD per Mtok", "lower", "cost per token at cost"),
    "availability": Metric("availability", "time-averaged share of instances up (of throughput with on_failure = \"reshard\")", "higher", "availability"),
    "instance_availability": Metric("instance availability", "time-averaged share of instances up", "higher", "instance availability"),
    "capacity_availability": Metric("capacity availability", "time-averaged delivered ÷ full throughput", "higher", "capacity availability"),
    "tokens_per_s": Metric("cluster output tokens/s", "tokens/s", "higher", "throughput"),
    "tokens_per_s_per_gpu": Metric("output tokens/s per GPU", "tokens/s", "higher", "throughput per GPU"),
    "gpu_cost_usd": Metric("fab cost per GPU package", "USD", "lower", "GPU package cost"),
    "capex_usd": Metric("capital cost", "USD", "lower", "capex"),
    "energy_usd": Metric("energy cost", "USD", "lower", "energy cost"),
    "repair_usd": Metric("repair cost", "USD", "lower", "repair cost"),
    "interruptions_per_year": Metric("instance interruptions per year", "per year", "lower", "interruptions"),
    "stockout_hours": Metric("spare stock-out", "instance-hours", "lower", "stock-outs"),
    "slo_met": Metric("share of trials meeting the TPOT and TTFT SLOs", "", "higher", "SLO attainment"),
    "gpu_price_usd": Metric("GPU price", "USD", "lower", "GPU price"),
    "gpu_price_per_h100_equivalent_usd": Metric("GPU price per H100-equivalent", "USD", "lower", "price per H100-equivalent"),
    "gpu_power_w": Metric("mean GPU power", "W", "lower", "GPU power"),
    "power_w_per_h100_equivalent": Metric("GPU power per H100-equivalent", "W", "lower", "power per H100-equivalent"),
    "energy_j_per_token": Metric("GPU energy per output token", "J per token", "lower", "energy per token"),
}

#: Words for "better" per direction, used in "P(B better: cheaper)".
BETTER_WORDS = {
    "cost_per_mtok_usd": "cheaper per token",
    "cost_per_mtok_at_cost_usd": "cheaper per token at cost",
    "availability": "more available",
    "tokens_per_s": "more tokens/s",
    "tokens_per_s_per_gpu": "more tokens/s per GPU",
    "gpu_cost_usd": "cheaper GPU package",
    "interruptions_per_year": "fewer interruptions",
}


def metric(key: str) -> Metric:
    """The :class:`Metric` of ``key`` (an unknown key gets its own name and no direction)."""
    return METRICS.get(key, Metric(key.replace("_", " "), "", None, key.replace("_", " ")))


def p_better(key: str, p_b_below_a: float) -> tuple[float, str]:
    """(value, words) of "B better than A" from a document's P(B < A).

    Lower is better: P(B < A) itself. Higher is better: 1 − P(B < A) = P(B ≥ A), "B at
    least as good" (the documents do not store ties apart; for a continuous output
    they have probability zero, for two designs with the same value in every trial,
    such as the availability of two scenarios that differ only in links, it is 1).
    No direction: P(B < A) as it is.
    """
    m = metric(key)
    words = BETTER_WORDS.get(key, m.short)
    if m.better == "higher":
        return 1.0 - p_b_below_a, f"P(B not worse: {m.short} B ≥ A)"
    if m.better == "lower":
        return p_b_below_a, f"P(B better: {words})"
    return p_b_below_a, "P(B < A)"


def fmt_metric(key: str, value: float) -> str:
    """A value of ``key`` for a table: availabilities (and their ratios, near 1) with five
    decimals, everything else with four significant digits."""
    return f"{value:.5f}" if key == "availability" else fmt_value(float(value), 4)


#: Unit of a scenario key from its suffix (the schema names every key with its unit).
KEY_UNITS = (
    ("_usd_per_kwh", "USD per kWh"), ("_per_cm2", "per cm²"), ("_usd", "USD"), ("_tbps", "TB/s"), ("_gbps", "GB/s"),
    ("_tflops", "TFLOP/s"), ("_us", "µs"), ("_ms", "ms"), ("_hours", "hours"), ("_years", "years"), ("_mm2", "mm²"),
    ("_w", "W"), ("_gb", "GB"), ("_efficiency", "share"), ("afr", "failures per year"),
)


def key_axis(key: str) -> str:
    """Axis label of a scenario key (``B:fab.optics_cost_usd`` → ``… (USD)``)."""
    leaf = key.rsplit(".", 1)[-1]
    unit = next((u for suffix, u in KEY_UNITS if leaf.endswith(suffix)), None)
    return f"{key} ({unit})" if unit else f"{key} (as set in the scenario)"


def fmt_value(value, sig: int = 4) -> str:
    """A number as a reader wants it in a table: ``sig`` significant digits, thousands
    separators from 10**(sig-1) up (``194,300``, not ``1.943e+05``), an exponent only
    below 0.001."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    a = abs(value)
    if a == 0.0:
        return "0"
    if a >= 10 ** (sig - 1):
        return f"{value:,.0f}"
    if a >= 1e-3:
        return f"{value:.{sig}g}"
    return f"{value:.{sig - 1}e}"
