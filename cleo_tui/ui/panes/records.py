"""Patterns, learnings and decisions: smaller tables, browsed with a DataTable."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable, Static, TabbedContent, TabPane

from cleo_tui.brain.records import LIST_LIMIT, list_records, record_text
from cleo_tui.brain.rows import Row
from cleo_tui.safe_text import one_line, printable
from cleo_tui.ui.host import host_of
from cleo_tui.ui.widgets.chrome import BrainHeader, ItemActions
from cleo_tui.ui.widgets.footer import CleoFooter
from cleo_tui.ui.widgets.modals import TextViewer
from cleo_tui.ui.widgets.worker_errors import ForwardWorkerErrors

KINDS = (
    ("pattern", "Patterns", ("id", "type", "frequency", "extracted_at", "pattern")),
    ("learning", "Learnings", ("id", "confidence", "actionable", "created_at", "insight")),
    ("decision", "Decisions", ("id", "type", "confidence", "created_at", "decision")),
)


class RecordsScreen(ForwardWorkerErrors, ItemActions):
    """Reflections and decisions, with the selected record's whole text below."""

    ITEM_ACTIONS = frozenset({"view_record"})  # the shown record's

    BINDINGS = [Binding("escape,t", "app.pop_screen", "Back to observations", id="records.back"),
                Binding("v", "view_record", "Full text", id="records.view",
                        tooltip="The highlighted record's whole text (enter opens it too)")]

    @dataclass(eq=False)
    class RecordsRead(Message):
        data: dict[str, list[Row]]  # kind → its newest rows

    def compose(self) -> ComposeResult:
        yield BrainHeader()
        with TabbedContent(id="records-tabs"):
            for kind, label, _ in KINDS:
                with TabPane(label, id=f"records-{kind}"):
                    yield DataTable(id=f"table-{kind}", cursor_type="row", zebra_stripes=True)
        yield Static(id="record-detail")
        yield CleoFooter()

    def on_mount(self) -> None:
        self._rows: dict[str, Row] = {}
        for kind, _, columns in KINDS:
            self.query_one(f"#table-{kind}", DataTable).add_columns(*columns)
        self.load_records()

    @work(thread=True, exit_on_error=False)
    def load_records(self) -> None:
        data = {kind: list_records(host_of(self.app).session.brain, kind) for kind, _, _ in KINDS}
        self.post_message(self.RecordsRead(data))

    def on_records_screen_records_read(self, message: RecordsRead) -> None:
        data = message.data
        self._rows = {}
        for kind, label, columns in KINDS:
            table = self.query_one(f"#table-{kind}", DataTable)
            for row in data[kind]:
                key = f"{kind}:{row.get('id')}"
                self._rows[key] = row | {"_kind": kind}
                table.add_row(*[Text(one_line(row.get(c), 90)) for c in columns], key=key)
            table.display = bool(data[kind])  # (none: the detail's sentence alone)
            if len(data[kind]) >= LIST_LIMIT:
                self.notify(f"Showing the newest {LIST_LIMIT:,} {label.lower()}.")
        self.query_one(f"#table-{self._visible_kind()}", DataTable).focus()  # arrows and enter work at once
        self.show_highlighted()

    @on(DataTable.RowHighlighted)
    def record_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """A cursor moved: show it only if its table is the visible one (filling all three
        tables highlights a row in each; the last one filled must not win)."""
        if event.data_table.id == f"table-{self._visible_kind()}":
            self.show_record(str(event.row_key.value))

    @on(TabbedContent.TabActivated)
    def tab_switched(self, event: TabbedContent.TabActivated) -> None:
        self.show_highlighted()

    def _visible_kind(self) -> str:
        active = self.query_one("#records-tabs", TabbedContent).active or ""
        return active.removeprefix("records-") or KINDS[0][0]

    def show_highlighted(self) -> None:
        """Show the highlighted row of the visible tab (or say that the tab is empty)."""
        kind = self._visible_kind()
        table = self.query_one(f"#table-{kind}", DataTable)
        if not table.row_count:
            label = next(label for k, label, _ in KINDS if k == kind)
            self.query_one("#record-detail", Static).update(Text(f"No {label.lower()} in this brain.",
                                                                 style="italic"))
            self._set_shown("")
            return
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        self.show_record(str(key.value))

    def show_record(self, key: str) -> None:
        row = self._rows.get(key)
        if row is None:
            return
        self._set_shown(key)
        kind = row["_kind"]
        text = Text()
        text.append(f"{kind}:{one_line(row.get('id'))}", style="bold")
        text.append("  (v or enter: the whole text)\n", style="italic")
        text.append(printable(record_text(kind, row)[:5000]) + "\n")
        for extra in ("context", "rationale", "source", "outcome", "invalid_at"):
            if row.get(extra):
                text.append(f"{extra}: ", style="bold")
                text.append(one_line(row[extra], 300) + "\n")
        self.query_one("#record-detail", Static).update(text)

    shown_key = ""  # the record the detail shows ("": none, on an empty tab)

    def _set_shown(self, key: str) -> None:
        self.shown_key = key
        self.show_item_parts(bool(key))  # v comes and goes with a record to show

    @on(DataTable.RowSelected)
    def record_selected(self, event: DataTable.RowSelected) -> None:
        self.show_record(str(event.row_key.value))
        self.action_view_record()

    def action_view_record(self) -> None:
        """The shown record's whole text (and its context) in the text viewer."""
        row = self._rows.get(self.shown_key)
        if row is None:
            return
        kind = row["_kind"]
        parts = [record_text(kind, row)]
        parts += [f"{extra}: {row[extra]}" for extra in ("context", "rationale", "source", "outcome", "invalid_at")
                  if row.get(extra)]
        self.app.push_screen(TextViewer(f"{kind} {one_line(row.get('id'))}", "\n\n".join(str(p) for p in parts)))
