"""A tiktoken prepare's line units, kept per brain (pruner_units): the scan's own counts, and a warm
prepare that counts nothing and loads no encoding."""

from __future__ import annotations

import numpy as np
import pytest

from cleo_tui.memory import pruner_units, tags, tokenizers
from cleo_tui.memory.pruner import prepare_pool
from cleo_tui.memory.tokenizers import get_tokenizer
from tests.pruner_fixtures import add_observation, new_brain

ODD_ROWS = [
    ("O-plain", "fixed the parser in src/app/parser.py", "2026-01-01 10:00:00"),
    ("O-blank", "   ", "2026-01-01 11:00:00"),  # blank narrative: the title is the content
    ("O-wide", "ü😀 wide text and 中文 " * 20, "2026-01-02T09:30:00Z"),
    ("O-ctrl", "\x1b[31mred\x1b[0m [bold]not markup[/bold] \x00 nul " + "x" * 3000, "2026-01-03 08:00:00"),
    ("O-odd-date", "an odd date", "yesterday"),
    ("Ö-id", "a non-ASCII id", "2026-01-04 10:00:00"),
]


def _brain(tmp_path):
    brain = new_brain(tmp_path)
    for obs_id, narrative, created in ODD_ROWS:
        add_observation(brain, obs_id, narrative, created_at=created,
                        title="the title" if not narrative.strip() else narrative[:120])
    with brain.write() as conn:  # bytes that are not UTF-8, as CLEO's history allows
        conn.execute("INSERT INTO brain_observations (id, type, title, narrative, created_at) "
                     "VALUES ('O-bytes', 'discovery', 'bytes', CAST(X'666fFFfe6f' AS TEXT), '2026-01-05 10:00')")
    return brain


def test_units_equal_the_scans_own_count(tmp_path):
    brain = _brain(tmp_path)
    tokenizer = get_tokenizer("o200k_base")
    plain = tags.scan_brain(brain, live_only=True)
    units, stats = pruner_units.scan_line_units(brain, plain, tokenizer)
    assert stats.counted == len(ODD_ROWS) + 1
    scanned = tags.scan_brain(brain, live_only=True, tokenizer=tokenizer)  # the scan renders and counts
    assert scanned.units is not None and units.tolist() == scanned.units.tolist()
    again, warm = pruner_units.scan_line_units(brain, plain, tokenizer)
    assert again.tolist() == units.tolist() and warm.counted == 0 and warm.from_cache == len(ODD_ROWS) + 1
    brain.close()


def test_a_warm_prepare_counts_nothing_and_loads_no_encoding(tmp_path, monkeypatch):
    brain = _brain(tmp_path)
    first = prepare_pool(brain, "cl100k_base")
    assert first.count_stats.counted == len(first)

    def no_load(name: str) -> None:
        raise AssertionError(f"the {name} encoding was loaded for a warm prepare")
    monkeypatch.setattr(tokenizers, "get_encoding", no_load)
    warm = prepare_pool(brain, "cl100k_base")
    assert warm.count_stats.counted == 0 and warm.count_stats.from_cache == len(warm)
    assert warm.preview(50).to_json() == first.preview(50).to_json()
    brain.close()


@pytest.mark.parametrize("change", ["narrative", "id", "created_at"])
def test_a_changed_row_is_counted_again(tmp_path, change):
    brain = _brain(tmp_path)
    prepare_pool(brain, "o200k_base")
    value = {"narrative": "fixed the parser in src/app/parser.py and much more text " * 5,
             "id": "O-plain-renamed-to-a-much-longer-id", "created_at": "2027-12-31 23:59:00"}[change]
    with brain.write() as conn:
        conn.execute(f'UPDATE brain_observations SET "{change}" = ? WHERE id = ?', (value, "O-plain"))
    warm = prepare_pool(brain, "o200k_base")
    assert warm.count_stats.counted == 1
    fresh = tags.scan_brain(brain, live_only=True, tokenizer=get_tokenizer("o200k_base"))
    by_id = dict(zip(fresh.ids, np.asarray(fresh.units).tolist(), strict=True))
    assert {e.id: e.units for e in warm.droppable + warm.protected} == by_id
    brain.close()


def test_a_damaged_units_file_is_counted_again(tmp_path):
    brain = _brain(tmp_path)
    pool = prepare_pool(brain, "o200k_base")
    path = pruner_units.UnitsFile(brain, "o200k_base").path
    path.write_bytes(b"not a zip file")
    again = prepare_pool(brain, "o200k_base")
    assert again.count_stats.from_cache == len(again)  # the token cache still knows every line
    assert again.preview(40).to_json() == pool.preview(40).to_json()
    brain.close()


def test_switching_tokenizers_keeps_each_ones_units(tmp_path):
    """Counting with o200k_base after cl100k_base left cl100k_base's units file in place: switching
    back reads it (the sweep used to delete it, and every row's units were made again)."""
    brain = _brain(tmp_path)
    prepare_pool(brain, "cl100k_base")
    prepare_pool(brain, "o200k_base")
    kept = pruner_units.UnitsFile(brain, "cl100k_base")
    assert len(kept.rowids) == len(ODD_ROWS) + 1
    assert len(pruner_units.UnitsFile(brain, "o200k_base").rowids) == len(ODD_ROWS) + 1
    brain.close()


def test_a_head_key_is_the_same_however_the_column_is_held():
    """Head keys hash 8 bytes a step (issue 33: the bytewise hash was 6% of a warm tiktoken prune);
    a packed column's padding, whatever its width, must not change them, and distinct strings differ."""
    from cleo_tui.memory.packed_strings import PackedStrings

    values = ["O-mp8ysctd-1e6", "O-a", "", "Ö-id", "2026-01-01 10:00:00", "x" * 17, "x" * 16, "x" * 8]
    scope = np.arange(len(values))
    plain = pruner_units._string_hashes(values, scope)
    for width in (24, 40):
        held = PackedStrings(np.array([v.encode() for v in values], dtype=f"S{width}"))
        assert pruner_units._string_hashes(held, scope).tolist() == plain.tolist()
    assert len(set(plain.tolist())) == len(values)
    assert pruner_units._string_hashes(values, scope[[1, 0]]).tolist() == plain[[1, 0]].tolist()
