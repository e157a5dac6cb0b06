"""The brain-kind contract (brain/kinds.py): each kind says what it supports; a new kind is added in one place."""

from __future__ import annotations

import importlib.util
import sqlite3

import pytest

from cleo_tui.brain import kinds, open_brain
from cleo_tui.brain.errors import NotABrain
from cleo_tui.brain.summary import brain_summary
from tests.brain_fixtures import (
    add_cleo_recall_logs,
    insert_observations,
    make_cleo_consolidated,
    make_cleo_legacy,
    make_hippo,
    observation,
)


def test_every_kind_says_what_it_supports_and_the_brain_asks_it(tmp_path):
    cleo = make_cleo_consolidated(tmp_path / "c" / ".cleo" / "cleo.db")
    insert_observations(cleo, [observation(1)])
    add_cleo_recall_logs(cleo, [{"query": "q", "entry_ids": ["O-1"], "created_at": "2026-05-01 10:00:00"}])
    legacy = make_cleo_legacy(tmp_path / "l" / ".cleo" / "brain.db", fts=False)
    hippo = make_hippo(tmp_path / "h" / "hippo.db")
    brains = {path: open_brain(path) for path in (cleo, legacy, hippo)}
    try:
        b_cleo, b_legacy, b_hippo = brains.values()
        assert (b_cleo.kind, b_legacy.kind, b_hippo.kind) == (kinds.CLEO, kinds.CLEO_LEGACY, kinds.HIPPO)
        assert b_cleo.kind == "cleo" and b_hippo.kind == kinds.KIND_HIPPO  # a kind equals its name
        assert b_cleo.supports("observations") and b_cleo.supports("fts") and b_cleo.supports("retrieval_log")
        assert not b_legacy.supports("fts") and not b_legacy.supports("retrieval_log")  # probed from its tables
        assert b_legacy.supports("journal")  # cleo-tui's tables, added on open
        assert b_hippo.capabilities() == {"hippo_memories"}  # no trace tables in this store
        assert not b_hippo.supports("observations") and not b_hippo.supports("tags") and b_hippo.read_only
        assert b_hippo.read_only_reason == kinds.HIPPO.read_only_reason and not kinds.HIPPO.writable
        assert (kinds.HIPPO.trace_origin, kinds.CLEO.trace_origin) == ("hippo", "cleo-tui")
        assert [brain_summary(b)["kind_label"] for b in brains.values()] == [
            "CLEO brain", "CLEO legacy brain", "hippo store"]
    finally:
        for brain in brains.values():
            brain.close()


def test_each_kinds_readers_and_writers_are_modules_and_its_optional_capabilities_have_probes():
    for kind in kinds.KINDS:
        assert kind.optional <= set(kinds.PROBES) and not kind.promises & kind.optional
        assert all(importlib.util.find_spec(m) is not None for m in kind.readers + kind.writers), kind.name
        assert kind.writable == bool(kind.writers)
    assert [k.name for k in kinds.KINDS] == ["hippo", "cleo-tui", "cleo", "cleo-legacy"]


@pytest.fixture
def registry(monkeypatch):
    monkeypatch.setattr(kinds, "KINDS", list(kinds.KINDS))  # the kinds registered here go away after the test


def _facts_store(path):
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE facts (id TEXT PRIMARY KEY, body TEXT)")
    conn.execute("INSERT INTO facts VALUES ('f1', 'a fact')")
    conn.commit()
    conn.close()
    return path


def test_a_new_kind_registered_in_one_place_is_detected_labelled_and_asked(tmp_path, registry):
    path = _facts_store(tmp_path / "facts.db")
    with pytest.raises(NotABrain):
        open_brain(path)
    facts = kinds.register(kinds.BrainKind(
        "facts", "facts store", lambda conn, tables: "facts" in tables and "brain_observations" not in tables,
        promises=frozenset(), optional=frozenset({"traces"}), read_only_reason="facts stores are only read",
        readers=("cleo_tui.brain.records",)), before=kinds.KIND_HIPPO)
    assert kinds.kind_named("facts") is facts and kinds.KINDS[0] is facts
    brain = open_brain(path)
    try:
        assert brain.kind == "facts" and brain.kind_label == "facts store"
        assert brain.read_only and brain.read_only_reason == "facts stores are only read"  # never written
        assert brain.capabilities() == frozenset() and not brain.supports("observations")
        summary = brain_summary(brain)
        assert (summary["kind"], summary["kind_label"]) == ("facts", "facts store")
    finally:
        brain.close()
