"""The footer recomposes only when what it shows changes (Textual recomposes it on every focus change)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from cleo_tui.ui.textual_compat import FooterKey
from cleo_tui.ui.widgets.footer import CleoFooter


class Plain(Static, can_focus=True):
    pass


class WithKey(Static, can_focus=True):
    BINDINGS: ClassVar[list[Binding]] = [Binding("x", "noop", "Extra", id="test.extra")]

    def action_noop(self) -> None:
        pass


class Host(App[None]):
    BINDINGS: ClassVar[list[Binding]] = [Binding("s", "save", "Save", id="test.save")]
    can_save = True

    def compose(self) -> ComposeResult:
        yield Plain("a", id="a")
        yield Plain("b", id="b")
        yield WithKey("c", id="c")
        yield CleoFooter()

    def action_save(self) -> None:
        pass

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return None if action == "save" and not self.can_save else True


async def refreshed(pilot) -> None:
    """One frame drawn, then what waited for it done (the footer recomposes after a refresh)."""
    await pilot.pause()
    await pilot.pause()


def footer_keys(app: App[None]) -> list[FooterKey]:
    return [k for k in app.screen.query(FooterKey) if not k.has_class("-command-palette")]


async def test_the_footer_keeps_its_keys_while_they_stay_the_same_and_recomposes_when_they_change():
    app = Host()
    async with app.run_test(size=(100, 10)) as pilot:
        app.query_one("#a").focus()
        await refreshed(pilot)
        before = footer_keys(app)
        assert [k.description for k in before] == ["Save"]

        app.query_one("#b").focus()  # another widget with the same keys: nothing to redo
        await refreshed(pilot)
        assert footer_keys(app) == before and all(a is b for a, b in zip(footer_keys(app), before, strict=True))

        app.query_one("#c").focus()  # a widget with a key of its own: shown
        await refreshed(pilot)
        assert sorted(k.description for k in footer_keys(app)) == ["Extra", "Save"]

        app.can_save = False  # a key turned disabled: shown so
        app.refresh_bindings()
        await refreshed(pilot)
        save = next(k for k in footer_keys(app) if k.description == "Save")
        assert save.has_class("-disabled")


async def test_the_footer_has_its_keys_from_the_first_frame_and_keeps_the_keys_it_composed():
    """The keys are composed with the screen (not in a second compose, which laid the whole screen
    out again after the first frame), and a focus that changes nothing keeps them."""
    app = Host()
    async with app.run_test(size=(100, 10)) as pilot:
        await pilot.pause()
        first = footer_keys(app)
        assert [k.description for k in first] == ["Save"]
        app.query_one("#a").focus()
        await refreshed(pilot)
        assert all(a is b for a, b in zip(footer_keys(app), first, strict=True))
