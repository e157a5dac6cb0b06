"""What CLEO injects at session start: its memory bridge, selected as CLEO selects it.

CLEO's memory bridge (`.cleo/memory-bridge.md`, @-referenced from AGENTS.md) is built by
`generateMemoryBridgeContent` in CLEO's packages/core/src/memory/memory-bridge.ts (read in
kryptobaseddev/cleo at 77fb47e). This module runs the same queries on the brain and writes the
same lines, so each item's text, and so its token count, is what the agent reads:

- **Last Session**: `getLastHandoff` (sessions/handoff.ts) reads CLEO's `sessions` table (the
  task store, in the same `cleo.db` since 2026.6.0, in `tasks.db` before): ended sessions with an
  `ended_at`, newest end first, the first whose `handoff_json` parses (else `debrief_json`'s
  `handoff`). No sessions table here: the section is "unknown", said so.
- **Recent Decisions**: the 5 newest `brain_decisions` by `created_at`.
- **Key Learnings**: up to 24 candidates with `CAST(confidence AS REAL) >= 0.3` and an insight
  not starting `Completed:`, by confidence then `created_at`; each decayed by
  0.5^(age / 90 days), age counted from `updated_at` (or `created_at` when it is empty); those
  still ≥ 0.6 kept, strongest first, 8 at most, shown with the decayed confidence.
- **Patterns to Follow** (`success`, `workflow`, `optimization`) and **Anti-Patterns to Avoid**
  (`failure`, `blocker`): 8 each, newest `extracted_at` first, without CLEO's noise
  (`Recurring label…`, `Test pattern…`, `test`, `Audit probe:…`, 20 characters or fewer).
- **Recent Observations**: the 10 newest by `created_at` whose type is not `change` and whose
  title does not start `File changed:`, `Task start:`, `Task complete:` or `[hook]`.

None of these queries looks at `invalid_at` (nor at `quality_score`): rows cleo-tui evicted,
and rows hidden from CLEO's search, are injected all the same. `Bridge` marks them, and the
rows a pending step would evict (`evicting`): the step does not change what CLEO injects.
Beside it, `Bridge.intended` is the bridge *as eviction intends* (evicted rows and the step's left
out, the next rows in CLEO's order in their places): not what CLEO does, what a user may expect.

Not reproduced: CLEO's context-aware variant (`generateContextAwareContent`: up to 5
`hybridSearch` hits and a cut to `brain.memoryBridge.maxTokens` at 4 characters a token) — no
caller in CLEO passes the scope it needs (`refreshMemoryBridge(projectRoot)` everywhere, and
`cleo refresh-memory` calls `writeMemoryBridge` directly), so the file CLEO writes is never cut;
the global config (`~/.cleo/config.json`) is not read, only the project's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from cleo_tui.brain.store import Brain
from cleo_tui.memory.bridge_handoff import Handoff, read_handoff
from cleo_tui.memory.bridge_project import BridgeSettings, OnDisk, bridge_settings, read_on_disk
from cleo_tui.memory.bridge_sections import (
    AVOID,
    DECISIONS,
    FOLLOW,
    LEARNINGS,
    OBSERVATIONS,
    SECTION_QUERIES,
    SECTION_TITLES,
    BridgeItem,
    BridgeSection,
    chars4_tokens,
    mark_items,
    read_section,
)
from cleo_tui.memory.js_values import js_iso_seconds, utf16_units
from cleo_tui.safe_text import one_line, plural

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Bridge:
    """The whole bridge: the handoff, the sections in CLEO's order, the text, its tokens, the marks."""

    generated_at: str
    handoff: Handoff
    sections: tuple[BridgeSection, ...]
    settings: BridgeSettings = field(default_factory=BridgeSettings)
    on_disk: OnDisk = field(default_factory=lambda: OnDisk(None, False))
    evicting_count: int = 0  # how many ids the pending step evicts (0: no step)
    tokenizer: str | None = None  # cleo-tui's tokenizer, when one other than chars4 was asked for
    tokenizer_tokens: int | None = None
    honours_eviction: bool = False  # built as eviction intends: evicted rows (and the step's) left out
    intended: Bridge | None = None  # the same bridge as eviction intends, when asked for

    def section(self, name: str) -> BridgeSection:
        return next(s for s in self.sections if s.name == name)

    @property
    def items(self) -> list[BridgeItem]:
        return [item for s in self.sections for item in s.items]

    def ids(self, *names: str) -> list[str]:
        return [i.id for name in names for i in self.section(name).items]

    @property
    def text(self) -> str:
        """The markdown CLEO writes (lines joined by newlines; it ends with one)."""
        return "\n".join(document_lines(self.generated_at, self.handoff.lines,
                                        [line for s in self.sections for line in s.lines()]))

    @property
    def tokens(self) -> int:
        return chars4_tokens(self.text)

    @property
    def failure(self) -> str | None:
        """Why CLEO's generator would throw and write no bridge at all (None: it writes one)."""
        if self.handoff.problem:
            return f"the last session's handoff: {self.handoff.problem}"
        for item in self.items:
            if item.problem:
                return f"{SECTION_TITLES[item.section]} [{one_line(item.id, 40)}]: {item.problem}"
        return None

    def marked(self, mark: str) -> list[BridgeItem]:
        return [i for i in self.items if mark in i.marks]

    def after_line(self, step: str = "this step") -> str:
        """What a pending step (its ids in `evicting`) changes in the bridge: nothing, and which rows that hides."""
        evicting, rows, total = self.marked("evicting"), len(self.items), self.evicting_count
        if not rows:
            return f"After {step} CLEO still injects nothing."
        same = (f"After {step} CLEO injects the same {'row' if rows == 1 else plural(rows, 'row')} "
                "(its bridge ignores invalid_at)")
        place = "the row the step evicts" if total == 1 else f"the {total:,} rows the step evicts"
        among = place if total == 1 else f"among {place}"
        if rows == 1 and evicting:
            return f"{same}: it is {among}, and CLEO will still inject it."
        if rows == 1:
            return f"{same}; it is not {place}."
        if not evicting:
            return f"{same}; none of them is {among}."
        one = len(evicting) == 1
        return (f"{same}: {len(evicting):,} of them {'is' if one else 'are'} {among}, "
                f"and CLEO will still inject {'it' if one else 'them'}.")

    def summary_lines(self) -> list[str]:
        """Sentences about the marks: what eviction does not change in what CLEO injects."""
        lines = []
        evicted, hidden = self.marked("evicted"), self.marked("hidden")
        if evicted:
            one = len(evicted) == 1
            lines.append(f"{plural(len(evicted), 'injected row')} {'is' if one else 'are'} evicted: CLEO's bridge "
                         f"ignores invalid_at, so the agent still reads {'it' if one else 'them'}.")
        if hidden:
            one = len(hidden) == 1
            lines.append(f"{plural(len(hidden), 'injected row')} {'is' if one else 'are'} hidden from CLEO's search "
                         f"(quality below 0.3); the bridge injects {'it' if one else 'them'} anyway.")
        if self.evicting_count:
            lines.append(self.after_line())
        if self.failure:
            lines.append(f"CLEO's generator would stop here and write no bridge: {self.failure}.")
        return lines

    def differences(self, other: Bridge) -> tuple[list[str], list[str]]:
        """(ids this bridge injects that `other` does not, ids `other` injects that this one does not)."""
        mine, theirs = [i.id for i in self.items], [i.id for i in other.items]
        return [i for i in mine if i not in set(theirs)], [i for i in theirs if i not in set(mine)]

    def intended_json(self) -> dict[str, Any] | None:
        """The bridge as eviction intends, in brief: ids per section, tokens, what leaves and what comes in."""
        if self.intended is None:
            return None
        other = self.intended
        gone, instead = self.differences(other)
        return {"observations": other.ids(OBSERVATIONS), "learnings": other.ids(LEARNINGS),
                "patterns": other.ids(FOLLOW, AVOID), "decisions": other.ids(DECISIONS), "tokens": other.tokens,
                "left_out": gone, "instead": instead}

    def to_json(self) -> dict[str, Any]:
        """`bridge --json`: ids per section (the contract), then the detail."""
        out: dict[str, Any] = {
            "observations": self.ids(OBSERVATIONS),
            "learnings": self.ids(LEARNINGS),
            "patterns": self.ids(FOLLOW, AVOID),
            "decisions": self.ids(DECISIONS),
            "tokens": self.tokens,
            "chars": utf16_units(self.text),
            "handoff": self.handoff.to_json(),
            "sections": {s.name: {"title": s.title, "tokens": s.tokens, "note": s.note,
                                  "items": [i.to_json() for i in s.items]} for s in self.sections},
            "marks": {"evicted_injected": [i.id for i in self.marked("evicted")],
                      "hidden_injected": [i.id for i in self.marked("hidden")],
                      "evicting_injected": [i.id for i in self.marked("evicting")],
                      "evicting": self.evicting_count},
            "generated_at": self.generated_at,
            "mode": self.settings.mode,
            "mode_note": self.settings.mode_note,
            "max_tokens": self.settings.max_tokens,
            "cut_applied": False,
            "failure": self.failure,
            "on_disk": self.on_disk.to_json(),
            "text": self.text,
        }
        if self.intended is not None:
            out["as_eviction_intends"] = self.intended_json()
        if self.tokenizer:
            out["tokenizer"] = self.tokenizer
            out["tokenizer_tokens"] = self.tokenizer_tokens
        return out


def document_lines(generated_at: str, handoff: Sequence[str], body: Sequence[str]) -> list[str]:
    """CLEO's header, the handoff section, then the sections' lines."""
    return ["# CLEO Memory Bridge", "", f"> Auto-generated at {generated_at}",
            "> Do not edit manually. Regenerate with `cleo refresh-memory`.", "", *handoff, *body]


def build_bridge(brain: Brain, now: datetime, evicting: Iterable[str] = frozenset(),
                 count_tokens: Callable[[str], int] | None = None, tokenizer_name: str | None = None,
                 with_intended: bool = False, honour_eviction: bool = False) -> Bridge:
    """The bridge CLEO would write at `now`, marked; `evicting`: ids a pending step would evict.

    `count_tokens` (with `tokenizer_name`) adds each line's and the document's count with cleo-tui's
    chosen tokenizer beside CLEO's 4-characters-a-token estimate. `with_intended` also builds
    `intended`: the bridge as eviction intends (`honour_eviction`: evicted rows and the step's left out,
    the next rows in CLEO's order taking their places) — not what CLEO does, what the user may expect.
    """
    evicting = frozenset(str(i) for i in evicting)
    now_ms = float((now - EPOCH) // timedelta(milliseconds=1))  # Date.now(): whole milliseconds
    skip = evicting if honour_eviction else None
    sections = [read_section(brain, query, now_ms, skip) for query in SECTION_QUERIES]
    sections = mark_items(brain, sections, evicting)
    if count_tokens is not None:
        sections = [replace(s, items=tuple(replace(i, tokenizer_tokens=count_tokens(i.line)) for i in s.items))
                    for s in sections]
    bridge = Bridge(js_iso_seconds(now), read_handoff(brain), tuple(sections), bridge_settings(brain),
                    evicting_count=len(evicting), honours_eviction=honour_eviction)
    if not honour_eviction:
        bridge = replace(bridge, on_disk=read_on_disk(brain, bridge.text))
    if count_tokens is not None:
        bridge = replace(bridge, tokenizer=tokenizer_name, tokenizer_tokens=count_tokens(bridge.text))
    if with_intended and not honour_eviction:
        bridge = replace(bridge, intended=build_bridge(brain, now, evicting, count_tokens, tokenizer_name,
                                                       honour_eviction=True))
    return bridge


def injected(brain: Brain, evicting: Iterable[str] = frozenset(), now: datetime | None = None) -> Bridge:
    """What CLEO injects now (cleo-tui's clock: $CLEO_TUI_NOW in tests), marked with the rows `evicting`
    (a pending step's ids) would evict — for any pane or command that asks."""
    from cleo_tui.brain.clock import current_time

    return build_bridge(brain, now or current_time(), evicting)


def read_bridge(brain: Brain, now: datetime, evicting: Iterable[str] = frozenset(),
                count_tokens: Callable[[str], int] | None = None, tokenizer_name: str | None = None,
                with_intended: bool = False) -> Bridge:
    """`build_bridge` on a reader connection of its own (for a worker thread)."""
    reader = brain.reader()
    try:
        return build_bridge(reader, now, evicting, count_tokens, tokenizer_name, with_intended)
    finally:
        reader.close()
