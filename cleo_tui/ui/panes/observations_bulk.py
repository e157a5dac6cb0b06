"""The Observations pane's actions on everything its filter shows: evict, restore or pin them all as
one undoable run (`A`), and export them as JSON, JSONL or Markdown (`X`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import work
from textual.message import Message

from cleo_tui.files import ExportExists
from cleo_tui.memory.bulk import BulkAction, SelectionPlan, plan_selection
from cleo_tui.memory.export_rows import ExportFormat, export_rows
from cleo_tui.memory.selection import Selection, selected_rows, whole_rows
from cleo_tui.recall.impact import impact_of
from cleo_tui.safe_text import plural, titled_lines
from cleo_tui.ui.widgets.filter_actions import BulkScreen, ExportScreen, plan_text
from cleo_tui.ui.widgets.path_dialog import export_check

if TYPE_CHECKING:
    from cleo_tui.ui.session import BrainSession

ANY = "any"
ANY_STATE = "all"


def selection_of(filters: Any) -> Selection:
    """The pane's filter bar as a selection (the CLI's `--type`, `--coverage`, … take the same)."""
    def value(name: str) -> str | None:
        v = getattr(filters, name)
        return None if v in (ANY, "") else str(v)
    protected = value("protected")
    return Selection(state=filters.state, type=value("type"), coverage=value("coverage"),
                     protected=None if protected is None else protected == "yes", tier=value("tier"),
                     session=value("session"), search=filters.search, day=value("day"))


class FilterActions:
    """Mixed into the Observations pane: it provides `filters`, `session`, `app` and `notify`."""

    filters: Any
    session: BrainSession
    app: Any
    confirm: Callable[..., None]  # PaneScreen.confirm: the one confirm pattern
    _recall: str | None = None  # the recall impact of the last plan's eviction (read with the plan)
    post_message: Callable[[Message], bool]

    # -- messages from workers ---------------------------------------------------
    @dataclass(eq=False)
    class BulkPlanned(Message):
        plan: SelectionPlan
        recall: str | None  # the recall impact of evicting the plan's live rows (None: none live)

    @dataclass(eq=False)
    class ExportCounted(Message):
        selection: Selection
        plan: SelectionPlan

    @dataclass(eq=False)
    class Exported(Message):
        count: int
        path: str

    def action_act_on_filter(self) -> None:
        if self.session.read_only:
            self.app.notify(f"This brain is read-only ({self.session.read_only_reason}).", severity="warning",
                            markup=False)
            return
        selection = selection_of(self.filters)
        if not self._waits_for_protection(selection):
            self._plan_bulk(selection)

    def _waits_for_protection(self, selection: Selection) -> bool:
        """A selection by protection while it is still computed is not read (its rows are not known
        yet, and reading them would start a second whole scan): said, True."""
        if selection.protected is None or self.session.protection_known:
            return False
        self.app.notify("Acting on a filter by protection waits for it: it is still being computed.",
                        severity="warning")
        return True

    @work(thread=True, exclusive=True, group="obs-bulk", exit_on_error=False)
    def _plan_bulk(self, selection: Selection) -> None:
        reader = self.session.brain.reader()
        try:
            plan = plan_selection(reader, selection, self.session.tags)
            evictable = plan.ids_for("evict", include_protected=True)
            recall = impact_of(reader, evictable).confirmation() if evictable else None
        finally:
            reader.close()
        self.post_message(self.BulkPlanned(plan, recall))

    def on_filter_actions_bulk_planned(self, message: BulkPlanned) -> None:
        plan, recall = message.plan, message.recall
        if not plan.ids:
            self.app.notify(f"The filter shows no observations ({plan.described})." if not plan.without_id else
                            f"The filter shows only observations without an id ({plan.described}): CLEO and "
                            "cleo-tui find a row by its id, so no step can change them.", severity="warning",
                            markup=False)
            return
        self._recall = recall
        self.app.push_screen(BulkScreen(plan), partial(self._bulk_chosen, plan))

    def _bulk_chosen(self, plan: SelectionPlan, action: BulkAction | None) -> None:
        if action is None:
            return
        if action != "evict":  # a restore takes the evicted rows shown, a pin every row shown
            ids = plan.ids_for(action)
            if not ids:
                self.app.notify("The filter shows no evicted observation to restore.", severity="warning")
                return
            self._ask(f"{action.capitalize()} {plural(len(ids), 'observation')}",
                      f"{plan_text(plan)}\n\nOne run: u (or Runs) undoes it.", ids, plan, action)
            return
        if not plan.protection_known:
            self.app.notify("A bulk evict waits until every row's protection is known (still being computed): "
                            "protected rows must be set apart first. Press A again once it is.", severity="warning")
            return
        free = plan.ids_for("evict")
        if not free and not plan.protected:
            self.app.notify("The filter shows no live observation to evict.", severity="warning")
            return
        body = (f"{plan_text(plan)}\n\nRecall impact of evicting every live one: {self._recall or 'none'}\n\n"
                "They stay in the brain with invalid_at set; one run, undone with u. CLEO's own memory find and "
                "fetch still return evicted rows.")
        if not plan.protected:
            self._ask(f"Evict {plural(len(free), 'observation')}", body, free, plan, action)
            return
        reasons = [f"{i}: {'; '.join(r)}" for i, r in plan.protected.items()]
        question = "\n".join(titled_lines(f"Also evict the {len(plan.protected):,} protected ones?", reasons))

        def protected_answered(yes: bool | None) -> None:
            ids = [*free, *plan.protected] if yes else free
            if ids:
                self._write(action, ids, plan)
        if not free:
            self.confirm("Evict protected observations", question, lambda: protected_answered(True), danger=True,
                         on_no=lambda: protected_answered(False))
            return
        self.confirm(f"Evict {plural(len(free), 'observation')}", body + f"\n\nThe {len(plan.protected):,} "
                     "protected ones are asked about next.",
                     lambda: self.confirm("Evict protected observations too?", question,
                                          lambda: protected_answered(True), danger=True,
                                          on_no=lambda: protected_answered(False), confirm_label="Evict them too"),
                     danger=True)

    def _ask(self, title: str, body: str, ids: list[str], plan: SelectionPlan, action: BulkAction) -> None:
        self.confirm(title, body, lambda: self._write(action, ids, plan), danger=action == "evict")

    def _write(self, action: BulkAction, ids: list[str], plan: SelectionPlan) -> None:
        self.session.bulk(action, ids, plan.described)

    def action_export_shown(self) -> None:
        selection = selection_of(self.filters)
        if not self._waits_for_protection(selection):
            self._count_for_export(selection)

    @work(thread=True, exclusive=True, group="obs-bulk", exit_on_error=False)
    def _count_for_export(self, selection: Selection) -> None:
        reader = self.session.brain.reader()
        try:
            plan = plan_selection(reader, selection, self.session.tags)
        finally:
            reader.close()
        self.post_message(self.ExportCounted(selection, plan))

    def on_filter_actions_export_counted(self, message: ExportCounted) -> None:
        if not message.plan.shown:
            self.app.notify(f"The filter shows no observations ({message.plan.described}): nothing to export.",
                            severity="warning", markup=False)
            return
        self.app.push_screen(ExportScreen(message.plan.headline(), Path.cwd(), export_check(self.session.brain.path)),
                             partial(self._export_chosen, message.selection))

    def _export_chosen(self, selection: Selection, answer: tuple[ExportFormat, str] | None,
                       force: bool = False) -> None:
        if answer is not None:
            self._export(selection, answer, force)

    def _export(self, selection: Selection, answer: tuple[ExportFormat, str], force: bool) -> None:
        """Write the export in a worker (quitting waits for it: the user chose it)."""
        self.session.run_export(answer[1], partial(self._write_export, selection, answer, force), "obs-export")

    def _write_export(self, selection: Selection, answer: tuple[ExportFormat, str], force: bool) -> None:
        fmt, path = answer
        reader = self.session.brain.reader()
        try:
            tags = self.session.tags
            count = export_rows(path, whole_rows(reader, selected_rows(reader, selection, tags)), fmt, tags,
                                selection.describe(), self.session.brain.path, force)
        except ExportExists:
            self.confirm("Replace the file?", f"{path} exists. Replace it with this export?",
                         lambda: self._export_chosen(selection, answer, force=True))
            return
        finally:
            reader.close()
        self.post_message(self.Exported(count, path))

    def on_filter_actions_exported(self, message: Exported) -> None:
        self.app.notify(f"Exported {plural(message.count, 'observation')} to {message.path}.", markup=False)



