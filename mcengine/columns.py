"""Every per-trial output column of the run chain, and how it is summarised and shown.

One :class:`Column` per column, or per family of columns (a name with ``{}`` for the
part that varies: a component class, a request class, a cost part, an input key). The
run chain's summaries (docs/interface.md#json-summaries), its per-trial finiteness
check, its paired ratios and the reports' labels and "P(B better)" words all read this
table:

* ``summarised`` columns are the metrics of ``mcengine run`` / ``compare``, summarised
  in this order (:data:`METRICS`); the families of component classes, request classes
  and cost parts are summarised under their own keys (``"failures_by_class"``,
  ``"mix"``, ``"cost_breakdown_per_mtok_usd"``);
* ``may_be_zero``: zero in some trial (a count such as stock-out hours), so a ratio of
  it would mean nothing;
* ``may_be_infinite``: ``+inf`` in a trial that misses its SLOs and so delivers no
  tokens (a cost per token, docs/model.md#roofline), finite in any other;
* ``paired``: compared as a paired ratio B/A, positive in every trial that delivers
  tokens;
* ``short`` (with ``better`` and ``better_words``): the words the reports use for the
  metrics they describe (docs/interface.md); a column without them is shown by name.

Columns that only some scenarios produce say when in ``conditional``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

#: Prefix of the reliability stage's columns of failures by component class,
#: ``failures_by_class.<class>.<failures_per_year | faults_per_year>``; summaries nest
#: them as ``"failures_by_class": {class: {kind: summary}}`` (docs/interface.md).
CLASS_PREFIX = "failures_by_class."
#: Prefix of the per-class columns of a mix of request classes (``mix.code.instance_share``).
MIX_PREFIX = "mix."
#: Prefix of the load stage's columns (``load.fleet_instances``), only with a demand
#: (docs/load.md); summaries nest them as ``"load": {column: summary}``.
LOAD_PREFIX = "load."
#: Prefix of the step times of each trial's plan that the roofline stage hands the load
#: stage with a demand (``load_steps.decode_1_s``; docs/load.md#chain).
LOAD_STEPS_PREFIX = "load_steps."
#: Prefix of what the roofline stage hands the load stage beside the step times of the
#: planner's searches: with the fleet bought per trial (``cluster.instances = "auto"``) its fleet search of
#: each trial's plan (``fleet_search.up``, the fewest up instances, 0 where none was
#: searched; ``fleet_search.rate_per_s`` and ``fleet_search.per_instance_rate``, the
#: rates it was searched at), and on a fixed cluster the capacity at SLO the planner
#: found for the plan of most goodput (``fleet_search.capacity_tokens_per_s``, 0 where the
#: trial's plan is not that), so that the load stage need not search again
#: (docs/load.md#speed). Internal: the run chain drops them after the load stage, and
#: they are never written.
FLEET_SEARCH_PREFIX = "fleet_search."
#: Prefix of what the roofline stage hands the load stage for each request class of a mix
#: under a demand (``mix_steps.code.load_steps.decode_s``, ``mix_steps.code.token_share``;
#: docs/load.md#chain): each class's own plan's step times and fleet search, its share of
#: the output tokens, its output tokens per request and its whole instances. Internal: the
#: run chain drops them after the load stage, and they are never written.
MIX_STEPS_PREFIX = "mix_steps."
#: The load stage's column compared as a paired ratio B/A: the cost per token of the fleet sized for the demand.
LOAD_PAIRED = LOAD_PREFIX + "cost_per_mtok_fleet_usd"
#: The cost a comparison's verdict is judged on, the most specific a pair has first, each
#: with what it is a cost per: a demand's fleet sized for its peak (docs/load.md), a
#: training job's trained tokens (docs/training.md), else output tokens at saturation.
VERDICT_COSTS: tuple[tuple[str, str], ...] = (
    (LOAD_PAIRED, "per token served by a fleet sized for the demand"),
    ("cost_per_mtok_trained_usd", "per trained token"),
    ("cost_per_mtok_usd", "per output token"),
)
#: Prefixes of a training job's interruptions and hours lost a day by cause
#: (``job_interruptions.optics.per_day``, ``job_lost_hours.optics.per_day``) and its hours
#: lost by the unit the causes strike (``job_lost_hours_by_unit.host.per_day``: gpu, host,
#: nic, job); summaries nest each as ``"job_lost_hours": {cause: {"per_day": summary}}``.
JOB_PREFIXES = ("job_interruptions.", "job_lost_hours.", "job_lost_hours_by_unit.")
#: Prefixes of the column groups a run summarises only where a scenario has them (its
#: component classes, its request classes, its load stage, a training job's causes),
#: beside :data:`METRICS`.
GROUP_PREFIXES = (CLASS_PREFIX, MIX_PREFIX, LOAD_PREFIX, *JOB_PREFIXES)
#: Of those, the groups whose columns may be paired ratios B/A (a mix's, the load stage's).
PAIRED_GROUP_PREFIXES = (MIX_PREFIX, LOAD_PREFIX)
#: Prefix of the input columns in the per-trial table.
INPUT_PREFIX = "input."
#: Per-trial column of one part of the fab cost of a good GPU package.
PACKAGE_PART_COLUMN = "gpu_cost_{}_usd"
#: Per-trial column of one part of the cost per million tokens.
BREAKDOWN_COLUMN = "cost_per_mtok_{}_usd"
#: Per-trial column of a request class's cost per million output tokens, were the
#: cluster to serve that class alone (``mix.code.cost_per_mtok_usd``).
CLASS_COST_COLUMN = MIX_PREFIX + "{}.cost_per_mtok_usd"
#: The summaries' key of the parts of ``cost_per_mtok_usd`` (docs/interface.md#json-summaries),
#: each from its per-trial column ``cost_per_mtok_<part>_usd``.
BREAKDOWN = "cost_breakdown_per_mtok_usd"

#: What the ``{}`` of a family's name stands for: one name (a class, a part).
_SEGMENT = "[a-z0-9_]+"


@dataclass(frozen=True)
class Column:
    """One per-trial output column, or one family of them (module text)."""

    name: str  #: the column's name, or a family's with ``{}`` for the part that varies
    label: str  #: words for a table row or an axis
    unit: str  #: unit for an axis label ("" for a share or a count)
    better: str | None = None  #: "lower", "higher" or None (no direction)
    short: str = ""  #: a few words for titles ("cost per token"); "" where the reports show the name
    better_words: str = ""  #: words of "P(B better: …)" ("cheaper per token"); "" for ``short``
    may_be_zero: bool = False
    may_be_infinite: bool = False
    paired: bool = False
    summarised: bool = False
    near_one: bool = False  #: crowds just below 1: summarised as its distance from 1
    conditional: str = ""  #: when only some scenarios produce it ("" for every scenario)
    segment: str = _SEGMENT  #: regex of what a family's ``{}`` stands for

    @property
    def family(self) -> bool:
        return "{}" in self.name

    def format(self, part: str) -> str:
        """The column of one member of a family (``cost_per_mtok_{}_usd`` → ``cost_per_mtok_die_usd``)."""
        return self.name.format(part)

    @cached_property
    def pattern(self) -> re.Pattern:
        """The names this entry covers (a family's members; a column's own name)."""
        return re.compile(re.escape(self.name).replace(r"\{\}", self.segment))


_COST = "USD per Mtok"
#: The ``conditional`` of the columns only a training job produces.
TRAINING = 'workload.kind = "training"'
_AVAILABILITY = "time-averaged share of instances up"

#: Every output column, the summarised metrics first, in the order of the summaries.
COLUMNS: tuple[Column, ...] = (
    Column("cost_per_mtok_usd", "cost per million output tokens", _COST, "lower", "cost per token", "cheaper per token",
           may_be_infinite=True, paired=True, summarised=True),
    Column("cost_per_mtok_at_cost_usd", "cost per million output tokens at cost (no markup)", _COST, "lower",
           "cost per token at cost", "cheaper per token at cost", may_be_infinite=True, paired=True, summarised=True),
    Column("availability", "availability", _AVAILABILITY + " (of throughput with on_failure = \"reshard\")", "higher",
           "availability", "more available", paired=True, summarised=True, near_one=True),
    Column("instance_availability", "instance availability", _AVAILABILITY, "higher", "instance availability",
           summarised=True, near_one=True),
    Column("capacity_availability", "capacity availability", "time-averaged delivered ÷ full throughput", "higher",
           "capacity availability", summarised=True, near_one=True),
    Column("tokens_per_s", "cluster output tokens/s", "tokens/s", "higher", "throughput", "more tokens/s", paired=True, summarised=True),
    Column("gpu_cost_usd", "fab cost per GPU package", "USD", "lower", "GPU package cost", "cheaper GPU package",
           paired=True, summarised=True),
    Column("capex_usd", "capital cost", "USD", "lower", "capex", paired=True, summarised=True),
    Column("energy_usd", "energy cost", "USD", "lower", "energy cost", paired=True, summarised=True),
    Column("repair_usd", "repair cost", "USD", "lower", "repair cost", may_be_zero=True, summarised=True),
    Column("interruptions_per_year", "instance interruptions per year", "per year", "lower", "interruptions",
           "fewer interruptions", may_be_zero=True, summarised=True),
    Column("stockout_hours", "spare stock-out", "instance-hours", "lower", "stock-outs", may_be_zero=True, summarised=True),
    Column("tokens_per_s_per_gpu", "output tokens/s per GPU", "tokens/s", "higher", "throughput per GPU",
           "more tokens/s per GPU", paired=True, summarised=True),
    Column("slo_met", "share of trials meeting the TPOT and TTFT SLOs", "", "higher", "SLO attainment",
           may_be_zero=True, summarised=True),
    Column("gpu_price_usd", "GPU price", "USD", "lower", "GPU price", paired=True, summarised=True),
    Column("gpu_price_per_h100_equivalent_usd", "GPU price per H100-equivalent", "USD", "lower", "price per H100-equivalent",
           paired=True, summarised=True),
    Column("gpu_power_w", "mean GPU power", "W", "lower", "GPU power", paired=True, summarised=True),
    Column("power_w_per_h100_equivalent", "GPU power per H100-equivalent", "W", "lower", "power per H100-equivalent",
           paired=True, summarised=True),
    Column("energy_j_per_token", "GPU energy per output token", "J per token", "lower", "energy per token",
           may_be_infinite=True, paired=True, summarised=True),
    Column("cost_per_request_usd", "cost per request", "USD", "lower", "cost per request", "cheaper per request",
           may_be_infinite=True, paired=True, summarised=True),
    # a training job's (workload.kind = "training", docs/training.md)
    Column("cost_per_mtok_trained_usd", "cost per million trained tokens", _COST, "lower", "cost per trained token",
           "cheaper per trained token", paired=True, summarised=True, conditional=TRAINING),
    Column("time_to_train_days", "time to train the job's tokens", "days", "lower", "time to train", "faster to train",
           paired=True, summarised=True, conditional=TRAINING),
    Column("ettr", "effective training time ratio", "useful ÷ wall time", "higher", "ETTR", "more effective training time",
           paired=True, summarised=True, conditional=TRAINING),
    Column("job_interruptions_per_day", "job interruptions per day", "per day", "lower", "job interruptions",
           "fewer job interruptions", paired=True, summarised=True, conditional=TRAINING),
    Column("mfu", "model FLOPs utilisation of the training step", "", "higher", "MFU", "higher MFU",
           paired=True, summarised=True, conditional=TRAINING),
    Column("job_lost_hours_per_day", "hours a day the job loses to rollbacks, restarts and waits for replacements", "hours per day",
           "lower", "lost hours", "fewer lost hours", may_be_zero=True, summarised=True, conditional=TRAINING),
    # the families summarised under their own keys
    # one member per part of mcengine.stages.econ.ALL_BREAKDOWN_PARTS: the parts at cost and
    # the vendor's margin on them, cost_per_mtok_markup_usd (docs/model.md#cost)
    Column(BREAKDOWN_COLUMN, "part of the cost per million output tokens (at cost; the markup its own part)", _COST,
           may_be_zero=True, may_be_infinite=True, summarised=True),
    Column(CLASS_PREFIX + "{}.failures_per_year", "failures per year of a component class", "per year", may_be_zero=True, summarised=True),
    Column(CLASS_PREFIX + "{}.faults_per_year", "faults per year of a component class", "per year", may_be_zero=True, summarised=True),
    Column(CLASS_COST_COLUMN, "cost per million output tokens of a request class served alone", _COST,
           may_be_infinite=True, paired=True, summarised=True, conditional="a mix of request classes ([workload.classes])"),
    *(Column(MIX_PREFIX + "{}." + name, label, unit, may_be_zero=zero, summarised=True, conditional=when)
      for name, label, unit, zero, when in (
          ("request_share", "a request class's share of the requests", "", False, "a mix of request classes ([workload.classes])"),
          ("instance_share", "a request class's share of the instances", "", True, "a mix of request classes ([workload.classes])"),
          ("tokens_per_s_instance", "a request class's output tokens/s per instance", "tokens/s", True,
           "a mix of request classes ([workload.classes])"),
          ("ttft_ms", "a request class's time to first token", "ms", False, "a mix of request classes ([workload.classes])"),
          ("tpot_ms", "a request class's time per output token", "ms", False, "a mix of request classes ([workload.classes])"),
          ("slo_met", "whether a request class meets its SLOs", "", True, "a mix of request classes ([workload.classes])"),
          ("instances", "a request class's whole instances", "instances", True, 'a mix with workload.class_instances = "whole"'),
          ("idle_share", "share of a request class's instance time left idle", "", True,
           'a mix with workload.class_instances = "whole"'),
      )),
    # the per-trial table's other columns: (name, label, unit, may be zero)
    *(Column(name, label, unit, may_be_zero=zero) for name, label, unit, zero in (
        ("trial", "trial index", "", False),
        (PACKAGE_PART_COLUMN, "part of the fab cost per GPU package", "USD", True),
        ("cost_per_good_die_usd", "wafer spend per good die", "USD", False),
        ("die_yield", "good dies per die site", "", False),
        ("good_dies_per_wafer", "good dies per wafer", "", False),
        ("wafers", "wafers started", "wafers", False),
        ("good_dies", "good dies", "dies", False),
        ("packages", "good packages built", "packages", False),
        ("failures_per_year", "GPU failures per year", "per year", True),
        ("swaps_per_year", "GPU swaps per year", "per year", True),
        ("repairs", "repairs over the horizon", "repairs", True),
        ("events", "events of the life simulation", "events", True),
        ("max_failed_gpus", "most GPUs failed at once", "GPUs", True),
        ("module_swaps_per_year", "module swaps per year", "per year", True),
        ("host_repairs", "host repairs over the horizon", "repairs", True),
        ("host_swaps_per_year", "host swaps per year", "per year", True),
        ("host_stockout_hours", "spare host stock-out", "instance-hours", True),
        ("nic_swaps_per_year", "NIC swaps per year", "per year", True),
        ("module_stockout_hours", "spare module stock-out", "instance-hours", True),
        ("tokens_per_s_instance", "output tokens/s of one instance", "tokens/s", True),

        ("batch", "decode batch", "requests", False),
        ("busy_fraction", "share of the serving cycle computing or streaming HBM", "", False),
        ("output_tokens_per_request", "output tokens per request", "tokens", False),
        ("total_cost_usd", "total cost over the horizon", "USD", False),
        ("tokens_total", "output tokens over the horizon", "tokens", True),
        ("tokens_per_s_per_h100_equivalent", "output tokens/s per H100-equivalent", "tokens/s", True),
    )),
    # +inf where the cluster serves no tokens (a training job's cluster that no serving plan holds, docs/training.md)
    Column("ttft_ms", "time to first token", "ms", may_be_infinite=True),
    Column("tpot_ms", "time per output token", "ms", may_be_infinite=True),
    # the load stage's columns, only with a demand (docs/load.md)
    *(Column(LOAD_PREFIX + name, label, unit, better, may_be_zero=zero, summarised=True, conditional="a demand (workload.load.demand)")
      for name, label, unit, better, zero in (
        ("demand_tokens_per_s", "mean offered load", "tokens/s", None, False),
        ("saturated_tokens_per_s", "cluster output tokens/s at saturation", "tokens/s", "higher", True),
        ("capacity_at_slo_tokens_per_s", "largest cluster load meeting the SLO quantile", "tokens/s", "higher", True),
        ("served_tokens_per_s", "goodput: output tokens/s served within the SLOs", "tokens/s", "higher", True),
        ("utilisation_mean", "mean utilisation over the day", "", None, True),
        ("utilisation_peak", "utilisation at the peak demand", "", None, True),
        ("ttft_at_load_ms", "time to first token at the SLO quantile at the peak", "ms", "lower", False),
        ("tpot_at_load_ms", "time per output token at the SLO quantile at the peak", "ms", "lower", False),
        ("slo_attainment", "share of the day the SLO quantile holds", "", "higher", True),
        ("fleet_instances", "instances a fleet sized for the peak with failure headroom needs", "instances", "lower", True),
        ("headroom_instances", "instances bought for failures beyond those the peak needs", "instances", "lower", True),
        ("instances", "instances serving the demand: the fleet bought with cluster.instances = \"auto\", else cluster.instances", "instances", "lower", True),
        ("demand_at_slo_tokens_per_s", "largest mean demand whose peak meets the SLO quantile (capacity at SLO over peak-to-mean)", "tokens/s", "higher", True),
        ("fleet_capacity_at_slo_tokens_per_s", "largest load the fleet sized for the demand meets within the SLO quantiles", "tokens/s", "higher", True),
    )),
    # a mix's classes under a demand (docs/load.md#chain)
    *(Column(MIX_PREFIX + "{}." + name, label, unit, better, may_be_zero=zero, may_be_infinite=infinite, summarised=True,
             conditional="a mix of request classes under a demand (workload.load.demand)")
      for name, label, unit, better, zero, infinite in (
        ("ttft_at_load_ms", "a request class's time to first token at its SLO quantile at the peak", "ms", "lower", False, True),
        ("tpot_at_load_ms", "a request class's time per output token at its SLO quantile at the peak", "ms", "lower", False, True),
        ("slo_attainment", "share of the day a request class's SLO quantiles hold", "", "higher", True, False),
        ("load_instances", "whole instances serving a request class under the demand", "instances", "lower", True, False),
        ("up_instances", "fewest up instances on which a request class meets its SLO quantiles at its peak and every rate below it", "instances", "lower", True, False),
    )),
    Column(LOAD_STEPS_PREFIX + "{}", "a step time (or batch, mode, share) of the plan's per-mode load model", "", may_be_zero=True,
           conditional="a demand (workload.load.demand)"),
    Column(LOAD_PAIRED, "cost per million output tokens of the fleet sized for the demand", _COST, "lower",
           may_be_infinite=True, paired=True, summarised=True, conditional="a demand (workload.load.demand)"),
    # the training job's other columns
    *(Column(name, label, unit, may_be_zero=zero, conditional=TRAINING) for name, label, unit, zero in (
        ("training_tokens_per_s", "trained tokens/s of the job while it runs", "tokens/s", False),
        ("checkpoint_interval_minutes", "compute time between checkpoints", "minutes", False),
        ("checkpoint_write_s", "time to write one checkpoint", "s", False),
        ("training_tensor_parallel", "tensor-parallel degree of the training layout", "GPUs", False),
        ("training_pipeline_parallel", "pipeline stages of the training layout", "stages", False),
        ("training_data_parallel", "data-parallel replicas of the training layout", "replicas", False),
        ("training_zero_stage", "optimizer sharding stage of the training layout (1 or 3)", "", False),
        ("training_recompute", "whether the training layout recomputes activations (1 full, 0 none)", "", True),
        ("training_bubble", "pipeline bubble share of the training step", "", True),
    )),
    *(Column(prefix + "{}.per_day", label, unit, may_be_zero=True, summarised=True, conditional=TRAINING)
      for prefix, label, unit in zip(JOB_PREFIXES, (
          "job interruptions per day by cause",
          "hours a day the job loses to rollbacks, restarts and waits for replacements, by cause",
          "hours a day the job loses by the unit its causes strike (gpu, host, nic, job)"), ("per day", "hours per day", "hours per day"))),
    # the switched fabric's and the data hall's columns, each only where it is on
    *(Column(name, label, unit, conditional=when) for name, label, unit, when in (
        ("scale_out_tiers", "switch tiers of the scale-out fabric", "tiers", 'econ.fabric_model = "fat_tree"'),
        ("scale_up_tiers", "switch tiers of the scale-up domain", "tiers", 'econ.fabric_model = "fat_tree"'),
        ("it_power_mw", "rated IT power of the data hall", "MW", "econ.facility = true"),
        ("rack_kw", "power of one rack", "kW", "econ.facility = true"),
        ("liquid_cooled", "whether the racks need liquid cooling", "", "econ.facility = true"),
        ("racks", "racks of the data hall (rack positions on its floor)", "racks", "econ.facility = true"),
        ("tokens_per_step", "tokens a sequence emits per speculative verification step", "tokens", "[workload.speculative]"),
    )),
    Column(INPUT_PREFIX + "{}", "a drawn uncertain input", "the scenario key's", segment=r"[A-Za-z0-9_.]+",
           conditional="an uncertain scenario key (a distribution)"),
)

_BY_NAME = {c.name: c for c in COLUMNS if not c.family}
_FAMILIES = {c.name: c for c in COLUMNS if c.family}


def column(name: str) -> Column | None:
    """The entry of column ``name``: its own, else its family's (None for no column)."""
    if name in _BY_NAME:
        return _BY_NAME[name]
    return next((c for c in _FAMILIES.values() if c.pattern.fullmatch(name)), None)


#: Per-trial metrics summarised by `mcengine run` / `compare` (docs/interface.md names first).
METRICS = tuple(c.name for c in COLUMNS if c.summarised and not c.family and not c.name.startswith(LOAD_PREFIX))
#: Metrics only a training job (``workload.kind = "training"``) produces.
TRAINING_METRICS = tuple(m for m in METRICS if _BY_NAME[m].conditional == TRAINING)


def metrics_of(training: bool) -> tuple[str, ...]:
    """The :data:`METRICS` a scenario produces (a training job's only with ``training``)."""
    return METRICS if training else tuple(m for m in METRICS if m not in TRAINING_METRICS)


def paired_of(a_training: bool, b_training: bool) -> tuple[str, ...]:
    """The :data:`PAIRED_METRICS` two scenarios both produce."""
    both = set(metrics_of(a_training)) & set(metrics_of(b_training))
    return tuple(m for m in PAIRED_METRICS if m in both)


#: Metrics that can be zero in a trial, so that a ratio of them would mean nothing.
MAY_BE_ZERO = tuple(m for m in METRICS if _BY_NAME[m].may_be_zero)
#: Metrics compared as paired ratios B/A: those positive in every trial that delivers
#: tokens (a trial that misses its SLOs delivers none: docs/model.md#roofline).
PAIRED_METRICS = tuple(m for m in METRICS if _BY_NAME[m].paired)
#: Metrics that crowd just below 1: summarised as their distance from 1.
NEAR_ONE = tuple(m for m in METRICS if _BY_NAME[m].near_one)
#: A request class's cost column (:data:`CLASS_COST_COLUMN`), ``+inf`` where the mix serves no tokens.
CLASS_COST = _FAMILIES[CLASS_COST_COLUMN].pattern


def may_be_infinite(name: str) -> bool:
    """Whether column ``name`` is ``+inf`` in a trial that delivers no tokens (module text)."""
    entry = column(name)
    return entry is not None and entry.may_be_infinite


def verdict_cost(metrics) -> str | None:
    """The column of :data:`VERDICT_COSTS` a pair's verdict is judged on: the first that
    ``metrics`` (its paired metrics, or a per-trial table's columns) holds; None if none."""
    return next((name for name, _ in VERDICT_COSTS if name in metrics), None)
