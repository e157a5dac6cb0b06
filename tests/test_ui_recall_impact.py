"""The recall impact in the TUI: the figures shown before a step are the CLI's."""

from __future__ import annotations

import json

from rich.console import Console
from textual.widgets import Static

from cleo_tui.brain import open_brain
from cleo_tui.cli import main
from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.widgets.modals import ConfirmModal
from tests.brain_fixtures import add_cleo_recall_logs
from tests.ui_helpers import copy_demo, settle


def _live_ids(brain, limit):
    return [r[0] for r in brain.query("SELECT id FROM brain_observations WHERE invalid_at IS NULL "
                                      "ORDER BY created_at LIMIT ?", (limit,))]


async def test_the_prune_summary_shows_the_figures_of_prune_json(tmp_path, capsys):
    path = copy_demo(tmp_path)
    brain = open_brain(path, read_only=True)
    ids = _live_ids(brain, 40)
    brain.close()
    add_cleo_recall_logs(path, retrievals=[
        {"query": f"q{k}", "entry_ids": ids[k:k + 3], "created_at": f"2026-05-{1 + k % 28:02d} 10:00:00"}
        for k in range(0, 40, 2)] + [{"query": "odd", "entry_ids": "not json"}],
        usage=[{"entry_id": ids[4], "task_id": "T7", "used": 1}])
    brain = open_brain(path)  # (opened after CLEO's logs exist: a brain reads its tables once)
    app = CleoApp(brain=brain)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        screen = app.screen
        pool = screen.pool
        budget = int(pool.tokens_after_dropping(len(pool.droppable) // 2) / 0.8)
        screen.set_budget(budget)
        await settle(app, pilot)
        shown = screen.recall_impact()
        summary = str(screen.query_one("#prune-summary", Static).render())
        first = screen.table("dropped").listing.cached_row(0)["entry"]
        cells = screen.recall_cells(first.id)
    brain.close()
    assert main(["prune", "--db", str(path), "--budget", str(budget), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)["impact"]
    assert (shown.retrievals, shown.affected_retrievals, shown.affected_used) == (
        document["retrievals"], document["affected_retrievals"], document["affected_used"])
    assert document["affected_retrievals"] > 0
    assert "Recall " + shown.sentence() in summary.replace("\n", " ")
    recalled = [e for e in document["lost"] if e["id"] == first.id]
    assert cells["recalled"][0] == (f"{recalled[0]['recalls']}×" if recalled else "–")


async def test_a_merge_and_an_evict_ask_with_their_recall_impact(tmp_path, capsys):
    path = copy_demo(tmp_path)
    assert main(["dedup", "--db", str(path), "--json"]) == 0
    cluster = json.loads(capsys.readouterr().out)["clusters"][0]
    reader = open_brain(path, read_only=True)
    newest = reader.scalar("SELECT id FROM brain_observations WHERE invalid_at IS NULL ORDER BY created_at DESC")
    reader.close()
    add_cleo_recall_logs(path, retrievals=[{"query": "dup", "entry_ids": cluster["merge"]},
                                           {"query": "newest", "entry_ids": [newest]}],
                         usage=[{"entry_id": cluster["merge"][0], "task_id": "T1", "used": 1}])
    brain = open_brain(path)
    app = CleoApp(brain=brain)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("5")
        await settle(app, pilot)
        screen = app.screen
        assert screen.current_cluster().keep == cluster["keep"]
        expected = screen.recall_index.impact(cluster["merge"])
        assert expected.affected_retrievals >= 1 and expected.affected_used >= 1  # (the demo's traces add more)
        single = screen.recall_index.impact([newest])
        assert single.affected_retrievals >= 1
        console = Console(width=200, record=True, color_system=None)
        console.print(screen.query_one("#dup-compare", Static).content)
        assert f"Recall: {expected.sentence()}" in console.export_text()
        merged = next(r for r in (screen.table("members").listing.cached_row(i) for i in range(4))
                      if r["id"] == cluster["merge"][0])
        recalls = screen.recall_index.recalls_of(cluster["merge"][0])
        assert screen.format_member(merged)["title"][0].startswith(f"{recalls.recalls}× ")
        await pilot.press("m")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal)
        assert f"Recall impact: {expected.sentence()}" in str(app.screen.body)
        await pilot.press("n")
        await pilot.press("1")
        await settle(app, pilot)
        assert app.screen.table.current_row()["id"] == newest  # the newest first
        await pilot.press("e")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmModal)
        assert f"Recall impact: {single.sentence()}" in str(app.screen.body)
    brain.close()


async def test_the_recall_line_follows_cleos_writes_without_a_new_prepare(tmp_path, monkeypatch):
    from cleo_tui.ui.live import BrainWatcher
    from tests.test_ui_live import cleo_writes, poll

    monkeypatch.setattr(BrainWatcher, "interval", 3600.0)  # driven by poll() only
    path = copy_demo(tmp_path)
    add_cleo_recall_logs(path, retrievals=[{"query": "first", "entry_ids": ["O-nobody"]}])
    brain = open_brain(path)
    app = CleoApp(brain=brain)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot)
        poll(app)
        await pilot.press("2")
        await settle(app, pilot)
        pane = app.screen
        before = pane.recall_impact()
        dropped = pane.preview.dropped_ids[0]
        add_cleo_recall_logs(path, retrievals=[{"query": "later", "entry_ids": [dropped]}])  # CLEO recalls it
        cleo_writes(path.resolve(), 1)
        poll(app)
        await settle(app, pilot)
        after = pane.recall_impact()
        assert after.retrievals == before.retrievals + 1
        assert after.affected_retrievals == before.affected_retrievals + (dropped in pane.preview.dropped_ids)
    brain.close()
