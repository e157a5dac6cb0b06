"""Merging duplicates: the keeper stays, the others are soft-evicted, one journalled run.

For each merged pair a `supersedes` edge `observation:<keep>` → `observation:<other>`
(weight 1.0, provenance `cleo-tui-dedup:<run_id>`) records why the other row went,
so a reader of the brain (and cleo-tui's history) can tell who evicted it. The
whole merge is one run of cleo-tui's journal, so `curation.undo(brain, run_id)`
puts every row and edge back exactly.

A protected member is never evicted unless its id is in `confirm_protected`:
its own confirmation, not the cluster's.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain import journal
from cleo_tui.brain.clock import cleo_timestamp
from cleo_tui.brain.store import Brain
from cleo_tui.memory import curation
from cleo_tui.safe_text import plural

RUN_KIND = "dedup"
EDGE_TYPE = "supersedes"
EDGE_WEIGHT = 1.0
PROVENANCE_PREFIX = "cleo-tui-dedup"


class ProtectedMembers(curation.CurationError):
    """A merge would evict protected members that were not confirmed one by one."""


@dataclass(frozen=True)
class MergeRequest:
    """Keep `keep`, evict `others`; `protected` holds the reasons of the protected ones among them.

    `seen` holds, by id, the (title, text) the user saw of the keeper and the others
    (`seen_text`); a member whose row no longer reads so is left alone (and a changed
    keeper leaves its whole request alone). Ids without an entry are checked for being
    live only.
    """

    keep: str
    others: tuple[str, ...]
    protected: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    seen: Mapping[str, tuple[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Skipped:
    """A member the merge left alone, and why."""

    id: str
    why: str


@dataclass(frozen=True)
class MergeResult:
    run_id: int
    evicted: list[str]          # rows evicted by this run
    edges: int                  # supersedes edges added
    skipped: list[Skipped] = field(default_factory=list)  # chosen, but changed or gone since the scan

    def lines(self) -> list[str]:
        """What the merge left alone, one line each (the CLI prints them, the TUI says them)."""
        return [f"left {s.id} alone: {s.why}" for s in self.skipped]


def seen_text(title: str | None, narrative: str | None) -> tuple[str, str]:
    """(title, text) of an observation as the duplicate scan shows it: the narrative, else the title."""
    title_text, narrative_text = title or "", narrative or ""
    return title_text, narrative_text if narrative_text.strip() else title_text


def _changed_since_seen(conn: sqlite3.Connection, seen: Mapping[str, tuple[str, str]]) -> set[str]:
    """The ids of `seen` whose row reads otherwise now (or is gone)."""
    changed: set[str] = set()
    ids = list(seen)
    for start in range(0, len(ids), journal.IN_BATCH):
        part = ids[start:start + journal.IN_BATCH]
        rows = {str(r[0]): seen_text(_text(r[1]), _text(r[2])) for r in conn.execute(
            f"SELECT id, CAST(title AS BLOB), CAST(narrative AS BLOB) FROM {cs.OBSERVATIONS} "
            f"WHERE id IN ({', '.join('?' * len(part))})", part)}
        changed.update(i for i in part if rows.get(i, seen[i]) != seen[i])
    return changed


def _text(value: bytes | None) -> str:
    return "" if value is None else bytes(value).decode("utf-8", "replace")  # as the scan decodes


def _check(requests: Sequence[MergeRequest], confirm_protected: Collection[str]) -> None:
    """Refuse unconfirmed protected members, a keeper that is also evicted, and empty requests."""
    if not any(r.others for r in requests):
        raise curation.CurationError("Nothing to merge: no member besides the keeper was chosen; nothing was written.")
    keepers = {r.keep for r in requests}
    evicted = [o for r in requests for o in r.others]
    clash = sorted(keepers & set(evicted)) or sorted({o for o in evicted if evicted.count(o) > 1})
    if clash:
        raise curation.CurationError(f"Observation {clash[0]} would be both kept and evicted (or evicted twice); "
                                     "nothing was written.")
    unconfirmed = {o: why for r in requests for o, why in r.protected.items()
                   if o in r.others and o not in confirm_protected}
    if unconfirmed:
        listed = "; ".join(f"{o} ({', '.join(why)})" for o, why in sorted(unconfirmed.items())[:5])
        verb = "is" if len(unconfirmed) == 1 else "are"
        raise ProtectedMembers(f"{plural(len(unconfirmed), 'member')} to evict {verb} protected: {listed}. "
                               "Confirm each one (--include-protected, or check it in the pane) to evict it; "
                               "nothing was written.")


def merge_duplicates(brain: Brain, requests: Sequence[MergeRequest],
                     confirm_protected: Collection[str] = ()) -> MergeResult:
    """Merge every request in one journalled run; returns the run id and what it changed."""
    _check(requests, confirm_protected)
    curation.require_eviction_columns(brain)
    with brain.write() as conn:
        missing = [r.keep for r in requests if conn.execute(
            f"SELECT 1 FROM {cs.OBSERVATIONS} WHERE id = ? AND invalid_at IS NULL", (r.keep,)).fetchone() is None]
        if missing:
            raise curation.CurationError(f"The keeper {missing[0]} is no longer a live observation; nothing was "
                                         "written. Scan again.")
        requests, skipped = _as_seen(conn, requests)
        if not any(r.others for r in requests):
            raise curation.CurationError("Nothing was merged: every member chosen changed since the scan ("
                                         + "; ".join(f"{s.id}: {s.why}" for s in skipped[:5])
                                         + "). Scan again to see them as they are now.")
        ids = [o for r in requests for o in r.others]
        run_id = journal.start_run(conn, RUN_KIND, f"merged {plural(len(ids), 'duplicate observation')} into "
                                                   f"{plural(len(requests), 'keeper')}",
                                   {"ids": ids, "keep": {r.keep: list(r.others) for r in requests}})
        evicted, edges = write_merge(brain, conn, run_id, requests, cleo_timestamp())
    done = set(evicted)
    skipped += [Skipped(o, "evicted or deleted since the scan") for r in requests for o in r.others if o not in done]
    return MergeResult(run_id, evicted, edges, skipped)


def _as_seen(conn: sqlite3.Connection, requests: Sequence[MergeRequest]) -> tuple[list[MergeRequest], list[Skipped]]:
    """The requests cut to the members that still read as the user saw them (the prune commit's rule)."""
    changed = _changed_since_seen(conn, {i: text for r in requests for i, text in r.seen.items()})
    kept: list[MergeRequest] = []
    skipped: list[Skipped] = []
    for r in requests:
        if r.keep in changed:
            skipped += [Skipped(o, f"its keeper {r.keep} changed since the scan") for o in r.others]
            continue
        skipped += [Skipped(o, "its text changed since the scan") for o in r.others if o in changed]
        kept.append(replace(r, others=tuple(o for o in r.others if o not in changed)))
    return kept, skipped


def write_merge(brain: Brain, conn: sqlite3.Connection, run_id: int, requests: Sequence[MergeRequest],
                now: str) -> tuple[list[str], int]:
    """Every write of a merge, journalled under `run_id` inside the caller's transaction.

    Kept in one function so the journal's chunked writing can wrap it. Rows
    evicted meanwhile (by CLEO) are skipped, and get no edge.
    """
    has_edges = brain.supports("graph_edges")
    have = brain.features.columns(cs.EDGES) if has_edges else frozenset()
    evicted: list[str] = []
    edges = 0
    for request in requests:
        gone = curation.evict_rows(brain, conn, run_id, request.others, now)
        evicted += gone
        for other in gone if has_edges else ():
            key = {"from_id": f"observation:{request.keep}", "to_id": f"observation:{other}", "edge_type": EDGE_TYPE}
            if conn.execute(f"SELECT 1 FROM {cs.EDGES} WHERE from_id = ? AND to_id = ? AND edge_type = ?",
                            tuple(key.values())).fetchone():
                continue
            row = {**key, "weight": EDGE_WEIGHT, "provenance": f"{PROVENANCE_PREFIX}:{run_id}", "created_at": now}
            journal.insert_row(conn, run_id, cs.EDGES, {k: v for k, v in row.items() if k in have},
                               ("from_id", "to_id", "edge_type"))
            edges += 1
    return evicted, edges
