"""The tag scan's snapshot: reopening shows tags at once, and every change since is still found."""

from __future__ import annotations

import pytest

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.memory import curation, scan_snapshot
from cleo_tui.memory.pool_scan.scan_pass import scan_brain
from cleo_tui.memory.tags import TagTable, tag_brain
from tests.pruner_fixtures import add_observation, add_pattern, new_brain
from tests.pruner_fixtures import small_tagged_brain as _brain


def _all(tags: TagTable) -> dict:
    return {obs_id: tags[obs_id] for obs_id in tags}


def _tags_now(brain) -> dict:
    """What a scan with no snapshot says (the truth the snapshot must reach)."""
    scan_snapshot.snapshot_path(brain).unlink(missing_ok=True)
    return _all(tag_brain(brain))


def test_a_reopened_brain_gets_its_tags_from_the_snapshot_then_checks_them(tmp_path):
    brain = _brain(tmp_path)
    first = _all(tag_brain(brain))
    assert scan_snapshot.snapshot_path(brain).exists()
    early: list[dict] = []
    again = _all(tag_brain(brain, lambda tags: early.append(_all(tags))))
    assert early == [first] and again == first


def test_rows_edited_behind_the_snapshot_are_found_by_the_check(tmp_path):
    brain = _brain(tmp_path)
    tag_brain(brain)
    with brain.write() as conn:  # same length, no updated_at: only the check can tell
        conn.execute(f"UPDATE {cs.OBSERVATIONS} SET narrative = 'The user said: src/only/hare.py' WHERE id = 'O-c'")
        conn.execute(f"UPDATE {cs.OBSERVATIONS} SET source_session_id = 'ses_2' WHERE id = 'O-e'")
    early: list[dict] = []
    checked = _all(tag_brain(brain, lambda tags: early.append(_all(tags))))
    assert early[0]["O-c"].reasons == ["unique identifier: src/only/here.py appears in no other observation"]
    assert checked["O-c"].reasons[0].startswith("user assertion")
    assert checked == _tags_now(brain)


def test_new_rows_edges_and_evictions_since_the_snapshot_are_in_the_early_tags(tmp_path):
    brain = _brain(tmp_path)
    tag_brain(brain)
    add_observation(brain, "O-f", "Fixed T4521 at last", created_at="2026-02-01 10:00:00")
    add_pattern(brain, "P-9", "pattern 9", cites=["O-b"])
    curation.evict_observation(brain, "O-e")  # O-d now holds lib/x.py alone
    early: list[dict] = []
    checked = _all(tag_brain(brain, lambda tags: early.append(_all(tags))))
    assert early[0]["O-f"].protected and early[0]["O-b"].coverage == "cited"
    assert checked == _tags_now(brain)
    assert not checked["O-e"].live and checked["O-d"].protected


def test_rows_deleted_since_the_snapshot_leave_its_tags(tmp_path):
    brain = _brain(tmp_path)
    assert not _all(tag_brain(brain))["O-e"].protected  # lib/x.py is in O-d too
    with brain.write() as conn:  # CLEO's consolidation hard-deletes
        conn.execute(f"DELETE FROM {cs.OBSERVATIONS} WHERE id IN ('O-d', 'O-b')")
    stored = scan_snapshot.load_snapshot(brain)
    assert stored is not None
    changes = scan_snapshot.changed_rows(brain, stored)
    assert changes is not None and changes.changed == [] and len(changes.gone) == 2
    checked = _all(tag_brain(brain))
    assert set(checked) == {"O-a", "O-c", "O-e"}
    assert checked["O-e"].protected  # now the only row naming lib/x.py
    assert checked == _tags_now(brain)


def test_a_row_that_changed_its_id_is_not_kept_under_the_old_one(tmp_path):
    brain = _brain(tmp_path)
    tag_brain(brain)
    with brain.write() as conn:
        conn.execute(f"UPDATE {cs.OBSERVATIONS} SET id = 'O-z' WHERE id = 'O-e'")
    checked = _all(tag_brain(brain))
    assert "O-e" not in checked and "O-z" in checked
    assert checked == _tags_now(brain)


def test_another_brain_copied_over_the_file_never_shows_the_old_tags(tmp_path):
    brain = _brain(tmp_path)
    tag_brain(brain)
    with brain.write() as conn:  # the same rowids, other rows
        conn.execute(f"UPDATE {cs.OBSERVATIONS} SET id = 'X-' || id, narrative = 'other brain'")
    early: list[dict] = []
    checked = _all(tag_brain(brain, lambda tags: early.append(_all(tags))))
    assert early == [] and set(checked) == {"X-O-a", "X-O-b", "X-O-c", "X-O-d", "X-O-e"}
    assert checked == _tags_now(brain)


def test_a_damaged_snapshot_is_ignored(tmp_path):
    brain = _brain(tmp_path)
    truth = _all(tag_brain(brain))
    scan_snapshot.snapshot_path(brain).write_bytes(b"PK\x03\x04 not a snapshot")
    early: list[dict] = []
    assert _all(tag_brain(brain, lambda tags: early.append(_all(tags)))) == truth
    assert early == []  # nothing shown from it
    assert scan_snapshot.load_snapshot(brain) is not None  # and a good one was written again


def test_a_damaged_findings_cache_is_ignored(tmp_path):
    from cleo_tui.memory.pool_scan.findings_cache import FindingsCacheFile
    brain = _brain(tmp_path)
    truth = _tags_now(brain)
    findings = FindingsCacheFile(brain).path
    assert findings.exists()
    findings.write_bytes(b"PK\x03\x04 damaged")
    assert _tags_now(brain) == truth


def test_odd_values_read_the_same_twice(tmp_path):
    """The key SQL joins a row's columns in C; it must match what the scan hashed in Python for
    invalid UTF-8, NULs, empty titles, NULL and empty sessions, integer and real quality, pins."""
    brain = _brain(tmp_path)
    with brain.write() as conn:
        conn.execute(f"INSERT INTO {cs.OBSERVATIONS} (id, type, title, narrative, created_at, quality_score) VALUES "
                     "('O-bad', 'discovery', '', CAST(x'6361666520e920ff00' AS TEXT), '2026-01-02 10:00:00', 0)")
        conn.execute(f"INSERT INTO {cs.OBSERVATIONS} (id, type, title, narrative, created_at, quality_score, "
                     "source_session_id) VALUES ('O-nul', 'decision', 'a' || char(0) || 'b', '🙂 tabs', '', 0.35, '')")
    curation.pin_observation(brain, "O-d")
    tag_brain(brain)
    stored = scan_snapshot.load_snapshot(brain)
    assert stored is not None and {"O-bad", "O-nul"} <= set(stored.ids)
    assert scan_snapshot.changed_rows(brain, stored) == scan_snapshot.RowChanges([], [])
    curation.unpin_observation(brain, "O-d")
    assert scan_snapshot.changed_rows(brain, stored) == scan_snapshot.RowChanges(["O-d"], [])


def test_a_scan_that_found_every_row_in_the_findings_cache_does_not_rewrite_it(tmp_path):
    from cleo_tui.memory import pool_scan
    from cleo_tui.memory.pool_scan.findings_cache import FindingsCacheFile
    brain = _brain(tmp_path)
    curation.evict_observation(brain, "O-e")
    pool_scan.scan_brain(brain)  # every row, evicted too: the cache holds them all
    findings = FindingsCacheFile(brain).path
    before = findings.stat()
    pool_scan.scan_brain(brain, live_only=True)  # as `prune` reads: fewer rows, all known
    after = findings.stat()  # not replaced (a rewrite is a new file moved over it)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_a_large_brain_is_first_scanned_in_another_process_with_the_same_tags(tmp_path, monkeypatch):
    """Issue 33: the first scan runs in a child process (the app's interpreter stays free for keys);
    the tags it leads to are the ones a scan in this process gives."""
    from cleo_tui.memory.pool_scan import in_subprocess
    from cleo_tui.memory.pool_scan.findings_cache import FindingsCacheFile

    brain = _brain(tmp_path)
    with brain.write() as conn:
        conn.execute(f"INSERT INTO {cs.OBSERVATIONS} (id, type, title, narrative, created_at, quality_score) VALUES "
                     "('O-bad', 'discovery', '', CAST(x'6361666520e920ff00' AS TEXT), '2026-01-02 10:00:00', 0)")
    curation.pin_observation(brain, "O-d")
    expected = _tags_now(brain)
    assert not in_subprocess.worth_a_process(brain)  # (a small brain: scanned in this process)
    scan_snapshot.snapshot_path(brain).unlink()
    FindingsCacheFile(brain).path.unlink()
    assert in_subprocess.snapshot_in_subprocess(brain.reader())
    assert scan_snapshot.snapshot_path(brain).exists() and FindingsCacheFile(brain).path.exists()
    scan_snapshot.snapshot_path(brain).unlink()
    monkeypatch.setattr(in_subprocess, "APART_FROM", 1)
    assert in_subprocess.worth_a_process(brain)
    assert _all(tag_brain(brain.reader())) == expected


def test_a_first_scan_started_ahead_is_the_process_the_tags_wait_for(tmp_path, monkeypatch):
    # Issue 33: the app starts a large brain's first scan with its first screen, so that the child's
    # start-up and first look run beside it; the tags then wait for that process, not a second one.
    from cleo_tui.memory.pool_scan import in_subprocess
    from cleo_tui.memory.pool_scan.in_subprocess import first_scan_ahead

    brain = _brain(tmp_path)
    expected = _tags_now(brain)
    assert first_scan_ahead(brain) is None  # (a snapshot: nothing to scan)
    scan_snapshot.snapshot_path(brain).unlink()
    assert first_scan_ahead(brain) is None  # (a small brain: scanned in the app's tags thread)
    monkeypatch.setattr(in_subprocess, "APART_FROM", 1)
    children: list[int] = []
    real_start = in_subprocess.ScanProcess.start

    def counted(brain, look):  # (the real start, counted)
        process = real_start(brain, look)
        children.append(process.child.pid)
        return process

    monkeypatch.setattr(in_subprocess.ScanProcess, "start", counted)
    ahead = first_scan_ahead(brain)
    assert ahead is not None and len(children) == 1
    early: list[TagTable] = []
    assert _all(tag_brain(brain.reader(), early.append, started=ahead)) == expected
    assert len(children) == 1 and len(early) == 1 and ahead.child.poll() == 0
    assert first_scan_ahead(brain) is None  # (its snapshot saved)
    scan_snapshot.snapshot_path(brain).unlink()
    monkeypatch.setattr(in_subprocess, "_MODULE", "tests.child_that_waits")  # never done by itself
    ahead = first_scan_ahead(brain)
    assert ahead is not None
    scan_snapshot.save_snapshot(brain, scan_brain(brain, row_keys=True))  # (by another cleo-tui, meanwhile)
    assert _all(tag_brain(brain, started=ahead)) == expected
    assert ahead.child.poll() is not None  # (not needed: ended)


def test_a_first_scan_started_ahead_is_ended_if_the_session_ends_before_taking_it(tmp_path, monkeypatch):
    # Quitting on the first screen: the process the session started ahead must not outlive it.
    import threading

    from cleo_tui.memory.pool_scan import in_subprocess

    brain = _brain(tmp_path)
    scan_snapshot.snapshot_path(brain).unlink(missing_ok=True)
    monkeypatch.setattr(in_subprocess, "APART_FROM", 1)
    monkeypatch.setattr(in_subprocess, "_MODULE", "tests.child_that_waits")  # never done by itself
    started: list = []
    real_start = in_subprocess.ScanProcess.start
    monkeypatch.setattr(in_subprocess.ScanProcess, "start",
                        lambda brain, look: started.append(real_start(brain, look)) or started[-1])
    ended = threading.Event()  # (the session's)
    ahead = in_subprocess.ScanAhead(ended)
    ahead.expect()
    ahead.start(brain.reader)
    assert len(started) == 1 and started[0].child.poll() is None  # (running, not taken)
    ended.set()
    ahead.end()
    assert started[0].child.poll() is not None and ahead.take() is None
    late = in_subprocess.ScanAhead(ended)  # the session ended while the process was being started
    late.expect()
    late.end()
    late.start(brain.reader)
    assert len(started) == 2 and started[1].child.poll() is not None and late.take() is None


def test_a_first_scan_whose_process_fails_is_made_here(tmp_path, monkeypatch):
    from cleo_tui.memory.pool_scan import in_subprocess

    brain = _brain(tmp_path)
    expected = _tags_now(brain)
    scan_snapshot.snapshot_path(brain).unlink()
    monkeypatch.setattr(in_subprocess, "APART_FROM", 1)
    monkeypatch.setattr(in_subprocess, "_MODULE", "cleo_tui.no_such_module")  # the child fails at once
    assert not in_subprocess.snapshot_in_subprocess(brain)
    assert _all(tag_brain(brain)) == expected and scan_snapshot.snapshot_path(brain).exists()


def test_a_first_scan_given_up_ends_its_process_and_scans_nothing_here(tmp_path, monkeypatch):
    # Quitting (or opening another brain) while a large brain's first scan runs: the child is
    # ended at once, and the scan is not made in this process instead (the app would wait for it).
    import threading

    from cleo_tui.memory.pool_scan import in_subprocess
    from cleo_tui.memory.tags import ScanCancelled

    brain = _brain(tmp_path)
    scan_snapshot.snapshot_path(brain).unlink(missing_ok=True)
    monkeypatch.setattr(in_subprocess, "APART_FROM", 1)
    monkeypatch.setattr(in_subprocess, "_MODULE", "tests.child_that_waits")  # never done by itself
    cancel = threading.Event()
    cancel.set()
    assert not in_subprocess.snapshot_in_subprocess(brain, cancel)
    with pytest.raises(ScanCancelled):
        tag_brain(brain, cancel=cancel)
    assert not scan_snapshot.snapshot_path(brain).exists()


def test_a_first_scan_says_how_far_it_got_from_its_process_and_from_here(tmp_path, monkeypatch):
    # A large brain's first scan takes minutes: the app shows how many of its rows were read.
    from cleo_tui.memory.pool_scan import in_subprocess

    brain = _brain(tmp_path)
    rows = int(brain.scalar(f"SELECT count(*) FROM {cs.OBSERVATIONS}"))
    for in_a_process in (True, False):
        scan_snapshot.snapshot_path(brain).unlink(missing_ok=True)
        monkeypatch.setattr(in_subprocess, "APART_FROM", 1 if in_a_process else 10**9)
        said: list[tuple[int, int]] = []
        tag_brain(brain.reader(), progress=lambda done, total: said.append((done, total)))  # noqa: B023
        assert said and said[-1] == (rows, rows), in_a_process
        assert [done for done, _ in said] == sorted(done for done, _ in said)


def test_the_collector_runs_while_a_first_scan_waits_on_its_process(tmp_path, monkeypatch):
    # A first scan of a million rows waits minutes on its process while the user pages through
    # the rows: the UI's cyclic garbage of those minutes must be collected (paused, it piled up,
    # 60 MB at a million real-layout rows, and was then frozen out of every later collection).
    import gc

    from cleo_tui.memory.pool_scan import in_subprocess

    brain = _brain(tmp_path)
    scan_snapshot.snapshot_path(brain).unlink(missing_ok=True)
    monkeypatch.setattr(in_subprocess, "APART_FROM", 1)
    collecting: list[tuple[bool, int]] = []
    assert gc.isenabled()
    gc.unfreeze()
    try:
        tag_brain(brain.reader(), progress=lambda _done, _total: collecting.append((gc.isenabled(),
                                                                                    gc.get_freeze_count())))
    finally:
        gc.unfreeze()  # (the test process's objects, frozen by the scan, collected again)
    # …and walks only what is made while it waits, not every object the app made before (`freeze_now`)
    assert collecting and all(on and frozen > 0 for on, frozen in collecting) and gc.isenabled()


def test_a_first_scan_goes_to_a_process_by_the_text_it_reads_not_only_by_rows(tmp_path, monkeypatch):
    # 3,000 rows of CLEO's long narratives take seconds to scan: in a thread of the app, its keys
    # waited on the scan (83 ms median, 524 ms at worst at 15,000 rows); as few short rows do not.
    from cleo_tui.memory.pool_scan import in_subprocess

    brain = new_brain(tmp_path)
    for i in range(40):
        add_observation(brain, f"O-{i}", "A short note.")
    assert not in_subprocess.worth_a_process(brain)
    monkeypatch.setattr(in_subprocess, "APART_FROM_CHARACTERS", 40 * 2_000)
    assert not in_subprocess.worth_a_process(brain)  # 40 short rows: far below
    with brain.write() as conn:
        conn.execute(f"UPDATE {cs.OBSERVATIONS} SET narrative = ?", ["words " * 400])  # 2,400 characters each
    assert in_subprocess.worth_a_process(brain)


def test_a_first_scan_in_a_process_shows_a_first_look_before_the_detectors_are_done(tmp_path, monkeypatch):
    # Issue 33: at a million rows of CLEO's narratives the whole first scan takes minutes; its
    # first look (no text read) gives every row's coverage and relevance in seconds, protection pending.
    from cleo_tui.memory.pool_scan import in_subprocess
    from cleo_tui.memory.pool_scan.first_look import first_look

    brain = _brain(tmp_path)
    expected = _tags_now(brain)
    look = first_look(brain)
    assert list(look.ids) == list(tag_brain(brain).scan.ids)  # the same rows in the same order
    scan_snapshot.snapshot_path(brain).unlink()
    monkeypatch.setattr(in_subprocess, "APART_FROM", 1)
    early: list[TagTable] = []
    heard: list[str] = []  # the whole scan waits for the look to be loaded: its progress comes after
    full = tag_brain(brain.reader(), lambda tags: (early.append(tags), heard.append("look")),
                     progress=lambda done, total: heard.append("progress"))
    assert len(early) == 1 and early[0].protection_pending and not full.protection_pending
    assert heard[0] == "look" and "progress" in heard
    first = _all(early[0])
    assert first.keys() == expected.keys() and _all(full) == expected
    for obs_id, tag in first.items():
        truth = expected[obs_id]
        assert (tag.coverage, tag.citing, tag.relevance, tag.relevance_reason, tag.live) == \
            (truth.coverage, truth.citing, truth.relevance, truth.relevance_reason, truth.live)
        assert tag.protection_pending and (truth.protected or not tag.protected)  # (what it knows is true)
    assert any(t.protected and not first[i].protected for i, t in expected.items())  # (the detectors' part)
    assert not scan_snapshot.first_look_path(brain).exists()  # (swept away by the snapshot)


def test_the_scan_process_waits_for_its_first_look_to_be_loaded_before_the_whole_scan(tmp_path, capsys):
    # A million rows' look loaded in the app beside the whole scan on both cores took twice as long.
    import threading

    from cleo_tui.memory.pool_scan import in_subprocess

    brain = _brain(tmp_path)
    looking = threading.Thread(target=in_subprocess._look_first, args=(brain,))
    looking.start()
    looking.join(timeout=0.5)
    assert looking.is_alive() and scan_snapshot.first_look_path(brain).exists()  # saved, and waiting
    in_subprocess._looked.set()  # (the parent's line on stdin)
    looking.join()
    assert capsys.readouterr().out == "LOOK\n"
    in_subprocess._looked.clear()


def test_a_snapshot_loaded_after_a_first_look_shares_the_columns_it_stored_alike(tmp_path):
    # At a million rows the first look and the snapshot each held every id, date and citation: the
    # app peaked 200 MB higher once both were loaded. Columns stored alike are taken from the look.
    from cleo_tui.memory.pool_scan.first_look import first_look

    brain = _brain(tmp_path)
    expected = _tags_now(brain)
    assert scan_snapshot.save_snapshot(brain, first_look(brain), scan_snapshot.first_look_path(brain))
    look = scan_snapshot.load_snapshot(brain, scan_snapshot.first_look_path(brain), digests=True)
    assert look is not None and look.stored_digests
    tag_brain(brain)  # (the whole scan's snapshot)
    stored = scan_snapshot.load_snapshot(brain, like=look)
    assert stored is not None
    assert stored.ids is look.ids and stored.created is look.created and stored.citations is look.citations
    assert stored.index is look.index and stored.findings is not look.findings
    assert _all(TagTable(stored)) == expected == _all(TagTable(scan_snapshot.load_snapshot(brain)))
    with brain.write() as conn:  # a quality changed between the look and the scan: not shared
        conn.execute(f"UPDATE {cs.OBSERVATIONS} SET quality_score = 0.1 WHERE id = 'O-a'")
    scan_snapshot.snapshot_path(brain).unlink()
    tag_brain(brain)
    changed = scan_snapshot.load_snapshot(brain, like=look)
    assert changed is not None and changed.quality is not look.quality and changed.ids is look.ids
    assert _all(TagTable(changed)) == _tags_now(brain)


def test_the_digests_a_snapshot_is_written_with_are_those_of_its_columns(tmp_path):
    # The writer stores each column group's digest, so that loading a first look hashes nothing; a
    # file without them (an older one) shares nothing.
    import numpy as np

    from cleo_tui.memory.pool_scan.first_look import first_look

    brain = _brain(tmp_path)
    path = scan_snapshot.first_look_path(brain)
    assert scan_snapshot.save_snapshot(brain, first_look(brain, to_save=True), path)
    with np.load(path) as data:
        members = {name: data[name] for name in data.files}
    assert scan_snapshot._digests_of(members) == {group: digest.hex() for group, digest in
                                                  scan_snapshot.load_snapshot(brain, path, digests=True)
                                                  .stored_digests.items()}
    older = tmp_path / "older.npz"
    np.savez(older, **{name: column for name, column in members.items() if name != "digests"})
    look = scan_snapshot.load_snapshot(brain, older, digests=True)
    assert look is not None and look.stored_digests == {}
    tag_brain(brain)
    stored = scan_snapshot.load_snapshot(brain, like=look)
    assert stored is not None and stored.ids is not look.ids and list(stored.ids) == list(look.ids)


def test_tags_made_ready_are_looked_up_row_by_row_without_computing_a_column(tmp_path):
    """Issue 33: `TagTable.ready()` computes, in the tags' worker, every column a row's lookup reads;
    the UI thread, drawing the rows once the tags arrive, computed the rest (which identifiers are
    scarce and the entries holding one: 45–77 ms at a million rows, a key waiting behind it).
    Reopened (the snapshot folded with a row added since), as the app loads a large brain's tags."""
    brain = _brain(tmp_path)
    tag_brain(brain)
    add_observation(brain, "O-new", "Edited src/new/only.py", created_at="2026-02-01 10:00:00")
    tags = tag_brain(brain).ready()
    computed = set(tags.scan.__dict__)
    assert any(tags[obs_id].reasons for obs_id in tags)  # (reasons were looked up, unique identifiers among them)
    assert set(tags.scan.__dict__) == computed


def test_a_reopened_brains_tags_do_not_import_numpy_ma(tmp_path):
    """`np.unique` imports numpy.ma on its first call (10-15 ms holding the interpreter in the tags'
    thread, just after a reopened brain's first screen, where the first key waits); the snapshot's
    check and the scan's other steps use `memory.distinct` instead. Run in a fresh interpreter."""
    import subprocess
    import sys

    brain = _brain(tmp_path)
    tag_brain(brain)
    assert scan_snapshot.snapshot_path(brain).exists()
    script = ("import sys; from cleo_tui.brain import open_brain; from cleo_tui.memory.tags import tag_brain; "
              f"brain = open_brain({str(brain.path)!r}); early = []; tags = tag_brain(brain, early.append); "
              "assert early and len(tags); print('numpy.ma' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "False", (done.stdout, done.stderr)
