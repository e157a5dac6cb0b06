"""The History pane (6): the days equal plain SQL, the chart draws them, Enter shows a day's
observations, the detail names why a row is gone, the header marks a quiet agent.

The brain is a real SQLite file in CLEO's consolidated layout: rows over several days, a real
cleo-tui prune commit, and a CLEO-style reflector eviction written as CLEO writes it (a pattern,
its `supersedes` edge with provenance reflector-synthesized, and `invalid_at`, all at once).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from cleo_tui.brain import Brain, open_brain
from cleo_tui.memory.history import Day
from cleo_tui.memory.liveness import read_liveness, warning_mark
from cleo_tui.memory.pruner import commit_prune, prepare_pool
from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.panes.history import HistoryScreen, day_cells
from cleo_tui.ui.panes.observations import ObservationsScreen
from cleo_tui.ui.widgets.detail import ObservationModal
from cleo_tui.ui.widgets.history_chart import LEVELS, REFLECTOR, TOKENS, TUI, bucket_days, chart_rows
from cleo_tui.ui.widgets.table import LineTable
from tests.brain_fixtures import make_cleo_consolidated
from tests.ui_helpers import footer_actions, settle

REFLECT_AT = "2026-04-10 15:00:00"


def _insert(brain: Brain, rows: list[tuple[str, str, str, str]]) -> None:
    with brain.write() as conn:
        conn.executemany("INSERT INTO brain_observations (id, type, title, narrative, created_at, source_type) "
                         "VALUES (?, 'discovery', ?, ?, ?, ?)",
                         [(oid, text[:60], text, created, source) for oid, created, text, source in rows])


@pytest.fixture
def brain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Rows on 2026-03-01..05 (some pruned by cleo-tui), April rows (one reflected away by CLEO,
    one hard-deleted after cleo-tui evicted it), an observer note long before the last rows."""
    monkeypatch.chdir(tmp_path)
    brain = open_brain(make_cleo_consolidated(Path("proj/.cleo/cleo.db")))
    _insert(brain, [(f"O-p{i:02d}", f"2026-03-0{1 + i % 5} 10:00:{i:02d}", f"routine work item {i} " * 4, "agent")
                    for i in range(10)])
    commit_prune(brain, prepare_pool(brain, "chars4").preview(10))
    _insert(brain, [("O-note", "2026-04-01 08:00:00", "[Observer p2] a note", "observer-compressed"),
                    ("O-r1", "2026-04-09 12:00:00", "reflected away by CLEO", "agent"),
                    ("O-r2", "2026-04-09 12:05:00", "still live", "agent"),
                    ("O-d1", "2026-04-09 13:00:00", "hard-deleted later", "agent")]
                + [(f"O-a{i:02d}", f"2026-04-2{i % 3} 09:00:{i:02d}", f"later work {i}", "agent") for i in range(30)])
    with brain.write() as conn:
        conn.execute("INSERT INTO brain_patterns (id, type, pattern, context, extracted_at) "
                     "VALUES ('P-cleo0001', 'workflow', 'Run migrations in one transaction', '', ?)", (REFLECT_AT,))
        conn.execute("INSERT INTO brain_page_edges (from_id, to_id, edge_type, weight, provenance, created_at) "
                     "VALUES ('pattern:P-cleo0001', 'observation:O-r1', 'supersedes', 1.0, "
                     "'reflector-synthesized:session-end-reflection', ?)", (REFLECT_AT,))
        conn.execute("UPDATE brain_observations SET invalid_at = ? WHERE id = 'O-r1'", (REFLECT_AT,))
        conn.execute("INSERT INTO brain_page_edges (from_id, to_id, edge_type, created_at) "
                     "VALUES ('pattern:P-cleo0001', 'observation:O-d1', 'derived_from', '2026-04-11 10:00:00')")
        conn.execute("DELETE FROM brain_observations WHERE id = 'O-d1'")
    yield brain
    brain.close()


def sql_days(brain: Brain) -> dict[str, tuple[int, int]]:
    """(added, evicted) per day, straight from SQL."""
    added: dict[str, int] = {r[0]: r[1] for r in brain.query(
        "SELECT substr(created_at, 1, 10), count(*) FROM brain_observations GROUP BY 1")}
    evicted: dict[str, int] = {r[0]: r[1] for r in brain.query(
        "SELECT substr(invalid_at, 1, 10), count(*) FROM brain_observations WHERE invalid_at IS NOT NULL GROUP BY 1")}
    return {day: (added.get(day, 0), evicted.get(day, 0)) for day in {*added, *evicted}}


def rows_of(table: LineTable) -> list[dict]:
    """Every row a table lists (its listing is in memory or its pages are read)."""
    assert table.listing is not None
    rows = [table.listing.cached_row(i) for i in range(table.total)]
    assert all(r is not None for r in rows)
    return [r for r in rows if r is not None]


# -- the chart, as a pure function ------------------------------------------------------------------
def _day(day: str, tokens: int, evicted: dict[str, int] | None = None, added: int = 0) -> Day:
    return Day(day, added=added, live_tokens=tokens, evicted=evicted or {})


def test_chart_rows_draw_tokens_from_zero_and_evictions_in_their_cause_colour():
    days = [_day("2026-03-01", 100, added=3), _day("2026-03-02", 400, added=5),
            _day("2026-03-03", 200, {"cleo-tui:prune": 4}), _day("2026-03-04", 200, {"cleo-reflector": 1})]
    rows = chart_rows(days, width=8 + 40, token_rows=4, eviction_rows=1)
    assert rows.width == 6  # few days: each takes several columns (capped)
    top = rows.tokens[0][8:]
    # The peak day (400) fills the top row; the others are lower, none is empty.
    assert [c.char for c in top[6:12]] == [LEVELS[8]] * 6
    assert top[0].char == " " and rows.tokens[-1][8].char != " "
    assert {c.style for c in top if c.char != " "} == {TOKENS}
    bars = rows.evictions[0][8:]
    assert {c.style for c in bars[12:18]} == {TUI} and {c.style for c in bars[18:24]} == {REFLECTOR}
    assert all(c.char == " " for c in bars[:12])  # no eviction: no bar
    assert bars[18].char != " "  # one eviction against a peak of four still shows
    axis = "".join(c.char for c in rows.axis)
    assert "2026-03-01" in axis and "2026-03-04" in axis
    legend = "".join(c.char for c in rows.title)
    assert "cleo-tui" in legend and "CLEO reflector" in legend and "consolidation" not in legend
    assert "".join(c.char for c in rows.tokens[0][:8]).strip() == "400"
    assert "".join(c.char for c in rows.evictions[0][:8]).strip() == "evicted"  # the word is not overwritten
    assert "evicted (peak 4):" in legend  # one row: its scale is in the title
    two = chart_rows(days, width=48, token_rows=4, eviction_rows=2).evictions
    assert ["".join(c.char for c in r[:8]).strip() for r in two] == ["4", "evicted"]
    assert rows.added == [3] * 6 + [5] * 6 + [0] * 12


def test_date_labels_never_collide_on_a_short_history():
    two = [_day("2026-03-01", 100), _day("2026-03-02", 200)]
    axis = "".join(c.char for c in chart_rows(two, width=8 + 70, token_rows=2).axis)
    assert "2026-03-01" in axis and "2026-03-02" in axis  # both whole, apart
    assert axis.index("2026-03-02") - axis.index("2026-03-01") >= len("2026-03-01") + 2
    one = "".join(c.char for c in chart_rows(two[:1], width=8 + 70, token_rows=2).axis)
    assert one.count("2026-03-01") == 1
    narrow = "".join(c.char for c in chart_rows(two, width=8 + 15, token_rows=2).axis)
    assert "2026-03-01" in narrow and "03-02" not in narrow  # no room for both: the first only, whole


def test_more_days_than_columns_are_bucketed_and_every_column_used():
    days = [_day(f"2026-01-{d:02d}", d * 10, {"unknown": 1} if d == 31 else None) for d in range(1, 32)]
    buckets, width = bucket_days(days, 10)
    assert width == 1 and len(buckets) == 10
    assert buckets[0].first == "2026-01-01" and buckets[-1].last == "2026-01-31"
    assert buckets[-1].live_tokens == 310 and buckets[-1].evicted == {"unknown": 1}
    rows = chart_rows(days, width=8 + 10, token_rows=2)
    assert all(len(r) == 18 for r in [*rows.tokens, *rows.evictions, rows.axis])


def test_warning_mark_is_short():
    assert warning_mark([]) == ""
    assert warning_mark(["observer: no observer note in 12 days while 340 observations arrived"]) \
        == "⚠ observer idle 12 d"
    assert warning_mark(["reflector: no reflector-synthesized pattern or learning at all while 40 observations "
                         "arrived", "consolidation: x"]) == "⚠ reflector never ran +1"


# -- the pane ---------------------------------------------------------------------------------------
async def _open_history(app, pilot) -> HistoryScreen:
    await settle(app, pilot)
    await pilot.press("6")
    await settle(app, pilot)
    assert isinstance(app.screen, HistoryScreen)
    return app.screen


@pytest.mark.parametrize("size", [(140, 40), (80, 24)])
async def test_the_days_equal_sql_and_the_chart_shows_both_causes(brain, size):
    app = CleoApp(brain=brain)
    async with app.run_test(size=size) as pilot:
        pane = await _open_history(app, pilot)
        table = pane.query_one("#hist-table", LineTable)
        shown = [r["day"] for r in rows_of(table)]
        assert [d.day for d in shown] == sorted((d.day for d in shown), reverse=True)  # newest first
        expected = sql_days(brain)
        for d in shown:
            assert (d.added, d.evicted_total) == expected.get(d.day, (0, 0)), d.day
        assert {d.day for d in shown} >= set(expected)
        april_10 = next(d for d in shown if d.day == "2026-04-10")
        assert april_10.evicted == {"cleo-reflector": 1}
        assert "CLEO-refl 1" in day_cells({"day": april_10})["evicted"][0]
        pruned_days = [d for d in shown if any(k == "cleo-tui:prune" for k in d.evicted)]
        assert pruned_days and sum(d.evicted["cleo-tui:prune"] for d in pruned_days) == brain.scalar(
            "SELECT count(*) FROM brain_observations WHERE id LIKE 'O-p%' AND invalid_at IS NOT NULL")
        rows = pane.chart.rows
        assert rows is not None
        styles = {c.style for r in rows.evictions for c in r}
        assert {TUI, REFLECTOR} <= styles
        drawn = str(pane.chart.query_one(".history-chart-top", Static).render())
        drawn += str(pane.chart.query_one(".history-chart-bottom", Static).render())
        assert "CLEO reflector" in drawn and "2026-03-01" in drawn and shown[0].day in drawn


async def test_the_header_marks_a_quiet_observer_enter_on_a_day_shows_its_rows_and_details_name_why(brain):
    """One app (nothing written): the header's liveness mark and the pane's line; Enter on a day shows
    exactly its observations, an evicted one naming CLEO's reflector; a pruned row names its run and a
    deleted id is named where an edge still names it."""
    warnings = read_liveness(brain).warnings  # (as the app reads it for the header)
    assert any(w.startswith("observer: no observer note in") for w in warnings)
    pruned = brain.scalar("SELECT id FROM brain_observations WHERE invalid_at IS NOT NULL AND id LIKE 'O-p%'")
    run = brain.scalar("SELECT max(id) FROM cleo_tui_runs WHERE kind = 'prune'")
    app = CleoApp(brain=brain)
    async with app.run_test(size=(140, 40)) as pilot:
        pane = await _open_history(app, pilot)
        mark = warning_mark(warnings)
        assert app.liveness_mark == mark and mark.startswith("⚠ observer idle")
        assert mark in str(pane.query_one("#brain-header", Static).render())
        text = str(pane.query_one("#hist-liveness", Static).render())
        assert "observer 2026-04-01 08:00:00" in text and warnings[0] in text

        # Enter on a day shows exactly its observations.
        table = pane.query_one("#hist-table", LineTable)
        index = next(i for i, r in enumerate(rows_of(table)) if r["id"] == "2026-04-09")
        table.cursor = index
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, ObservationsScreen)
        obs = app.screen.query_one("#obs-table", LineTable)
        ids = {r["id"] for r in rows_of(obs)}
        assert ids == {r[0] for r in brain.query(
            "SELECT id FROM brain_observations WHERE substr(created_at, 1, 10) = '2026-04-09'")} == {"O-r1", "O-r2"}
        assert "created on 2026-04-09" in str(app.screen.query_one("#status-line", Static).render())
        # The evicted row's detail names its cause, with the reflection as evidence.
        obs.cursor = next(i for i, r in enumerate(rows_of(obs)) if r["id"] == "O-r1")
        await settle(app, pilot)
        life = str(app.screen.query_one(".detail-life", Static).render())
        assert "CLEO's reflector superseded it" in life and "pattern:P-cleo0001" in life
        await pilot.press("x")
        await settle(app, pilot)
        assert obs.total == brain.scalar("SELECT count(*) FROM brain_observations")

        # A pruned row names its run; a deleted id is named where an edge still names it.
        app.open_observation(pruned)
        await settle(app, pilot)
        assert isinstance(app.screen, ObservationModal)
        life = str(app.screen.query_one(".detail-life", Static).render())
        assert "cleo-tui's prune run" in life and f"cleo-tui run {run} prune" in life
        await pilot.press("escape")
        app.open_observation("O-d1")
        await settle(app, pilot)
        life = str(app.screen.query_one(".detail-life", Static).render())
        assert "deleted outside cleo-tui" in life
        assert "pattern:P-cleo0001 -derived_from-> observation:O-d1" in life


def test_the_live_token_column_holds_a_million_row_brains_figure_whole():
    # a real brain of 100,000 rows holds ~34M live tokens: "33,880,…" was cut (the walk, at 140x40)
    from cleo_tui.ui.panes.history import COLUMNS
    tokens = next(c for c in COLUMNS if c.key == "tokens")
    assert tokens.width is not None and tokens.width >= len(f"{338_801_234:,}")


async def test_the_status_line_is_whole_at_80_columns(brain):
    """At 80×24 the status ran past the edge ("… 57 live now · enter:"): it wraps onto a second line."""
    app = CleoApp(brain=brain)
    async with app.run_test(size=(80, 24)) as pilot:
        pane = await _open_history(app, pilot)
        status = pane.query_one("#hist-status", Static)
        text = str(status.render())
        assert text.endswith("enter: that day's observations")
        lines = status.render_lines(status.region.reset_offset)  # what is drawn, line by line
        drawn = " ".join("".join(seg.text for seg in line).strip() for line in lines)
        assert "that day's observations" in drawn


async def test_a_brain_without_dated_activity_says_so_once(tmp_path, monkeypatch):
    """An empty brain showed "No dated activity" twice, over an empty chart and an empty table."""
    from cleo_tui.brain import create_brain

    monkeypatch.chdir(tmp_path)
    empty = create_brain(tmp_path / ".cleo-tui" / "brain.db")
    app = CleoApp(brain=empty)
    async with app.run_test(size=(80, 24)) as pilot:
        pane = await _open_history(app, pilot)
        assert "No dated activity" in str(pane.query_one("#hist-status", Static).render())
        assert not pane.chart.display and not pane.table.display
        assert pane.query_one("#hist-liveness").display  # whether CLEO's agents run still shows
        assert "open_day" not in footer_actions(pane)  # no day to open
    empty.close()


async def test_a_brain_of_one_day_says_one_day(tmp_path, monkeypatch):
    """A brain CLEO started today read "1 days 2026-06-01 → 2026-06-01"."""
    from tests.pruner_fixtures import add_observation, new_brain

    monkeypatch.chdir(tmp_path)
    young = new_brain(tmp_path)
    add_observation(young, "O-1", "the first observation", created_at="2026-06-01 09:00:00")
    app = CleoApp(brain=young)
    async with app.run_test(size=(120, 30)) as pilot:
        pane = await _open_history(app, pilot)
        assert str(pane.query_one("#hist-status", Static).render()).startswith("1 day 2026-06-01 ")
    young.close()
