"""A first scan's first look (`pool_scan.first_look`): every row's columns but no text, read from
CLEO's indexes (or the table where a layout lacks one), exactly as the whole scan reads them."""

from __future__ import annotations

import numpy as np
import pytest

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.memory import curation, mapping
from cleo_tui.memory.pool_scan import first_look as looking
from cleo_tui.memory.pool_scan.scan_pass import scan_brain
from tests.pruner_fixtures import add_observation, small_tagged_brain

COLUMNS = ("ids", "created", "sessions", "quality")
ARRAYS = ("rowids", "live", "rules", "notes")


def odd_brain(tmp_path):
    """The small tagged brain with every kind of row a rule concerns, and odd values."""
    brain = small_tagged_brain(tmp_path)
    observer = mapping.OBSERVER_SOURCE_TYPE
    add_observation(brain, "O-obs", "[Observer p2] compressed", source_type=observer, title="[Observer p2] notes")
    add_observation(brain, "O-obs-plain", "an observer row", source_type=observer)
    add_observation(brain, "O-man", "typed by hand", source_type="manual", source_confidence="owner")
    add_observation(brain, "O-own", "owner said", source_confidence="owner", created_at="2025-06-01 08:00:00")
    add_observation(brain, "O-textq", "quality as text", quality_score="n/a")
    add_observation(brain, "O-neg", "negative quality", quality_score=-2, invalid_at="2026-02-01 00:00:00")
    add_observation(brain, "O-nulls", "no session, no date order", created_at="")
    add_observation(brain, "O-man-dec", "a manual decision", source_type="manual", type="decision", quality_score=0.1)
    add_observation(brain, "O-dec-low", "a poor decision", type="decision", quality_score=0.2)
    add_observation(brain, "O-own-low", "an owner's poor note", source_confidence="owner", quality_score=0)
    add_observation(brain, "O-low", "only poor", quality_score=0.39, created_at="2026-01-01 10:00:00")
    add_observation(brain, "O-sep\x1ein-id", "an id holding the separator the columns are joined by")
    add_observation(brain, "O-blob-date", "a date stored as a blob: its index puts it after every text, "
                    "here after the next row's equal date", created_at=b"2026-03-01 00:00:00")
    with brain.write() as conn:
        conn.execute(f"INSERT INTO {cs.OBSERVATIONS} (id, type, title, narrative, created_at, source_session_id) "
                     "VALUES (42, 'discovery', 't', 'an integer id', '2026-03-01 00:00:00', 7)")
    curation.pin_observation(brain, "O-c")
    return brain


def assert_as_scanned(look, scan) -> None:
    for name in COLUMNS:
        assert list(getattr(look, name)) == list(getattr(scan, name)), name
    for name in ARRAYS:
        assert np.array_equal(getattr(look, name), getattr(scan, name)), name
    assert look.citations == scan.citations and not look.findings.any() and len(look.table) == 1


@pytest.mark.parametrize("by_indexes", [True, False])
def test_the_first_look_reads_every_column_as_the_scan_does(tmp_path, monkeypatch, by_indexes):
    brain = odd_brain(tmp_path)
    assert looking.column_indexes(brain) is not None  # (CLEO's layout: every column indexed)
    if not by_indexes:
        monkeypatch.setattr(looking, "column_indexes", lambda brain: None)
    assert_as_scanned(looking.first_look(brain), scan_brain(brain))


def test_a_layout_without_an_index_is_read_from_the_table(tmp_path):
    brain = odd_brain(tmp_path)
    with brain.write() as conn:
        conn.execute("DROP INDEX idx_brain_observations_source_conf")
    assert looking.column_indexes(brain) is None
    assert_as_scanned(looking.first_look(brain), scan_brain(brain))


def test_undecodable_text_in_an_indexed_column_is_read_leniently(tmp_path):
    brain = odd_brain(tmp_path)
    with brain.write() as conn:
        conn.execute(f"UPDATE {cs.OBSERVATIONS} SET source_session_id = CAST(x'73657373e9ff' AS TEXT) "
                     "WHERE id = 'O-e'")
    look, scan = looking.first_look(brain), scan_brain(brain)
    assert_as_scanned(look, scan)
    assert "sess" in (look.sessions[look.index["O-e"]] or "")


def test_an_export_during_a_first_look_says_protection_is_not_known(tmp_path):
    from cleo_tui.memory.export_rows import _markdown
    from cleo_tui.memory.tags import TagTable

    brain = small_tagged_brain(tmp_path)
    pending, known = TagTable(looking.first_look(brain), protection_pending=True), TagTable(scan_brain(brain))
    assert known.fields("O-c")["protected"] is True  # its file is named by no other row: protected once known
    fields = pending.fields("O-c")
    assert fields["protected"] is None and fields["coverage"] == known.fields("O-c")["coverage"]
    text = _markdown({"id": "O-c", "title": "t", "narrative": "n", "tags": fields})
    assert "- protection: not known yet (being computed)" in text


def test_a_look_saved_for_the_app_leaves_its_citations_to_the_loading(tmp_path):
    # The scan process saves its look for the app, which judges the citations from the stored edges:
    # the look made to be saved skips that work, and loads with the very citations a look judges.
    from cleo_tui.memory import scan_snapshot

    brain = odd_brain(tmp_path)
    judged = looking.first_look(brain)
    assert judged.citations
    to_save = looking.first_look(brain, to_save=True)
    assert to_save.citations == {} and to_save.edges is not None
    assert scan_snapshot.save_snapshot(brain, to_save, scan_snapshot.first_look_path(brain))
    loaded = scan_snapshot.load_snapshot(brain, scan_snapshot.first_look_path(brain))
    assert loaded is not None
    assert {k: set(v) for k, v in loaded.citations.items()} == {k: set(v) for k, v in judged.citations.items()}


def test_a_column_longer_than_sqlite_makes_a_string_is_read_row_by_row(tmp_path):
    # SQLite joins each indexed column into one string; past its length limit (a billion bytes by
    # default: ten million long ids) it refuses, and the column is read a row at a time instead.
    import sqlite3

    brain = odd_brain(tmp_path)
    for k in range(100):
        add_observation(brain, f"O-{k:03}-{'long-id-' * 8}", "one of many long ids")
    scan = scan_brain(brain)
    brain.conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 5000)  # (the ids joined are longer; any statement shorter)
    assert_as_scanned(looking.first_look(brain), scan)
