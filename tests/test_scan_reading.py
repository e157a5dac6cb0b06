"""The scan's reading: the compact row a prune reads (live, rule and note as one number, no
session) gives the same columns as the full one, and the low-quality rule in SQL agrees with
`mapping.derive_relevance` for every kind of stored quality score."""

from __future__ import annotations

import numpy as np

from cleo_tui.memory import detectors, mapping
from cleo_tui.memory.pool_scan.findings_cache import judged_text_of
from cleo_tui.memory.tags import scan_brain
from cleo_tui.memory.tokenizers import get_tokenizer
from tests.pruner_fixtures import add_observation, new_brain

QUALITIES = [None, 0, 0.39, 0.4, 0.5, -1, "0.1", "abc", b"0.1", 1e308]


def _brain(tmp_path):
    brain = new_brain(tmp_path)
    for i, quality in enumerate(QUALITIES):
        add_observation(brain, f"O-q{i}", f"row with quality {i}", quality_score=quality,
                        source_session_id=f"ses_{i % 3}", invalid_at="2026-02-01 00:00:00" if i == 4 else None)
    add_observation(brain, "O-note", "the observer's note", title="[Observer p2] a note",
                    source_type="observer-compressed", created_at="2026-01-02 10:00:00")
    add_observation(brain, "O-owner", "said by the owner", source_type="manual", source_confidence="owner",
                    quality_score=0.1)
    add_observation(brain, "O-decision", "we decided", type="decision", quality_score=0.2)
    return brain


def test_the_compact_reading_gives_the_full_readings_columns(tmp_path):
    brain = _brain(tmp_path)
    try:
        full = scan_brain(brain, row_keys=True)  # the full row, with each row's key
        with_sessions = scan_brain(brain)  # compact, sessions read
        pool = scan_brain(brain, live_only=True, tokenizer=get_tokenizer("chars4"))  # compact, no sessions
    finally:
        brain.close()
    live = full.live
    assert not live.all() and full.notes.any() and len(set(full.rules.tolist())) >= 4
    for scan, rows in ((with_sessions, np.arange(len(full))), (pool, np.flatnonzero(live))):
        assert list(scan.ids) == [full.ids[i] for i in rows.tolist()]
        for name in ("live", "rules", "notes"):
            assert getattr(scan, name).dtype == getattr(full, name).dtype
            assert getattr(scan, name).tolist() == getattr(full, name)[rows].tolist(), name
        assert list(scan.quality) == [full.quality[i] for i in rows.tolist()]
    assert list(with_sessions.sessions) == list(full.sessions)


def test_the_low_quality_rule_in_sql_agrees_with_derive_relevance(tmp_path):
    brain = _brain(tmp_path)
    try:
        scan = scan_brain(brain)
        stored = dict(brain.conn.execute("SELECT id, quality_score FROM brain_observations").fetchall())
    finally:
        brain.close()
    for i, oid in enumerate(scan.ids):
        if not oid.startswith("O-q"):
            continue
        expected = mapping.derive_relevance({"quality_score": stored[oid], "type": "discovery"})
        assert mapping.relevance_of_rule(int(scan.rules[i]), scan.quality[i]) == expected, (oid, stored[oid])
        assert (scan.quality[i] is not None) == (expected[0] == "low"), oid


def test_a_reading_handed_on_gives_each_live_row_its_texts_and_score_and_the_same_findings(tmp_path):
    """`rows_read` (the duplicate finder's rows): each chunk handed on with every row's texts decoded
    leniently and its quality score as stored; the detectors read those texts, finding what they find
    in a plain reading of the rows."""
    brain = _brain(tmp_path)
    add_observation(brain, "O-latin", "TypeError: boom in src/a.py", title="a title")
    brain.conn.execute("UPDATE brain_observations SET narrative = CAST(X'636166e920543132' AS TEXT) "
                       "WHERE id = 'O-q0'")  # (invalid UTF-8: "caf\xe9 T12")
    brain.conn.commit()
    handed: list = []

    def reading():
        handed.clear()
        return handed.append

    try:
        scan = scan_brain(brain, live_only=True, rows_read=reading)
        brain.conn.text_factory = lambda raw: raw.decode("utf-8", "replace")
        stored = brain.conn.execute("SELECT id, coalesce(title, ''), coalesce(narrative, ''), quality_score "
                                    "FROM brain_observations WHERE invalid_at IS NULL ORDER BY rowid").fetchall()
    finally:
        brain.close()
    rows = [row for c in handed for row in zip(c.ids, c.title_texts, c.narrative_texts, c.scores, strict=True)]
    stored = [tuple(row) for row in stored]
    assert rows == stored and "caf\ufffd T12" in {r[2] for r in rows} and 0.39 in {r[3] for r in rows}
    index = {oid: i for i, oid in enumerate(scan.ids)}
    for oid, title, narrative, _ in stored:
        text = judged_text_of(title, narrative)
        assert scan.table[int(scan.findings[index[oid]])] == (tuple(sorted(detectors.identifiers_in(text))),
                                                              tuple(detectors.text_reasons(text))), oid
    assert scan.table[int(scan.findings[index["O-latin"]])][1]  # (an error: something was found)
