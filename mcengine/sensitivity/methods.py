"""Which assumptions decide the verdict: sweeps, tornado charts and Sobol' indices.

Three plain functions return the docs/interface.md JSON documents of ``mcengine sweep`` and
``mcengine sensitivity``; :mod:`mcengine.report.sensitivity` renders them.

* :func:`sweep` sets one scenario key (or two: a grid) to each given value, as a
  ``--set KEY=VALUE`` override, and runs the full chain with the same seed at every
  value, so rows are paired (common random numbers) and differences between rows are
  the parameter's effect, not sampling noise.
* :func:`tornado` moves each uncertain input alone to its 5th and 95th percentile, the
  others at their medians, and reports the output's median over a batch of trials with
  those fixed inputs (the median over the model's own randomness only).
* :func:`sobol` estimates first-order and total Sobol' indices of every uncertain input
  from a Saltelli design on a scrambled Sobol' sequence (:mod:`mcengine.sensitivity.sampling`, :mod:`mcengine.sensitivity.analysis`), with
  the model's own randomness counted as one more input, ``"model_noise"``.

Every function works on one scenario (the output is a metric of its trials) or on two,
A and B (the output is the paired ratio B/A trial by trial, and a sweep also reports
P(B < A)). The two scenarios share the design's inputs by key; an input only one of them
has is varied in that one alone, and an input drawn per design (``shared = false``) is
one factor per scenario, ``A:key`` and ``B:key`` (docs/model.md#per-design-inputs). Trials run in chunks through
:func:`mcengine.pipeline.run_block`, so memory is bounded by the chunk size plus one
float per trial of the analysed output.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import fields
from typing import Callable, Iterable, Sequence

import numpy as np

from .. import interrupt
from ..errors import InputError, Problem
from ..options import SAMPLE_DEFAULTS, positive, seed_of
from ..columns import METRICS, PAIRED_METRICS
from ..pipeline import run_block
from ..scenario import Scenario, scenario_from_dict
from ..scenario.consistency import sweep_warnings
from ..scenario.fields import did_you_mean
from ..scenario.load import POSITIONS, apply_overrides, load_scenarios, parse_override, toml_literal
from ..scenario.derive import apply_trials
from ..scenario.sampling import TrialInputs
from . import analysis, sampling

Progress = Callable[[int, int], None]
ScenarioRef = str | Scenario

#: Metrics a sweep reports by default (docs/interface.md `run` names).
SWEEP_OUTPUTS = ("cost_per_mtok_usd", "availability", "tokens_per_s", "gpu_cost_usd")
DEFAULT_OUTPUT = "cost_per_mtok_usd"
DEFAULT_SWEEP_TRIALS = SAMPLE_DEFAULTS["sweep"].size
DEFAULT_TORNADO_TRIALS = SAMPLE_DEFAULTS["tornado"].size
DEFAULT_SOBOL_SAMPLES = SAMPLE_DEFAULTS["sobol"].size
TORNADO_QUANTILES = (0.05, 0.95)
#: Trials per run_block call of the tornado and Sobol' designs.
DEFAULT_CHUNK_TRIALS = 4096

INTERVAL_METHOD = (
    "Student's t interval on the delete-one-scrambling jackknife standard error over the design's independent "
    "scramblings (randomised QMC)"
)

NOISE_TREATMENT = (
    "the model's own randomness is the extra input 'model_noise': design rows of A use trials "
    "[0, N), rows of B trials [N, 2N); AB_i keeps A's trials and AB_noise is A's inputs on B's "
    "trials, so inputs the output does not depend on get indices of exactly 0"
)


# ----------------------------------------------------------------------------- checks
def check_output(output: str, paired: bool = False) -> str:
    """``output`` if it is a per-trial metric of the chain (one positive in every trial,
    for a paired ratio B/A), else InputError naming ``--output``."""
    allowed = PAIRED_METRICS if paired else METRICS
    if output not in allowed:
        what = "with two scenarios (a paired ratio B/A needs a metric > 0 in every trial)" if paired and output in METRICS else ""
        raise InputError(Problem("--output", output, "allowed" + (f" {what}" if what else "") + ": " + ", ".join(allowed), did_you_mean(str(output), allowed)))
    return output


def _resolve(scenarios: ScenarioRef | Sequence[ScenarioRef], overrides: Iterable[str]) -> list[Scenario]:
    """One or two validated scenarios (A, B), every problem reported at once."""
    refs = [scenarios] if isinstance(scenarios, (str, Scenario)) else list(scenarios)
    if not 1 <= len(refs) <= 2:
        raise InputError(Problem("SCENARIO", [getattr(r, "name", r) for r in refs], "allowed: one scenario, or two (A B: the output is the paired ratio B/A)"))
    return load_scenarios(refs, overrides)


def _label(scenarios: list[Scenario]) -> str:
    return " vs ".join(s.name for s in scenarios)


def _ratio_of(scenarios: list[Scenario]) -> dict:
    return {"ratio_of": f"{scenarios[1].name} / {scenarios[0].name}"} if len(scenarios) == 2 else {}


def _union_inputs(scenarios: list[Scenario]) -> dict[str, tuple[str, tuple[int, ...]]]:
    """The factors: uncertain inputs of A, then those only B has, each as ``label ->
    (dotted key, positions of the scenarios it moves)``. A key drawn per design
    (``shared = false`` in a scenario of a comparison) is one factor per scenario,
    labelled ``A:key``, ``B:key``; any other is one factor, labelled by its key."""
    factors: dict[str, tuple[str, tuple[int, ...]]] = {}
    for i, s in enumerate(scenarios):
        for key in s.uncertain_inputs():
            per_design = len(scenarios) > 1 and any(not c.uncertain_inputs()[key].shared for c in scenarios if key in c.uncertain_inputs())
            label = f"{POSITIONS[i]}:{key}" if per_design else key
            factors[label] = (key, (*factors.get(label, (key, ()))[1], i))
    if not factors:
        raise InputError(Problem("SCENARIO", _label(scenarios), "has no uncertain inputs (no dist tables): nothing to analyse"))
    return factors


def _position(scenarios: list[Scenario], s: Scenario) -> int:
    """Position of ``s`` (the object itself) among ``scenarios``."""
    return next(i for i, c in enumerate(scenarios) if c is s)


def _paired(values: list[np.ndarray]) -> np.ndarray:
    """One scenario's output, or the paired ratio B/A (exactly 1 where B == A, 0/0 included)."""
    if len(values) == 1:
        return values[0]
    a, b = values
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(a == b, 1.0, b / a)


def _inputs(scenario: Scenario, columns: dict, n: int) -> TrialInputs:
    """``n`` trials with the given inputs (arrays or scalars), every other input at its
    fixed value or median."""
    values = {key: np.broadcast_to(np.asarray(columns[key], dtype=float), (n,)).copy() if key in columns else np.full(n, dist.median()) for key, dist in scenario.inputs().items()}
    apply_trials(scenario, values, n)
    return TrialInputs(0, n, values)


#: The output analysed instead when the requested one is infinite in some trials: 1 in a
#: trial where every scenario serves tokens (the output is finite), else 0. Its mean is
#: the feasible share; its indices say which inputs decide feasibility.
SERVED = "served"


class _InfiniteOutput(Exception):
    """The requested output is infinite in some trial (a scenario served no tokens)."""


def _evaluate(scenarios: list[Scenario], seed: int, output: str, trial_start: int, n: int, columns: Callable[[Scenario], dict]) -> np.ndarray:
    """The output of trials ``trial_start ..`` with each scenario's inputs from ``columns(s)``.

    ``output = SERVED``: the indicator of the trials in which every scenario serves tokens
    (its cost per token is finite). Otherwise raises :class:`_InfiniteOutput` when the output
    is infinite in a trial (a cost per token where no plan meets the SLOs).
    """
    outs = _outputs(scenarios, seed, "cost_per_mtok_usd" if output == SERVED else output, trial_start, n, columns)
    if output == SERVED:
        return _served(outs)
    if not all(np.isfinite(v).all() for v in outs):
        raise _InfiniteOutput
    return _paired(outs)


def _outputs(scenarios: list[Scenario], seed: int, metric: str, trial_start: int, n: int, columns: Callable[[Scenario], dict]) -> list[np.ndarray]:
    """``metric`` of each scenario in trials ``trial_start ..`` with its inputs from ``columns(s)``."""
    return [run_block(s, seed, trial_start, n, inputs=_inputs(s, columns(s), n))[metric] for s in scenarios]


def _served(outs: list[np.ndarray]) -> np.ndarray:
    """1.0 in the trials where every scenario's output is finite (it serves tokens), else 0.0."""
    return np.logical_and.reduce([np.isfinite(v) for v in outs]).astype(float)


# ----------------------------------------------------------------------------- sweep
def parse_values(text: str) -> list[str]:
    """Split ``--values`` at the commas outside brackets, braces and quotes.

    ``'0.05,0.1,{dist="lognormal", median=0.2, sigma=0.3}'`` gives three TOML literals.
    """
    items, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    items.append(text[start:].strip())
    if any(not item for item in items) or depth or quote:
        raise InputError(Problem("--values", text, "allowed: comma-separated TOML literals, e.g. 0.05,0.1,0.2"))
    return items


def _has_key(scenario: Scenario, key: str) -> bool:
    """Whether ``key`` names a table or value of the resolved scenario (or an unset optional key)."""
    node = scenario.to_dict()
    parts = key.split(".")
    for part in parts:
        if not isinstance(node, dict) or part not in node:
            break
        node = node[part]
    else:
        return True
    table = scenario if len(parts) >= 2 and parts[0] != "name" else None
    for part in parts[:-1]:  # an unset optional key of a section or of a sub-table ([gpu.derive])
        table = getattr(table, part, None) if dataclasses.is_dataclass(table) else None
    return dataclasses.is_dataclass(table) and parts[-1] in {f.name for f in fields(table)}


def _literal(value) -> str:
    """A sweep value as the TOML literal it is applied as: a text as it is, a number or a
    bool as :func:`~mcengine.scenario.load.toml_literal` writes it (``inf`` a TOML float),
    so the value a Python call applies is the one its recorded ``--values`` replays."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float, np.generic)):  # np.True_ is no bool
        return toml_literal(value)
    raise InputError(Problem("--values", value, "allowed: a TOML literal (text), a number or a bool"))


def _target(param: str, bases: list[Scenario]) -> tuple[str, list[str]]:
    """(key, names of the scenarios it applies to) of ``KEY`` or ``SCENARIO:KEY``.

    A plain key applies to every scenario that has it; ``lite-h100:gpu.link_gbps`` (or
    ``A:``/``B:`` for the first/second scenario) to that scenario alone.
    """
    names = [s.name for s in bases]
    who, sep, key = param.rpartition(":")
    if not sep:
        return param, [s.name for s in bases if _has_key(s, param)]
    aliases = {"A": names[0], **({"B": names[1]} if len(names) > 1 else {})}
    name = aliases.get(who, who)
    if name not in names:
        allowed = names + list(aliases)
        raise InputError(Problem("--param", param, "allowed: KEY, or SCENARIO:KEY with SCENARIO one of " + ", ".join(allowed), did_you_mean(who, allowed)))
    return key, [name] if _has_key(bases[names.index(name)], key) else []


#: Keys that name or describe a scenario rather than set its numbers: a sweep keeps them
#: (a point renamed would not be found in its own summary; ``extends`` is resolved once).
NOT_SWEEPABLE = ("name", "extends", "description")
#: Run settings a sweep takes from its own options, the same at every point (the points'
#: trials are paired): sweeping them would change nothing.
RUN_OPTIONS = {"run.trials": "--trials", "run.seed": "--seed"}


def _grid_scenarios(bases: list[Scenario], params: list[str], values: list[list[str]]) -> tuple[list[tuple], list[list[Scenario]], dict]:
    """Every grid point's parsed values and overridden scenarios (all validated first)."""
    fixed = [p for p in params if p.rpartition(":")[2] in NOT_SWEEPABLE]
    if fixed:
        raise InputError([Problem("--param", p, f"identifies or describes the scenario; allowed: a key of its settings (not "
                                  f"{', '.join(NOT_SWEEPABLE)}); to compare scenarios use `mcengine compare`") for p in fixed])
    fixed = [p for p in params if p.rpartition(":")[2] in RUN_OPTIONS]
    if fixed:
        raise InputError([Problem("--param", p, f"is the sample every point of a sweep shares (paired trials), so sweeping it "
                                  f"changes nothing; allowed: a key of the model; set the sweep's {RUN_OPTIONS[p.rpartition(':')[2]]} "
                                  "instead") for p in fixed])
    targets = [_target(p, bases) for p in params]
    problems = []
    for param, (key, names) in zip(params, targets):
        if not names:
            known = sorted(set().union(*(s.dotted_keys() for s in bases)))
            problems.append(Problem("--param", param, "allowed: a dotted key of the scenario (see `mcengine check SCENARIO`), e.g. " + ", ".join(_union_inputs(bases)), did_you_mean(key, known)))
    if problems:
        raise InputError(problems)
    axes = [[(text, parse_override(f"{key}={text}")[1]) for text in vals] for (key, _), vals in zip(targets, values)]
    points = [()]
    for axis in axes:
        points = [p + (item,) for p in points for item in axis]
    grid = []
    for point in points:
        row = []
        for s in bases:
            items = [f"{key}={text}" for (key, names), (text, _) in zip(targets, point) if s.name in names]
            try:
                row.append(scenario_from_dict(apply_overrides(s.to_dict(), items), s.name) if items else s)
            except InputError as exc:
                problems += [Problem(f"--values {' '.join(items)} ({s.name}): {p.key}", p.value, p.allowed, p.hint) for p in exc.problems]
        grid.append(row)
    if problems:
        raise InputError(problems)
    return [tuple(v for _, v in p) for p in points], grid, {p: names for p, (_, names) in zip(params, targets)}


def _crossings(rows: list[dict], metric: str) -> list[float]:
    """Numeric values (linearly interpolated) where P(B < A) of ``metric`` crosses 0.5."""
    out = []
    for r0, r1 in zip(rows, rows[1:]):
        v0, v1 = r0["value"], r1["value"]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (v0, v1)):
            continue
        p0, p1 = r0["p_b_below_a"][metric] - 0.5, r1["p_b_below_a"][metric] - 0.5
        if p0 == 0.0:
            out.append(float(v0))
        elif p0 * p1 < 0:
            out.append(float(v0 + (v1 - v0) * p0 / (p0 - p1)))
    if rows and rows[-1]["p_b_below_a"][metric] == 0.5 and isinstance(rows[-1]["value"], (int, float)):
        out.append(float(rows[-1]["value"]))
    return out


def sweep(
    scenarios: ScenarioRef | Sequence[ScenarioRef],
    param: str | Sequence[str],
    values: Sequence,
    outputs: Sequence[str] = SWEEP_OUTPUTS,
    trials: int = DEFAULT_SWEEP_TRIALS,
    seed: int | None = None,
    overrides: Iterable[str] = (),
    chunk_trials: int | None = None,
    scheduler: str | None = None,
    progress: Progress | None = None,
) -> dict:
    """`mcengine sweep`: the chain at every value of one key (or every pair of two keys).

    Parameters
    ----------
    scenarios : a scenario (name, path or Scenario), or two (A, B)
    param : a dotted scenario key, or a sequence of one or two keys (a 2-D grid); a key
        written ``SCENARIO:KEY`` (a scenario name, or ``A``/``B``) applies to that
        scenario alone, e.g. ``B:gpu.link_gbps`` varies the Lite-GPU links only
    values : with ``param`` a str, the values (TOML literal texts like ``"0.1"``,
        ``'"inf"'``, ``'{dist="uniform", low=1, high=2}'``, or numbers); with a sequence
        of keys, one sequence of values per key. Each is applied like ``--set KEY=VALUE``
        (after ``overrides``) to every scenario that has the key.
    outputs : metrics of :data:`mcengine.columns.METRICS` to report
    trials, seed : trials per grid point; the same seed (and so the same trials) at
        every point and for both scenarios

    Returns
    -------
    dict
        ``"param"`` (the key; a list of two for a grid), ``"values"``, ``"rows"``: one
        object per value (grid point, first key outermost), ``{"value", <metric>:
        distribution, ...}``. With two scenarios ``<metric>`` is the distribution of the
        paired ratio B/A, and each row adds ``"p_b_below_a"`` and ``"p_tie"`` (the
        share of trials where B = A; per metric) and
        ``"scenarios"`` (each scenario's own distributions); a 1-D sweep adds
        ``"crossings"``: the values where P(B < A) crosses 0.5 (linear interpolation);
        ``"warnings"``: the points whose precision, weight size, peak and efficiencies
        disagree, each text once (:func:`mcengine.scenario.consistency.sweep_warnings`).
    """
    from ..runner import DEFAULT_CHUNK_TRIALS as RUN_CHUNK, RunSpec, execute

    start = time.perf_counter()
    one_d = isinstance(param, str)
    params = [param] if one_d else list(param)
    axes = [list(values)] if one_d else [list(v) for v in values]
    if not 1 <= len(params) <= 2 or len(axes) != len(params) or len(set(params)) != len(params):
        raise InputError(Problem("--param", params, "allowed: one key, or two different keys (a 2-D grid), each with its --values"))
    for key, axis in zip(params, axes):
        if not axis:
            raise InputError(Problem("--values", key, "allowed: at least one value per --param"))
    trials = positive("--trials", trials)
    bases = _resolve(scenarios, overrides)
    outputs = [check_output(m, len(bases) == 2) for m in (outputs or SWEEP_OUTPUTS)]
    seed = seed_of(bases, seed)
    texts = [[_literal(v) for v in axis] for axis in axes]
    points, grid, applies = _grid_scenarios(bases, params, texts)
    warnings = sweep_warnings(params, points, grid)
    names = [s.name for s in bases]
    rows = []
    for k, (point, row_scenarios) in enumerate(zip(points, grid)):
        offset = k * trials
        step = (lambda done, total, o=offset: progress(o + done, trials * len(points))) if progress else None
        outcome = execute(RunSpec(tuple(row_scenarios), seed, trials), chunk_trials=chunk_trials or RUN_CHUNK, scheduler=scheduler, progress=step)
        summary = outcome.accumulators.summary()
        row: dict = {"value": point[0] if one_d else list(point)}
        if len(bases) == 1:
            row.update({m: summary["scenarios"][names[0]][m] for m in outputs})
        else:
            row.update({m: summary["paired"][m]["ratio"] for m in outputs})
            row["p_b_below_a"] = {m: summary["paired"][m]["p_b_below_a"] for m in outputs}
            row["p_tie"] = {m: summary["paired"][m]["p_tie"] for m in outputs}
            row["scenarios"] = {n: {m: summary["scenarios"][n][m] for m in outputs} for n in names}
        rows.append(row)
    doc = {"scenario": _label(bases), "seed": seed, "trials": trials, **_ratio_of(bases)}
    doc["param"] = params[0] if one_d else params
    doc["warnings"] = warnings
    parsed = [[parse_override(f"{key.rpartition(':')[2]}={t}")[1] for t in axis] for key, axis in zip(params, texts)]
    doc["values"] = parsed[0] if one_d else parsed
    doc["applies_to"] = applies
    doc["outputs"] = outputs
    doc["rows"] = rows
    if len(bases) == 2 and one_d:
        doc["crossings"] = {m: _crossings(rows, m) for m in outputs}
    doc["elapsed_s"] = time.perf_counter() - start
    return doc


# ----------------------------------------------------------------------------- tornado
def _median_output(scenarios, seed, output, n, chunk, columns, tick) -> tuple[float, float]:
    """The output's median over the trials (``+inf``, a trial without tokens, ranks last)
    and the share of trials in which it is infinite or, paired, either side serves none."""
    y, served = np.empty(n), np.empty(n)
    with interrupt.deferred():  # a signal stops between chunks
        for start in range(0, n, chunk):
            stop = min(n, start + chunk)
            outs = _outputs(scenarios, seed, output, start, stop - start, columns)
            y[start:stop], served[start:stop] = _paired(outs), _served(outs)
            tick(stop - start)
            interrupt.check()
    return float(np.median(y)), float(1.0 - served.mean())


def tornado(
    scenarios: ScenarioRef | Sequence[ScenarioRef],
    output: str = DEFAULT_OUTPUT,
    trials: int = DEFAULT_TORNADO_TRIALS,
    seed: int | None = None,
    overrides: Iterable[str] = (),
    quantiles: tuple[float, float] = TORNADO_QUANTILES,
    chunk_trials: int = DEFAULT_CHUNK_TRIALS,
    progress: Progress | None = None,
) -> dict:
    """`mcengine sensitivity --method tornado`: one-at-a-time swings of the output median.

    For every uncertain input (dotted key), the median of ``output`` (or of the paired
    ratio B/A) over ``trials`` trials whose inputs are all at their medians except that
    one, at its ``quantiles[0]`` ("low") and ``quantiles[1]`` ("high") quantile. Every
    batch uses the same trials ``0 .. trials - 1``, so the model's own randomness is the
    same in every bar (common random numbers) and a swing is the input's effect alone.

    Returns
    -------
    dict
        ``"method": "tornado"``, ``"output"``, ``"baseline"`` (all inputs at medians),
        ``"bars": {input_key: {"low", "high", "swing", "input_low", "input_high",
        "infeasible_share": {"low", "high"}}}`` ordered by swing ``|high - low|``, largest
        first (a median ranks a trial without tokens, cost ``+inf``, last; ``infeasible_share``:
        the share of such trials; ``input_*``: the input's values,
        in the first scenario that has it).
    """
    start = time.perf_counter()
    trials = positive("--trials", trials)
    chunk = positive("--chunk-trials", chunk_trials)
    lo_q, hi_q = quantiles
    if not 0.0 < lo_q < 0.5 < hi_q < 1.0:
        raise InputError(Problem("quantiles", quantiles, "allowed: (low, high) with 0 < low < 0.5 < high < 1"))
    chosen = _resolve(scenarios, overrides)
    output = check_output(output, len(chosen) == 2)
    seed = seed_of(chosen, seed)
    factors = _union_inputs(chosen)
    keys = list(factors)
    total = (2 * len(keys) + 1) * trials
    done = [0]

    def tick(n):
        done[0] += n
        if progress:
            progress(done[0], total)

    def at(label, q):
        key, where = factors[label]
        return lambda s: {key: s.uncertain_inputs()[key].quantile(q)} if _position(chosen, s) in where else {}

    baseline, baseline_infeasible = _median_output(chosen, seed, output, trials, chunk, lambda s: {}, tick)
    bars = {}
    for key in keys:
        low, low_infeasible = _median_output(chosen, seed, output, trials, chunk, at(key, lo_q), tick)
        high, high_infeasible = _median_output(chosen, seed, output, trials, chunk, at(key, hi_q), tick)
        dist = chosen[factors[key][1][0]].uncertain_inputs()[factors[key][0]]
        swing = 0.0 if high == low else abs(high - low)
        bars[key] = {"low": low, "high": high, "swing": swing, "input_low": dist.quantile(lo_q), "input_high": dist.quantile(hi_q),
                     "infeasible_share": {"low": low_infeasible, "high": high_infeasible}}
    order = sorted(bars, key=lambda k: (-bars[k]["swing"], keys.index(k)))
    doc = {"scenario": _label(chosen), "seed": seed, "trials": trials, "method": "tornado", "output": output, **_ratio_of(chosen)}
    doc.update({"quantiles": [lo_q, hi_q], "evaluations": total * len(chosen), "baseline": baseline,
                "baseline_infeasible_share": baseline_infeasible, "bars": {k: bars[k] for k in order}})
    doc["elapsed_s"] = time.perf_counter() - start
    return doc


# ----------------------------------------------------------------------------- sobol
def sobol(
    scenarios: ScenarioRef | Sequence[ScenarioRef],
    output: str = DEFAULT_OUTPUT,
    trials: int = DEFAULT_SOBOL_SAMPLES,
    seed: int | None = None,
    overrides: Iterable[str] = (),
    scramblings: int = sampling.DEFAULT_SCRAMBLINGS,
    conf_level: float = analysis.DEFAULT_CONF_LEVEL,
    chunk_trials: int = DEFAULT_CHUNK_TRIALS,
    progress: Progress | None = None,
) -> dict:
    """`mcengine sensitivity --method sobol`: first-order and total Sobol' indices.

    A Saltelli design of ``trials`` (N, a power of two) base rows on a scrambled Sobol'
    sequence seeded from ``seed``; each unit column is mapped through the input's
    ``Dist.ppf`` (per scenario: both scenarios see the same quantile of a shared key).
    S1 by Saltelli et al. (2010), ST by Jansen (1999), confidence half-widths at
    ``conf_level`` from the spread over ``scramblings`` independent scramblings of the
    design (:mod:`mcengine.sensitivity.analysis`). The model's own randomness is
    handled explicitly: it is the extra input ``"model_noise"``, realised by the trial
    index of the random streams (A's rows are trials [0, N), B's rows [N, 2N), AB_i keeps
    A's trials, AB_noise is A's inputs on B's trials), so its share of the variance is
    reported and the other indices are not polluted by Monte Carlo noise.
    N (d + 3) trials per scenario for d uncertain inputs, in chunks of ``chunk_trials``.

    Returns
    -------
    dict
        ``"method": "sobol"``, ``"output"``, ``"indices": {input_key: {"S1", "S1_conf",
        "ST", "ST_conf"}}`` (``"model_noise"`` included; largest ST first), and the
        design: ``"base_samples"``, ``"evaluations"``, ``"scramblings"``, ``"interval"``, ``"conf_level"``,
        ``"output_mean"``, ``"output_variance"``, ``"model_noise_treatment"``.
    """
    start = time.perf_counter()
    n = sampling.check_base_samples(trials)
    chunk = positive("--chunk-trials", chunk_trials)
    chosen = _resolve(scenarios, overrides)
    output = check_output(output, len(chosen) == 2)
    seed = seed_of(chosen, seed)
    factors = _union_inputs(chosen)
    keys = list(factors)

    def evaluate(u: np.ndarray, trial_start: int) -> np.ndarray:
        def columns(s):
            unc, here = s.uncertain_inputs(), _position(chosen, s)
            return {key: unc[key].ppf(u[:, j]) for j, (key, where) in enumerate(factors.values()) if here in where}

        return _evaluate(chosen, seed, analysed, trial_start, u.shape[0], columns)

    analysed = output
    try:
        est = analysis.sobol_indices(evaluate, keys, n, seed, noise=True, scramblings=scramblings, conf_level=conf_level, chunk=chunk, progress=progress)
    except _InfiniteOutput:  # some trial serves no tokens: analyse which inputs decide that instead
        analysed = SERVED
        est = analysis.sobol_indices(evaluate, keys, n, seed, noise=True, scramblings=scramblings, conf_level=conf_level, chunk=chunk, progress=progress)
    doc = {"scenario": _label(chosen), "seed": seed, "trials": n, "method": "sobol", "output": analysed, **_ratio_of(chosen)}
    if analysed != output:
        doc["requested_output"] = output
        doc["note"] = (f"{output} is infinite in trials where no plan meets the TPOT or TTFT SLO (no tokens served): the indices "
                       f"are those of {SERVED!r}, 1 where every scenario serves tokens, else 0 (its mean, output_mean, is the "
                       "feasible share)")
    doc.update(
        {
            "indices": est.indices(),
            "estimators": {"S1": "Saltelli et al. 2010", "ST": "Jansen 1999"},
            "base_samples": n,
            "evaluations": est.evaluations * len(chosen),
            "scramblings": scramblings,
            "interval": INTERVAL_METHOD,
            "conf_level": conf_level,
            "output_mean": est.mean,
            "output_variance": est.variance,
            "model_noise_treatment": NOISE_TREATMENT,
        }
    )
    doc["elapsed_s"] = time.perf_counter() - start
    return doc


