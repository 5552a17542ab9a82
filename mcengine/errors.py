"""The library's exceptions. Only ``cli.py`` maps them to exit codes (2 bad input, 1 other)."""

from __future__ import annotations

from dataclasses import dataclass


class McEngineError(Exception):
    """Base class of every error mcengine raises on purpose."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input: where, what was given, what is allowed."""

    key: str
    value: object
    allowed: str
    hint: str = ""

    def __str__(self) -> str:
        text = f"{self.key}: got {self.value!r}; {self.allowed}"
        if self.hint:
            text += f" ({self.hint})"
        return text


class InputError(McEngineError):
    """Bad input (usage, scenario file, override, stage option): exit status 2.

    Carries every problem found, so a user fixes them all in one go.
    """

    def __init__(self, problems: list[Problem] | Problem, source: str = ""):
        if isinstance(problems, Problem):
            problems = [problems]
        self.problems = list(problems)
        self.source = source
        head = f"invalid input in {source}" if source else "invalid input"
        lines = [f"{head} ({len(self.problems)} problem{'s' if len(self.problems) != 1 else ''}):"]
        lines += [f"  - {p}" for p in self.problems]
        super().__init__("\n".join(lines))


class NumericalError(McEngineError):
    """A stage produced a non-finite or impossible output: names the stage and trial."""


class Interrupted(McEngineError):
    """A SIGINT or SIGTERM stopped a computation at a block boundary (what was finished is
    saved). ``signum`` is the signal; the CLI exits with 128 + signum."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(f"interrupted by signal {signum}")


class ExecutionError(McEngineError):
    """The computation could not go on for a reason outside the input (a Dask scheduler
    that went away, no worker that joined it): exit status 1 with this one-line message."""
