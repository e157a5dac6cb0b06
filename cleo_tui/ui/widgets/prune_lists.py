"""The Prune pane's lists and dialogs: columns and cells of the dropped, protected, kept and runs
lists, the budget box, and the commit's confirmation (with its opt-in to hide from CLEO's search)."""

from __future__ import annotations

from textual import on
from textual.binding import Binding
from textual.widgets import Checkbox

from cleo_tui.brain.journal import Run
from cleo_tui.brain.rows import Row
from cleo_tui.memory.pruner import BadBudget, PoolEntry, parse_budget
from cleo_tui.recall.impact import RecallIndex
from cleo_tui.ui.widgets.inputs import SafeInput
from cleo_tui.ui.widgets.modals import ConfirmModal
from cleo_tui.ui.widgets.table import Column

BLOCKERS_SHOWN = 3
LISTS = ("dropped", "protected", "kept", "runs")

ENTRY_COLUMNS = [
    Column("rank", "#", 6, right=True),
    Column("id", "id", 16, middle=True),
    Column("coverage", "coverage", 10),
    Column("relevance", "relev.", 8),
    Column("created", "created", 10),
    Column("tokens", "tokens", 7, right=True),
    Column("recalled", "recall", 7, right=True, min_width=4),  # how many recorded retrievals returned it
    Column("last_recall", "last recall", 11, drop=1),
    Column("why", "why it ranks here (relevance from…)", None),
]
PROTECTED_COLUMNS = [
    Column("id", "id", 16, middle=True),
    Column("relevance", "relev.", 8),
    Column("tokens", "tokens↓", 7, right=True),
    Column("reasons", "protected because", None),
]
RUN_COLUMNS = [
    Column("run", "run", 6, right=True),
    Column("created", "when", 19),
    Column("evicted", "evicted", 8, right=True),
    Column("budget", "budget", 10, right=True),
    Column("tokenizer", "tokenizer", 11),
    Column("state", "state", 16),
    Column("scope", "scope", None),
]


# -- cells ----------------------------------------------------------------------------


def coverage_cell(entry: PoolEntry) -> tuple[str, str]:
    if entry.coverage == "uncited":
        return "uncited", "table--muted"
    if entry.coverage == "reinforced":
        return f"reinf. {entry.citation_count}", "table--reinforced"
    return f"cited {entry.citation_count}", "table--cited"


def relevance_cell(entry: PoolEntry) -> tuple[str, str]:
    return entry.relevance, {"critical": "table--critical", "high": "table--high",
                             "low": "table--low"}.get(entry.relevance, "")


def run_row(index: int, run: Run) -> Row:
    return {"id": run.id, "run": run}


class BudgetInput(SafeInput):
    """The budget box: ↑/↓ step finely, page up/down coarsely (the screen does the stepping);
    Esc leaves it as Enter does, for the list (as the search boxes' Esc does)."""

    BINDINGS = [
        Binding("escape", "submit", "Leave the budget box", show=False),
        Binding("up", "screen.step(1, 0)", "Budget up", show=False),
        Binding("down", "screen.step(-1, 0)", "Budget down", show=False),
        Binding("pageup", "screen.step(1, 1)", "Budget up (coarse)", show=False),
        Binding("pagedown", "screen.step(-1, 1)", "Budget down (coarse)", show=False),
    ]


def budget_problem(text: str) -> str | None:
    """Why the budget box's text cannot be committed (None: it is a budget), naming the largest allowed."""
    if not text.strip():
        return "The budget box is empty: type a budget such as 8000 or 12k."
    try:
        parse_budget(text)
    except BadBudget as exc:
        return str(exc)  # names the largest allowed budget only when the number is too large
    return None


class CommitModal(ConfirmModal):
    """The commit's danger confirm, with the opt-in to also hide the rows from CLEO's search (h)."""

    BINDINGS = [Binding("h", "toggle_hide", "Also hide from CLEO's search", show=False)]

    def __init__(self, title: str, body: str) -> None:
        super().__init__(title, body, confirm_label="Evict", danger=True)
        self.hide = False  # the opt-in, kept here: the checkbox is gone once the dialog closes

    @on(Checkbox.Changed, "#commit-hide")
    def hide_chosen(self, event: Checkbox.Changed) -> None:
        self.hide = event.value

    def on_mount(self) -> None:  # ConfirmModal.on_mount runs too (focus on Cancel)
        checkbox = Checkbox("Also hide from CLEO's search (h)",
                            id="commit-hide", compact=True)
        self.query_one(".dialog").mount(checkbox, before=self.query_one(".dialog-buttons"))

    def action_toggle_hide(self) -> None:
        checkbox = self.query_one("#commit-hide", Checkbox)
        checkbox.value = not checkbox.value


def run_cells(run: Run) -> dict[str, tuple[str, str]]:
    """A prune run's cells in the Runs list."""
    params = run.params
    budget = params.get("budget")
    return {
        "run": (str(run.id), ""),
        "created": (run.created_at, ""),
        "evicted": (f"{len(params.get('ids') or []):,}", ""),
        "budget": (f"{budget:,}" if isinstance(budget, int) else str(budget or ""), ""),
        "tokenizer": (str(params.get("tokenizer") or ""), ""),
        "state": (f"undone by run {run.undone_by}" if run.undone_by else "active",
                  "table--muted" if run.undone_by else "table--reinforced"),
        "scope": (str(params.get("scope") or "all"), ""),
    }


def recall_cells(index: RecallIndex | None, entry_id: str) -> dict[str, tuple[str, str]]:
    """How often recorded retrievals returned this row, and when last ("…" before the index is read)."""
    if index is None:
        return {"recalled": ("…", "table--muted"), "last_recall": ("", "")}
    recalls = index.recalls_of(entry_id)
    if not recalls.recalls:
        return {"recalled": ("–", "table--muted"), "last_recall": ("", "")}
    return {"recalled": (f"{recalls.recalls:,}×", "table--high" if recalls.used else ""),
            "last_recall": ((recalls.last_recalled_at or "")[:10], "")}
