"""The scan's compact lookups: HashIndex answers as the dict it replaces, and the content keys
tell an edited row from its cached findings."""

from __future__ import annotations

import numpy as np

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.memory.pool_scan import HashIndex, containers, positions_of, scan_brain, scan_rows_since
from cleo_tui.memory.pool_scan.line_units import line_units, plain_line_units
from cleo_tui.memory.pool_scan.reading import ChunkColumns
from tests.pruner_fixtures import add_observation, new_brain


class _Clash(str):
    """A string whose hash is the same for every value: each lookup meets the others."""

    def __hash__(self) -> int:
        return 7


def _as_dict(values: list) -> dict:
    return dict(zip(values, range(len(values)), strict=True))


def test_hash_index_answers_as_a_dict_including_repeated_values():
    ids = ["O-a", "O-b", "O-a", "", "O-c", "O-b"]
    index, truth = HashIndex(ids), _as_dict(ids)
    assert {k: index[k] for k in truth} == truth  # the last row of a repeated id
    assert len(index) == len(truth) and list(index) == list(truth)
    assert "O-z" not in index and index.get("O-z", -1) == -1 and None not in index
    keys = ["O-b", "O-z", "", "O-a"]
    assert positions_of(index, keys).tolist() == [truth.get(k, -1) for k in keys]


def test_hash_index_confirms_each_hit_when_hashes_collide():
    ids = [_Clash(x) for x in ("p", "q", "p", "r")]
    index, truth = HashIndex(ids), _as_dict(ids)
    assert index.repeats
    keys = [_Clash(x) for x in "pqrs"]
    assert [index.get(k) for k in keys] == [2, 1, 3, None] == [truth.get(k) for k in keys]
    assert index.positions([_Clash("q"), _Clash("s")]).tolist() == [1, -1]


def test_a_fold_index_finds_old_and_new_rows(tmp_path, monkeypatch):
    brain = new_brain(tmp_path)
    for n in range(4):
        add_observation(brain, f"O-{n}", f"row {n} about src/app_{n}.py", created_at=f"2026-01-0{n + 1} 10:00:00")
    scan = scan_brain(brain)
    assert isinstance(scan.index, HashIndex)
    add_observation(brain, "O-new", "a new row", created_at="2026-02-01 10:00:00")
    grown = scan.updated(scan_rows_since(brain, scan.high_water, base=scan))
    assert {k: grown.index[k] for k in grown.ids} == _as_dict(grown.ids)
    assert positions_of(grown.index, ["O-new", "O-0", "O-x"]).tolist() == [4, 0, -1]
    assert grown.citation_counts.tolist() == [0] * 5
    monkeypatch.setattr(containers, "OVERLAY_MAX", 0)  # many new rows: the index is built again, not layered
    add_observation(brain, "O-newer", "another", created_at="2026-03-01 10:00:00")
    again = grown.updated(scan_rows_since(brain, grown.high_water, base=grown))
    assert isinstance(again.index, HashIndex) and again.index["O-newer"] == 5 and again.index["O-new"] == 4


def test_an_edit_of_the_same_length_is_analysed_again(tmp_path):
    """The findings cache is keyed by rowid and a hash of title and narrative, so an edit that
    keeps the row's length (a typo fixed) still reaches the detectors."""
    brain = new_brain(tmp_path)
    add_observation(brain, "O-a", "see src/alpha.py now", title="t")
    add_observation(brain, "O-b", "nothing to see here.", title="t")
    first = scan_brain(brain)
    assert "src/alpha.py" in first.table[first.findings[first.index["O-a"]]][0]
    with brain.write() as conn:
        conn.execute(f"UPDATE {cs.OBSERVATIONS} SET narrative = 'see src/gamma.py now' WHERE id = 'O-a'")
    second = scan_brain(brain)
    assert second.table[second.findings[second.index["O-a"]]][0] == ("src/gamma.py",)
    assert np.array_equal(first.rowids, second.rowids) and not np.array_equal(first.keys, second.keys)


def test_line_units_in_arrays_equal_them_row_by_row():
    """The chars4 units of a whole chunk, computed in arrays for plain rows, match the row-by-row
    rule for every odd row: non-ASCII ids and texts, blank or blank-led narratives, odd dates."""
    ids = ["O-1", "O-é", "O-🙂", "", "O-5", "O-6", "O-7", "O-8", "O-9", "O-10", "O-11"]
    created = ["2026-01-01 10:00:00", "2026-01-01T10:00", " 2026-01-01 10:00", "", "2026/01/01 10:00:00", "x",
               "2026-01-01 10:00:00", "2026-01-01 10:00:00", "2026-01-01 10:00:00 ", "\x1c2026-01-01 10:00",
               "2026-01-01"]
    titles = [b"t", b"t\xc3\xa9", b"", b"", b"title", b"ti", b"T", b"", b"t", b"t", b"\xff"]
    narratives = [b"plain", b"caf\xc3\xa9", b"\xf0\x9f\x99\x82 x", b"", b"  \t", b"\x1d", b" lead", b"\xe9 latin",
                  b"ok", b"", b"x"]
    n = len(ids)
    rules = [9, 1, 6, 7, 8, 9, 10, 11, 12, 13, 9]
    for dates in (created, ["2026-01-01 10:00:00é", *created[1:]]):  # a non-ASCII date: all row by row
        chunk = ChunkColumns(list(range(n)), ids, dates, [None] * n, [1] * n, titles, narratives, rules,
                                 [None] * n, [0] * n)
        expected = [line_units(chunk, i) for i in range(n)]
        assert plain_line_units(chunk).tolist() == expected
        assert expected[0] == len("[O-1] 2026-01-01 10:00 [medium] plain")
