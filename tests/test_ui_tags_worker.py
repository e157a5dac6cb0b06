"""The tags worker: one at a time, whatever CLEO writes while a (long) scan runs."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from cleo_tui.memory import tags as tags_module
from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.live import BrainWatcher
from tests.test_ui_live import cleo_writes, poll
from tests.ui_helpers import posted, settle


async def test_writes_during_a_tag_scan_fold_after_it_instead_of_starting_scans(brain, monkeypatch):
    monkeypatch.setattr(BrainWatcher, "interval", 3600.0)
    real, started, release, calls = tags_module.tag_brain, threading.Event(), threading.Event(), []

    def held_tag_brain(*args, **kwargs):  # the real scan, held until the test has written
        calls.append(1)
        started.set()
        assert release.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(tags_module, "tag_brain", held_tag_brain)
    path = Path(brain.path).resolve()
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        app.session.start_tags()  # (if the first rows have not started them already)
        assert await asyncio.to_thread(started.wait, 30)
        poll(app)
        cleo_writes(path, 6)  # CLEO writes while the scan runs
        result = poll(app)
        assert result is not None and len(result.new_ids) == 6
        new_ids = result.new_ids
        release.set()
        await settle(app, pilot)
        assert len(calls) == 1  # one scan; the writes were folded in after it
        assert app.session.tags is not None and all(i in app.session.tags for i in new_ids)


async def test_a_reopened_brain_shows_the_snapshot_tags_then_the_checked_ones(brain, monkeypatch):
    from cleo_tui.ui.messages import TagsReady
    from cleo_tui.ui.session import BrainSession

    announce = BrainSession.announce

    async def tags_of(app_brain) -> tuple[int, dict]:
        app = CleoApp(brain=app_brain)
        announced: list[TagsReady] = []
        monkeypatch.setattr(BrainSession, "announce", lambda session, m: (
            announced.append(m) if isinstance(m, TagsReady) else None, announce(session, m)))
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(app, pilot)
            assert app.session.tags is not None
            return len(announced), {i: app.session.tags[i] for i in app.session.tags}

    first_count, first = await tags_of(brain)
    assert first_count == 1  # no snapshot yet: one scan
    again_count, again = await tags_of(brain)
    assert again_count == 2 and again == first  # from the snapshot at once, then checked


async def test_the_protection_column_is_computed_in_the_worker_never_on_the_ui_thread(brain, monkeypatch):
    # At a million rows the protection column (its identifier counts) takes a second or two: computed
    # on the UI thread at the first row drawn after the tags arrived, it froze a key that long.
    from cleo_tui.memory.pool_scan.model import BrainScan

    computed_on: list[bool] = []
    real = BrainScan.protected

    def recorded(scan):
        computed_on.append(threading.current_thread() is threading.main_thread())
        return real.fget(scan)

    monkeypatch.setattr(BrainScan, "protected", property(recorded))
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        assert app.session.tags is not None
        await pilot.press("down", "down")  # rows drawn with their protection tags
        await settle(app, pilot)
    assert computed_on and not any(computed_on)


async def test_the_status_line_says_how_far_a_first_scan_got(brain, monkeypatch):
    # Issue 33: a large brain's first scan takes minutes; "tags: computing…" alone looked stuck.
    from textual.widgets import Static

    from cleo_tui.ui.messages import TagsProgress

    real, told, release = tags_module.tag_brain, threading.Event(), threading.Event()

    def scan_a_quarter_read(reader, early, cancel, progress, started):  # the real scan, after 25% and a wait
        progress(50, 200)
        told.set()
        assert release.wait(30)
        return real(reader, early, cancel, progress, started)

    monkeypatch.setattr(tags_module, "tag_brain", scan_a_quarter_read)
    app = CleoApp(brain=brain)
    seen: list = []
    async with app.run_test(size=(120, 36), message_hook=seen.append) as pilot:
        await pilot.pause()
        app.session.start_tags()
        assert await asyncio.to_thread(told.wait, 30)
        for _ in range(3):
            await pilot.pause()
        status = str(app.screen.query_one("#status-line", Static).render())
        assert "tags: computing… 25%" in status and app.session.tags_percent == 25
        assert posted(seen, TagsProgress)
        release.set()
        await settle(app, pilot)
        status = str(app.screen.query_one("#status-line", Static).render())
        assert "computing" not in status and app.session.tags_percent is None


async def test_a_first_look_shows_coverage_while_protection_is_still_computed(brain, monkeypatch):
    # Issue 33: a large brain's first scan shows its first look (coverage, relevance) in seconds; until
    # the detectors are done protection reads "…", never "no", and a bulk evict waits for it.
    from textual.widgets import Static

    from cleo_tui.memory import selection as selection_module
    from cleo_tui.memory.pool_scan.first_look import first_look
    from cleo_tui.memory.tags import TagTable
    from cleo_tui.ui.widgets.choice_chip import ChoiceChip
    from cleo_tui.ui.widgets.filter_actions import BulkScreen

    real, shown, release = tags_module.tag_brain, threading.Event(), threading.Event()

    def look_first(reader, early, cancel, progress, started):  # what a scan in a process hands over, then the rest
        early(TagTable(first_look(reader), protection_pending=True))
        progress(50, 200)
        shown.set()
        assert release.wait(30)
        return real(reader, early, cancel, progress, started)

    async def pauses(pilot, until) -> None:  # (a worker's answer, within 30 s even on a loaded machine)
        for _ in range(3000):
            if until():
                return
            await pilot.pause(0.01)
        raise AssertionError("never came")

    monkeypatch.setattr(tags_module, "tag_brain", look_first)
    second_scans: list = []
    monkeypatch.setattr(selection_module, "tag_brain", lambda reader: second_scans.append(reader) or real(reader))
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        try:
            await pilot.pause()
            app.session.start_tags()
            assert await asyncio.to_thread(shown.wait, 30)
            pane = app.screen
            status = pane.query_one("#status-line", Static)
            await pauses(pilot, lambda: "protection: computing… 25%" in str(status.render()))
            tags = app.session.tags
            assert tags is not None and tags.protection_pending and not app.session.protection_known
            row = pane.table.current_row()
            assert row is not None
            unprotected = [i for i in tags if not tags[i].protected]
            cells = pane.format_row({**row, "id": unprotected[0]})
            assert cells["protection"][0] == "…" and cells["coverage"][0] != "…"
            await pilot.press("A")
            await pauses(pilot, lambda: isinstance(app.screen, BulkScreen))
            await pilot.press("e")
            await pauses(pilot, lambda: not isinstance(app.screen, BulkScreen))
            assert any("waits until every row's protection is known" in n.message for n in app._notifications)
            pane.query_one("#f-protected", ChoiceChip).value = "yes"
            await pauses(pilot, lambda: any("Filtering by protection waits" in n.message for n in app._notifications))
            assert pane.filters.protected == "yes"
            await pilot.press("A")  # (its rows are not known yet: nothing is read, no second scan starts)
            await pauses(pilot, lambda: any("Acting on a filter by protection waits" in n.message
                                            for n in app._notifications))
            assert not isinstance(app.screen, BulkScreen) and second_scans == []
        finally:
            release.set()
        await settle(app, pilot)
        assert app.session.protection_known and app.session.tags is not None
        assert not app.session.tags.protection_pending
        assert "computing" not in str(pane.query_one("#status-line", Static).render())
        protected = set(app.session.tags.protected_ids())
        assert protected and {row["id"] for row in pane.table.listing.page(0)} <= protected  # (the filter, now)


async def test_background_redraws_wait_for_the_users_keys(brain):
    # Issue 33: a progress line drawn 20-40 ms after a page key's own frame made the key feel that
    # much slower (most slow keys while a large brain's scan ran). Work no key asked for waits
    # until the keys have settled; the percents that came meanwhile make one redraw.
    import time

    from textual.widgets import Static

    from cleo_tui.ui.messages import TagsProgress
    from cleo_tui.ui.widgets.chrome import KEYS_SETTLE_S

    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        # The real tags first: on a loaded machine they arrived after the state set below and redrew
        # the status line without "computing" (CI failed on that once).
        for _ in range(3000):
            if app.session.protection_known:
                break
            await pilot.pause(0.01)
        assert app.session.protection_known
        pane, ran = app.screen, []
        pane.when_keys_settled(lambda: ran.append("no key yet"))
        assert ran == ["no key yet"]
        before = time.monotonic()
        await pilot.press("down")
        assert before <= pane.last_key_at <= time.monotonic()
        pane.when_keys_settled(lambda: ran.append(("after the key", time.monotonic())))
        app.session.tags, app.session.tags_percent = None, 40  # (as while a first scan runs)
        status = pane.query_one("#status-line", Static)
        pane.on_tags_progress(TagsProgress())
        app.session.tags_percent = 41
        pane.on_tags_progress(TagsProgress())
        await pilot.pause()
        if time.monotonic() < pane.last_key_at + KEYS_SETTLE_S:  # (a slow machine may be past the hold already)
            assert ran == ["no key yet"] and "41%" not in str(status.render())
        for _ in range(3000):
            if len(ran) == 2 and "41%" in str(status.render()):
                break
            await pilot.pause(0.01)
        assert [ran[0], ran[1][0]] == ["no key yet", "after the key"]
        assert "tags: computing… 41%" in str(status.render())
        assert ran[1][1] >= pane.last_key_at + KEYS_SETTLE_S - 0.005  # (run by the timer, not at once)
