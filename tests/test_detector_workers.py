"""A first scan's detectors in worker processes (issue 33): the same findings as in one process,
a worker that ends early costs nothing but time, and no worker outlives the scan."""

from __future__ import annotations

import os
import select
import threading

import numpy as np

from cleo_tui.memory import detectors
from cleo_tui.memory.pool_scan import detector_workers, in_subprocess, reading, scan_pass
from tests.pruner_fixtures import add_observation, new_brain

_TEXTS = ["The user prefers tabs", "Task complete: T12 shipped", "TypeError: x in src/a.py", "plain words",
          "see cleo#4 and issue #7", "İstanbul ß 😀 deadbeef1 os.path.join", "", "parseConfig() failed: exit code 2",
          "[/link] \x1b[31m red \x00 nul", "owner said never force-push", "merged PR #9 into main"]


def _chunks(count: int) -> list[list[str]]:
    return [[f"{text} #{n}-{k}" for k, text in enumerate(_TEXTS)] for n in range(count)]


def _analysed(texts: list[str]) -> list[detectors.Findings]:
    with detectors.findings_not_stored():
        return detectors.analyse_texts(texts)


def test_chunks_analysed_by_a_worker_come_back_in_order_with_the_findings_of_this_process(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    chunks = _chunks(7)
    got: list[list[detectors.Findings]] = []
    with detector_workers.helping(1):
        analyser = detector_workers.chunk_analyser(_analysed)
    try:
        for texts in chunks:
            analyser.submit(texts, got.append)
        analyser.finish()
        assert analyser.sent > 0  # (some went to the worker: it had room for DEPTH at a time)
    finally:
        analyser.close()
    detectors._memo.clear()
    assert got == [_analysed(texts) for texts in chunks]


def test_a_worker_that_ended_early_leaves_its_chunks_to_this_process(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    worker = detector_workers.Worker()
    analyser = detector_workers.ChunkAnalyser(_analysed, [worker])
    got: list[list[detectors.Findings]] = []
    chunks = _chunks(3)
    try:
        analyser.submit(chunks[0], got.append)
        worker.process.kill()
        worker.process.wait()
        for texts in chunks[1:]:
            analyser.submit(texts, got.append)
        analyser.finish()
    finally:
        analyser.close()
    assert got == [_analysed(texts) for texts in chunks]


def test_a_scan_with_a_detector_worker_finds_what_a_scan_in_one_process_finds(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(reading, "SCAN_CHUNK", 5)  # many chunks: some to the worker, some here
    brain = new_brain(tmp_path)
    for n, texts in enumerate(_chunks(4)):
        for k, text in enumerate(texts):
            add_observation(brain, f"O-{n}-{k}", text, created_at=f"2026-01-0{1 + k % 3} 10:00:00")
    with detector_workers.helping(1):
        helped, _ = scan_pass.read_pass(brain, "", (), None, None, None, None, True, None, True)
    detectors._memo.clear()
    alone, _ = scan_pass.read_pass(brain, "", (), None, None, None, None, True, None, True)
    assert np.array_equal(helped.findings, alone.findings) and helped.table == alone.table
    assert len(alone.table) > 5


def _ends_within(pid: int, seconds: float) -> bool:
    """Whether process `pid` (not a child of this one) ends within `seconds`."""
    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([handle], [], [], seconds)[0])
    finally:
        os.close(handle)


def test_a_first_scan_given_up_ends_its_detector_worker_too(tmp_path, monkeypatch):
    # The app quits while the child's worker is busy: the child is ended, and so is its worker (no orphan).
    fifo = tmp_path / "pid"
    os.mkfifo(fifo)
    monkeypatch.setenv("CLEO_TUI_TEST_FIFO", str(fifo))
    monkeypatch.setattr(in_subprocess, "_MODULE", "tests.child_with_detector_worker")
    brain = new_brain(tmp_path)
    cancel = threading.Event()
    outcome: list[bool] = []
    scan = threading.Thread(target=lambda: outcome.append(in_subprocess.snapshot_in_subprocess(brain, cancel)))
    scan.start()
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert select.select([reader], [], [], 60)[0], "the child did not start its worker"
        pid = int(os.read(reader, 64))
    finally:
        os.close(reader)
    assert not _ends_within(pid, 0)  # busy with its chunk
    cancel.set()
    scan.join(30)
    assert outcome == [False]
    assert _ends_within(pid, 10)


def test_the_lowered_corpus_is_each_text_lowered_whether_or_not_a_text_changes_length():
    for texts in (["ΟΔΟΣ", "ΣΑ Σ", "User: Σ"], ["İstanbul User", "ΟΔΟΣ", "x"], ["ASCII User", ""]):
        corpus = detectors._Corpus.lowered(texts)
        assert corpus.text == "\n".join(t.lower() for t in texts)
        assert [corpus.text_at(k) for k in range(len(texts))] == [t.lower() for t in texts]


def test_the_cache_database_is_read_only_when_it_holds_findings_of_these_rules(tmp_path, monkeypatch):
    from cleo_tui.memory.token_cache import TokenCache, line_key

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(detectors, "_memo", {})
    texts = ["Fixed src/a.py", "nothing special"]
    cache = TokenCache()
    assert not cache.holds_findings(detectors.RULES_KEY)
    with detectors.findings_not_stored():
        assert detectors.analyse_texts(texts, cache) == [(("src/a.py",), ()), ((), ())]
    assert not cache.holds_findings(detectors.RULES_KEY)
    cache.store_findings(detectors.RULES_KEY, [(line_key(texts[1]), "T999\x1e")])  # planted: read back, not analysed
    assert cache.holds_findings(detectors.RULES_KEY)
    monkeypatch.setattr(detectors, "_memo", {})
    with detectors.findings_not_stored():
        assert detectors.analyse_texts(texts, cache) == [(("src/a.py",), ()), (("T999",), ())]
    cache.close()


def test_texts_are_analysed_in_batches_bounded_by_count_and_characters(monkeypatch):
    monkeypatch.setattr(detectors, "_CHUNK", 3)
    monkeypatch.setattr(detectors, "_CHUNK_CHARACTERS", 10)
    texts = ["aaaa", "bbbb", "c", "d" * 30, "e", "f", "g", "h"]
    assert list(detectors._batches(list(range(8)), texts)) == [[0, 1, 2], [3], [4, 5, 6], [7]]
    monkeypatch.setattr(detectors, "_memo", {})
    batch = ["Fixed src/a.py", "TypeError: x", "user said so", "T12 " * 5, "plain"]
    with detectors.findings_not_stored():
        assert detectors.analyse_texts(batch) == [(tuple(sorted(detectors.identifiers_in(t))),
                                                  tuple(detectors.text_reasons(t))) for t in batch]
