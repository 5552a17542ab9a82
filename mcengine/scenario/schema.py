"""The resolved scenario: frozen, typed, every default filled, units in names.

:func:`build` turns a merged raw TOML dict into a :class:`Scenario`, collecting every
problem (section by section, then the cross-key checks) before failing once.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, fields

from ..errors import InputError, Problem
from .dists import Dist, Law
from .checks import cross_checks
from .derive import Derivation, resolve, resolve_links
from .fields import AUTO, parse_section, spec_of, unknown_keys
from .lengths import LengthLaw
from .sections.cluster import ClusterSection
from .sections.econ import EconSection
from .sections.fab import FabSection
from .sections.gpu import PEAK_PRECISIONS, TRAINING_PEAK_KEY, DeriveSection, GpuSection, PeakTable, parse_derive, parse_peak
from .sections.reliability import ReliabilitySection, component_resolved, parse_components
from .sections.run import RunSection
from .sections.training import TrainingSection, parse_training
from .cards import parse_model
from .sections.workload import (EFFICIENCY_KINDS, LoadSection, PrefixCacheSection, SpeculativeSection, WorkloadSection, parse_classes,
                                 parse_efficiency, parse_load, parse_prefix_cache, parse_speculative)

#: (table name, section class, parsers of the fields that are tables themselves)
SECTIONS = (
    ("run", RunSection, {}),
    ("gpu", GpuSection, {"derive": parse_derive, "peak_tflops": parse_peak}),
    ("fab", FabSection, {}),
    ("cluster", ClusterSection, {}),
    ("reliability", ReliabilitySection, {"components": parse_components}),
    ("workload", WorkloadSection, {"model": parse_model, "classes": parse_classes, "efficiency": parse_efficiency,
                                   "load": parse_load, "speculative": parse_speculative, "prefix_cache": parse_prefix_cache,
                                   "training": parse_training}),
    ("econ", EconSection, {}),
)
#: The workload keys whose "auto" is a precision table's efficiency.
_EFFICIENCY_FIELDS = tuple(f"{kind}_efficiency" for kind in EFFICIENCY_KINDS)
TOP_KEYS = ("name", "description", "extends", *(s[0] for s in SECTIONS))

#: A scenario's name becomes a file name (``<out>/<name>.toml``): a letter or digit, then
#: up to 63 letters, digits, dots, underscores or hyphens, and optionally ``#`` and a
#: count (the distinct name of a scenario listed twice, ``h100#2``, which a resume reads
#: back). No separator, no ``..`` prefix, no NUL, never empty.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}(#[1-9][0-9]{0,3})?")
NAME_ALLOWED = ("allowed: 1 to 64 of A-Z a-z 0-9 . _ -, starting with a letter or digit, optionally then # and a count "
                "(the name becomes the file <out>/<name>.toml; a file without `name = ...` is named after its file)")
#: Longest description (free text, shown in listings and summaries).
MAX_DESCRIPTION_CHARS = 10_000


def name_problems(name) -> list[Problem]:
    """Problems of a scenario name (empty when it is safe as a file name)."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        return [Problem("name", name, NAME_ALLOWED)]
    return []


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    run: RunSection
    gpu: GpuSection
    fab: FabSection
    cluster: ClusterSection
    reliability: ReliabilitySection
    workload: WorkloadSection
    econ: EconSection
    #: What ``[gpu.derive]`` filled in and from what (None for a typed-in GPU); its
    #: values are in the sections already, so it takes no part in equality or hashing.
    derivation: Derivation | None = field(default=None, compare=False)

    # ------------------------------------------------------------------ derived shape
    @property
    def active_gpus(self) -> int:
        return self.cluster.simulated() * self.cluster.instance_gpus

    @property
    def total_gpus(self) -> int:
        return self.active_gpus + self.cluster.spare_gpus

    @property
    def spare_modules(self) -> int:
        """The module pool at the start: ``cluster.spare_modules`` (``"auto"`` =
        ``spare_gpus``, docs/sources.md#rel-module-pool); 0 without a class with
        ``replace_unit = "module"``."""
        if not any(comp.replace_unit == "module" for _, comp in self.reliability.components):
            return 0
        pool = self.cluster.spare_modules
        return self.cluster.spare_gpus if pool == AUTO else int(pool)

    def peak_in_use(self) -> Dist:
        """The dense peak the workload computes at: ``gpu.peak_tflops`` at
        ``workload.precision`` (docs/model.md#precision)."""
        return self.gpu.peak_tflops.at(self.workload.precision_in_use())

    def training_peak(self) -> Dist | None:
        """The bf16 peak a training job computes at (mixed precision, docs/training.md), an
        input of its own (:data:`TRAINING_PEAK_KEY`) where it is not the peak in use: a
        training job whose serving side computes at another entry of ``gpu.peak_tflops``;
        None otherwise (the job reads ``gpu.peak_tflops``)."""
        peaks, precision = self.gpu.peak_tflops, self.workload.precision_in_use()
        if self.workload.kind != "training" or precision == PEAK_PRECISIONS[0] or precision not in peaks.given:
            return None
        return peaks.bf16

    # ------------------------------------------------------------------ inputs
    def inputs(self) -> dict[str, Dist]:
        """Every number-valued input by dotted key (fixed ones included), in schema order.

        Law parameters appear as ``reliability.repair_hours.parts.1.median`` (a length law's
        as ``workload.prompt_tokens.median``); component
        fields as ``reliability.components.die.afr``; request-class shares as
        ``workload.classes.code.share``. ``workload.compute_efficiency`` and
        ``workload.memory_efficiency`` are the ones in use (the precision table's when "auto");
        the tables of ``[workload.efficiency]`` are not inputs of their own. ``gpu.peak_tflops``
        is the peak at the precision in use (:meth:`peak_in_use`); a training job's bf16 peak,
        where it is another entry, is ``gpu.peak_tflops.bf16`` (:meth:`training_peak`). A key
        no model reads (:meth:`unread_keys`) is no input.
        """
        out: dict[str, Dist] = {}
        for table, _cls, _special in SECTIONS:
            section = getattr(self, table)
            for f in fields(section):
                value = getattr(section, f.name)
                key = f"{table}.{f.name}"
                if table == "workload" and f.name in _EFFICIENCY_FIELDS:
                    if (used := section.efficiency_of(f.name.removesuffix("_efficiency"))) is not None:
                        out[key] = used
                elif isinstance(value, PeakTable):
                    out[key] = self.peak_in_use()
                    if (training_peak := self.training_peak()) is not None:
                        out[TRAINING_PEAK_KEY] = training_peak
                elif isinstance(value, Dist):
                    if _read(f):
                        out[key] = value
                elif isinstance(value, (Law, LengthLaw)):
                    for suffix, dist in value.param_items():
                        out[f"{key}.{suffix}"] = dist
                elif isinstance(value, _SUBTABLES):
                    out.update((k, d) for k, df, d in _table_leaves(key, value) if isinstance(d, Dist) and _read(df))
                elif f.name in ("components", "classes"):
                    for name, comp in value:
                        for cf in fields(comp):
                            cv = getattr(comp, cf.name)
                            if isinstance(cv, Dist):
                                out[f"{key}.{name}.{cf.name}"] = cv
                            elif isinstance(cv, LengthLaw):
                                out.update({f"{key}.{name}.{cf.name}.{suffix}": d for suffix, d in cv.param_items()})
        return out

    def unread_keys(self) -> dict[str, Dist]:
        """The keys of the tables of ``[workload]`` (``[workload.load]``, ...) that no model
        reads (their spec's ``read`` False: ``workload.load.service_cv``), by dotted key,
        where the scenario sets them to other than their default: accepted, so that files
        setting them still load, but neither drawn nor sensitivity inputs
        (:meth:`inputs`); ``mcengine check`` warns of them
        (:func:`~.consistency.unread_warnings`)."""
        out: dict[str, Dist] = {}
        for table, _cls, _special in SECTIONS:
            section = getattr(self, table)
            out.update((k, d) for k, df, d in _table_leaves(table, section) if not _read(df) and d != df.default)
            for f in fields(section):
                if isinstance(value := getattr(section, f.name), _SUBTABLES):
                    out.update((k, d) for k, df, d in _table_leaves(f"{table}.{f.name}", value) if not _read(df) and d != df.default)
        return out

    def uncertain_inputs(self) -> dict[str, Dist]:
        """The inputs drawn per trial (those that are not fixed)."""
        return {k: d for k, d in self.inputs().items() if not d.is_fixed}

    def dotted_keys(self) -> list[str]:
        """Every key of the resolved scenario (tables included) as a dotted path."""
        out: list[str] = []

        def walk(node: dict, prefix: str) -> None:
            for key, value in node.items():
                out.append(prefix + key)
                if isinstance(value, dict):
                    walk(value, prefix + key + ".")

        walk(self.to_dict(), "")
        return out

    # ------------------------------------------------------------------ output
    def to_dict(self, with_unset: bool = False) -> dict:
        """Nested exactly like the TOML file, every default filled (``inf`` as ``"inf"``).

        Optional keys left unset are omitted (TOML has no null), or with ``with_unset``
        given as ``None`` (what ``mcengine check`` shows); then each component also gets
        a ``resolved`` table, its law stated every way at the median inputs
        (:func:`~mcengine.scenario.sections.reliability.component_resolved`; loading it
        back checks that it agrees)."""
        out: dict = {"name": self.name, "description": self.description}
        for table, _cls, _special in SECTIONS:
            out[table] = _section_dict(getattr(self, table), with_unset)
        if self.derivation is not None:
            _derived_dict(out, self.derivation, with_unset)
        return out


#: The tables inside a section whose keys are keys of their own (``[workload.load]``, ...).
_SUBTABLES = (DeriveSection, LoadSection, SpeculativeSection, PrefixCacheSection, TrainingSection)


def _table_leaves(prefix: str, table):
    """``(dotted key, field, value)`` of each field of ``table`` under ``prefix``: what
    :meth:`Scenario.inputs` draws from and :meth:`Scenario.unread_keys` warns of."""
    return ((f"{prefix}.{f.name}", f, getattr(table, f.name)) for f in fields(table))


def _read(f) -> bool:
    """Whether a model reads the key of field ``f`` (its spec's ``read``; a field without a spec: yes)."""
    spec = spec_of(f)
    return spec is None or spec.read


def _derived_dict(out: dict, record: Derivation, with_unset: bool) -> None:
    """Derived keys: shown by ``mcengine check`` (``with_unset``) with a
    ``[gpu.derive.resolved]`` table of their origins; otherwise left out, so that the
    dict loads back into the same derivation (with ``--set`` reaching it)."""
    if with_unset:
        out["gpu"]["derive"]["resolved"] = record.resolved()
        return
    for key in record.values:
        if record.is_derived(key):
            *path, name = key.split(".")
            node = out
            for part in path:
                node = node[part]
            node.pop(name, None)


def _value_dict(value):
    if isinstance(value, (Dist, Law, LengthLaw, PeakTable)):
        return value.to_toml()
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    if isinstance(value, tuple):
        return list(value)
    return value


def _section_dict(section, with_unset: bool = False) -> dict:
    out = {}
    for f in fields(section):
        value = getattr(section, f.name)
        if value is None:
            if with_unset:
                out[f.name] = None
            continue  # optional key left unset (TOML has no null)
        if f.name == "components":
            out[f.name] = {name: {**_section_dict(comp, with_unset), **({"resolved": component_resolved(comp)} if with_unset else {})}
                           for name, comp in value}
        elif f.name == "efficiency":
            out[f.name] = {name: _section_dict(table, with_unset) for name, table in value}
        elif f.name == "classes":
            if value:  # no classes: the scenario's dict is what it was without the key
                out[f.name] = {name: _section_dict(cls, with_unset) for name, cls in value}
        elif f.name == "load":
            if with_unset or value != LoadSection():  # saturate: the scenario's dict is what it was without the table
                out[f.name] = _section_dict(value, with_unset)
        elif f.name in ("model", "derive", "speculative", "prefix_cache", "training"):
            out[f.name] = _section_dict(value, with_unset)
        else:
            out[f.name] = _value_dict(value)
    return out


def build(raw: dict, source: str = "", load_parent=None) -> Scenario:
    """Validate a merged raw scenario into a :class:`Scenario`, or raise InputError.
    ``load_parent(ref)`` loads the parent of a ``[gpu.derive]`` design."""


    problems: list[Problem] = []
    unknown_keys(raw, list(TOP_KEYS), "", problems)
    parts = {}
    for table, cls, special in SECTIONS:
        parts[table] = parse_section(cls, raw.get(table, {}), f"{table}.", problems, special)
    problems += name_problems(raw.get("name", "scenario"))
    description = raw.get("description", "")
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION_CHARS or "\x00" in description:
        shown = description[:60] + "..." if isinstance(description, str) and len(description) > 60 else description
        problems.append(Problem("description", shown, f"allowed: a string of at most {MAX_DESCRIPTION_CHARS:,} characters, without NUL"))
    parts, derivation = resolve(parts, raw, problems, load_parent)
    parts = resolve_links(parts, problems)
    problems += cross_checks(parts)
    if not problems:
        return Scenario(name=raw.get("name", "scenario"), description=raw.get("description", ""), derivation=derivation, **parts)
    raise InputError(problems, source)
