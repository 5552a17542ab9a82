"""The streaming summaries of a run: every metric of every scenario and the paired ratios
of each later scenario to the first, folded chunk by chunk in trial order; their state is
what a checkpoint saves."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..columns import (BREAKDOWN, BREAKDOWN_COLUMN, CLASS_COST, CLASS_PREFIX, GROUP_PREFIXES, LOAD_PAIRED, LOAD_PREFIX, METRICS, MIX_PREFIX, NEAR_ONE,
                       PAIRED_GROUP_PREFIXES, PAIRED_METRICS)
from ..columns import JOB_PREFIXES, TRAINING_METRICS
from ..errors import InputError, Problem
from ..scenario.sampling import run_sampler
from ..stages.econ import ALL_BREAKDOWN_PARTS
from ..summaries import QUANTILES, Summary, add_counts
from .spec import RunSpec



def _keep_journal(summary: Summary) -> None:
    """Have both of ``summary``'s sketches keep what each add folds in, from empty
    (:meth:`QuantileSketch.take_journal <mcengine.summaries.QuantileSketch.take_journal>`)."""
    summary.sketch.journal, summary.low.journal = [], []


@dataclass
class Accumulators:
    """Streaming summaries of every metric of every scenario, and of the paired ratios
    of each later scenario to the first (the baseline)."""

    names: tuple[str, ...]
    metrics: dict = field(default_factory=dict)  # (scenario, metric) -> Summary
    ratios: dict = field(default_factory=dict)  # (b, metric) -> Summary of b / baseline
    below: dict = field(default_factory=dict)  # (b, metric) -> trials where b < baseline
    #: (b, metric) -> trials where b == baseline; None for a run resumed from a checkpoint
    #: written before ties were counted (its ``p_tie`` is then left out).
    ties: dict | None = field(default_factory=dict)
    trials_done: int = 0
    missed: dict = field(default_factory=dict)  # scenario -> trials that missed an SLO (no tokens)
    #: Scramblings of a Sobol'-sampled run (0: pseudo-random): every summary's sem comes
    #: from their means (:class:`~mcengine.summaries.Summary`).
    replicates: int = 0
    sides: dict = field(default_factory=dict)  # (b, "both" | "only_a" | "only_b") -> trials in which those serve tokens
    #: Whether the sketches keep the buckets each chunk adds, for :meth:`take_record`.
    journal: bool = False

    def _summary(self, offset: float = 0.0) -> Summary:
        summary = Summary(offset=offset, replicates=self.replicates)
        if self.journal:
            _keep_journal(summary)
        return summary

    def start_journal(self) -> None:
        """From now on keep what each chunk adds, for :meth:`take_record`."""
        self.journal = True
        for summary in (*self.metrics.values(), *self.ratios.values()):
            _keep_journal(summary)

    def take_record(self) -> tuple[dict, np.ndarray, np.ndarray]:
        """What the chunks since the last take changed, as (a JSON-able document, bucket
        keys, their counts): every summary's state without its bucket counts, the counts
        added to its sketches (:meth:`QuantileSketch.take_journal
        <mcengine.summaries.QuantileSketch.take_journal>`: the document gives their
        lengths, the arrays hold them one after the other), and the counters. Folded into
        the state before them (:meth:`fold_record`) it gives this state, bit for bit: no
        float is recomputed."""
        summaries, keys, counts = [], [], []
        for kind, table in (("metrics", self.metrics), ("ratios", self.ratios)):
            for (n, m), summary in table.items():
                lengths = []
                for sketch in (summary.sketch, summary.low):
                    positive, positive_counts, negative, negative_counts = sketch.take_journal()
                    keys += [positive, negative]
                    counts += [positive_counts, negative_counts]
                    lengths += [positive.size, negative.size]
                summaries.append([kind, n, m, summary.state(buckets=False), lengths])
        doc = {**self.state(summaries=False), "summaries": summaries}
        empty = np.zeros(0, np.int64)
        return doc, np.concatenate(keys or [empty]), np.concatenate(counts or [empty])

    def fold_record(self, doc: dict, keys: np.ndarray, counts: np.ndarray) -> None:
        """Bring this state to the one :meth:`take_record` took (module text)."""
        at = 0
        for kind, n, m, head, lengths in doc["summaries"]:
            table = getattr(self, kind)
            before, summary = table.get((n, m)), Summary.from_state(head)
            for name, i in (("sketch", 0), ("low", 2)):
                new, old = getattr(summary, name), getattr(before, name, None)
                for into, was, length in ((new.positive, old and old.positive, lengths[i]), (new.negative, old and old.negative, lengths[i + 1])):
                    into.update(was or {})
                    add_counts(into, keys[at : at + length].tolist(), counts[at : at + length].tolist())
                    at += length
            if self.journal:
                _keep_journal(summary)
            table[(n, m)] = summary
        folded = Accumulators.from_state({**doc, "metrics": [], "ratios": []})
        self.trials_done, self.below, self.ties, self.missed, self.sides = (folded.trials_done, folded.below, folded.ties, folded.missed,
                                                                            folded.sides)

    def add(self, chunk: dict[str, dict[str, np.ndarray]]) -> None:
        base = self.names[0]
        for name in self.names:
            cols = chunk[name]
            self.missed[name] = self.missed.get(name, 0) + int(np.count_nonzero(cols["slo_met"] == 0.0))
            for metric in (m for m in METRICS if m in cols):  # a training job's metrics where it is one
                offset = 1.0 if metric in NEAR_ONE else 0.0
                self.metrics.setdefault((name, metric), self._summary(offset)).add(cols[metric], f"{name}.{metric}")
            for part in (p for p in ALL_BREAKDOWN_PARTS if BREAKDOWN_COLUMN.format(p) in cols):  # the parts the scenario has
                key = f"{BREAKDOWN}.{part}"
                self.metrics.setdefault((name, key), self._summary()).add(cols[BREAKDOWN_COLUMN.format(part)], f"{name}.{key}")
            for column in cols:  # failures by component class, the request classes of a mix, the load stage's columns
                if column.startswith(GROUP_PREFIXES):
                    self.metrics.setdefault((name, column), self._summary()).add(cols[column], f"{name}.{column}")
            if name == base:
                continue
            serves_a, serves_b = chunk[base]["tokens_per_s"] > 0.0, cols["tokens_per_s"] > 0.0
            for side, count in (("both", serves_a & serves_b), ("only_a", serves_a & ~serves_b), ("only_b", ~serves_a & serves_b)):
                self.sides[(name, side)] = self.sides.get((name, side), 0) + int(np.count_nonzero(count))
            for metric in paired_metrics(chunk[base], cols):
                a, b = chunk[base][metric], cols[metric]
                with np.errstate(divide="ignore", invalid="ignore"):
                    ratio = np.where(a == b, 1.0, b / a)  # exactly 1 for identical trials (0/0 included)
                keep = serves_a & serves_b if metric not in TRAINING_METRICS else np.ones_like(serves_a)  # a job trains whether or not its cluster serves
                self.ratios.setdefault((name, metric), self._summary(1.0)).add(ratio, f"{name}/{base}.{metric}", keep=keep)
                self.below[(name, metric)] = self.below.get((name, metric), 0) + int(np.count_nonzero(b < a))
                if self.ties is not None:
                    self.ties[(name, metric)] = self.ties.get((name, metric), 0) + int(np.count_nonzero(b == a))
        self.trials_done += len(chunk[base]["trial"])

    def summary(self) -> dict:
        base = self.names[0]
        scenarios = {name: {**{metric: self.metrics[(name, metric)].to_dict() for metric in METRICS if (name, metric) in self.metrics},
                            BREAKDOWN: {part: self.metrics[(name, f"{BREAKDOWN}.{part}")].to_dict() for part in ALL_BREAKDOWN_PARTS
                                        if (name, f"{BREAKDOWN}.{part}") in self.metrics}}
                     for name in self.names}
        for (name, column), summary in self.metrics.items():
            if column.startswith(CLASS_PREFIX):  # "failures_by_class": {class: {kind: summary}}
                cls, kind = column[len(CLASS_PREFIX):].rsplit(".", 1)
                scenarios[name].setdefault("failures_by_class", {}).setdefault(cls, {})[kind] = summary.to_dict()
            elif column.startswith(MIX_PREFIX):  # "mix": {request class: {metric: summary}}
                cls, metric = column[len(MIX_PREFIX):].split(".", 1)
                scenarios[name].setdefault("mix", {}).setdefault(cls, {})[metric] = summary.to_dict()
            elif column.startswith(LOAD_PREFIX):  # "load": {column: summary}
                scenarios[name].setdefault("load", {})[column[len(LOAD_PREFIX):]] = summary.to_dict()
            elif column.startswith(JOB_PREFIXES):  # "job_lost_hours": {cause: {"per_day": summary}}
                group, cause, kind = column.split(".")
                scenarios[name].setdefault(group, {}).setdefault(cause, {})[kind] = summary.to_dict()
        infeasible = {name: self.missed.get(name, 0) / self.trials_done for name in self.names}
        doc: dict = {"scenarios": scenarios, "slo_infeasible_share": infeasible, "slo_missed_share": dict(infeasible)}
        if self.replicates:  # randomised QMC: how many independent estimates each sem rests on
            doc.update({"sampler": "sobol", "scramblings": self.replicates})
        pairs = {}
        for name in self.names[1:]:
            serving = {side: self.sides.get((name, side), 0) / self.trials_done for side in ("both", "only_a", "only_b")}
            pairs[f"{name} / {base}"] = {
                metric: {
                    "ratio": self._ratio(name, metric),
                    "p_b_below_a": self.below[(name, metric)] / self.trials_done,
                    **({"p_tie": self.ties[(name, metric)] / self.trials_done} if self.ties is not None else {}),
                    "serving": serving,
                }
                for metric in (*(m for m in PAIRED_METRICS if (name, m) in self.ratios),
                               *sorted(m for n, m in self.ratios if n == name and m.startswith(PAIRED_GROUP_PREFIXES)))
            }
        if pairs:
            doc["baseline"] = base
            doc["paired"] = pairs[f"{self.names[1]} / {base}"]
            doc["paired_all"] = pairs
        return doc

    def _ratio(self, name: str, metric: str) -> dict:
        """The paired ratio's summary over the trials in which both serve tokens (every
        entry NaN-free: ``inf`` when there are none)."""
        summary = self.ratios[(name, metric)]
        if summary.count + summary.infinite:
            return summary.to_dict()
        return {**{key: math.inf for key in ("mean", "std", "sem", "min", "max")}, **{key: math.inf for key, _ in QUANTILES}}

    def state(self, summaries: bool = True) -> dict:
        """The state a checkpoint saves (``summaries=False``: without the summaries)."""
        return {
            "names": list(self.names),
            "trials_done": self.trials_done,
            **({"metrics": [[n, m, s.state()] for (n, m), s in self.metrics.items()],
                "ratios": [[n, m, s.state()] for (n, m), s in self.ratios.items()]} if summaries else {}),
            "below": [[n, m, c] for (n, m), c in self.below.items()],
            **({"ties": [[n, m, c] for (n, m), c in self.ties.items()]} if self.ties is not None else {}),
            "missed": dict(self.missed),
            **({"replicates": self.replicates} if self.replicates else {}),
            "sides": [[n, side, c] for (n, side), c in self.sides.items()],
        }

    @classmethod
    def from_state(cls, state: dict) -> "Accumulators":
        acc = cls(tuple(state["names"]), trials_done=int(state["trials_done"]), replicates=int(state.get("replicates", 0)))
        acc.metrics = {(n, m): Summary.from_state(s) for n, m, s in state["metrics"]}
        acc.ratios = {(n, m): Summary.from_state(s) for n, m, s in state["ratios"]}
        acc.below = {(n, m): int(c) for n, m, c in state["below"]}
        acc.ties = {(n, m): int(c) for n, m, c in state["ties"]} if "ties" in state else None
        acc.missed = {n: int(c) for n, c in state.get("missed", {}).items()}
        acc.sides = {(n, side): int(c) for n, side, c in state.get("sides", [])}
        return acc


def _new_accumulators(spec: RunSpec) -> Accumulators:
    """Empty summaries of ``spec``'s run, with the standard errors of its sampler."""
    sampler = run_sampler(spec.scenarios)
    if sampler.replicates > spec.trials:
        raise InputError(Problem("--trials", spec.trials, f"allowed: at least run.scramblings = {sampler.replicates} "
                                 "with run.sampler = \"sobol\" (one trial per scrambling at least)"))
    return Accumulators(tuple(s.name for s in spec.scenarios), replicates=sampler.replicates)


def paired_metrics(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> tuple[str, ...]:
    """The metrics compared as paired ratios B/A: :data:`PAIRED_METRICS` that both sides
    produce, and each request class's cost per token (``mix.NAME.cost_per_mtok_usd``) and the
    cost per token of the fleet sized for a demand (``load.cost_per_mtok_fleet_usd``,
    docs/load.md) that both sides have."""
    return (*(m for m in PAIRED_METRICS if m in a and m in b), *(c for c in b if (CLASS_COST.fullmatch(c) or c == LOAD_PAIRED) and c in a))
