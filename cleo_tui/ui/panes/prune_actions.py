"""What the Prune pane does with a preview: commit it, undo a run, export it, show CLEO's bridge after it.

`PruneActions` is the Prune pane's base (panes/prune.py): the preview, the lists and the pool
are the pane's; the writes go through the session's one write path (`BrainSession.write`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

from textual import work
from textual.message import Message

from cleo_tui.brain.journal import Run
from cleo_tui.memory import curation
from cleo_tui.memory.budget import default_export_name, write_export
from cleo_tui.memory.cleo_effects import eviction_in_cleo
from cleo_tui.memory.pruner import CommitResult, PreparedPool, PrunePreview, commit_preview, parse_budget
from cleo_tui.recall.impact import RecallImpact
from cleo_tui.safe_text import one_line, plural
from cleo_tui.ui.host import OpenBridge, ask
from cleo_tui.ui.messages import Written
from cleo_tui.ui.widgets.chrome import PaneScreen
from cleo_tui.ui.widgets.list_listing import ListListing
from cleo_tui.ui.widgets.path_dialog import export_check
from cleo_tui.ui.widgets.path_prompt import PathPrompt
from cleo_tui.ui.widgets.prune_lists import BudgetInput, CommitModal, budget_problem, run_row
from cleo_tui.ui.widgets.table import LineTable


class PruneActions(PaneScreen):
    """The Prune pane's commit, runs (undo), export and bridge; the pane (PruneScreen) provides the rest."""

    pool: PreparedPool | None
    preview: PrunePreview | None
    preparing: bool
    recall_problem: str | None
    result: CommitResult | None
    runs: list[Run]
    message: str

    @dataclass(eq=False)
    class RunsLoaded(Message):
        runs: list[Run]

    @dataclass(eq=False)
    class Exported(Message):
        path: Path
        dropped: int

    # -- what the pane provides -------------------------------------------------------------
    def table(self, name: str) -> LineTable:
        raise NotImplementedError

    def current_list(self) -> str:
        raise NotImplementedError

    def recall_impact(self) -> RecallImpact | None:
        raise NotImplementedError

    def update_status(self) -> None:
        raise NotImplementedError

    def _label_runs_tab(self) -> None:
        raise NotImplementedError

    # -- runs -----------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="prune-runs", exit_on_error=False)
    def _load_runs(self) -> None:
        self.post_message(self.RunsLoaded(curation.list_curation_runs(self.session.brain, ("prune",))))

    def on_prune_actions_runs_loaded(self, message: RunsLoaded) -> None:
        self.runs = message.runs
        self.table("runs").set_listing(ListListing(self.runs, run_row), keep_cursor=True)
        self._label_runs_tab()

    def action_undo_run(self) -> None:
        run = None
        if self.current_list() == "runs":
            row = self.table("runs").current_row()
            run = row["run"] if row else None
        if run is None:
            run = next((r for r in self.runs if not r.undone_by), None)
        if run is None:
            self.notify("There is no prune run to undo.", severity="warning")
            return
        self._ask_undo(run)

    def _ask_undo(self, run: Run) -> None:
        if self.session.brain.read_only:
            self.notify(f"The brain is read-only ({self.session.brain.read_only_reason}); nothing can be undone.",
                        severity="warning")
            return
        if run.undone_by:
            self.notify(f"Run {run.id} was already undone by run {run.undone_by}.", severity="warning")
            return
        evicted = len(run.params.get("ids") or [])
        self.confirm(
            "Undo prune run",
            f"Undo prune run {run.id} ({run.created_at})?\n\nWhat it evicted ({plural(evicted, 'observation')}) "
            "becomes live again — except any that CLEO or another step changed since, which are left alone.",
            lambda: self._undo(run.id))

    def _undo(self, run_id: int) -> None:
        self.session.undo_run(run_id)  # one transaction, then every pane hears BrainChanged("undo")

    # -- commit ---------------------------------------------------------------------------
    def action_commit(self) -> None:
        preview = self.preview
        if self.pool is not None and not len(self.pool):
            self.notify("There is nothing to commit: no live observation is in the pool.", severity="warning")
            return
        shown = self.query_one("#prune-budget", BudgetInput).value
        problem = budget_problem(shown)
        if problem is not None:  # a commit only ever uses the budget shown in the box
            self.notify(f"Not committed: {problem}", severity="error", markup=False)
            return
        impact = self.recall_impact()
        if preview is None or self.preparing or (impact is None and self.recall_problem is None):
            self.notify("The preview (or its recall impact) is not ready yet.", severity="warning")
            return
        if parse_budget(shown) != preview.budget:
            self.notify("Not committed: the preview is not yet at the budget in the box.", severity="warning")
            return
        if not preview.drop_count:
            self.notify("This budget drops nothing: the pool is within its target.", severity="warning")
            return
        body = (f"Soft-evict {plural(preview.drop_count, 'observation')}?\n\n"
                f"Tokens {preview.tokens_before:,} → {preview.tokens_after:,} at a budget of "
                f"{preview.budget:,} ({preview.tokenizer}).")
        if preview.fell_back:
            body += " The target still is not met: the protected rows alone exceed it."
        body += f"\n\nRecall impact: {impact.confirmation() if impact else f'unavailable: {self.recall_problem}'}"
        body += ("\n\nNothing is deleted: each row gets invalid_at set, only if it is still as previewed "
                 "(rows changed since are left alone and listed). The run can be undone from the Runs "
                 f"list (u).\n\n{eviction_in_cleo('tick the box below')}")
        modal = CommitModal("Commit prune", body)
        self.confirm("Commit prune", body, lambda: self._commit(preview, modal.hide), danger=True, dialog=modal)

    def _commit(self, preview: PrunePreview, hide: bool) -> None:
        self.session.write("prune commit", lambda brain: commit_preview(brain, preview, hide_from_cleo=hide),
                           self._committed, source=self.PANE, group="prune-commit")

    def _committed(self, result: CommitResult) -> Written:
        self.result = result
        self.tell("Prune committed", "\n".join(result.lines()))
        hidden = ", hidden from CLEO's search" if result.hidden_from_cleo else ""
        return Written(f"prune run {result.run_id} evicted {plural(len(result.evicted), 'observation')}{hidden}",
                       result.run_id)

    # -- export ---------------------------------------------------------------------------
    def action_export(self) -> None:
        preview = self.preview
        if preview is None:
            self.notify("There is no preview to export yet.", severity="warning")
            return
        self.app.push_screen(
            PathPrompt("Export preview as JSON",
                       "The file gets `cleo-tui prune --json`'s document for this budget and tokenizer. "
                       "A relative path is taken from the current directory.",
                       str(Path.cwd() / default_export_name(preview)),  # absolute: the user sees where
                       check=export_check(self.session.brain.path)),
            lambda answer: self._export_to(answer, preview))

    def _export_to(self, answer: str | None, preview: PrunePreview) -> None:
        if not answer:
            return
        path = Path(answer).expanduser()
        path = path if path.is_absolute() else Path.cwd() / path
        if path.exists():
            self.confirm("Replace file", f"{one_line(str(path), 200)} exists. Replace it?",
                         lambda: self._export(path, preview), danger=True)
        else:
            self._export(path, preview)

    def _export(self, path: Path, preview: PrunePreview) -> None:
        """Write the export in a worker (quitting waits for it: the user chose it)."""
        self.session.run_export(path, partial(self._write_export, path, preview), "prune-export")

    def _write_export(self, path: Path, preview: PrunePreview) -> None:
        write_export(path, preview, self.session.brain.path)
        self.post_message(self.Exported(path, preview.drop_count))

    def on_prune_actions_exported(self, message: Exported) -> None:
        self.message = f"exported to {message.path} ({message.dropped:,} dropped)"
        self.update_status()
        self.notify(self.message, markup=False)

    # -- what CLEO injects ----------------------------------------------------------------
    def action_bridge(self) -> None:
        """CLEO's memory bridge, marked with the rows this preview would evict."""
        preview = self.preview
        if preview is None:
            ask(self, OpenBridge())
            return
        ask(self, OpenBridge(frozenset(preview.dropped_ids), f"the preview at {preview.budget:,} tokens"))
