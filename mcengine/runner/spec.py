"""What decides a run's numbers, and the file its settings are saved in."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from ..scenario import Scenario, scenario_from_dict

RUN_FILE = "run.json"


@dataclass(frozen=True)
class RunSpec:
    """Everything that decides a run's numbers (the chunk size does not)."""

    scenarios: tuple[Scenario, ...]
    seed: int
    trials: int
    keep_trials: bool = False
    label: str = ""  # the run's name in its summary; not part of the fingerprint

    def fingerprint(self) -> str:
        doc = {"scenarios": [s.to_dict() for s in self.scenarios], "seed": self.seed, "trials": self.trials, "keep_trials": self.keep_trials}
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()

    def to_dict(self) -> dict:
        return {
            "scenarios": [s.to_dict() for s in self.scenarios],
            "seed": self.seed,
            "trials": self.trials,
            "keep_trials": self.keep_trials,
            "label": self.label,
            "fingerprint": self.fingerprint(),
        }

    @classmethod
    def from_dict(cls, doc: dict) -> "RunSpec":
        scenarios = tuple(scenario_from_dict(d, f"{RUN_FILE} scenario {d.get('name')!r}") for d in doc["scenarios"])
        return cls(scenarios, int(doc["seed"]), int(doc["trials"]), bool(doc["keep_trials"]), str(doc.get("label", "")))
