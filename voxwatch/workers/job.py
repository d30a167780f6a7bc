"""One measure (or converse) task's message: what to measure, by name, so any worker of the region
can rebuild it.

It carries the planner's manifest sha256 (a scenario's pin), so a worker whose copy of the dataset
(scenario) differs refuses to measure it (an error row) rather than measuring other audio under the
same name.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from voxwatch.conversations.tick import conversation_id

from voxwatch.harness.tick import Task


@dataclass(frozen=True)
class Job:
    run_id: str
    seed: int
    model: str
    dataset: str
    item: str
    manifest_sha256: str
    attempt: int = 1

    @property
    def key(self) -> str:
        """The observation's idempotency key as one string; also the Celery task id."""
        return f"{self.run_id}:{self.model}:{self.dataset}:{self.item}:{self.attempt}"

    def kwargs(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def of(cls, task: Task, run_id: str, seed: int) -> "Job":
        return cls(run_id, seed, task.model.id, task.dataset.name, task.item.id, task.dataset.manifest_sha256)


@dataclass(frozen=True)
class ConversationJob:
    """One conversation of a planned run: a model, a scenario (name and pin), its first `turns`
    turns (0: all) and the caller's persona (a bundled name)."""
    run_id: str
    model: str
    scenario: str
    pin: str
    turns: int
    persona: str

    @property
    def key(self) -> str:
        """The conversation's id (its idempotency key); also the Celery task id."""
        return conversation_id(self.run_id, self.model, self.scenario, self.persona)

    def kwargs(self) -> dict[str, Any]:
        return asdict(self)
