"""What a run returns: :class:`Results`, a plain container of its JSON summary
(docs/interface.md), the streaming summaries behind it (:mod:`mcengine.summaries`) and,
when kept, its per-trial table: in memory, or (a run with an output folder) the
:class:`TrialsFile` it wrote, read when first asked for, so that a run's memory does not
grow with its trials (docs/performance.md#memory)."""

from __future__ import annotations

import io

from .errors import NumericalError
from .summaries import SUMMARY_KEYS


def metric_items(metrics: dict, prefix: str = ""):
    """``(metric, summary)`` of one scenario's summaries for tables and frames, a group of
    summaries flattened to dotted names: the cost breakdown as
    ``cost_breakdown_per_mtok_usd.<part>``, ``"failures_by_class"`` as
    ``failures_by_class.<class>.<kind>`` (one summary each)."""
    for name, value in metrics.items():
        if "mean" in value:
            yield f"{prefix}{name}", value
        else:
            yield from metric_items(value, f"{prefix}{name}.")


#: Metrics of the HTML and text views of a :class:`Results` (all are in ``to_frame``).
_VIEW_METRICS = (("cost_per_mtok_usd", "cost per M output tokens (USD)"), ("availability", "instance availability"),
                 ("tokens_per_s", "cluster output tokens/s"), ("gpu_cost_usd", "fab cost per GPU package (USD)"))


def _fmt(key: str, x: float) -> str:
    if key == "availability":
        return f"{x:.5f}"
    if key == "cost_per_mtok_usd":
        return f"{x:.3f}"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


class TrialsFile:
    """The per-trial table a run wrote to ``path`` (a Parquet dataset: one part per chunk),
    read in pieces: :meth:`rows` reads the given columns of one scenario's rows, so a
    reader's memory is those columns, never the whole table; :meth:`frame` reads it whole."""

    def __init__(self, path) -> None:
        import pyarrow.dataset as ds

        self.path = path
        self._dataset = ds.dataset(path, format="parquet")

    @property
    def columns(self) -> list[str]:
        """The table's column names."""
        return list(self._dataset.schema.names)

    def rows(self, scenario: str, columns: list[str]):
        """A DataFrame of ``columns`` of ``scenario``'s rows, in the table's order (each
        column its own block, the Arrow table freed as it is converted: one copy of the
        columns held at a time, not two)."""
        import pyarrow.dataset as ds

        rows = self._dataset.to_table(columns=columns, filter=ds.field("scenario") == scenario)
        return rows.to_pandas(split_blocks=True, self_destruct=True)

    def frame(self):
        """The whole table as a DataFrame (as ``pandas.read_parquet`` reads it)."""
        import pandas as pd

        return pd.read_parquet(self.path)


def scenario_rows(table, scenario: str, columns: list[str]):
    """``columns`` of ``scenario``'s rows of a per-trial table: a DataFrame or a
    :class:`TrialsFile` (read in pieces)."""
    if isinstance(table, TrialsFile):
        return table.rows(scenario, columns)
    return table.loc[table["scenario"] == scenario, columns]


class Results:
    """What a run returns: its JSON summary, the streaming summaries behind it, and
    (when kept) the per-trial table, one row per (scenario, trial), unit-suffixed columns.

    In a notebook: ``summary()`` (the JSON document as a dict), ``to_frame()`` (a tidy
    DataFrame of the summaries), ``trials`` (per-trial DataFrame), ``plot(kind)`` (a
    matplotlib Figure; the global backend is left alone), and an HTML table as the cell's
    output.

    ``table``: the per-trial DataFrame, None (not kept), or the :class:`TrialsFile` a run
    wrote to its folder, read whole when :attr:`table` or :attr:`trials` is first read
    (never before: a run's own work reads it in pieces). ``plotter(results, kind) ->
    Figure``, given by :func:`mcengine.api.run` (figures live in the report layer, above
    this module). ``rows(doc) -> list[dict]``: the rows of table.csv, given by
    :func:`mcengine.api.run` (P(B better) needs each metric's direction, which the report
    layer knows).
    """

    def __init__(self, doc: dict, summaries, table=None, plotter=None, rows=None) -> None:
        self.doc = doc
        self.summaries = summaries  # runner.Accumulators: per-metric Summary objects (for figures)
        self._table = table
        self.plotter = plotter
        self.rows = rows

    @property
    def table(self):
        """The per-trial DataFrame, or None when not kept."""
        if isinstance(self._table, TrialsFile):
            self._table = self._table.frame()
        return self._table

    @table.setter
    def table(self, value) -> None:
        self._table = value

    def summary(self) -> dict:
        """The docs/interface.md `run`/`compare` JSON document."""
        return self.doc

    @property
    def scenarios(self) -> list[str]:
        return list(self.doc["scenarios"])

    def to_frame(self):
        """Tidy DataFrame of the summaries, the rows of the CLI's table.csv: one row per
        (scenario, metric), columns ``scenario``, ``metric`` and mean, std, sem, p01, p05,
        p50, p95, p99, min, max; with two or more scenarios then one row per (pair
        ``"B / A"``, metric ``"<metric> ratio"``): the paired ratio's distribution in the
        same columns, ``p_b_below_a``, ``p_b_better`` (in the metric's direction; ties
        count where higher is better) and ``p_tie`` (P(B = A)). Those columns are empty on
        the scenario rows."""
        import pandas as pd

        columns = ["scenario", "metric", *SUMMARY_KEYS, "p_b_below_a", "p_b_better", "p_tie"]
        if self.rows is not None:
            return pd.DataFrame(self.rows(self.doc), columns=columns)
        rows = [{"scenario": n, "metric": m, **{k: s[k] for k in SUMMARY_KEYS}}
                for n, metrics in self.doc["scenarios"].items() for m, s in metric_items(metrics)]
        return pd.DataFrame(rows, columns=columns)

    def plot(self, kind: str = "cost_cdf"):
        """A matplotlib Figure: ``"cost_cdf"``, ``"availability"``, ``"cost_breakdown"`` or
        ``"paired_ratio"`` (two or more scenarios). Built without pyplot: the backend
        and pyplot's figure list stay as they are; a notebook shows the returned Figure."""
        if self.plotter is None:
            raise NumericalError("no figures for this Results: make it with mcengine.api.run or compare")
        return self.plotter(self, kind)

    def _view(self) -> tuple[list[str], list[tuple[str, list[str]]]]:
        names = self.scenarios
        rows = []
        for key, label in _VIEW_METRICS:
            cells = []
            for n in names:
                d = self.doc["scenarios"][n].get(key)
                cells.append("" if d is None else f"{_fmt(key, d['p50'])} [{_fmt(key, d['p05'])} – {_fmt(key, d['p95'])}]")
            rows.append((label, cells))
        return names, rows

    def __repr__(self) -> str:
        d = self.doc
        kept = "kept" if self._table is not None else "not kept"
        head = f"Results({d.get('scenario', '')!r}: {len(self.scenarios)} scenarios, {d.get('trials', 0):,} paired trials, seed {d.get('seed')}; per-trial table {kept})"
        names, rows = self._view()
        width = max(len(n) for n in names)
        lines = [head, f"  {'median [5% – 95%]':<{width}}  " + "  |  ".join(label for label, _ in rows[:2])]
        for i, n in enumerate(names):
            lines.append(f"  {n:<{width}}  " + "  |  ".join(cells[i] for _, cells in rows[:2]))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """A compact HTML table for Jupyter: medians and 90% intervals per scenario."""
        from html import escape

        d = self.doc
        names, rows = self._view()
        head = "".join(f"<th>{escape(n)}</th>" for n in names)
        body = "".join(f"<tr><th style='text-align:left'>{escape(label)}</th>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>"
                       for label, cells in rows)
        caption = escape(f"{d.get('scenario', '')}: {d.get('trials', 0):,} paired trials, seed {d.get('seed')}; median [5% – 95%]")
        return f"<table><caption>{caption}</caption><thead><tr><th></th>{head}</tr></thead><tbody>{body}</tbody></table>"

    @property
    def trials(self):
        """Per-trial DataFrame (needs ``keep_trials=True``)."""
        if self._table is None:
            raise NumericalError("per-trial table not kept: run with keep_trials=True (CLI: --keep-trials)")
        return self.table

    def to_parquet(self, path) -> None:
        from .io import write_atomic

        buf = io.BytesIO()
        self.trials.to_parquet(buf, index=False)
        write_atomic(path, buf.getvalue())
