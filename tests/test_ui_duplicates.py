"""Pilot tests of the Duplicates pane on a brain with planted reworded groups.

Scan, clusters, threshold, another keeper, a member left out, merge (asserted on the
SQLite file: evicted rows, supersedes edges with cleo-tui-dedup provenance), undo
exactly, a protected member asking on its own, a cancelled scan, read-only refusal.
"""

from __future__ import annotations

import threading

import pytest
from rich.console import Console
from textual.widgets import Input, Static

from cleo_tui.brain import open_brain
from cleo_tui.memory import duplicates
from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.panes.duplicates import DuplicatesScreen, UpdateRow
from cleo_tui.ui.widgets.detail import ObservationModal
from cleo_tui.ui.widgets.dup_render import ONLY_HERE, ONLY_THERE, diff_texts
from cleo_tui.ui.widgets.modals import ConfirmModal
from tests.pruner_fixtures import add_observation, add_pattern, new_brain
from tests.ui_helpers import settle

GROUPS = {
    "uv": ("Use uv instead of pip to install dependencies in this repo.",
           "In this repo, dependencies are installed with uv rather than pip.",
           "To install dependencies in this repo, use uv instead of pip."),
    "deploy": ("The deploy script must be run from the repository root.",
               "Run the deploy script from the root of the repository."),
}
UPDATE = ("The HTTP client timeout is capped at 30 s for the sync job.",
          "The HTTP client timeout is capped at 60 s for the sync job.")
OTHER = ("The login page renders the form with server side templates.",
         "Database migrations are written in plain SQL files under migrations/.")


def plant(tmp_path, protect: str | None = None) -> None:
    brain = new_brain(tmp_path)
    day = 1
    for group, texts in GROUPS.items():
        for n, text in enumerate(texts):
            add_observation(brain, f"O-{group}{n}", text, created_at=f"2026-01-{day:02d} 10:00:00")
            day += 1
    for n, text in enumerate((*UPDATE, *OTHER)):
        add_observation(brain, f"O-x{n}", text, created_at=f"2026-02-{n + 1:02d} 10:00:00")
    add_pattern(brain, "P-1", "tooling", cites=["O-uv0"])
    if protect:
        with brain.write() as conn:
            conn.execute("UPDATE brain_observations SET source_type = 'observer-compressed', "
                     "title = '[Observer p1] ' || title WHERE id = ?", (protect,))
    brain.close()


@pytest.fixture
def planted(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    plant(tmp_path)
    return tmp_path / ".cleo" / "cleo.db"


def live(path) -> set[str]:
    brain = open_brain(path, read_only=True)
    try:
        return {r[0] for r in brain.query("SELECT id FROM brain_observations WHERE invalid_at IS NULL")}
    finally:
        brain.close()


def dump(path) -> dict:
    brain = open_brain(path, read_only=True)
    try:
        # Every column but updated_at: an undo sets it to now, as CLEO's reads do (brain/journal.py).
        return {t: [tuple(v for k, v in dict(r).items() if k != "updated_at")
                    for r in brain.query(f"SELECT * FROM {t} ORDER BY rowid")]
                for t in ("brain_observations", "brain_page_edges")}
    finally:
        brain.close()


def supersedes(path) -> list[tuple]:
    brain = open_brain(path, read_only=True)
    try:
        return sorted(tuple(r) for r in brain.query(
            "SELECT from_id, to_id, weight, provenance FROM brain_page_edges WHERE edge_type = 'supersedes'"))
    finally:
        brain.close()


async def open_pane(app, pilot) -> DuplicatesScreen:
    await settle(app, pilot)
    await pilot.press("5")
    await settle(app, pilot)
    screen = app.screen
    assert isinstance(screen, DuplicatesScreen) and screen.scan is not None
    return screen


def rendered(screen: DuplicatesScreen, selector: str, width: int = 140) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(screen.query_one(selector, Static).content)
    return console.export_text()


async def confirm(app, pilot) -> None:
    await settle(app, pilot)
    assert isinstance(app.screen, ConfirmModal)
    assert "commit with --hide-from-cleo" not in app.screen.body  # not offered here (issue 16)
    app.screen.dismiss(True)
    await settle(app, pilot)


def cluster_of(screen: DuplicatesScreen, member: str):
    return next(c for c in screen.clusters if member in c.ids)


def move_to_cluster(screen: DuplicatesScreen, member: str) -> None:
    table = screen.table("clusters")
    index = next(i for i in range(table.total) if member in table.listing.cached_row(i)["id"].split(":"))
    table.cursor = index


def move_to_member(screen: DuplicatesScreen, member: str) -> None:
    table = screen.table("members")
    table.focus()
    table.cursor = next(i for i in range(table.total) if table.listing.cached_row(i)["id"] == member)


def test_word_diff_highlights_only_the_differing_words_and_never_reads_markup():
    left, right = diff_texts("capped at [bold]30[/bold] s", "capped at [bold]60[/bold] s")
    assert left.plain == "capped at [bold]30[/bold] s" and right.plain == "capped at [bold]60[/bold] s"
    highlighted = [left.plain[s.start:s.end] for s in left.spans if s.style == ONLY_HERE]
    assert highlighted == ["[bold]30[/bold]"]
    assert [right.plain[s.start:s.end] for s in right.spans if s.style == ONLY_THERE] == ["[bold]60[/bold]"]


async def test_scan_clusters_threshold_keeper_leave_out_merge_and_undo(planted):
    before = dump(planted)
    app = CleoApp(brain=open_brain(planted))
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await open_pane(app, pilot)
        assert sorted(sorted(c.ids) for c in screen.clusters) == [
            ["O-deploy0", "O-deploy1"], ["O-uv0", "O-uv1", "O-uv2"]]
        assert [(p.a, p.b) for p in screen.update_pairs] == [("O-x0", "O-x1")]  # capped at 30 s / 60 s
        assert screen.clusters[0].tokens_saved >= screen.clusters[1].tokens_saved  # by tokens saved
        uv = cluster_of(screen, "O-uv0")
        assert uv.keep == "O-uv0" and "cited" in uv.reason  # the pattern cites it
        move_to_cluster(screen, "O-uv0")
        await pilot.pause()
        text = rendered(screen, "#dup-compare")
        assert "Suggested keeper O-uv0" in text and "most cited" in text and "Similarity 0." in text
        # The update row: shown, never merged.
        move_to_cluster(screen, "O-x0")
        await pilot.pause()
        assert isinstance(screen.current(), UpdateRow)
        assert "differs in a detail" in rendered(screen, "#dup-compare")
        await pilot.press("m")
        await settle(app, pilot)
        assert not isinstance(app.screen, ConfirmModal)

        # A strict threshold re-clusters without a rescan; a bad one is refused.
        scan = screen.scan
        await pilot.press("t")
        box = screen.query_one("#dup-threshold", Input)
        box.value = "0.5"
        await pilot.pause()
        assert box.has_class("bad-threshold") and "0.7" in rendered(screen, "#dup-status")
        box.value = "0.99"
        await pilot.pause()
        assert screen.threshold == 0.99 and screen.scan is scan  # re-clustered, not rescanned
        assert sorted(sorted(c.ids) for c in screen.clusters) == [["O-deploy0", "O-deploy1"], ["O-uv0", "O-uv2"]]
        box.value = "0.85"
        await pilot.pause()
        assert len(screen.clusters) == 2 and screen.scan is scan
        await pilot.press("enter")

        # Another keeper, one member left out, the cluster merged.
        move_to_cluster(screen, "O-uv0")
        await pilot.pause()
        move_to_member(screen, "O-uv2")
        await pilot.press("s")
        move_to_member(screen, "O-uv1")
        await pilot.press("x")
        uv = cluster_of(screen, "O-uv0")
        assert screen.keeper(uv) == "O-uv2" and screen.evicted(uv) == ["O-uv0"]
        await pilot.press("m")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmModal)
        body = str(app.screen.body)
        assert "keep O-uv2, evict O-uv0" in body and "saving" in body and "memory find" in body
        await confirm(app, pilot)
        assert live(planted) == live_before(before) - {"O-uv0"}
        edges = supersedes(planted)
        assert len(edges) == 1 and edges[0][:3] == ("observation:O-uv2", "observation:O-uv0", 1.0)
        assert edges[0][3].startswith("cleo-tui-dedup:")
        screen = app.screen
        assert isinstance(screen, DuplicatesScreen) and screen.scan is not None  # rescanned
        assert "O-uv0" not in {i for c in screen.clusters for i in c.ids}

        # u undoes exactly.
        await pilot.press("u")
        await settle(app, pilot)
        assert dump(planted) == before


def live_before(before: dict) -> set[str]:
    return {row[0] for row in before["brain_observations"]}


async def test_merge_checked_clusters_in_one_run(planted):
    app = CleoApp(brain=open_brain(planted))
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await open_pane(app, pilot)
        for member in ("O-uv0", "O-deploy0"):
            move_to_cluster(screen, member)
            await pilot.pause()
            await pilot.press("space")
        assert len(screen.checked) == 2
        await pilot.press("M")
        await confirm(app, pilot)
        edges = supersedes(planted)
        assert {e[3] for e in edges} == {edges[0][3]} and len(edges) == 3  # one run
        assert live(planted) == {"O-uv0", "O-x0", "O-x1", "O-x2", "O-x3",
                                 cluster_of_keep(edges, "O-deploy")}


def cluster_of_keep(edges: list[tuple], prefix: str) -> str:
    return next(e[0].removeprefix("observation:") for e in edges if prefix in e[0])


async def test_a_protected_member_asks_on_its_own_and_cancel_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    plant(tmp_path, protect="O-deploy1")
    path = tmp_path / ".cleo" / "cleo.db"
    before = dump(path)
    app = CleoApp(brain=open_brain(path))
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await open_pane(app, pilot)
        deploy = cluster_of(screen, "O-deploy0")
        assert deploy.keep == "O-deploy1" and "protected" in deploy.reason
        move_to_cluster(screen, "O-deploy0")
        await pilot.pause()
        move_to_member(screen, "O-deploy0")
        await pilot.press("s")
        assert screen.evicted(deploy) == []  # a protected member is not evicted by default
        move_to_member(screen, "O-deploy1")
        await pilot.press("x")
        assert screen.evicted(deploy) == ["O-deploy1"]
        await pilot.press("m")
        await settle(app, pilot)
        assert "1 of them is protected: it asks again on its own." in str(app.screen.body)  # (was "are", "each")
        await confirm(app, pilot)
        assert isinstance(app.screen, ConfirmModal)  # its own confirmation, naming the reason
        assert "O-deploy1 is protected" in str(app.screen.body) and "critical relevance" in str(app.screen.body)
        app.screen.dismiss(False)
        await settle(app, pilot)
        assert dump(path) == before
        await pilot.press("m")
        await confirm(app, pilot)
        await confirm(app, pilot)
        assert "O-deploy1" not in live(path)
        assert supersedes(path)[0][:2] == ("observation:O-deploy0", "observation:O-deploy1")


async def test_the_scan_can_be_cancelled(planted, monkeypatch):
    started, release = threading.Event(), threading.Event()
    real = duplicates._read_live

    def slow_read(brain, check, report):
        started.set()
        release.wait(10)
        check()
        return real(brain, check, report)

    monkeypatch.setattr(duplicates, "_read_live", slow_read)
    app = CleoApp(brain=open_brain(planted))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("5")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DuplicatesScreen) and screen.scanning
        assert started.wait(10)
        await pilot.press("escape")
        release.set()
        await settle(app, pilot)
        assert not screen.scanning and screen.scan is None
        assert "cancelled" in rendered(screen, "#dup-status")
        monkeypatch.setattr(duplicates, "_read_live", real)
        await pilot.press("r")
        await settle(app, pilot)
        assert screen.scan is not None and len(screen.clusters) == 2


async def test_enter_opens_a_member_and_read_only_refuses_merge(planted):
    app = CleoApp(brain=open_brain(planted, read_only=True))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_pane(app, pilot)
        assert "read-only" in rendered(screen, "#dup-status", 80)
        await pilot.press("m")
        await settle(app, pilot)
        assert not isinstance(app.screen, ConfirmModal)
        move_to_cluster(screen, "O-uv0")
        await pilot.pause()
        move_to_member(screen, "O-uv1")
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, ObservationModal)
    assert live(planted) == live_before(dump(planted))


async def test_the_status_counts_in_words_and_wraps_at_80_columns(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    brain = new_brain(tmp_path)
    for n, text in enumerate(GROUPS["deploy"]):
        add_observation(brain, f"O-deploy{n}", text, created_at=f"2026-01-0{n + 1} 10:00:00")
    brain.close()
    app = CleoApp(brain=open_brain(tmp_path / ".cleo" / "cleo.db"))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_pane(app, pilot)
        status = screen.query_one("#dup-status", Static)
        shown = str(status.render())
        assert shown.startswith("1 cluster at ≥ 0.85 ·") and "0 updates" in shown
        assert status.content_size.height * status.content_size.width >= len(shown)  # wrapped, not cut off


async def test_the_compare_view_survives_a_members_list_still_showing_the_previous_cluster(planted):
    """Space, Down, Space typed fast: the members list can still hold the last cluster's rows when the
    compare view is drawn for the next cluster; it compares within the cluster shown, never crashes."""
    app = CleoApp(brain=open_brain(planted))
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await open_pane(app, pilot)
        move_to_cluster(screen, "O-uv0")
        await pilot.pause()
        stale = screen.table("members").listing  # the uv cluster's members
        move_to_cluster(screen, "O-deploy0")
        screen.table("members").set_listing(stale, keep_cursor=False)
        screen.table("members").cursor = 1
        screen.show_compare()  # raised KeyError: a uv member looked up in the deploy cluster
        text = rendered(screen, "#dup-compare")
        assert "O-deploy" in text and "O-uv" not in text


async def test_with_no_duplicates_the_pane_says_what_to_try_and_offers_no_merge(tmp_path, monkeypatch):
    from tests.ui_helpers import footer_actions

    monkeypatch.chdir(tmp_path)
    brain = new_brain(tmp_path)
    for n, text in enumerate(("The deploy script runs from the root.", "Billing tests need Postgres.")):
        add_observation(brain, f"O-{n}", text, created_at=f"2026-01-0{n + 1} 10:00:00")
    brain.close()
    app = CleoApp(brain=open_brain(tmp_path / ".cleo" / "cleo.db"))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_pane(app, pilot)
        assert screen.current() is None
        assert not screen.query_one("#dup-members").display
        shown = rendered(screen, "#dup-compare", 80)
        assert "No duplicates at ≥ 0.85" in shown and "0.70" in shown
        assert not {"check", "keep", "toggle_member", "merge", "merge_checked"} & footer_actions(screen)
        assert "rescan" in footer_actions(screen)
        screen.query_one("#dup-threshold", Input).value = "0.70"
        await settle(app, pilot)
        assert "the lowest threshold" in rendered(screen, "#dup-compare", 80)
    app.session.brain.close()


async def test_an_empty_pool_is_said_so_not_sent_to_a_lower_threshold(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    new_brain(tmp_path).close()
    app = CleoApp(brain=open_brain(tmp_path / ".cleo" / "cleo.db"))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_pane(app, pilot)
        shown = rendered(screen, "#dup-compare", 80)
        assert "No live observations to compare" in shown and "lowers the threshold" not in shown
    app.session.brain.close()
