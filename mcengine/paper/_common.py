"""What every claim of the paper study shares: its settings, scenario variants, paired
per-trial columns, intervals, and the 1-D sweep that finds where a claim flips.

A claim's figure is a per-trial quantity (a ratio of two designs over paired trials:
same seed, same trial index, common random numbers wherever the scenarios share a key),
summarised as its median with a 90 % interval (5th-95th percentile over trials). A
claim *holds* in a trial when mcengine's figure reaches the paper's; P(claim holds) is
the share of trials where it does, and the *crossing* is where that share passes 0.5
along the sweep (linear interpolation between sweep points).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..scenario import Scenario, load_scenario, scenario_from_dict
from ..scenario.files import configs_dir
from ..scenario.load import apply_overrides

#: Interval reported with every figure: the 5th and 95th percentiles over trials.
INTERVAL = (0.05, 0.95)


@dataclass(frozen=True)
class Settings:
    """One run of the study: ``trials`` paired trials per scenario, master ``seed``;
    ``quick`` thins the sweeps (a smoke test, not a result)."""

    trials: int
    seed: int
    quick: bool = False
    progress: Callable[[str], None] | None = field(default=None, compare=False)
    memo: dict = field(default_factory=dict, compare=False, repr=False)

    def note(self, text: str) -> None:
        if self.progress is not None:
            self.progress(text)

    def grid(self, values: Sequence[float]) -> list[float]:
        """The sweep values: all of them, or the ends and the middle with ``quick``."""
        values = list(values)
        if not self.quick or len(values) <= 3:
            return values
        return [values[0], values[len(values) // 2], values[-1]]


def paper_dir() -> Path:
    """The paper study's scenario set (``configs/paper``)."""
    return configs_dir() / "paper"


def scenario(ref: str) -> Scenario:
    """A shipped scenario by name, or one of the paper set by its file stem (``paper-h100``)."""
    path = paper_dir() / f"{ref}.toml"
    return load_scenario(str(path) if path.is_file() else ref)


def variant(base: Scenario, name: str, overrides: Sequence[str]) -> Scenario:
    """``base`` with ``--set``-style ``overrides`` applied, renamed ``name``."""
    raw = apply_overrides(base.to_dict(), list(overrides))
    raw["name"] = name
    return scenario_from_dict(raw, name)


#: Most scenarios :func:`chain` runs together (one run of the runner): a chunk keeps every
#: scenario's plan evaluations (tens of MB each at 2,048 trials), so the peak grows with
#: the scenarios run at once (docs/performance.md#paper-memory).
BATCH_SCENARIOS = 8


def batches(scenarios: Sequence[Scenario], size: int = BATCH_SCENARIOS) -> list[list[Scenario]]:
    """``scenarios`` in runs of at most ``size``, those that may share their lifetimes or
    their plan evaluations in a chunk (equal :func:`mcengine.pipeline.reliability_key`,
    or the same model, GPU and instance, which :func:`~mcengine.pipeline.roofline_key`
    reads) in one run where the bound allows; a shared stage split over runs is computed
    once per run (a fraction of a second per 2,048 trials: lifetimes, plans), a production
    run (:func:`~mcengine.pipeline.fab_key`, seconds) once per run that builds the same
    packages. The columns do not depend on the split: with the random sampler each trial's
    draws and streams are a function of the seed, the trial and the scenario alone; the
    Sobol' sampler spans every scenario's keys, so its scenarios are one run."""
    from ..pipeline import reliability_key

    scenarios = list(scenarios)
    if any(s.run.sampler != "random" for s in scenarios):
        return [scenarios]
    parent, members = list(range(len(scenarios))), [1] * len(scenarios)

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict = {}
    for i, s in enumerate(scenarios):
        for key in (("plans", s.workload, s.gpu, s.cluster), reliability_key(s)):
            a, b = root(i), root(first.setdefault(key, i))
            if a != b and members[a] + members[b] <= size:
                parent[a], members[b] = b, members[a] + members[b]
    groups: dict[int, list[Scenario]] = {}
    for i, s in enumerate(scenarios):
        groups.setdefault(root(i), []).append(s)
    out: list[list[Scenario]] = [[]]
    for group in groups.values():
        if out[-1] and len(out[-1]) + len(group) > size:
            out.append([])
        out[-1].extend(group)
    return out


def chain(scenarios: Sequence[Scenario], settings: Settings) -> dict[str, dict[str, np.ndarray]]:
    """Per-trial columns of the full chain for every scenario, paired (same seed, same
    trials; scenarios with equal fab or reliability inputs share those columns, so a
    sweep over a workload key costs one lifetime per trial), run in :func:`batches` so
    that memory stays bounded whatever the number of scenarios."""
    from ..runner import RunSpec, execute

    names = [s.name for s in scenarios]
    if len(set(names)) != len(names):
        raise ValueError(f"scenario names must be distinct: {names}")
    import pandas as pd

    frames = [f for batch in batches(scenarios) for f in execute(RunSpec(tuple(batch), settings.seed, settings.trials, keep_trials=True)).frames]
    frame = pd.concat(frames, ignore_index=True)
    out = {}
    for name, group in frame.groupby("scenario", sort=False):
        group = group.sort_values("trial")
        out[name] = {c: group[c].to_numpy() for c in group.columns if c != "scenario"}
    return out


def shared_chain(label: str, scenarios: Sequence[Scenario], settings: Settings) -> dict[str, dict[str, np.ndarray]]:
    """:func:`chain` once per ``label`` and run: claims that read the same designs
    (performance, blast radius, power) share one paired run."""
    if label not in settings.memo:
        settings.memo[label] = chain(scenarios, settings)
    return settings.memo[label]


def fab_columns(scenario_: Scenario, settings: Settings, trial_start: int = 0) -> dict[str, np.ndarray]:
    """Per-trial fab columns alone (:func:`mcengine.stages.fab.production_runs`) of trials
    ``trial_start .. trial_start + settings.trials - 1``: trial ``t`` draws the same
    inputs and wafers it draws in the chain."""
    from ..scenario.sampling import draw_inputs
    from ..stages.fab import production_runs

    inputs = draw_inputs(scenario_, settings.seed, trial_start, settings.trials)
    return production_runs(scenario_, inputs, settings.seed)


def interval(values) -> dict:
    """``{"median", "p05", "p95"}`` of per-trial values (a fixed value gives three equal
    numbers): sample values at the nearest rank, as the run's summaries take them, so a
    ``+inf`` (a trial that delivers no tokens costs ``+inf`` per token) stays ``inf``
    instead of turning an interpolation into NaN."""
    v = np.asarray(values, dtype=float)
    if np.isnan(v).any():
        raise ValueError("interval of values with NaN")
    lo, mid, hi = np.quantile(v, [INTERVAL[0], 0.5, INTERVAL[1]], method="nearest")
    return {"median": float(mid), "p05": float(lo), "p95": float(hi)}


def paired_ratio(b, a) -> np.ndarray:
    """Per-trial ``b / a``, as the run pairs its metrics: exactly 1 where both are equal
    (two trials that deliver no tokens: 0/0 tokens/s or inf/inf cost per token, neither
    design better), ``inf`` or 0 where only one side is 0 or ``inf``; never NaN."""
    b, a = np.broadcast_arrays(np.asarray(b, float), np.asarray(a, float))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(a == b, 1.0, b / a)


def crossings(values: Sequence[float], p: Sequence[float]) -> list[float]:
    """Values where ``p`` crosses 0.5 (linear interpolation between sweep points)."""
    out = []
    for (v0, p0), (v1, p1) in zip(zip(values, p), zip(values[1:], p[1:])):
        d0, d1 = p0 - 0.5, p1 - 0.5
        if d0 == 0.0:
            out.append(float(v0))
        elif d0 * d1 < 0:
            out.append(float(v0 + (v1 - v0) * d0 / (d0 - d1)))
    if len(p) and p[-1] == 0.5:
        out.append(float(values[-1]))
    return out


def boundary(key: str, values: Sequence[float], figures: Sequence[np.ndarray], holds: Callable[[np.ndarray], np.ndarray],
             better: Callable[[np.ndarray], np.ndarray], note: str, *, figure: tuple[str, str] | None = None,
             key_axis: str | None = None, defined: tuple[str, Callable[[np.ndarray], np.ndarray]] | None = None) -> dict:
    """A 1-D sweep of ``key``: at each value the figure's interval, P(claim holds) (the
    paper's figure reached) and P(Lite better at all), and where each crosses 0.5.

    ``figure`` = (label, unit) when the sweep measures something other than the claim's
    metric (``"figure_label"``, ``"figure_unit"``); ``key_axis`` labels a swept quantity
    that is no scenario key (with its unit); ``defined`` = (words, mask): the interval
    is taken over the trials where the mask holds (``"defined_when"``, ``"defined_share"``
    per value; None where no trial does), the probabilities over every trial."""
    p_holds = [float(np.mean(holds(f))) for f in figures]
    p_better = [float(np.mean(better(f))) for f in figures]
    masks = [np.ones(len(f), bool) if defined is None else defined[1](f) for f in figures]
    out = {
        "key": key,
        "note": note,
        "values": [float(v) for v in values],
        "figure": [interval(f[m]) if m.any() else None for f, m in zip(figures, masks)],
        "p_holds": p_holds,
        "p_better": p_better,
        "crossing_holds": crossings(list(values), p_holds),
        "crossing_better": crossings(list(values), p_better),
    }
    if figure is not None:
        out["figure_label"], out["figure_unit"] = figure
    if key_axis is not None:
        out["key_axis"] = key_axis
    if defined is not None:
        out["defined_when"] = defined[0]
        out["defined_share"] = [float(np.mean(m)) for m in masks]
    return out


def entry(*, number: int, key: str, claim: str, metric: str, paper_figure: float, paper_figure_text: str, source: str,
          confirmed: bool, paper_assumptions: dict, shipped: dict, boundary_: dict | None, holds_when: str, model: str,
          unit: str = "gain", extra: dict | None = None) -> dict:
    """One claim's JSON entry (docs/interface.md#json-summaries, `paper`): the fields every claim has.
    ``unit`` says how the figures read: ``"gain"`` (a fraction, shown as %), ``"ratio"``
    (times), ``"points"`` (a difference of shares, shown as percentage points)."""
    doc = {
        "number": number,
        "key": key,
        "claim": claim,
        "metric": metric,
        "unit": unit,
        "paper_figure": paper_figure,
        "paper_figure_text": paper_figure_text,
        "paper_figure_source": source,
        "paper_figure_confirmed": confirmed,
        "paper_assumptions": paper_assumptions,
        "shipped": shipped,
        "boundary": boundary_,
        "holds_when": holds_when,
        "model": model,
    }
    if extra:
        doc.update(extra)
    return doc


#: Where the bracketed figures come from: the paper's text available to us (abstract,
#: introduction) names the benefits but not these numbers; they are those of a
#: secondary, machine-written summary (docs/sources.md#paper-claims).
SECONDARY = "secondary summary (newx.sg AI summary of arXiv 2501.10187); not found in the paper text available to us"
