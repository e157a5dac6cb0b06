"""A stand-in for CLEO's daemon: writes observations the way CLEO does, in its own process.

    python -m tests.cleo_writer DB ROWS [BATCH]

Its own connection, WAL, busy_timeout=30000, synchronous=NORMAL, one short
`BEGIN IMMEDIATE` transaction per batch (insert rows, touch the graph). It prints
`ready` after its first commit (the test waits for that line instead of sleeping)
and `done N` at the end; any error is printed and exits 1.
"""

from __future__ import annotations

import sqlite3
import sys


def write(db: str, rows: int, batch: int) -> int:
    conn = sqlite3.connect(db, isolation_level=None, timeout=30)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA busy_timeout = 30000")
    conn.execute("PRAGMA synchronous = NORMAL")
    written = 0
    while written < rows:
        conn.execute("BEGIN IMMEDIATE")
        for _ in range(min(batch, rows - written)):
            oid = f"O-cleo{written:06d}"
            conn.execute(
                "INSERT INTO brain_observations(id, type, title, narrative, created_at, source_type) "
                "VALUES (?, 'change', ?, ?, datetime('now'), 'agent')",
                (oid, f"CLEO wrote {written}", f"Concurrent observation {written} about src/live_{written % 9}.py"))
            conn.execute("INSERT OR IGNORE INTO brain_page_nodes(id, node_type, label) VALUES (?, 'observation', ?)",
                         (f"observation:{oid}", oid))
            written += 1
        conn.execute("COMMIT")
        if written <= batch:
            print("ready", flush=True)
    conn.close()
    print(f"done {written}", flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(write(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 3))
    except sqlite3.Error as exc:
        print(f"error {exc}", flush=True)
        sys.exit(1)
