"""CLEO's own retrieval and usage logs for the demo brain: what its agent searched, fetched, used.

CLEO writes a `brain_retrieval_log` row after each `memory find` (`find-rrf`, or `find` on its
older path), `fetch` (the fetched ids joined by commas as the query, 500 tokens an entry),
hybrid search and timeline, and a `brain_usage_log` row when a task reports whether it used an
entry (outcome success, failure, verified or unknown). The demo's rows are spread over the
last three weeks of its history, query the demo's own titles, and show every state the Traces
pane resolves: returned rows since evicted, rows now hidden from CLEO's search (quality below
0.3), ids no row holds any more, learnings, patterns and decisions; a markup-and-escape query
and a pasted stack trace show that a query is data.

Everything comes from a random stream of its own (`random.Random("cleo-retrievals-SEED")`),
drawn after every other row is written, so adding these logs changed no other demo row.
"""

from __future__ import annotations

import json
import random
import re
from datetime import datetime, timedelta

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.numbers import finite_or_none
from cleo_tui.brain.store import Brain
from cleo_tui.memory.mapping import as_text
from cleo_tui.recall.rerank import parse_timestamp

RETRIEVALS = 36
SOURCES = {"find-rrf": 8, "find": 1, "fetch": 3, "hybrid": 2, "timeline": 1}
TOKENS_PER_RESULT = {"fetch": 500}  # CLEO's estimate; 50 for the rest
SPAN = timedelta(days=21)
DELETED_IDS = ("O-mp1k0x2a-0", "L-5eed0d1e")  # returned once, deleted since by CLEO's hard sweeper
OUTCOMES = ("success", "success", "verified", "failure", "unknown")
HOSTILE_QUERY = "[bold red]webhook[/] retry \x1b[31mbackoff\x1b[0m [link=http://example.com]docs[/link]"
PASTED_QUERY = ("TypeError: Cannot read properties of undefined (reading 'amount')\n"
                + "".join(f"    at processInvoice (src/billing/invoice.ts:{40 + i}:{7 + i})\n" for i in range(60)))
ODD_QUERIES = {7: (HOSTILE_QUERY, "webhook"), 20: (PASTED_QUERY, "invoice")}
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]{4,}")
_PLAIN = frozenset({"about", "added", "after", "again", "already", "before", "being", "every", "fixed", "their",
                    "there", "these", "those", "which", "while", "where", "would", "could", "should", "never",
                    "still", "first", "other", "handles", "instead", "without"})
FORCED = {5: "timeline", 7: "find-rrf", 11: "hybrid", 20: "find-rrf"}  # every source, and the odd queries
_TIME = "%Y-%m-%d %H:%M:%S"  # CLEO's datetime('now')


class _Pools:
    """The rows a retrieval may return, read once in a stable order, each with its creation time:
    a retrieval returns only rows that existed then (`at`), and an evicted one only if it was
    evicted after."""

    def __init__(self, brain: Brain) -> None:
        o = cs.OBSERVATIONS
        rows = brain.query(f"SELECT id, title, created_at, invalid_at, quality_score FROM {o} "
                           "WHERE title IS NOT NULL ORDER BY rowid DESC LIMIT 1500")
        self.rows = [(as_text(r[0]), as_text(r[1]), as_text(r[2]), None if r[3] is None else as_text(r[3]),
                      finite_or_none(r[4])) for r in rows]
        self.at = ""
        self.records = {kind: [(as_text(r[0]), as_text(r[1])) for r in brain.query(
            f"SELECT id, {date} FROM {table} ORDER BY rowid")]
            for kind, table, date in (("learning", cs.LEARNINGS, "created_at"), ("pattern", cs.PATTERNS,
                                                                                   "extracted_at"),
                                      ("decision", cs.DECISIONS, "created_at"))}
        sessions = brain.query(f"SELECT DISTINCT source_session_id FROM {o} WHERE source_session_id IS NOT NULL "
                               "ORDER BY 1 DESC LIMIT 6")
        self.sessions = [as_text(r[0]) for r in sessions]

    def _existing(self) -> list[tuple[str, str, str, str | None, float | None]]:
        return [r for r in self.rows if r[2][:19].replace("T", " ") <= self.at]

    @property
    def live(self) -> list[tuple[str, str]]:
        """Live then and now, and found by CLEO's search (quality 0.3 or more)."""
        return [(r[0], r[1]) for r in self._existing() if r[3] is None and (r[4] is None or r[4] >= 0.3)]

    @property
    def evicted(self) -> list[str]:
        """Live then, evicted since."""
        return [r[0] for r in self._existing() if r[3] is not None and r[3][:19].replace("T", " ") > self.at]

    @property
    def hidden(self) -> list[str]:
        """Live, with a quality that now keeps it out of CLEO's search (it fell after the retrieval)."""
        return [r[0] for r in self._existing() if r[3] is None and r[4] is not None and r[4] < 0.3]

    def _records(self, kind: str) -> list[str]:
        return [i for i, date in self.records[kind] if date[:19].replace("T", " ") <= self.at]

    @property
    def learnings(self) -> list[str]:
        return self._records("learning")

    @property
    def patterns(self) -> list[str]:
        return self._records("pattern")

    @property
    def decisions(self) -> list[str]:
        return self._records("decision")


def _words(title: str) -> list[str]:
    """The searchable words of a title, lower case, once each (common words left out)."""
    return [w for w in dict.fromkeys(w.lower() for w in _WORD.findall(title)) if w not in _PLAIN]


def _query_and_matches(live: list[tuple[str, str]], rng: random.Random) -> tuple[str, list[str]]:
    """Two or three words of a title, and the live observations whose titles hold the first."""
    titles = [(i, t) for i, t in live if len(_words(t)) >= 2]
    _, title = rng.choice(titles)
    words = _words(title)
    query = rng.sample(words, min(len(words), rng.choice((2, 2, 3))))
    matches = [i for i, t in live if query[0] in t.lower()]
    return " ".join(query), matches[: rng.randint(3, 8)]


def _returned(pools: _Pools, rng: random.Random, index: int, source: str) -> tuple[str, list[str]]:
    """(query, ids in rank order) of one retrieval of `source`."""
    live = pools.live
    if source == "fetch":
        ids = [i for i, _ in rng.sample(live, rng.randint(1, 3))]
        if index % 4 == 1 and pools.decisions:
            ids.append(rng.choice(pools.decisions))
        return ",".join(ids), ids
    if source == "timeline":
        anchor = rng.randrange(2, len(live) - 3)
        return live[anchor][0], [i for i, _ in live[anchor - 2:anchor + 3]]
    query, ids = _query_and_matches(live, rng)
    learnings, patterns = pools.learnings, pools.patterns
    if learnings and rng.random() < 0.5:  # CLEO's find ranks learnings among observations
        ids.insert(rng.randint(0, min(2, len(ids))), rng.choice(learnings))
    if patterns and rng.random() < 0.25:
        ids.append(rng.choice(patterns))
    for pool, every in ((pools.evicted, 3), (pools.hidden, 5)):
        if pool and index % every == 1:  # returned then; evicted or hidden from CLEO's search since
            ids.insert(rng.randint(0, len(ids)), rng.choice(pool))
    if index % 9 == 4:
        ids.insert(1, DELETED_IDS[(index // 9) % len(DELETED_IDS)])
    return query, list(dict.fromkeys(ids))


def add_demo_cleo_retrievals(brain: Brain, seed: int, count: int = RETRIEVALS) -> int:
    """Write CLEO's two logs into the demo brain; returns how many retrievals were logged."""
    rng = random.Random(f"cleo-retrievals-{seed}")
    pools = _Pools(brain)
    newest = parse_timestamp(brain.scalar(f"SELECT max(created_at) FROM {cs.OBSERVATIONS}"))
    pools.at = (newest - SPAN).strftime(_TIME) if newest else ""
    if newest is None or len(pools.live) < 10:
        return 0
    at: datetime = newest - SPAN
    sources, weights = zip(*SOURCES.items(), strict=True)
    # (query, entry_ids, entry_count, source, tokens_used, session_id, created_at)
    retrievals: list[tuple[str, str, int, str, int, str | None, str]] = []
    usage: list[tuple[str, str, int, str, str]] = []  # (entry_id, task_id, used, outcome, created_at)
    for index in range(count):
        at += timedelta(minutes=rng.randint(60, int(SPAN.total_seconds() / 60 / count * 1.8)))
        source = FORCED.get(index) or rng.choices(sources, weights)[0]
        pools.at = min(at, newest).strftime(_TIME)
        query, ids = _returned(pools, rng, index, source)
        if index in ODD_QUERIES:  # what an agent pasted: its results are those of the word it is about
            query, word = ODD_QUERIES[index]
            ids = [i for i, t in pools.live if word in t.lower()][:6] or ids
        if not ids:
            continue
        session = rng.choice(pools.sessions) if pools.sessions and rng.random() < 0.4 else None
        stamp = min(at, newest).strftime(_TIME)
        tokens = TOKENS_PER_RESULT.get(source, 50) * len(ids)
        retrievals.append((query, json.dumps(ids, separators=(",", ":")), len(ids), source, tokens, session, stamp))
        if index % 3 == 0:  # a task reported what it used of what it was given
            task = f"T{1040 + index}"
            used_at = (min(at, newest) + timedelta(minutes=rng.randint(20, 90))).strftime(_TIME)
            for rank, entry in enumerate(ids[:3]):
                used = rank < rng.randint(1, 2)
                usage.append((entry, task, int(used), rng.choice(OUTCOMES) if used else "unknown", used_at))
    with brain.write() as conn:
        for sql in (*cs.RETRIEVAL_LOG_SQL, *cs.USAGE_LOG_SQL):
            conn.execute(sql)
        conn.executemany(f"INSERT INTO {cs.RETRIEVAL_LOG} (query, entry_ids, entry_count, source, tokens_used, "
                         "session_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)", retrievals)
        conn.executemany(f"INSERT INTO {cs.USAGE_LOG} (entry_id, task_id, used, outcome, created_at) "
                         "VALUES (?, ?, ?, ?, ?)", usage)
    return len(retrievals)
