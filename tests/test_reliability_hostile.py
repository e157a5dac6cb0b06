"""Hostile and broken data: fuzzed rows through the read paths and the CLI, fixed hostile
brains through the CLI, the Observations pane (Pilot) and a real terminal (pty).

Promise (DESIGN §4): data is shown literally or degrades visibly, never crashes, and no
control sequence from the data reaches the terminal.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textual import events
from textual.screen import ModalScreen
from textual.widgets import Input, TextArea

from cleo_tui.brain import open_brain
from cleo_tui.brain.migrations import TRACE_OUTCOMES
from cleo_tui.brain.observations import ObservationQuery, count_observations, get_observation, page_observations
from cleo_tui.memory.detail import observation_detail
from cleo_tui.memory.pruner import prepare_pool
from cleo_tui.memory.tags import tag_brain
from cleo_tui.recall.recall import recall
from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.widgets.detail import ObservationModal
from cleo_tui.ui.widgets.filter_actions import ExportScreen
from cleo_tui.ui.widgets.modals import MessageModal, TextViewer
from tests.pty_capture import foreign_controls, python_argv, run_in_pty
from tests.reliability_fixtures import (
    BIG_NARRATIVE,
    HOSTILE_FRAGMENTS,
    OSC8,
    OSC52,
    build_hostile_brain,
    build_minimal_brain,
    data_controls,
    insert_rows,
    integrity,
    record,
    run_cli,
    table_dump,
    without_restored_updated_at,
)
from tests.ui_helpers import settle

THEME = "hostile data"
FUZZ_EXAMPLES = 20
_fuzzed = {"rows": 0, "examples": 0}

# --- strategies -------------------------------------------------------------------

_chars = st.characters(blacklist_categories=("Cs",))  # lone surrogates cannot be stored as UTF-8
_hostile_text = st.lists(st.one_of(st.sampled_from(HOSTILE_FRAGMENTS), st.text(_chars, max_size=12)),
                         max_size=6).map("".join)
_dates = st.one_of(st.none(), st.just("2026-05-01 10:00:00"), st.text(_chars, max_size=20),
                   st.integers(-10**12, 10**12), st.floats(allow_nan=False), st.binary(max_size=8))
_json_column = st.one_of(st.none(), _hostile_text, st.just("[1, 2"), st.just('{"a": [}'), st.just("null"))
_scalar = st.one_of(st.none(), st.floats(allow_nan=False), st.integers(-2**63, 2**63 - 1), _hostile_text)


@st.composite
def hostile_rows(draw) -> list[dict]:
    """2-8 observation rows with hostile text, ids, dates, JSON and values; ids are unique."""
    ids = draw(st.lists(st.text(_chars, min_size=1, max_size=16) | st.sampled_from(HOSTILE_FRAGMENTS),
                        min_size=2, max_size=8, unique=True))
    rows = []
    for oid in ids:
        narrative = draw(st.one_of(_hostile_text, st.binary(max_size=40), st.none()))
        rows.append({
            "id": oid, "type": draw(st.one_of(st.none(), _hostile_text)), "title": draw(_hostile_text),
            "narrative": narrative, "created_at": draw(_dates), "updated_at": draw(_dates),
            "facts_json": draw(_json_column), "concepts_json": draw(_json_column),
            "quality_score": draw(_scalar), "memory_tier": draw(_scalar), "source_type": draw(_scalar),
            "source_session_id": draw(st.one_of(st.none(), _hostile_text)),
            "citation_count": draw(_scalar), "invalid_at": draw(st.one_of(st.none(), st.none(), _dates)),
        })
    return rows


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A CLEO brain with plain rows and NOT NULL relaxed, copied for each fuzz example."""
    path = tmp_path_factory.mktemp("template") / "cleo.db"
    build_hostile_brain(path, plain=12)
    return path


def _assert_clean(*outputs: str) -> None:
    for output in outputs:
        assert not data_controls(output), (data_controls(output)[:5], output[:300])


# --- fuzzing: read paths and CLI ----------------------------------------------------


@settings(max_examples=FUZZ_EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(rows=hostile_rows())
def test_fuzzed_rows_survive_read_paths_and_cli(template, rows):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cleo.db"
        shutil.copy(template, path)
        conn = sqlite3.connect(str(path), isolation_level=None)
        insert_rows(conn, rows)
        conn.close()
        _fuzzed["rows"] += len(rows)
        _fuzzed["examples"] += 1

        brain = open_brain(path)
        try:
            total = count_observations(brain)
            seen = page_observations(brain, ObservationQuery(), limit=500)
            assert len(seen) == total
            tags = tag_brain(brain)
            for row in rows:
                assert get_observation(brain, row["id"]) is not None
                observation_detail(brain, row["id"], [])
                assert row["id"] in tags
            preview = prepare_pool(brain).preview(200)
            recall(brain, "plain narrative " + rows[0]["title"][:20])
            json.dumps(preview.to_json(), ensure_ascii=True)
        finally:
            brain.close()

        db = ("--db", str(path))
        for args in (("info", *db), ("info", "--json", *db), ("prune", "--budget", "200", "--json", *db),
                     ("prune", "--budget", "200", *db), ("traces", *db),
                     ("recall", "--why", *db, "--", rows[0]["id"] + " " + rows[0]["title"])):
            code, out, err = run_cli(*args)
            # 2 = a clear user error (a query without words); never a crash (70) or a traceback
            assert code == 0 or (code == 2 and args[0] == "recall" and "no words" in err), (args, err)
            _assert_clean(out, err)
        # ids travel through the JSON literally: every dropped id is a real id of the brain
        preview_json = json.loads(run_cli("prune", "--budget", "200", "--json", "--db", str(path))[1])
        conn = sqlite3.connect(path)
        conn.text_factory = lambda raw: raw.decode("utf-8", "replace")
        known = {r[0] for r in conn.execute("SELECT id FROM brain_observations")}
        conn.close()
        assert {d["id"] for d in preview_json["dropped"]} <= known
    _record_fuzz()


def _record_fuzz() -> None:
    """The running totals after each passing example (the last write is the whole run)."""
    record(THEME, "fuzzed rows (hypothesis): markup, ANSI/OSC, controls, NUL, blobs, odd ids, dates, JSON, "
                  "NULLs, wrong types", "read paths, tags, detail, prune preview, recall and the CLI "
           "(info, prune, recall, traces) run; CLI output holds no control byte", "passed",
           examples=_fuzzed["examples"], rows_fuzzed=_fuzzed["rows"])


# --- fixed hostile brains through the CLI, writes included --------------------------

BRAINS = {"hostile CLEO brain": build_hostile_brain, "old brain without optional tables/columns": build_minimal_brain}


@pytest.mark.parametrize("kind", list(BRAINS))
def test_cli_on_hostile_brain_reads_writes_and_undoes(tmp_path, kind):
    path = BRAINS[kind](tmp_path / "cleo.db")
    outputs = []
    for args in (("info",), ("info", "--json"), ("prune", "--budget", "300"), ("prune", "--budget", "300", "--json"),
                 ("recall", "ghost"), ("recall", "click", "--why", "--json"), ("traces",), ("traces", "--json"),
                 ("prune", "--runs")):
        code, out, err = run_cli(*args, "--db", str(path))
        assert code == 0, (args, err)
        outputs += [out, err]
    _assert_clean(*outputs)
    preview = json.loads(run_cli("prune", "--budget", "300", "--json", "--db", str(path))[1])
    assert preview["dropped"], "the hostile brain has rows to drop"

    skip = ("recall_traces", "recall_trace_results", "cleo_tui_meta")
    before = table_dump(path, skip=skip)
    code, out, err = run_cli("prune", "--budget", "300", "--apply", "--yes", "--json", "--db", str(path))
    assert code == 0, err
    run_id = json.loads(out)["run_id"]
    evicted = sqlite3.connect(path).execute(
        "SELECT count(*) FROM brain_observations WHERE invalid_at IS NOT NULL").fetchone()[0]
    assert evicted == len(preview["dropped"])
    conn = sqlite3.connect(path)
    conn.text_factory = bytes
    restored = {r[0] for r in conn.execute("SELECT id FROM brain_observations WHERE invalid_at IS NOT NULL")}
    conn.close()
    code, out, err = run_cli("prune", "--undo", str(run_id), "--db", str(path))
    assert code == 0, err
    before = without_restored_updated_at(before, path, restored)  # undo stamps their updated_at
    after = without_restored_updated_at(table_dump(path, skip=skip), path, restored)
    journal = ("cleo_tui_runs", "cleo_tui_run_changes")
    assert {t: r for t, r in before.items() if t not in journal} == {t: r for t, r in after.items() if t not in journal}
    assert integrity(path) == "ok"
    record(THEME, f"{kind}: CLI info/prune/recall/traces, prune --apply then --undo",
           "exit 0, output without control bytes, vec0 table never read, undo restores the rows, "
           "integrity ok", "passed", rows_evicted_and_restored=evicted)



def test_a_row_without_an_id_is_kept_and_the_prune_says_why(tmp_path):
    """The hostile brain's row whose id is NULL: nothing can evict it (CLEO and cleo-tui find a row by
    its id), so a prune keeps it as protected and says so, even at a budget that drops every other row."""
    path = build_hostile_brain(tmp_path / "cleo.db")
    preview = json.loads(run_cli("prune", "--budget", "1", "--json", "--db", str(path))[1])
    assert "" not in {d["id"] for d in preview["dropped"]} and preview["dropped"]
    kept = [p for p in preview["protected"] if p["id"] == ""]
    assert len(kept) == 1 and any("no id" in reason for reason in kept[0]["reasons"]), kept
    code, out, err = run_cli("prune", "--budget", "1", "--apply", "--yes", "--db", str(path))
    assert code == 0, err
    assert "changed since" not in out and "deleted since the preview" not in out, out
    record(THEME, "a row whose id is NULL, at a budget that drops every other row",
           "kept as protected with the reason (no id: nothing can evict it); the commit reports no row "
           "as changed", "passed",
           fixed="the prune offered it for dropping as id \"\", and its commit then said it had been "
                 "deleted since the preview")




def test_a_row_without_an_id_is_never_a_duplicate_keeper_nor_merged(tmp_path):
    """Two rows and the hostile brain's kind of row whose id is NULL, all three the same text: the two
    are one cluster, and the NULL-id row is in none (a merge is a supersedes edge between ids)."""
    path = build_hostile_brain(tmp_path / "cleo.db")
    text = "The deploy script must be run from the repository root."
    conn = sqlite3.connect(path, isolation_level=None)
    for oid, day in (("O-dupA", 1), ("O-dupB", 2), (None, 5)):
        conn.execute("INSERT INTO brain_observations(id, type, title, narrative, created_at, source_type) "
                     "VALUES (?, 'discovery', ?, ?, ?, 'agent')", (oid, text, text, f"2026-04-0{day} 09:00:00"))
    conn.close()
    code, out, err = run_cli("dedup", "--json", "--db", str(path))
    assert code == 0, err
    clusters = json.loads(out)["clusters"]
    assert all(member for c in clusters for member in c["members"]), "a member without an id"
    ours = [c for c in clusters if {"O-dupA", "O-dupB"} & set(c["members"])]
    assert len(ours) == 1 and set(ours[0]["members"]) == {"O-dupA", "O-dupB"}, ours
    code, out, err = run_cli("dedup", "--apply", "--yes", "--db", str(path))
    assert code == 0, err
    edges = sqlite3.connect(path).execute("SELECT from_id FROM brain_page_edges WHERE edge_type = 'supersedes'")
    assert all(from_id not in ("", "observation:") for (from_id,) in edges)
    record(THEME, "a row whose id is NULL with the same text as two others, through dedup and its apply",
           "the two are one cluster; the NULL-id row is in none, so no merge edge names it", "passed",
           fixed="it could be a cluster's suggested keeper, and merging then wrote supersedes edges from an id "
                 "that does not exist")



def test_a_bulk_step_leaves_a_row_without_an_id_out(tmp_path):
    path = build_hostile_brain(tmp_path / "cleo.db")
    for extra in ((), ("--include-protected",)):
        code, out, err = run_cli("evict", "--search", "whose id is NULL", "--json", *extra, "--db", str(path))
        assert code == 0, err
        plan = json.loads(out)
        assert plan["count"] == 0 and plan["ids"] == [], plan  # not "None": nothing can evict it


def test_an_export_holds_every_row_the_filter_shows_a_row_without_an_id_too(tmp_path):
    path = build_hostile_brain(tmp_path / "cleo.db")
    out = tmp_path / "rows.jsonl"
    code, said, err = run_cli("export", "--format", "jsonl", "--state", "all", "--out", str(out), "--db", str(path))
    assert code == 0, err
    written = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    total = sqlite3.connect(path).execute("SELECT count(*) FROM brain_observations").fetchone()[0]
    assert len(written) == total and f"Wrote {total} observations" in said, (len(written), total, said)
    assert next(r for r in written if r["id"] is None)["title"] == "a row whose id is NULL"
    markdown = tmp_path / "rows.md"
    code, said, err = run_cli("export", "--format", "md", "--state", "all", "--out", str(markdown), "--db", str(path))
    assert code == 0 and "## (no id) — a row whose id is NULL\n" in markdown.read_text(encoding="utf-8"), err


def test_a_recall_shows_a_result_without_an_id_and_never_credits_it(tmp_path):
    """The hostile brain's NULL-id row is a recall's first result: it is listed as "(no id)", and an
    outcome credits the other results only (no memory is known by the id ""); naming it alone is refused."""
    path = build_hostile_brain(tmp_path / "cleo.db")
    code, out, err = run_cli("recall", "whose id is NULL", "--db", str(path))
    assert code == 0 and out.splitlines()[0].split("[observation]")[0].endswith("(no id)  "), out
    code, out, err = run_cli("outcome", "--good", "--json", "--db", str(path))
    credited = json.loads(out)["memory_ids"]
    assert code == 0 and "" not in credited and "O-nulls" in credited, (out, err)
    code, out, err = run_cli("outcome", "--bad", "", "--db", str(path))
    assert code != 0 and "no id" in err and "Traceback" not in err, (code, out, err)
    stored = sqlite3.connect(path).execute(f"SELECT memory_ids_json FROM {TRACE_OUTCOMES}").fetchall()
    assert [json.loads(r[0]) for r in stored] == [credited], stored
    record(THEME, "a recall whose first result is the row whose id is NULL, then outcome --good and --bad \"\"",
           "listed as (no id); the outcome credits the other results only; naming it alone is refused", "passed",
           fixed="the result showed a blank id, and the outcome credited the id \"\" "
                 "(\"for 7 memories: , O-nulls, …\")")


async def test_the_traces_pane_shows_a_result_without_an_id_and_will_not_credit_it(tmp_path):
    brain = open_brain(build_hostile_brain(tmp_path / "cleo.db"))
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        await pilot.press("4")
        await settle(app, pilot)
        await pilot.press("r")
        app.screen.query_one("#trace-recall", Input).value = "whose id is NULL"
        await pilot.press("enter")
        await settle(app, pilot)
        options = app.screen.query_one("#trace-results")
        assert options.highlighted == 0 and app.screen.selected_result().memory_id == ""
        assert "(no id)" in str(options.get_option_at_index(0).prompt)
        await pilot.press("plus")
        await settle(app, pilot)
        assert not isinstance(app.screen, ModalScreen), app.screen  # nothing asked: it cannot be credited
        said = [str(n.message) for n in app._notifications]
        assert "has no id" in said[-1], said
    app.close_brains()


async def test_the_detail_of_a_row_without_an_id_says_so(tmp_path):
    app = CleoApp(brain=open_brain(build_hostile_brain(tmp_path / "cleo.db")))
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        app.screen.query_one("#search", Input).value = "whose id is NULL"
        app.screen._apply_search()
        await settle(app, pilot)
        assert app.screen.query_one("#obs-table").current_row()["id"] is None  # (as the brain holds it)
        meta = str(app.screen.query_one("#detail .detail-meta").render())
        assert "has no id" in meta and "deleted" not in meta, meta
        cells = app.screen.format_row(app.screen.query_one("#obs-table").current_row())
        assert cells["protection"][0] == "◆ no id", cells  # its protection, as the table shows it
        app.screen.query_one("#obs-table").focus()
        for key in ("e", "p", "r"):  # nothing can change it: said at once, nothing asked
            await pilot.press(key)
            await settle(app, pilot)
            assert not isinstance(app.screen, ModalScreen), (key, app.screen)
        said = [str(n.message) for n in app._notifications]
        assert len(said) == 3 and all("has no id" in text for text in said), said
        await pilot.press("X")  # an export writes it: the dialog counts it
        await settle(app, pilot)
        assert isinstance(app.screen, ExportScreen) and app.screen.headline.startswith("1 observation "), \
            app.screen.headline
        app.pop_screen()
        await pilot.press("A")  # a bulk step cannot change it: said, no dialog
        await settle(app, pilot)
        assert not isinstance(app.screen, ModalScreen), app.screen
        said = [str(n.message) for n in app._notifications]
        assert len(said) == 4 and "without an id" in said[-1], said
    app.close_brains()


def test_fts_out_of_sync_and_vec0_never_break_search(tmp_path):
    """A ghost FTS entry and unindexed rows: search still answers from the content table."""
    path = build_hostile_brain(tmp_path / "cleo.db")
    brain = open_brain(path)
    try:
        assert count_observations(brain, ObservationQuery(search="ghost")) == 0  # only the ghost matches
        assert count_observations(brain, ObservationQuery(search="plain")) >= 40
        assert recall(brain, "ghost") is not None
        with pytest.raises(sqlite3.OperationalError, match="vec0"):
            brain.query("SELECT * FROM brain_embeddings")  # proof the table really is unreadable
    finally:
        brain.close()
    record(THEME, "FTS index out of sync (ghost entry, unindexed rows) + vec0 table without its module",
           "search and recall answer, nothing reads brain_embeddings", "passed")


# --- the Observations pane (Pilot) ------------------------------------------------------


# The hostile rows opened in the pane (each modal costs ~1 s of Pilot time, so not all of them).
PANE_ROWS = ("O-markup", "O-ansi", "O-big", "O-nulls", "O-\x1b]52;c;aWQ=\x07", "O-bad-utf8")


def _screen_text(app) -> str:
    """The plain text of every cell on screen (what a terminal would draw)."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def test_observations_pane_shows_hostile_rows_literally(tmp_path):
    path = build_hostile_brain(tmp_path / "cleo.db")
    brain = open_brain(path)
    app = CleoApp(brain=brain)
    screens = 0
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        table = app.screen.query_one("#obs-table")
        table.focus()
        for key in ("pagedown", "end", "up"):
            await pilot.press(key)
            await settle(app, pilot)
            _assert_clean(_screen_text(app))
            screens += 1
        for oid in PANE_ROWS:
            app.open_observation(oid)
            await settle(app, pilot)
            assert isinstance(app.screen, ObservationModal), oid  # no error popup instead
            _assert_clean(_screen_text(app))
            screens += 1
            if oid == "O-markup":
                assert "[bold red]x[/] [link=http://evil.example]click[/link]" in _screen_text(app)  # literal
            if oid == "O-big":  # the 1 MB one-line narrative: whole, in 4,000-character lines
                await pilot.press("v")
                await settle(app, pilot)
                viewer = app.screen.query_one("#viewer", TextArea)
                assert viewer.document.line_count == -(-len(BIG_NARRATIVE) // 4_000)
                assert viewer.text.replace("\n", "") == BIG_NARRATIVE
                app.pop_screen()
            if oid == "O-ansi":
                assert "␛]52;c;cm0gLXJmIH4=␇" in _screen_text(app)  # the OSC 52 made visible
                await pilot.press("v")
                await settle(app, pilot)
                assert isinstance(app.screen, TextViewer)
                assert "␛]8;;http://evil.example/␇" in _screen_text(app)
                app.pop_screen()
            app.pop_screen()
        search = app.screen.query_one("#search", Input)
        for query in ('[bold "* NEAR(', "O-'quote ghost"):
            search.value = query
            app.screen._apply_search()
            await settle(app, pilot)
            assert not isinstance(app.screen, MessageModal), query
            _assert_clean(_screen_text(app))
            screens += 1
        search.value = ""
        search.focus()
        search.post_message(events.Paste("\x1b]52;c;aGk=\x07pasted"))  # a paste holding an OSC 52
        await settle(app, pilot)
        assert search.value == ""  # refused: an Input would draw the ESC raw
        _assert_clean(_screen_text(app))
    brain.close()
    record(THEME, "Observations pane (Pilot): scroll, open each hostile row's detail and full text, "
                  "hostile searches, a pasted OSC 52",
           "no error popup; the paste refused; screen text holds no control character; markup and escapes "
           "shown as visible characters; the 1 MB narrative whole in the full-text viewer", "passed",
           screens_checked=screens,
           fixed="the search Input drew pasted text raw: a pasted ESC/OSC sequence reached the terminal; the "
                 "full-text viewer took seconds per keypress on a 1 MB one-line narrative (TextArea renders "
                 "whole lines): long lines are now cut at 4,000 characters")


# --- a real terminal ------------------------------------------------------------------


def test_terminal_receives_no_control_sequence_from_data(tmp_path):
    """The real app on a pty: scroll to O-ansi (its OSC 52 shown as ␛…␇ in the detail), open its
    full text, then paste into the search box: a clean paste, then one holding an OSC 52."""
    path = build_hostile_brain(tmp_path / "cleo.db")
    hostile_paste = b"\x1b[200~pasted\x1b]52;c;UEFTVEVE\x07text\x1b[201~"
    output = run_in_pty(python_argv("--db", str(path)), [
        (b"O-ansi", b"\x1b[B" * 14),                          # the 15th row is O-ansi (date, then rowid order)
        ("␛]52;c;cm0gLXJmIH4=␇".encode(), b"v"),              # its narrative, escapes made visible
        (b"shown exactly as stored", b"q"),                    # the full-text viewer opened; close it
        (b"", b"/"), (b"m/\x1b[0m", b"ZZZZ"),                  # the search box has focus (cursor on "/")
        (b"ZZZZ", b"\x1b[200~cleanword\x1b[201~"),             # a clean bracketed paste arrives
        (b"ZZZZcleanword", hostile_paste + b"YYY"),            # then a hostile one
        (b"YYY", b"\x11"),                                     # ctrl+q
    ], cwd=str(tmp_path))
    assert foreign_controls(output) == []
    assert b"\x1b]8;" not in output and b"\x1b]52;" not in output
    # Textual's parser reissues an escape sequence it meets inside a bracketed paste as key presses,
    # so the payload's printable part ("UEFTVEVE") may be typed into the box as plain text, and
    # whether a frame shows it depends on timing; what must hold is that its ESC/BEL never reach
    # the terminal (checked above) and that the app keeps running to the final ctrl+q.
    assert b"\x1b[?1049l" in output  # the app left the alternate screen: it quit on ctrl+q
    record(THEME, "the real app in a pseudo-terminal on the hostile brain: scroll, detail, full text, a clean "
                  "and a hostile (OSC 52) bracketed paste into the search box",
           "the terminal receives only the app's own CSI/OSC styling: no OSC 8/52 and no data control bytes",
           "passed", bytes_checked=len(output))


async def test_prune_review_and_traces_panes_show_hostile_data_literally(tmp_path):
    """The other panes on the hostile brain, with a hostile reflector proposal and a recall trace."""
    from cleo_tui.llm.proposals import REFLECTOR, create_proposal
    path = build_hostile_brain(tmp_path / "cleo.db")
    assert run_cli("recall", "click", "--why", "--db", str(path))[0] == 0
    brain = open_brain(path)
    create_proposal(brain, REFLECTOR, "ses_\x1b[31m", "anthropic", "m\x1b]52;c;aGk=\x07", [{"id": "O-ansi"}],
                    {"patterns": [{"pattern": "[bold]p[/] " + OSC8, "context": OSC52}],
                     "learnings": [{"insight": "\x00\x07 [link=x]l[/link]", "confidence": 0.5}],
                     "superseded": [{"id": "O-ansi", "reason": "\x1b[2J wipe"}], "dropped_ids": [], "scope": "s"},
                    "RAW " + OSC52 + OSC8, {}, None)
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        seen = {}
        for key, viewer in (("2", None), ("3", "v"), ("4", None)):
            await pilot.press(key)
            await settle(app, pilot)
            if viewer:
                await pilot.press(viewer)
                await settle(app, pilot)
            assert not isinstance(app.screen, MessageModal), key
            seen[key] = _screen_text(app)
            _assert_clean(seen[key])
            while len(app.screen_stack) > 1:
                app.pop_screen()
        assert "O-nulls" in seen["2"]  # the prune list shows the NULL-valued row
        assert "RAW ␛]52;c;cm0gLXJmIH4=␇␛]8;;http://evil.example/␇" in seen["3"]  # raw answer, visible
        assert "[bold red]x[/]" in seen["4"]  # a trace result's title, literal
    brain.close()
    record(THEME, "Prune, Review (raw answer viewer) and Traces panes on the hostile brain, with a hostile "
                  "reflector proposal and a recall trace", "no error popup; screen text holds no control "
                                                             "character; markup and escapes shown literally",
           "passed", screens_checked=3)
