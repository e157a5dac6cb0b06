"""The pruner seed's records, in Python: observations, reflections, and how a pool is rendered."""

from __future__ import annotations

from dataclasses import dataclass, field

COVERAGE_TAGS = ("reinforced", "cited", "uncited")  # also the drop order: reinforced first
DROP_RELEVANCE = ("low", "medium", "high")           # drop order within a coverage tag


@dataclass(frozen=True)
class ObservationRecord:
    """The seed's ObservationRecord; `timestamp` is `YYYY-MM-DD HH:MM`."""

    id: str
    content: str
    timestamp: str
    relevance: str = "medium"
    source_entry_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReflectionRecord:
    """The seed's non-legacy MemoryReflection: it cites `supporting_observation_ids`."""

    id: str
    content: str
    supporting_observation_ids: tuple[str, ...] = field(default=())


# A legacy reflection is a plain string: it cites nothing but its text still counts
# when deciding whether an identifier appears elsewhere.
MemoryReflection = ReflectionRecord | str


def render_line(observation_id: str, timestamp: str, relevance: str, content: str) -> str:
    """One pool line, as the pruner's home project renders it: `[id] timestamp [relevance] content`."""
    return f"[{observation_id}] {timestamp} [{relevance}] {content}"


def render_record(record: ObservationRecord) -> str:
    return render_line(record.id, record.timestamp, record.relevance, record.content)
