"""What the first screen and a keypress cost Textual: CSS parsed once, styles applied once, one
layout per new row's detail; and the theme still restyles every pane."""

from __future__ import annotations

from textual import events
from textual.css.stylesheet import Stylesheet
from textual.screen import Screen

from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.widgets.chrome import PaneScreen
from cleo_tui.ui.widgets.table import LineTable
from tests.ui_helpers import settle


def count_calls(monkeypatch, owner: type, name: str) -> list[object]:
    """Record each call of `owner.name` (its first argument) and still make it."""
    calls: list[object] = []
    original = getattr(owner, name)

    def recording(self, *args, **kwargs):
        calls.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(owner, name, recording)
    return calls


async def test_first_pane_parses_the_css_once(brain, monkeypatch):
    """The theme is set before the app runs and the first switch of mode does not parse the CSS again."""
    reparses = count_calls(monkeypatch, Stylesheet, "reparse")
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        assert app.theme == "cleo" and app.has_class("-theme-cleo")
        assert app.screen.query_one("#status-line").styles.background == app.current_theme.to_color_system().surface
        assert reparses == []


async def test_a_new_pane_keeps_the_styles_it_was_mounted_with(brain, monkeypatch):
    """Its first ScreenResume events do not restyle it; a later one (back from another pane) does."""
    resumes: list[tuple[str, bool]] = []
    original = PaneScreen.post_message

    def posted(self, message):
        sent = original(self, message)
        if isinstance(message, events.ScreenResume):
            resumes.append((self.PANE, message.refresh_styles))
        return sent

    monkeypatch.setattr(PaneScreen, "post_message", posted)
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        assert resumes and all(not refresh for pane, refresh in resumes if pane == "observations")
        resumes.clear()
        await pilot.press("2")
        await settle(app, pilot)
        await pilot.press("1")
        await settle(app, pilot)
        assert ("observations", True) in resumes


async def test_the_footer_draws_the_panes_keys_in_one_widget_styled_once(brain, monkeypatch):
    """The footer is one widget drawing its keys (Textual's mounted one per key, after the first frame,
    and laid the screen out again for them); it is styled once, not per key."""
    from textual.dom import DOMNode

    from cleo_tui.ui.widgets.footer import CleoFooter

    restyled = count_calls(monkeypatch, DOMNode, "update_node_styles")
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        footer = app.screen.query_one(CleoFooter)
        assert not footer.children and len(footer.shown) > 5
        assert [key.action for key in footer.shown][:2] == ["help", "focus_search"]
        assert footer.render().plain.startswith(" f1 Help  / Search ")
        assert sum(node is footer for node in restyled) <= 2


async def test_theme_change_restyles_a_pane_shown_later(brain):
    """A theme chosen in one pane reaches another pane already mounted when it is shown again."""
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        prune = app.screen
        await pilot.press("1")
        await settle(app, pilot)
        app.theme = "textual-light"
        await settle(app, pilot)
        observations = app.screen.query_one("#status-line")
        light = app.current_theme.to_color_system().surface
        assert observations.styles.background == light
        await pilot.press("2")
        await settle(app, pilot)
        assert app.screen is prune
        assert prune.query_one("#prune-status").styles.background == light


async def detail_shown(app, pilot) -> None:
    """Until the detail shows the row under the cursor (it loads 80 ms after the cursor stops)."""
    table = app.screen.query_one("#obs-table", LineTable)
    for _ in range(200):
        detail = app.screen.detail
        if detail is not None and detail.row["id"] == table.current_row()["id"]:
            await settle(app, pilot)
            return
        await pilot.pause(0.02)
    raise AssertionError("the detail never showed the cursor's row")


async def test_a_new_rows_detail_takes_one_layout_pass(brain, monkeypatch):
    """Moving to a row whose detail is another height lays the screen out once, not twice."""
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        app.screen.query_one("#obs-table", LineTable).focus()
        await detail_shown(app, pilot)
        layouts = count_calls(monkeypatch, Screen, "_refresh_layout")
        moves = []
        for _ in range(8):
            heights = [part.size.height for part in app.screen.query_one("#detail").children]
            before = len(layouts)
            await pilot.press("down")
            await detail_shown(app, pilot)
            changed = heights != [part.size.height for part in app.screen.query_one("#detail").children]
            moves.append((changed, len(layouts) - before))
        assert any(changed for changed, _ in moves), "no row changed the detail's height"
        assert all(passes <= 1 for _, passes in moves), moves


async def test_the_filter_bar_is_drawn_with_the_first_rows_and_its_choices_read_after(brain, monkeypatch):
    """The bar's input and seven chips are there with the first rows (one line each, cheap to
    compose: issue 33); the whole-brain read of their choices starts only once rows are drawn."""
    from textual.widgets import Input

    from cleo_tui.brain.observations import ObservationQuery, count_observations
    from cleo_tui.ui.panes.observations import ObservationsScreen
    from cleo_tui.ui.widgets.choice_chip import ChoiceChip

    seen: list[tuple[int, int, bool]] = []  # (rows in the table, widgets in the bar, choices asked) at first rows
    original = ObservationsScreen.first_rows_drawn

    def first_rows_drawn(self):
        seen.append((self.table.total, len(self.query("#filter-bar > *")), self._choices_asked))
        original(self)

    monkeypatch.setattr(ObservationsScreen, "first_rows_drawn", first_rows_drawn)
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        assert seen[0][0] > 0 and seen[0][1:] == (8, False)
        bar = app.screen.query_one("#filter-bar")
        assert [type(w) for w in bar.children].count(ChoiceChip) == 7 and isinstance(bar.children[0], Input)
        sessions = app.screen.query_one("#f-session", ChoiceChip).choices
        assert sessions  # its choices were read
        app.screen.query_one("#f-state", ChoiceChip).value = "evicted"
        await settle(app, pilot)
        table = app.screen.query_one("#obs-table", LineTable)
        assert table.total == count_observations(brain, ObservationQuery(state="evicted"))


async def test_filters_set_as_the_pane_mounts(brain, monkeypatch):
    """Clearing the filters, a day from the History pane and `/` work right as the pane mounts,
    before any row is read: the bar is blank, the search focused."""
    from textual.widgets import Input

    from cleo_tui.ui.panes.observations import ObservationsScreen
    from cleo_tui.ui.widgets.choice_chip import ChoiceChip

    day = str(brain.scalar("SELECT substr(max(created_at), 1, 10) FROM brain_observations"))
    original = ObservationsScreen.on_mount

    def on_mount(self):
        original(self)
        self.action_clear_filters()
        self.show_day(day)
        self.action_focus_search()

    monkeypatch.setattr(ObservationsScreen, "on_mount", on_mount)
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        screen = app.screen
        assert screen.filters.day == day
        table = screen.query_one("#obs-table", LineTable)
        on_day = brain.scalar("SELECT count(*) FROM brain_observations WHERE substr(created_at, 1, 10) = ?", (day,))
        assert 0 < table.total == on_day
        search = screen.query_one("#search", Input)
        assert search.value == "" and search.has_focus
        assert all(chip.is_blank() for chip in screen.query(ChoiceChip))


async def test_the_first_rows_are_read_ahead_before_the_counts(brain, monkeypatch):
    """The first listing is read once, in a thread started before the pane is composed, and the
    header's counts are read after it (both need the brain's lock; the rows come first)."""
    from cleo_tui.brain.listing import ObservationListing
    from cleo_tui.ui import session as session_module

    reads: list[str] = []
    count, summary = ObservationListing.count, session_module.brain_summary

    def counted(self):
        if self._rest_count is None:
            reads.append("rows")
        return count(self)

    def summarised(brain):
        reads.append("counts")
        return summary(brain)

    monkeypatch.setattr(ObservationListing, "count", counted)
    monkeypatch.setattr(session_module, "brain_summary", summarised)
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        assert reads == ["rows", "counts"]
        assert app.screen.query_one("#obs-table", LineTable).total == app.session.summary["observations"]["live"] + \
            app.session.summary["observations"]["evicted"]


async def test_nothing_is_rendered_while_textual_holds_frames_back(brain, monkeypatch):
    """While the app starts and just after a switch of mode Textual throws its frames away:
    the pane renders none then (it was a whole screen), and draws it in the next frame."""
    from textual._compositor import Compositor

    thrown: list[bool] = []
    original = Compositor._render_chops

    def render_chops(self, *args, **kwargs):
        thrown.append(bool(app._batch_count))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Compositor, "_render_chops", render_chops)
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        assert app.screen.query_one("#obs-table", LineTable).total
    assert thrown and not any(thrown)
