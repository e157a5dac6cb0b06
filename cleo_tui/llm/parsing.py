"""Turn a model's answer into notes or a reflection, trusting nothing in it.

The answer may wrap its JSON in code fences or prose, use wrong types, put a
priority out of range, run over the length limits, or name ids that were not
in its input. Parsing keeps what is usable, clamps and cuts what is out of
bounds, drops unknown ids (and says which), and raises `Unparsable` when
there is no JSON of the expected shape at all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypedDict, TypeVar

from cleo_tui.brain.clock import utc_now

OBSERVATION_LIMIT = 300
PATTERN_LIMIT = 300
CONTEXT_LIMIT = 150
INSIGHT_LIMIT = 300
REASON_LIMIT = 300
MAX_NOTES = 10          # the prompt asks for 3-5; more is tolerated, a flood is not
MAX_REFLECTION_ITEMS = 5
DEFAULT_PRIORITY = 3
DEFAULT_CONFIDENCE = 0.7
MIN_CONFIDENCE = 0.1
ID_LIMIT = 200              # a dropped id is kept (for the message) up to this length
MAX_ANSWER_CHARS = 2_000_000  # a longer answer is not parsed at all
MAX_SCAN_STARTS = 200         # `[`/`{` positions tried after the whole text fails

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\r?\n?(.*?)```", re.DOTALL)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")


class Unparsable(Exception):
    """No JSON of the expected shape in the model's answer."""


class NoteEntry(TypedDict):
    """One observer note as parsed (CLEO's observer shape)."""

    date: str  # YYYY-MM-DD
    priority: int  # 1-5
    observation: str
    source_ids: list[str]


class PatternEntry(TypedDict):
    """One pattern of a reflection."""

    pattern: str
    context: str


class LearningEntry(TypedDict):
    """One learning of a reflection."""

    insight: str
    confidence: float  # 0.1-1.0


class SupersededEntry(TypedDict):
    """An observation a reflection says is superseded, and why ('' when the model gave no reason)."""

    id: str
    reason: str


_Entry = TypeVar("_Entry")


@dataclass
class ParsedNotes:
    notes: list[NoteEntry]
    dropped_ids: list[str] = field(default_factory=list)
    rejected: int = 0  # entries that were not usable notes


@dataclass
class ParsedReflection:
    patterns: list[PatternEntry]
    learnings: list[LearningEntry]
    superseded: list[SupersededEntry]
    dropped_ids: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.patterns or self.learnings or self.superseded)


def _candidates(text: str) -> Iterable[str]:
    """Fenced blocks first, then the whole answer."""
    for match in _FENCE.finditer(text):
        yield match.group(1)
    yield text


def _looks_like_notes(value: Any) -> bool:
    """An array of objects (or an empty one), not an inner array of ids."""
    return isinstance(value, list) and (not value or any(isinstance(v, dict) for v in value))


def _looks_like_reflection(value: Any) -> bool:
    """An object with at least one of the reflection's keys, not an inner pattern object."""
    return isinstance(value, dict) and bool({"patterns", "learnings", "superseded"} & set(value))


def extract_json(text: str, want: type, accept: Callable[[Any], bool] | None = None) -> Any:
    """The first JSON value of type `want` (list or dict) in `text` that `accept` allows.

    Tries each fenced block and the whole answer as JSON, then every `[`/`{`
    position in turn, so prose before and after the JSON does not matter.
    `accept` keeps a truncated answer from yielding one of its inner values.
    """
    accept = accept or (lambda value: isinstance(value, want))
    if not text or not text.strip():
        raise Unparsable("the model returned an empty answer")
    if len(text) > MAX_ANSWER_CHARS:
        raise Unparsable(f"the answer is too long ({len(text):,} characters; at most {MAX_ANSWER_CHARS:,} are read)")
    opener = "[" if want is list else "{"
    decoder = json.JSONDecoder(strict=False)  # models put raw newlines inside strings
    for candidate in _candidates(text):
        stripped = candidate.strip()
        value = _decode(decoder, stripped)
        if accept(value):
            return value
        start, tries = stripped.find(opener), 0
        while start != -1 and tries < MAX_SCAN_STARTS:
            value = _decode(decoder, stripped, start)
            if accept(value):
                return value
            start, tries = stripped.find(opener, start + 1), tries + 1
    shape = "JSON array" if want is list else "JSON object"
    raise Unparsable(f"the answer holds no {shape} of the expected shape")


def _decode(decoder: json.JSONDecoder, text: str, start: int | None = None) -> Any:
    """The JSON value in `text` (at `start`, ignoring what follows), or None.

    Nesting deeper than Python's recursion limit counts as unparsable, not as a crash.
    """
    try:
        if start is None:
            return decoder.decode(text)
        return decoder.raw_decode(text, start)[0]
    except (ValueError, RecursionError):
        return None


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())  # one line: newlines and runs of spaces collapse
    return text[:limit]


def _string(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if value == value else None  # NaN is not a number here
    if isinstance(value, str):
        try:
            return _number(float(value.strip()))
        except ValueError:
            return None
    return None


def _priority(value: Any) -> int:
    number = _number(value)
    if number is None:
        return DEFAULT_PRIORITY
    return int(min(5, max(1, round(number))))


def _date(value: Any) -> str:
    text = _string(value)
    if text and _DATE.match(text):
        return text[:10]
    return utc_now().strftime("%Y-%m-%d")


def _known_ids(values: Iterable[Any], allowed: set[str], dropped: dict[str, None]) -> list[str]:
    """Ids present in the input, in order, once each; others go to `dropped`.

    `dropped` is an ordered set capped at the input's size: a flood of made-up
    ids costs nothing and is not kept.
    """
    kept: dict[str, None] = {}
    for value in values:
        ident = str(value).strip() if isinstance(value, (str, int)) and not isinstance(value, bool) else None
        if not ident:
            continue
        if ident in allowed:
            kept.setdefault(ident)
        elif len(dropped) < max(1, len(allowed)):
            dropped.setdefault(ident[:ID_LIMIT])
    return list(kept)


def parse_notes(text: str, allowed_ids: Iterable[str]) -> ParsedNotes:
    """Observer notes `{date, priority, observation, source_ids}` from the answer.

    A note counts when `observation` is a non-empty string and `source_ids` an
    array (as CLEO requires); unknown source ids are dropped from it.
    """
    value = extract_json(text, list, _looks_like_notes)
    allowed = set(allowed_ids)
    parsed = ParsedNotes(notes=[])
    dropped: dict[str, None] = {}
    for entry in value:
        observation = _string(entry.get("observation")) if isinstance(entry, dict) else None
        sources = entry.get("source_ids") if isinstance(entry, dict) else None
        if observation is None or not isinstance(sources, list) or len(parsed.notes) >= MAX_NOTES:
            parsed.rejected += 1
            continue
        parsed.notes.append({
            "date": _date(entry.get("date")),
            "priority": _priority(entry.get("priority")),
            "observation": _cut(observation, OBSERVATION_LIMIT),
            "source_ids": _known_ids(sources, allowed, dropped),
        })
    parsed.dropped_ids = list(dropped)
    return parsed


def _pattern(entry: Any) -> PatternEntry | None:
    if isinstance(entry, str):
        entry = {"pattern": entry}
    if not isinstance(entry, dict) or _string(entry.get("pattern")) is None:
        return None
    return {"pattern": _cut(entry["pattern"], PATTERN_LIMIT),
            "context": _cut(_string(entry.get("context")) or "", CONTEXT_LIMIT)}


def _learning(entry: Any) -> LearningEntry | None:
    if isinstance(entry, str):
        entry = {"insight": entry}
    if not isinstance(entry, dict) or _string(entry.get("insight")) is None:
        return None
    confidence = _number(entry.get("confidence"))
    confidence = DEFAULT_CONFIDENCE if confidence is None else min(1.0, max(MIN_CONFIDENCE, confidence))
    return {"insight": _cut(entry["insight"], INSIGHT_LIMIT), "confidence": round(confidence, 4)}


def _superseded(entries: Any, allowed: set[str], dropped: dict[str, None]) -> list[SupersededEntry]:
    """`superseded` as `{id, reason}`: plain ids (CLEO's form) or objects with a reason."""
    if not isinstance(entries, list):
        return []
    reasons: dict[str, str] = {}
    ids: list[Any] = []
    for entry in entries:
        if isinstance(entry, dict):
            ident = entry.get("id")
            if isinstance(ident, (str, int)) and _string(entry.get("reason")):
                reasons.setdefault(str(ident).strip(), _cut(entry["reason"], REASON_LIMIT))
            ids.append(ident)
        else:
            ids.append(entry)
    return [{"id": i, "reason": reasons.get(i, "")} for i in _known_ids(ids, allowed, dropped)]


def _items(value: Any, build: Callable[[Any], _Entry | None]) -> list[_Entry]:
    if not isinstance(value, list):
        return []
    items: list[_Entry] = []
    for entry in value:
        item = build(entry)
        if item is not None:
            items.append(item)
            if len(items) == MAX_REFLECTION_ITEMS:
                break
    return items


def parse_reflection(text: str, allowed_ids: Iterable[str]) -> ParsedReflection:
    """`{patterns, learnings, superseded}` from the answer, at most 5 patterns and 5 learnings."""
    value = extract_json(text, dict, _looks_like_reflection)
    allowed = set(allowed_ids)
    dropped: dict[str, None] = {}
    superseded = _superseded(value.get("superseded"), allowed, dropped)
    return ParsedReflection(
        patterns=_items(value.get("patterns"), _pattern),
        learnings=_items(value.get("learnings"), _learning),
        superseded=superseded,
        dropped_ids=list(dropped),
    )
