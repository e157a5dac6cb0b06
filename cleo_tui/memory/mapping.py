"""How the seeds' concepts map onto a CLEO brain — the one place that decides it.

| seed concept              | in a CLEO brain                                              |
|---------------------------|--------------------------------------------------------------|
| observation pool          | live rows of brain_observations (invalid_at IS NULL)          |
| ObservationRecord.content | narrative, or title where the narrative is empty             |
| timestamp                 | created_at, shown as YYYY-MM-DD HH:MM                         |
| relevance                 | see `derive_relevance`                                        |
| reflection                | a live pattern, learning or observer note with an edge of a   |
|                           | REFLECTION_EDGE_TYPES type to the observation                 |
| coverage                  | distinct reflections citing it: 0 uncited, 1-3 cited, 4+      |
|                           | reinforced                                                    |
| soft eviction             | invalid_at and updated_at set to now; an undo clears          |
|                           | invalid_at and sets updated_at to the undo's time (so CLEO    |
|                           | sees the row changed), it does not restore the old updated_at |

The help shows users `MAPPING_MARKDOWN` (below), the same facts in their words.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.migrations import OVERRIDES
from cleo_tui.brain.numbers import finite_or_none
from cleo_tui.brain.store import Brain

RELEVANCES = ("low", "medium", "high", "critical")
REFLECTION_EDGE_TYPES = ("supersedes", "derived_from", "summarizes", "cites", "informed_by")
OBSERVER_SOURCE_TYPE = "observer-compressed"
REINFORCED_AT = 4

MAPPING_TABLE = __doc__

MAPPING_MARKDOWN = f"""\
| in cleo-tui | in the CLEO brain |
|---|---|
| the observation pool | the live rows of `brain_observations` (`invalid_at` empty) |
| an observation's text | its `narrative`, or its `title` when the narrative is empty |
| its time | `created_at`, shown as YYYY-MM-DD HH:MM |
| relevance | your pin or override, else the observation's own data (see **Relevance**) |
| a reflection | a live pattern, learning or observer note linked to the observation by an edge of type \
{", ".join(f"`{t}`" for t in REFLECTION_EDGE_TYPES)} |
| coverage | how many distinct reflections cite it (see **Coverage**) |
| eviction | soft: `invalid_at` and `updated_at` set to now; an undo clears `invalid_at` and sets \
`updated_at` to the time of the undo (so CLEO sees the row changed), not back to its old value |
"""

_OBSERVER_TITLE = re.compile(r"^\[Observer p([1-5])\]")
_PRIORITY_RELEVANCE = {1: "critical", 2: "high", 3: "medium", 4: "low", 5: "low"}


def coverage_tag(count: int) -> str:
    """0 → uncited, 1–3 → cited, 4 or more → reinforced."""
    if count >= REINFORCED_AT:
        return "reinforced"
    return "cited" if count > 0 else "uncited"


def as_text(value: Any) -> str:
    """Any column value as display text (blobs decoded leniently, NULL as empty)."""
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def content_of(row: Mapping[str, Any]) -> str:
    """The seed's `content`: the narrative, or the title where the narrative is empty."""
    narrative = as_text(row.get("narrative"))
    return narrative if narrative.strip() else as_text(row.get("title"))


def minute_timestamp(created_at: Any) -> str:
    """The seed's `timestamp` (YYYY-MM-DD HH:MM) from CLEO's created_at, kept as-is if odd."""
    text = as_text(created_at).strip()
    if len(text) >= 16 and text[4] == "-" and text[10] in " T":
        return text[:10] + " " + text[11:16]
    return text


def observer_priority(row: Mapping[str, Any]) -> int | None:
    """Priority 1-5 of an observer note, read from its `[Observer pN]` title."""
    if as_text(row.get("source_type")) != OBSERVER_SOURCE_TYPE:
        return None
    match = _OBSERVER_TITLE.match(as_text(row.get("title")))
    return int(match.group(1)) if match else None


def derive_relevance(row: Mapping[str, Any], override: str | None = None) -> tuple[str, str]:
    """(relevance, why) for one observation row, first rule that applies wins.

    1. a user override (pin) recorded by cleo-tui;
    2. observer notes: priority 1 → critical, 2 → high, 3 → medium, 4–5 → low;
    3. source_type 'manual' or source_confidence 'owner' → high (CLEO's `cleo memory observe`
       writes both for any caller, agents included, so they do not mean "by hand");
    4. type 'decision' → high;
    5. quality_score below 0.4 → low;
    6. otherwise medium.
    """
    if override in RELEVANCES:
        return override, "set by you in cleo-tui"
    priority = observer_priority(row)
    if priority is not None:
        return _PRIORITY_RELEVANCE[priority], f"observer note of priority {priority}"
    # CLEO's `cleo memory observe` writes manual/owner for whoever calls it, agents
    # included: a reason to keep the row longer, not evidence a person wrote it.
    manual, owner = as_text(row.get("source_type")) == "manual", as_text(row.get("source_confidence")) == "owner"
    if manual or owner:  # name only the condition(s) that hold
        held = " and ".join(c for c, ok in (("source_type manual", manual), ("source_confidence owner", owner)) if ok)
        return "high", f"written through `cleo memory observe` ({held})"
    if as_text(row.get("type")) == "decision":
        return "high", "a decision"
    quality = finite_or_none(row.get("quality_score")) if isinstance(row.get("quality_score"), (int, float)) else None
    if quality is not None and quality < 0.4:
        return "low", f"quality score {quality:.2f} is below 0.4"
    return "medium", "the default"


# The same rules as `derive_relevance`, as SQL (a scan of a million rows must not call
# Python per row): the CASE yields a rule code, `relevance_of_rule` turns it back into
# (relevance, why). A test checks both agree on every rule.
RULE_OVERRIDE = 10  # + index in RELEVANCES
_RULE_MANUAL, _RULE_DECISION, _RULE_LOW_QUALITY, _RULE_DEFAULT = 6, 7, 8, 9
DEFAULT_RULE = _RULE_DEFAULT  # the code of a row no relevance rule concerns
_RULE_OWNER, _RULE_MANUAL_OWNER = 14, 15  # after the overrides' codes
RULE_CODES_END = 16  # every rule code is below this


def low_quality_sql(quality: str) -> str:
    """SQL true for a quality score that is a number below 0.4 (`+`: compared as stored, without the
    column's affinity, so a text or blob is never below a number). The same as `typeof(q) IN
    ('integer', 'real') AND q < 0.4`, which cost a scan of 100,000 rows 160 million instructions."""
    return f"+{quality} < 0.4"


def relevance_rule_sql(column: Callable[[str], str], override: str | None) -> str:
    """A SQL CASE giving each row's relevance rule code; `column(name)` spells a column (or NULL)."""
    cases = []
    if override:
        cases += [f"WHEN {override} = '{r}' THEN {RULE_OVERRIDE + k}" for k, r in enumerate(RELEVANCES)]
    cases += [
        f"WHEN {column('source_type')} = '{OBSERVER_SOURCE_TYPE}' AND {column('title')} GLOB '[[]Observer p[1-5]]*' "
        f"THEN CAST(substr({column('title')}, 12, 1) AS INTEGER)",
        f"WHEN {column('source_type')} = 'manual' AND {column('source_confidence')} = 'owner' "
        f"THEN {_RULE_MANUAL_OWNER}",
        f"WHEN {column('source_type')} = 'manual' THEN {_RULE_MANUAL}",
        f"WHEN {column('source_confidence')} = 'owner' THEN {_RULE_OWNER}",
        f"WHEN {column('type')} = 'decision' THEN {_RULE_DECISION}",
        f"WHEN {low_quality_sql(column('quality_score'))} THEN {_RULE_LOW_QUALITY}",
    ]
    return f"CASE {' '.join(cases)} ELSE {_RULE_DEFAULT} END"


_RULE_ROWS: dict[int, dict[str, Any]] = {
    _RULE_MANUAL: {"source_type": "manual"}, _RULE_DECISION: {"type": "decision"}, _RULE_DEFAULT: {},
    _RULE_OWNER: {"source_confidence": "owner"},
    _RULE_MANUAL_OWNER: {"source_type": "manual", "source_confidence": "owner"},
    **{p: {"source_type": OBSERVER_SOURCE_TYPE, "title": f"[Observer p{p}]"} for p in range(1, 6)},
}
_RULE_ANSWERS = {code: derive_relevance(row) for code, row in _RULE_ROWS.items()}
_RULE_ANSWERS.update({RULE_OVERRIDE + k: derive_relevance({}, r) for k, r in enumerate(RELEVANCES)})


def relevance_of_rule(code: int, quality: Any = None) -> tuple[str, str]:
    """(relevance, why) of a rule code from `relevance_rule_sql`; `quality` for the low-quality rule."""
    if code == _RULE_LOW_QUALITY:
        return derive_relevance({"quality_score": quality})
    return _RULE_ANSWERS[code]


def relevance_overrides(brain: Brain) -> dict[str, str]:
    """Relevance set by the user (pins), by observation id."""
    if not brain.features.has_table(OVERRIDES):
        return {}
    return {r[0]: r[1] for r in brain.query(f"SELECT observation_id, relevance FROM {OVERRIDES}")}


def _live(brain: Brain, table: str) -> str:
    return "invalid_at IS NULL" if brain.features.has_column(table, "invalid_at") else "1"


def reflection_citations(brain: Brain, observation_ids: list[str] | None = None) -> dict[str, set[str]]:
    """For each observation id, the set of live reflections (node ids) that cite it.

    `observation_ids` limits the answer to those observations (recall asks for a few).

    Reflections are live patterns, live learnings and live observer notes with an
    edge of a REFLECTION_EDGE_TYPES type pointing at `observation:<id>`. Edges
    from rows that no longer exist do not count; the cited id may be anything.
    """
    if not brain.supports("graph_edges"):
        return {}
    sources = []
    if brain.features.has_table(cs.PATTERNS):
        sources.append(f"SELECT 'pattern:' || id FROM {cs.PATTERNS} WHERE {_live(brain, cs.PATTERNS)}")
    if brain.features.has_table(cs.LEARNINGS):
        sources.append(f"SELECT 'learning:' || id FROM {cs.LEARNINGS} WHERE {_live(brain, cs.LEARNINGS)}")
    sources.append(
        f"SELECT 'observation:' || id FROM {cs.OBSERVATIONS} "
        f"WHERE source_type = '{OBSERVER_SOURCE_TYPE}' AND {_live(brain, cs.OBSERVATIONS)}")
    types = ",".join(f"'{t}'" for t in REFLECTION_EDGE_TYPES)
    sql = (
        f"SELECT substr(e.to_id, 13), e.from_id FROM {cs.EDGES} e "
        f"WHERE e.edge_type IN ({types}) AND e.to_id LIKE 'observation:%' "
        f"AND e.from_id IN ({' UNION ALL '.join(sources)})"
    )
    params: list[str] = []
    if observation_ids is not None:
        params = [f"observation:{i}" for i in observation_ids]
        sql += f" AND e.to_id IN ({','.join('?' for _ in params) or 'NULL'})"
    cited: dict[str, set[str]] = defaultdict(set)
    for obs_id, reflection in brain.query(sql, params):
        if reflection != f"observation:{obs_id}":
            cited[obs_id].add(reflection)
    return dict(cited)
