"""The footer: one line of keys in priority order, drawn as text, repainted only when its keys change."""

from __future__ import annotations

from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from cleo_tui.ui.widgets.footer import CleoFooter
from tests.test_ui_startup import count_calls


class Plain(Static, can_focus=True):
    pass


class WithKey(Static, can_focus=True):
    BINDINGS: ClassVar[list[Binding]] = [Binding("x", "noop", "Extra [b]bold[/b]", id="test.extra",
                                                 tooltip="does nothing")]

    def action_noop(self) -> None:
        pass


class Host(App[None]):
    BINDINGS: ClassVar[list[Binding]] = [Binding("s", "save", "Save", id="test.save")]
    can_save = True
    saved = 0

    def compose(self) -> ComposeResult:
        yield Plain("a", id="a")
        yield Plain("b", id="b")
        yield WithKey("c", id="c")
        yield CleoFooter()

    def action_save(self) -> None:
        self.saved += 1

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return None if action == "save" and not self.can_save else True


async def refreshed(pilot) -> None:
    """One frame drawn, then what waited for it done."""
    await pilot.pause()
    await pilot.pause()


def footer(app: App[None]) -> CleoFooter:
    return app.screen.query_one(CleoFooter)


async def focus_and_draw(app: App[None], pilot, selector: str) -> str:
    """Focus `selector`, let the footer redraw: its line."""
    app.query_one(selector).focus()
    await refreshed(pilot)
    return footer_line(app)


def footer_line(app: App[None]) -> str:
    """The footer's line as drawn on screen."""
    return "".join(segment.text for segment in app.screen.get_widget_at(0, app.size.height - 1)[0].render_line(0))


async def test_the_footer_draws_its_keys_from_the_first_frame_and_follows_the_focus(monkeypatch):
    from textual._compositor import Compositor

    app = Host()
    async with app.run_test(size=(130, 10)) as pilot:  # wide: keys padded
        await pilot.pause()
        assert [k.description for k in footer(app).shown] == ["Save"]
        assert not footer(app).children  # one widget: no key mounted, no layout of the screen for them
        assert footer_line(app).startswith(" s Save ") and footer_line(app).endswith("▏^p palette ")

        layouts = count_calls(monkeypatch, Compositor, "reflow")
        app.query_one("#b").focus()  # another widget with the same keys: nothing to redo
        await refreshed(pilot)
        app.query_one("#c").focus()  # a widget with a key of its own: shown
        await refreshed(pilot)
        assert sorted(k.description for k in footer(app).shown) == ["Extra [b]bold[/b]", "Save"]
        assert "Extra [b]bold[/b]" in footer_line(app)  # text, never markup
        assert layouts == []  # a change of keys repaints the footer's line only

        app.can_save = False  # a key turned disabled: shown dim
        app.refresh_bindings()
        await refreshed(pilot)
        save = next(k for k in footer(app).shown if k.description == "Save")
        assert not save.enabled
        line = footer(app).render()
        assert line.get_style_at_offset(app.console, line.plain.index("Save")).dim
        assert not line.get_style_at_offset(app.console, line.plain.index("Extra")).dim


async def test_a_click_on_a_key_presses_it_and_the_pointer_shows_its_tooltip():
    app = Host()
    async with app.run_test(size=(100, 10)) as pilot:
        line = await focus_and_draw(app, pilot, "#c")
        await pilot.click(CleoFooter, offset=(line.index("Save"), 0))
        assert app.saved == 1
        app.can_save = False
        app.refresh_bindings()
        await refreshed(pilot)
        await pilot.click(CleoFooter, offset=(line.index("Save"), 0))  # disabled: the bell, not the action
        assert app.saved == 1
        await pilot.hover(CleoFooter, offset=(footer_line(app).index("Extra"), 0))
        assert footer(app).tooltip == "does nothing"
        await pilot.hover(CleoFooter, offset=(footer_line(app).index("^p") - 2, 0))  # between keys
        assert footer(app).tooltip is None


async def test_a_narrow_footer_is_compact_and_shows_only_keys_that_fit_whole():
    app = Host()
    async with app.run_test(size=(30, 10)) as pilot:
        line = await focus_and_draw(app, pilot, "#a")
        assert line.startswith("s Save ") and line.endswith("▏^p palette ") and len(line) == 30
        line = await focus_and_draw(app, pilot, "#c")
        assert footer(app).shown == ()  # "x Extra …", first, does not fit whole: no key after it either
        assert line.strip() == "▏^p palette"
