"""The filter chip: one line, its choices in a menu opened by keys or a click (issue 33)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import App, ComposeResult
from textual.widgets import OptionList

from cleo_tui.ui.widgets.choice_chip import ChoiceChip, ChoiceMenu

SESSIONS = [(f"ses-{name}", f"ses-{name}") for name in ("alpha", "bravo", "charlie", "delta")]


class ChipApp(App[None]):
    BINDINGS: ClassVar = [("q", "quit", "Quit")]  # (as cleo-tui's: a letter typed in the menu must not reach it)

    def __init__(self) -> None:
        super().__init__()
        self.changes: list[str | None] = []

    def compose(self) -> ComposeResult:
        yield ChoiceChip(SESSIONS, prompt="all sessions", id="chip")

    def on_choice_chip_changed(self, event: ChoiceChip.Changed) -> None:
        self.changes.append(event.value)


async def test_keys_open_the_menu_type_ahead_and_choose():
    app = ChipApp()
    async with app.run_test(size=(60, 20)) as pilot:
        chip = app.query_one(ChoiceChip)
        chip.focus()
        await pilot.pause()
        assert chip.render().plain.startswith("all sessions") and chip.render().plain.endswith(" ▾")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ChoiceMenu)
        assert app.screen.query_one(OptionList).highlighted == 0  # the blank choice, as it stands
        await pilot.press("s", "e", "s", "-", "c")  # typed letters find "ses-charlie"
        assert app.screen.query_one(OptionList).highlighted == 3
        await pilot.press("q")  # a letter no choice starts with: nothing happens, the app does not quit
        assert app.is_running and app.screen.query_one(OptionList).highlighted == 3
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, ChoiceMenu) and app.focused is chip
        assert chip.value == "ses-charlie" and app.changes == ["ses-charlie"]
        assert "ses-charlie" in chip.label.plain
        await pilot.press("down")  # reopened on the current choice; Escape leaves it as it was
        await pilot.pause()
        assert app.screen.query_one(OptionList).highlighted == 3
        await pilot.press("escape")
        await pilot.pause()
        assert chip.value == "ses-charlie" and app.changes == ["ses-charlie"]
        await pilot.press("space", "home", "enter")  # the first choice is the prompt: blank again
        await pilot.pause()
        assert chip.is_blank() and app.changes == ["ses-charlie", None]


async def test_a_click_outside_the_menu_closes_it_and_a_vanished_choice_goes_blank():
    app = ChipApp()
    async with app.run_test(size=(60, 20)) as pilot:
        chip = app.query_one(ChoiceChip)
        chip.value = "ses-delta"
        await pilot.click(chip)
        await pilot.pause()
        assert isinstance(app.screen, ChoiceMenu)
        await pilot.click(offset=(50, 15))
        await pilot.pause()
        assert not isinstance(app.screen, ChoiceMenu) and chip.value == "ses-delta"
        chip.set_choices(SESSIONS[:2])  # its choice is gone from the brain
        await pilot.pause()
        assert chip.is_blank() and app.changes[-1] is None


async def test_a_menu_near_the_bottom_right_opens_above_its_chip_and_inside_the_screen():
    class LowChipApp(ChipApp):
        CSS = "ChoiceChip { offset: 50 17; }"

    app = LowChipApp()
    async with app.run_test(size=(60, 20)) as pilot:
        chip = app.query_one(ChoiceChip)
        await pilot.click(chip)
        await pilot.pause()
        menu = app.screen.query_one(OptionList)
        assert menu.region.bottom == chip.region.y and menu.region.height == len(SESSIONS) + 3
        assert menu.region.right == 60 and menu.region.width >= len("all sessions") + 4


async def test_hostile_choices_are_shown_as_written():
    app = ChipApp()
    async with app.run_test(size=(100, 20)) as pilot:
        chip = app.query_one(ChoiceChip)
        chip.set_choices([("[bold]x[/bold] \x1b[31mred\nline", "odd")])
        chip.value = "odd"
        await pilot.pause()
        assert chip.label.plain.startswith("[bold]x[/bold]") and "\n" not in chip.label.plain
        assert "\x1b" not in app.export_screenshot()


class CountedChip(ChoiceChip):
    """A chip that counts its draws."""

    draws = 0

    def render(self):
        self.draws += 1
        return super().render()


class OneCountedChip(App[None]):
    def compose(self) -> ComposeResult:
        yield CountedChip([], prompt="all sessions", id="chip")


async def test_new_choices_redraw_the_chip_only_when_what_it_shows_changes():
    """Filled just after the first screen, a blank chip still shows its prompt: no frame for it
    (a repaint there delayed the first key's screen)."""
    app = OneCountedChip()
    async with app.run_test(size=(60, 5)) as pilot:
        chip = app.query_one(CountedChip)
        await pilot.pause()
        drawn = chip.draws
        assert drawn >= 1
        chip.set_choices(SESSIONS)
        await pilot.pause()
        assert chip.draws == drawn and chip.render().plain.startswith("all sessions")
        chip.value = "ses-bravo"
        await pilot.pause()
        drawn = chip.draws
        chip.set_choices(SESSIONS[2:])  # its choice is gone: blank again, the prompt drawn
        await pilot.pause()
        assert chip.draws > drawn and chip.is_blank()
