"""The choices of a pane's filter chips, read from the brain in a worker and then set.

Mixed into the Observations and Traces panes: each says what its chips offer
(`read_filter_options`: chip id → (label, value) pairs); this reads them off the UI
thread and gives them to the chips.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual import work
from textual.message import Message

from cleo_tui.brain import Brain
from cleo_tui.ui.widgets.choice_chip import ChoiceChip

FilterChoices = dict[str, list[tuple[str, str]]]  # chip id → (label, value) per choice


class FilterOptions:
    """Mixin for a pane with filter chips; the pane provides `session`, `query` and `post_message`."""

    session: Any
    query: Any
    post_message: Any
    _choices_asked = False

    @dataclass(eq=False)
    class OptionsRead(Message):
        options: FilterChoices

    def read_filter_options(self, brain: Brain) -> FilterChoices:
        """What each chip offers (the pane's; a read, run in a worker)."""
        raise NotImplementedError

    def load_filter_options_once(self) -> None:
        """Read the chips' choices, unless they were read or are being read."""
        if not self._choices_asked:
            self._choices_asked = True
            self.load_filter_options()

    @work(thread=True, group="filter-options", exit_on_error=False)
    def load_filter_options(self) -> None:
        self.post_message(self.OptionsRead(self.read_filter_options(self.session.brain)))

    def on_filter_options_options_read(self, message: OptionsRead) -> None:
        for chip_id, values in message.options.items():
            for chip in self.query(f"#{chip_id}").results(ChoiceChip):  # (gone with its pane meanwhile: none)
                chip.set_choices(values)
