"""Opening every kind of brain: kind detection, features, reads on old layouts, read-only mode."""

from __future__ import annotations

import sqlite3

import pytest

from cleo_tui.brain import (
    KIND_CLEO,
    KIND_CLEO_LEGACY,
    KIND_CLEO_TUI,
    KIND_HIPPO,
    ReadOnlyBrain,
    create_brain,
    locate_brain,
    open_brain,
)
from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.migrations import LATEST_VERSION, META, OVERRIDES, TRACES, schema_version
from cleo_tui.brain.observations import (
    ObservationQuery,
    count_observations,
    get_observation,
    iter_observations,
    page_observations,
)
from cleo_tui.brain.records import edges_of, list_records
from cleo_tui.brain.summary import brain_summary
from tests.brain_fixtures import (
    LEGACY_MISSING,
    file_digest,
    insert_observations,
    make_cleo_consolidated,
    make_cleo_legacy,
    make_hippo,
    observation,
)

ROWS = 30


def _legacy(tmp_path, fts=True):
    path = make_cleo_legacy(tmp_path / ".cleo" / "brain.db", fts=fts)
    insert_observations(path, [observation(i) for i in range(ROWS)])
    return path


def test_consolidated_cleo_db_is_a_cleo_brain_and_only_gains_cleo_tui_tables(tmp_path):
    path = make_cleo_consolidated(tmp_path / ".cleo" / "cleo.db")
    insert_observations(path, [observation(i) for i in range(ROWS)])
    schema = "SELECT name, sql FROM sqlite_master"
    before = dict(sqlite3.connect(path).execute(schema).fetchall())
    brain = open_brain(path)
    assert brain.kind == KIND_CLEO and not brain.read_only
    assert brain.features.has_table("tasks") and brain.features.fts
    assert brain.features.has_column(cs.OBSERVATIONS, "network")
    after = {r[0]: r[1] for r in brain.query(schema)}
    # CLEO's tables are never altered; what is added is cleo-tui's own.
    assert {name: after[name] for name in before} == before
    added = set(after) - set(before)
    assert added and all(n.startswith(("cleo_tui_", "recall_trace", "idx_cleo_tui_", "idx_recall_trace",
                                       "sqlite_")) for n in added), added
    assert schema_version(brain.conn) == LATEST_VERSION
    assert brain.scalar("SELECT title FROM tasks WHERE id = 'T1'") == "Set up CI"
    assert count_observations(brain) == ROWS
    brain.close()


def test_legacy_brain_db_lacks_new_columns_and_still_lists_pages_and_counts(tmp_path):
    path = _legacy(tmp_path)
    brain = open_brain(path)
    assert brain.kind == KIND_CLEO_LEGACY
    for column in ("expired_at", "network", "origin", "provenance_chain", "validated_at"):
        assert not brain.features.has_column(cs.OBSERVATIONS, column)
    assert brain.features.has_column(cs.OBSERVATIONS, "invalid_at")
    have = brain.features.columns(cs.OBSERVATIONS)
    assert not have & LEGACY_MISSING
    assert count_observations(brain) == ROWS
    assert count_observations(brain, ObservationQuery(state="evicted")) == 3
    assert count_observations(brain, ObservationQuery(state="live", tier="long")) == \
        sum(1 for i in range(ROWS) if i % 3 == 2 and i % 10 != 9)
    page = page_observations(brain, ObservationQuery(sort="quality"), limit=10)
    assert len(page) == 10
    assert [r["id"] for r in iter_observations(brain, page_size=7)].__len__() == ROWS
    assert count_observations(brain, ObservationQuery(search="module_3")) == \
        sum(1 for i in range(ROWS) if i % 7 == 3)
    row = get_observation(brain, observation(4)["id"])
    assert row is not None and "network" not in row
    assert brain_summary(brain)["observations"] == {"live": ROWS - 3, "evicted": 3}
    assert list_records(brain, "pattern") == [] and edges_of(brain, "observation:x") == []
    brain.close()


def test_legacy_brain_without_fts_falls_back_to_like_search(tmp_path):
    brain = open_brain(_legacy(tmp_path, fts=False))
    assert not brain.features.fts
    assert count_observations(brain, ObservationQuery(search="T102")) == sum(1 for i in range(ROWS) if i % 5 == 2)
    # LIKE wildcards typed by the user are literal.
    assert count_observations(brain, ObservationQuery(search="%")) == 0
    brain.close()


def test_brain_created_by_cleo_tui_and_hippo_store(tmp_path):
    brain = create_brain(tmp_path / "own" / "cleo.db")
    assert brain.kind == KIND_CLEO_TUI
    assert brain.scalar(f"SELECT value FROM {META} WHERE key = 'created_by'") == "cleo-tui"
    brain.close()
    hippo = open_brain(make_hippo(tmp_path / ".hippo" / "hippo.db"))
    assert hippo.kind == KIND_HIPPO
    assert hippo.read_only and "hippo" in (hippo.read_only_reason or "")
    assert not hippo.features.has_table(OVERRIDES)  # a hippo store is never migrated
    assert brain_summary(hippo)["observations"] == {"live": 2, "evicted": 0}
    hippo.close()


def test_locate_prefers_cleo_db_with_brain_tables_and_walks_up(tmp_path):
    project = tmp_path / "project"
    deep = project / "src" / "pkg"
    deep.mkdir(parents=True)
    legacy = make_cleo_legacy(project / ".cleo" / "brain.db")
    assert locate_brain(deep) == legacy.resolve()
    # A cleo.db without brain tables (CLEO before the move keeps tasks there) does not count.
    conn = sqlite3.connect(project / ".cleo" / "cleo.db")
    conn.execute("CREATE TABLE tasks (id TEXT)")
    conn.close()
    assert locate_brain(deep) == legacy.resolve()
    (project / ".cleo" / "cleo.db").unlink()
    consolidated = make_cleo_consolidated(project / ".cleo" / "cleo.db")
    assert locate_brain(deep) == consolidated.resolve()


@pytest.mark.parametrize("maker", [make_cleo_consolidated, make_cleo_legacy])
def test_read_only_refuses_writes_and_leaves_the_file_unchanged(tmp_path, maker):
    path = maker(tmp_path / ".cleo" / "brain.db")
    insert_observations(path, [observation(i) for i in range(ROWS)])
    digest = file_digest(path)
    brain = open_brain(path, read_only=True)
    assert brain.read_only and brain.read_only_reason
    with pytest.raises(ReadOnlyBrain):
        with brain.write() as conn:
            conn.execute(f"UPDATE {cs.OBSERVATIONS} SET title = 'x'")
    with pytest.raises(ReadOnlyBrain):
        brain.ensure_writable()
    # Even a raw statement on the connection cannot write: SQLite itself refuses.
    with pytest.raises(sqlite3.OperationalError):
        brain.conn.execute(f"DELETE FROM {cs.OBSERVATIONS}")
    assert count_observations(brain) == ROWS
    assert not brain.features.has_table(OVERRIDES)  # no migration in read-only mode
    brain.close()
    assert file_digest(path) == digest
    assert {p.name for p in path.parent.iterdir()} <= {path.name, path.name + "-wal", path.name + "-shm"}


def test_writable_open_migrates_idempotently(tmp_path):
    path = make_cleo_consolidated(tmp_path / "cleo.db")
    open_brain(path).close()
    digest = file_digest(path)
    brain = open_brain(path)  # already at the latest version: nothing is written
    assert brain.features.has_table(OVERRIDES) and not brain.features.has_table(TRACES)  # traces: first trace
    brain.close()
    assert file_digest(path) == digest


def test_a_migration_step_may_use_sqlite_utils_and_runs_once(tmp_path):
    """A function step gets a sqlite-utils Database on the same connection, inside the step's transaction."""
    import sqlite_utils

    from cleo_tui.brain.migrations import MIGRATIONS, Migration, migrate

    path = make_cleo_consolidated(tmp_path / "cleo.db")
    open_brain(path).close()
    calls = []

    def add_note_column(db: sqlite_utils.Database) -> None:
        calls.append(1)
        db[OVERRIDES].add_column("note", str)  # type: ignore[union-attr]

    extra = Migration(LATEST_VERSION + 1, "a note on overrides", (add_note_column,))
    conn = sqlite3.connect(path, isolation_level=None)
    assert migrate(conn, (*MIGRATIONS, extra)) == LATEST_VERSION + 1
    assert migrate(conn, (*MIGRATIONS, extra)) == LATEST_VERSION + 1 and calls == [1]
    assert "note" in {r[1] for r in conn.execute(f"PRAGMA table_info({OVERRIDES})")}

    def fails(db: sqlite_utils.Database) -> None:
        db[OVERRIDES].add_column("doomed", str)  # type: ignore[union-attr]
        raise RuntimeError("step failed")

    with pytest.raises(RuntimeError):
        migrate(conn, (*MIGRATIONS, extra, Migration(LATEST_VERSION + 2, "fails", (fails,))))
    assert schema_version(conn) == LATEST_VERSION + 1  # the failed step left no trace
    assert "doomed" not in {r[1] for r in conn.execute(f"PRAGMA table_info({OVERRIDES})")}
    conn.close()


@pytest.mark.parametrize("version", [1, 3])
def test_a_brain_of_an_older_cleo_tui_opens_and_is_migrated(tmp_path, version):
    """cleo-tui's tables as an older version made them (no status column yet) are ours, not a foreign layout."""
    from cleo_tui.brain.migrations import MIGRATIONS, RUNS, migrate

    path = make_cleo_consolidated(tmp_path / "cleo.db")
    conn = sqlite3.connect(path, isolation_level=None)
    assert migrate(conn, [m for m in MIGRATIONS if m.version <= version]) == version
    conn.close()
    brain = open_brain(path)
    assert not brain.read_only and schema_version(brain.conn) == LATEST_VERSION
    assert {"status", "owner_pid"} <= {r[1] for r in brain.conn.execute(f"PRAGMA table_info({RUNS})")}
    brain.close()
