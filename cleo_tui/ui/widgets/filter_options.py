"""The choices of a pane's filter selects, read from the brain in a worker and then set.

Mixed into the Observations and Traces panes: each says what its selects offer
(`read_filter_options`: select id → (label, value) pairs); this reads them off the UI
thread and fills the selects (labels shown literally, cut to 40 cells).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from rich.text import Text
from textual import work
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Select

from cleo_tui.brain import Brain
from cleo_tui.safe_text import one_line

FilterChoices = dict[str, list[tuple[str, str]]]  # select id → (label, value) per choice


class FilterOptions:
    """Mixin for a pane with filter selects; the pane provides `session`, `app` and `query_one`."""

    session: Any
    app: Any
    query_one: Any
    query: Any
    post_message: Any
    call_after_refresh: Any
    when_keys_settled: Any
    # (class defaults, never appended to: replaced by `mount_filters` and by each OptionsRead)
    _filters_to_mount: list[Widget] = []
    _filter_bar: Widget | None = None
    _choices_to_set: list[tuple[str, list[tuple[str, str]]]] = []

    @dataclass(eq=False)
    class OptionsRead(Message):
        options: FilterChoices

    def read_filter_options(self, brain: Brain) -> FilterChoices:
        """What each select offers (the pane's; a read, run in a worker)."""
        raise NotImplementedError

    def mount_filters(self, bar: Widget, widgets: list[Widget]) -> None:
        """Mount `widgets` in `bar` one per screen refresh, each once the user's keys have settled
        (`when_keys_settled`: keys go first), and read their choices once all are there
        (`load_filter_options`).

        Mounted together, the Observations pane's eight (composing each select with its overlay,
        styling, laying the bar out) held the UI thread for one stretch just after the first
        screen, and a key pressed then waited for all of it."""
        self._filters_to_mount, self._filter_bar = list(widgets), bar
        self.when_keys_settled(partial(self._mount_next_filter, bar))

    def mount_filters_now(self) -> None:
        """Mount every filter still waiting, at once: the user asks for the bar (keys held it back)."""
        bar, pending = self._filter_bar, self._filters_to_mount
        if not pending or bar is None or not bar.is_attached:
            return
        bar.mount_all(pending)
        self._filters_to_mount = []  # (the steps still waiting then find nothing to do)
        self.load_filter_options()

    def _mount_next_filter(self, bar: Widget) -> None:
        pending = self._filters_to_mount
        if not pending or not bar.is_attached:
            return
        bar.mount(pending.pop(0))
        if pending:
            self.call_after_refresh(self.when_keys_settled, partial(self._mount_next_filter, bar))
        else:
            self.load_filter_options()

    @property
    def filter_bar_pending(self) -> bool:
        """Whether filter widgets are still to be mounted (`mount_filters`) or given their choices."""
        return bool(self._filters_to_mount or self._choices_to_set)

    @work(thread=True, group="filter-options", exit_on_error=False)
    def load_filter_options(self) -> None:
        self.post_message(self.OptionsRead(self.read_filter_options(self.session.brain)))

    def on_filter_options_options_read(self, message: OptionsRead) -> None:
        """Give each select its choices, one select per screen refresh (as `mount_filters`: all
        eight together, hundreds of sessions among them, held a key 40 ms at a million rows)."""
        self._choices_to_set = list(message.options.items())
        self.when_keys_settled(self._set_next_choices)

    def _set_next_choices(self) -> None:
        if not self._choices_to_set:
            return
        select_id, values = self._choices_to_set.pop(0)
        for select in self.query(f"#{select_id}").results(Select):  # (gone with its pane meanwhile: none)
            select.set_options((Text(one_line(label, 40)), v) for label, v in values)
        if self._choices_to_set:
            self.call_after_refresh(self.when_keys_settled, self._set_next_choices)
