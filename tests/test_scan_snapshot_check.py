"""Issue 33: a reopened brain's check against its snapshot runs in another process (the app's
interpreter stays free for keys), with the same result as the check made in this process."""

from __future__ import annotations

import threading

import pytest

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.memory import scan_snapshot
from cleo_tui.memory.pool_scan import check_in_subprocess, in_subprocess
from cleo_tui.memory.tags import ScanCancelled, tag_brain
from tests.pruner_fixtures import small_tagged_brain as _brain


def _changed_behind_the_snapshot(brain) -> None:
    """An edited row, a deleted one, and a row that took another's rowid under a new id."""
    with brain.write() as conn:
        conn.execute(f"UPDATE {cs.OBSERVATIONS} SET narrative = 'The user said: src/only/hare.py' WHERE id = 'O-c'")
        conn.execute(f"DELETE FROM {cs.OBSERVATIONS} WHERE id = 'O-b'")
        conn.execute(f"UPDATE {cs.OBSERVATIONS} SET id = 'O-z' WHERE id = 'O-d'")


def test_the_check_in_another_process_finds_what_the_check_here_finds(tmp_path):
    brain = _brain(tmp_path)
    tag_brain(brain)
    _changed_behind_the_snapshot(brain)
    stored = scan_snapshot.load_snapshot(brain)
    assert stored is not None
    here = scan_snapshot.compare_rows(brain, stored.rowids, stored.row_keys, stored.high_water)
    apart = check_in_subprocess.compare_in_subprocess(brain.reader(), stored)
    assert isinstance(apart, scan_snapshot.RowDiff)  # (False: the child did not answer)
    assert apart == here and len(here.changed) == 2 and len(here.gone) == 1
    changes = check_in_subprocess.changed_rows(brain.reader(), stored)
    assert changes == scan_snapshot.changed_rows(brain, stored)
    assert changes is not None and sorted(changes.changed) == ["O-c", "O-z"]


def test_a_large_brain_reopened_is_checked_in_another_process_with_the_same_tags(tmp_path, monkeypatch):
    brain = _brain(tmp_path)
    tag_brain(brain)
    _changed_behind_the_snapshot(brain)
    snapshot = scan_snapshot.snapshot_path(brain).read_bytes()
    here = tag_brain(brain)
    scan_snapshot.snapshot_path(brain).write_bytes(snapshot)
    monkeypatch.setattr(in_subprocess, "APART_FROM", 1)
    asked: list[bool] = []
    real = check_in_subprocess.compare_in_subprocess
    monkeypatch.setattr(check_in_subprocess, "compare_in_subprocess",
                        lambda *args: asked.append(True) or real(*args))
    apart = tag_brain(brain.reader())
    assert asked and {i: apart[i] for i in apart} == {i: here[i] for i in here}


def test_a_check_whose_process_fails_is_made_here(tmp_path, monkeypatch):
    brain = _brain(tmp_path)
    tag_brain(brain)
    _changed_behind_the_snapshot(brain)
    stored = scan_snapshot.load_snapshot(brain)
    assert stored is not None
    monkeypatch.setattr(check_in_subprocess, "_MODULE", "cleo_tui.no_such_module")  # the child fails at once
    assert check_in_subprocess.compare_in_subprocess(brain, stored) is False
    assert check_in_subprocess.changed_rows(brain, stored) == scan_snapshot.changed_rows(brain, stored)


def test_a_check_given_up_ends_its_process(tmp_path, monkeypatch):
    # Quitting (or opening another brain) while a large brain is checked: the child is ended
    # at once, the check is not made here instead, and nothing is saved.
    brain = _brain(tmp_path)
    tag_brain(brain)
    _changed_behind_the_snapshot(brain)
    before = scan_snapshot.snapshot_path(brain).read_bytes()
    monkeypatch.setattr(in_subprocess, "APART_FROM", 1)
    monkeypatch.setattr(check_in_subprocess, "_MODULE", "tests.child_that_waits")  # never done by itself
    children: list = []
    real_popen = check_in_subprocess.subprocess.Popen

    def popen(*args, **kwargs):
        children.append(real_popen(*args, **kwargs))
        return children[-1]

    monkeypatch.setattr(check_in_subprocess.subprocess, "Popen", popen)
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(ScanCancelled):
        tag_brain(brain, cancel=cancel)
    assert len(children) == 1 and children[0].returncode is not None  # ended, and waited for
    assert scan_snapshot.snapshot_path(brain).read_bytes() == before


def test_a_large_brains_tags_are_frozen_out_of_collections_a_small_ones_are_not(tmp_path, monkeypatch):
    # A collection would walk a large brain's millions of tag objects holding the GIL (seconds at a
    # million rows: no key served meanwhile); a small brain's are collected as any objects are.
    import gc

    from cleo_tui.memory import tags

    brain = _brain(tmp_path)
    frozen = gc.get_freeze_count()  # (the suite freezes its own heap once collected: tests/suite_speed.py)
    tag_brain(brain)
    # (not frozen: the count does not grow; it may shrink, as frozen objects of earlier tests are freed)
    assert gc.get_freeze_count() <= frozen
    frozen = gc.get_freeze_count()
    monkeypatch.setattr(tags, "KEEP_FROM", 5)
    kept = tag_brain(brain)
    assert gc.get_freeze_count() > frozen + 5 and len(kept) == 5  # (left frozen, as the suite's heap is)
