"""The real-layout benchmark brain (benchmarks/real_layout.py): built at any size, shaped as CLEO's agents write."""

from __future__ import annotations

import sqlite3

from benchmarks.real_layout import build
from cleo_tui.brain import open_brain


def test_a_small_real_layout_brain_is_built_and_opens_as_a_cleo_brain(tmp_path):
    # 2,000 rows: the demo's invalid-UTF-8 rows are then among the borrowed texts (was a crash)
    path = build(tmp_path, 2_000, seed=7)
    conn = sqlite3.connect(path)
    try:
        long_ones = conn.execute("SELECT count(*) FROM brain_observations WHERE length(narrative) > 900").fetchone()[0]
        assert long_ones > 200  # long narratives, as CLEO's agents write
        conn.execute("INSERT INTO brain_observations_fts(brain_observations_fts) VALUES('integrity-check')")
        assert conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' "
                            "AND tbl_name = 'brain_observations'").fetchone()[0] >= 3  # CLEO's FTS triggers kept
    finally:
        conn.close()
    brain = open_brain(path, read_only=True)
    try:
        assert brain.kind.name == "cleo" and brain.scalar("SELECT count(*) FROM brain_observations") == 2_000
    finally:
        brain.close()
