"""A benchmark brain shaped like the ones CLEO's agents really write (issue 33).

    python -m benchmarks.real_layout DIR [--observations N] [--seed S]

The demo generator writes short, tidy rows (about 190 characters of narrative). Real brains differ
in what makes cleo-tui slow or fragile, so this starts from the demo brain of the same size and
reshapes its agent-written observations the way CLEO's own writers leave them:

- long narratives: an agent's observation carries the tool output, diff or log it looked at —
  lengths drawn log-normally around 900 characters, one row in twenty several kilobytes, one in
  two thousand between 60 and 200 kB;
- CLEO's JSON columns filled (`facts_json`, `concepts_json`, `files_read_json`,
  `files_modified_json`, `source_ids`, `provenance_chain`, `attachments_json`), a few of them not
  valid JSON or of the wrong shape, as CLEO's history allows;
- `title` the first 120 characters of the text and `content_hash` recomputed as CLEO does;
  `source_session_id` NULL on most rows (CLEO's CLI writes none);
- hostile rows (one in two hundred): Rich markup, ANSI and OSC escapes, NUL and other control
  bytes, bidi overrides, zero-width characters; odd values (quality NULL, above 1 or negative,
  ISO dates with `T` and `Z`).

The demo's planted rows keep their text (the reworded duplicate groups, the hostile texts, the
protected rows, observer notes), so the duplicate benchmark still has its five groups to find.
CLEO's FTS index and triggers are kept: the triggers are lifted for the rewrite and the index
rebuilt from the table, which is what they would have produced. The file is then CLEO's project
store, not a cleo-tui brain: no `created_by` mark, and the tables by which CLEO knows one.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

from cleo_tui.demo import text
from cleo_tui.demo.generator import generate_demo
from cleo_tui.demo.rows import content_hash

RESHAPED_SOURCES = ("agent", "claude-mem", "auto", "session-debrief", "manual")
CHUNK = 5_000
POOL = 4_000  # sentences borrowed from other rows to grow a narrative
# Borrowed text that would make a row protected (an error, the user's word, a completion) is left
# out, so the share of protected rows stays near the demo's and a prune still has rows to drop.
MARKED = re.compile(r"user|owner|error|fail|exception|done|complete|fixed|resolved|must|never|always|critical",
                    re.IGNORECASE)

TOOL_OUTPUTS = (
    "```\n$ pytest -q tests/{test}.py\nF.....F..\nFAILED tests/{test}.py::test_{word} - AssertionError: "
    "assert {n} == {m}\n{n} passed, 2 failed in {n}.{m}s\n```",
    "Traceback (most recent call last):\n  File \"{file}\", line {n}, in {word}\n    return self._{word}(payload)"
    "\n  File \"{file}\", line {m}, in _{word}\n    raise ValueError(f\"bad {word}: {{value!r}}\")"
    "\nValueError: bad {word}",
    "```diff\n--- a/{file}\n+++ b/{file}\n@@ -{n},7 +{n},9 @@\n-    timeout = {m}\n+    timeout = {n}\n"
    "+    retries = 3\n     return client.get(url, timeout=timeout)\n```",
    "{{\"status\": {n}, \"error\": {{\"code\": \"{word}_failed\", \"detail\": \"{word} rejected after {m} ms\"}}, "
    "\"request_id\": \"req_{m}\"}}",
    "2026-11-{d}T10:{m:02d}:{d}.123Z WARN [{word}] retry {n}/5 after {m}ms (upstream 502)\n"
    "2026-11-{d}T10:{m:02d}:{d}.456Z ERROR [{word}] giving up: connection reset by peer",
)

HOSTILE_BITS = (
    "[bold red]not markup[/bold red] [link=https://example.invalid]click[/link]",
    "\x1b[31mred\x1b[0m \x1b]8;;https://example.invalid\x07link\x1b]8;;\x07 \x1b[2J\x1b[H",
    "nul\x00byte bell\x07 backspace\x08 tab\there \r carriage",
    "\u202eevil\u202c \u200bzero\u200dwidth\ufeff",
    "[/] [[escaped]] \\[x] {braces} $PATH `cmd` <tag>",
)


def build(directory: Path, observations: int, seed: int) -> Path:
    """Generate the demo brain of `observations` rows in DIR and reshape it; return its path."""
    path = generate_demo(directory, observations=observations, seed=seed)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.text_factory = lambda b: b.decode("utf-8", "surrogateescape")
    try:
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("PRAGMA cache_size = -65536")
        _reshape(conn, random.Random(seed))
        _as_cleos_project_store(conn)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return path


def _reshape(conn: sqlite3.Connection, rng: random.Random) -> None:
    """Rewrite the agent-written rows in one transaction, with the FTS triggers lifted meanwhile."""
    triggers = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' "
                            "AND tbl_name = 'brain_observations' AND name LIKE '%\\_au' ESCAPE '\\'").fetchall()
    kept = _planted_texts()
    pool = [r[0] for r in conn.execute("SELECT narrative FROM brain_observations WHERE narrative IS NOT NULL "
                                       "AND length(narrative) BETWEEN 40 AND 400 LIMIT ?", (POOL * 3,))
            if not MARKED.search(r[0]) and _encodable(r[0])][:POOL]
    conn.execute("BEGIN IMMEDIATE")
    for name, _ in triggers:
        conn.execute(f'DROP TRIGGER "{name}"')
    for chunk in _chunks(conn):
        updates = [_reshaped(rng, row, pool) for row in chunk
                   if row[2] in RESHAPED_SOURCES and row[1] not in kept and _encodable(row[1] or "")]
        conn.executemany(
            "UPDATE brain_observations SET title = ?, narrative = ?, content_hash = ?, facts_json = ?, "
            "concepts_json = ?, files_read_json = ?, files_modified_json = ?, source_ids = ?, "
            "provenance_chain = ?, attachments_json = ?, source_session_id = ?, quality_score = ?, "
            "created_at = ? WHERE rowid = ?", updates)
    conn.execute("INSERT INTO brain_observations_fts(brain_observations_fts) VALUES('rebuild')")
    for _, sql in triggers:
        conn.execute(sql)
    conn.execute("COMMIT")


def _as_cleos_project_store(conn: sqlite3.Connection) -> None:
    """Make the file CLEO's consolidated project store: not marked as cleo-tui's own, and with the
    two tables by which CLEO knows a project database (tasks_tasks, its migration journal)."""
    with conn:
        conn.execute("DELETE FROM cleo_tui_meta WHERE key = 'created_by'")
        conn.execute("CREATE TABLE IF NOT EXISTS tasks_tasks (id TEXT PRIMARY KEY, title TEXT NOT NULL, "
                     "status TEXT NOT NULL DEFAULT 'pending', created_at TEXT)")
        conn.execute("CREATE TABLE IF NOT EXISTS __drizzle_migrations (id INTEGER PRIMARY KEY, hash TEXT NOT NULL, "
                     "created_at NUMERIC)")


def _encodable(value: str) -> bool:
    """False for text the demo wrote as invalid UTF-8 (read back with surrogates): left as it is."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _planted_texts() -> set[str]:
    """Narratives the demo plants on purpose, left as they are."""
    planted = {n for group in text.DUPLICATE_GROUPS for n in group} | set(text.CAPPED_PAIR)
    return planted


def _chunks(conn: sqlite3.Connection) -> Iterator[list[tuple]]:
    """Every row's rowid, narrative, source type and the columns kept, CHUNK rows at a time."""
    last = 0
    while True:
        rows = conn.execute("SELECT rowid, narrative, source_type, source_session_id, quality_score, created_at, "
                            "files_read_json, files_modified_json, concepts_json FROM brain_observations "
                            "WHERE rowid > ? ORDER BY rowid LIMIT ?", (last, CHUNK)).fetchall()
        if not rows:
            return
        last = rows[-1][0]
        yield rows


def _reshaped(rng: random.Random, row: tuple, pool: list[str]) -> tuple:
    """The new values of one row (in the UPDATE's order)."""
    rowid, narrative, _, session, quality, created, files_read, files_modified, concepts = row
    body = _long_narrative(rng, narrative or "", pool)
    hostile = rng.random() < 0.005
    if hostile:
        body = f"{rng.choice(HOSTILE_BITS)} {body} {rng.choice(HOSTILE_BITS)}"
    read = _json_list(files_read) or rng.sample(text.FILES, rng.randint(0, 6))
    modified = _json_list(files_modified) or rng.sample(text.FILES, rng.randint(0, 3))
    facts = [s.strip() for s in body.split(". ")[:rng.randint(1, 5)] if s.strip()]
    return (body[:120], body, content_hash(body), _odd_json(rng, facts),
            _odd_json(rng, _json_list(concepts) or rng.sample(text.CONCEPTS, rng.randint(1, 4))),
            json.dumps(read), json.dumps(modified), _source_ids(rng), _provenance(rng),
            _attachments(rng), session if rng.random() < 0.3 else None, _odd_quality(rng, quality, hostile),
            _odd_date(rng, created, hostile), rowid)


def _long_narrative(rng: random.Random, start: str, pool: list[str]) -> str:
    """`start` grown to a log-normal length with borrowed sentences and tool output."""
    if rng.random() < 0.0005:
        target = rng.randint(60_000, 200_000)
    elif rng.random() < 0.05:
        target = rng.randint(3_000, 9_000)
    else:
        target = min(int(math.exp(rng.gauss(math.log(900), 0.7))), 6_000)
    parts, size = [start], len(start)
    while size < target:
        if rng.random() < 0.08:
            piece = _tool_output(rng)
        else:
            piece = rng.choice(pool) if pool else "The agent noted a detail."
        parts.append(piece)
        size += len(piece) + 1
    return "\n".join(parts) if size > 2_000 else " ".join(parts)


def _tool_output(rng: random.Random) -> str:
    return rng.choice(TOOL_OUTPUTS).format(test=rng.choice(text.TESTS), word=rng.choice(text.AREAS),
                                           file=rng.choice(text.FILES), n=rng.randint(1, 400),
                                           m=rng.randint(1, 59), d=rng.randint(10, 28))


def _json_list(value: object) -> list[str]:
    try:
        parsed = json.loads(value) if isinstance(value, str) else None
    except ValueError:
        return []
    return [str(v) for v in parsed] if isinstance(parsed, list) else []


def _odd_json(rng: random.Random, values: list[str]) -> str | None:
    """A JSON array as CLEO writes it; now and then NULL, an object, or not JSON at all."""
    roll = rng.random()
    if roll < 0.01:
        return None
    if roll < 0.012:
        return "[not json"
    if roll < 0.014:
        return json.dumps({"items": values})
    return json.dumps(values)


def _source_ids(rng: random.Random) -> str | None:
    if rng.random() < 0.7:
        return None
    return json.dumps([f"O-{rng.getrandbits(40):010x}" for _ in range(rng.randint(1, 4))])


def _provenance(rng: random.Random) -> str | None:
    if rng.random() < 0.8:
        return None
    return json.dumps([{"step": "observe", "agent": rng.choice(("claude-code", "codex")), "at": "2026-11-02"}])


def _attachments(rng: random.Random) -> str | None:
    if rng.random() < 0.95:
        return None
    return json.dumps([{"kind": "file", "path": rng.choice(text.FILES), "bytes": rng.randint(10, 90_000)}])


def _odd_quality(rng: random.Random, quality: object, hostile: bool) -> object:
    if hostile:
        return rng.choice((None, 1.5, -0.2, 0.0))
    return quality


def _odd_date(rng: random.Random, created: object, hostile: bool) -> object:
    """Some rows in ISO form with `T` and `Z`, as CLEO's JavaScript writers leave them."""
    if isinstance(created, str) and (hostile or rng.random() < 0.02) and len(created) == 19:
        return created.replace(" ", "T") + ".000Z"
    return created


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.real_layout", description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--observations", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    path = build(args.directory, args.observations, args.seed)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
