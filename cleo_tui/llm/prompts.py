"""What the observer and reflector ask the model, and the input lines they show it.

The lines follow CLEO's formats:
  observer   `[id] created_at: title — excerpt`
  reflector  `[id] (source_type or raw): title — excerpt`
The instructions are cleo-tui's own wording of CLEO's contract (REFERENCE §1).
"""

from __future__ import annotations

from collections.abc import Iterable

from cleo_tui.llm.inputs import InputRow

OBSERVER_MAX_TOKENS = 1024
REFLECTOR_MAX_TOKENS = 2048

OBSERVER_SYSTEM = (
    "You compress an AI coding agent's working memory. You answer with JSON only, no prose."
)

OBSERVER_INSTRUCTIONS = """Below are observations recorded during a coding session, one per line, newest first.
Write 3 to 5 dense notes that keep what a future session must know and drop the noise.

Answer with a JSON array only. Each element:
  {"date": "YYYY-MM-DD", "priority": 1-5, "observation": "at most 300 characters", "source_ids": ["ids of the lines this note compresses"]}
Priority: 1 = architectural decision, 2 = implementation choice, 3 = constraint or bug,
4 = routine action, 5 = noise. Use only ids that appear in square brackets below.

Observations:
"""

REFLECTOR_SYSTEM = (
    "You restructure an AI coding agent's memory into lasting patterns and learnings. "
    "You answer with JSON only, no prose."
)

REFLECTOR_INSTRUCTIONS = """Below are a session's observations and observer notes, one per line.
Combine related items, find patterns that recur across them, state what was learned,
and list the observations that the rest make redundant.

Answer with one JSON object only:
  {"patterns": [{"pattern": "at most 300 characters", "context": "at most 150 characters"}],
   "learnings": [{"insight": "at most 300 characters", "confidence": 0.0-1.0}],
   "superseded": [{"id": "an observation id", "reason": "why it is now redundant"}]}
At most 5 patterns and 5 learnings. Only list as superseded an id that appears in square
brackets below and whose content is fully kept by another line or by your patterns and learnings.

Observations:
"""


def observer_line(row: InputRow) -> str:
    """`[id] created_at: title — excerpt`."""
    return f"[{row.id}] {row.created_at}: {row.title} — {row.excerpt}"


def reflector_line(row: InputRow) -> str:
    """`[id] (source_type or raw): title — excerpt`."""
    return f"[{row.id}] ({row.source_type or 'raw'}): {row.title} — {row.excerpt}"


def observer_prompt(lines: Iterable[str]) -> str:
    return OBSERVER_INSTRUCTIONS + "\n".join(lines)


def reflector_prompt(lines: Iterable[str]) -> str:
    return REFLECTOR_INSTRUCTIONS + "\n".join(lines)
