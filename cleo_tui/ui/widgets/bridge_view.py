"""What CLEO injects: its memory bridge, section by section, with tokens and marks, now and after a step.

`BridgeScreen(brain, evicting, step)` is given the brain and, from a pane with a pending step
(the Prune pane's preview), the ids that step would evict. It reads the bridge in a worker
(`memory.bridge.read_bridge`), shows each item's line exactly as CLEO writes it (controls made
visible, markup not read), and marks rows that are evicted, hidden from CLEO's search, or that the
step would evict — all of which CLEO injects anyway. `g` asks CLEO itself to regenerate the file
(`cleo refresh-memory`) after a confirmation; cleo-tui never writes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from cleo_tui.brain.clock import current_time
from cleo_tui.brain.store import Brain
from cleo_tui.memory.bridge import Bridge, read_bridge
from cleo_tui.memory.bridge_project import RefreshOutcome, cleo_executable, project_dir, refresh_through_cleo
from cleo_tui.memory.bridge_sections import BridgeItem
from cleo_tui.memory.tokenizers import CHARS4, TOKENIZER_NAMES, get_tokenizer
from cleo_tui.safe_text import one_line, plural, printable
from cleo_tui.ui.widgets.modals import ConfirmModal, MessageModal, TextViewer
from cleo_tui.ui.widgets.worker_errors import ForwardWorkerErrors

MARK_STYLES = {"evicted": "bold yellow", "hidden": "magenta", "evicting": "bold red", "missing": "dim"}
NOW, AFTER, INTENDED = "now", "after", "intended"


@dataclass(eq=False)
class BridgeRead(Message):
    """The worker's bridge, for the screen that asked (the newest read wins)."""

    generation: int
    bridge: Bridge


@dataclass(eq=False)
class BridgeRefreshed(Message):
    """CLEO's `cleo refresh-memory` ran (or could not start): its answer, for the screen that asked."""

    outcome: RefreshOutcome


def item_text(item: BridgeItem, show_evicting: bool, tokenizer: str | None, instead: bool = False) -> Text:
    """One item: its tokens, CLEO's line (literal, on one line), then its marks (`instead`: it takes the
    place of a row left out, as eviction intends)."""
    text = Text(f"{item.tokens:>4} ", style="dim")
    if tokenizer and item.tokenizer_tokens is not None:
        text.append(f"{item.tokenizer_tokens:>4} ", style="dim italic")
    text.append(one_line(item.line))
    for mark in item.marks:
        if mark == "evicting" and not show_evicting:
            continue
        text.append(f"  {mark}", style=MARK_STYLES[mark])
    if instead:
        text.append("  instead", style="bold green")
    if item.problem:
        text.append(f"  CLEO stops here: {one_line(item.problem)}", style="bold red")
    return text


def bridge_text(bridge: Bridge, view: str, step: str | None) -> Text:
    """The whole view: the headline, CLEO's mode, the handoff, each section, then what the marks mean.

    `view`: NOW (CLEO's bridge, marks of evicted and hidden rows), AFTER (the same, with the rows the
    step evicts marked) or INTENDED (`bridge.intended`: evicted rows and the step's left out)."""
    after = view == AFTER
    shown = bridge.intended if view == INTENDED and bridge.intended is not None else bridge
    instead: set[str] = set(bridge.differences(shown)[1]) if shown is not bridge else set()
    text = Text()
    extra = f" · {shown.tokenizer_tokens:,} {shown.tokenizer}" if shown.tokenizer else ""
    text.append(f"{plural(len(shown.items), 'item')} · {plural(shown.tokens, 'token')} (4 chars a token{extra})",
                style="bold")
    text.append(f" · at {bridge.generated_at}, " + ("as CLEO would write it\n" if shown is bridge else
                                                   "had CLEO's queries skipped evicted rows\n"))
    if shown is not bridge:
        left_out = bridge.differences(shown)[0]
        text.append(one_line(f"Not what CLEO does: evicted rows{' and the step' + chr(39) + 's' if step else ''} "
                             f"left out ({len(left_out)} of CLEO's), the next rows in CLEO's order in their "
                             f"places ({len(instead)}, marked instead).") + "\n", style="bold yellow")
    if after and step:
        text.append(one_line(bridge.after_line(step)) + "\n", style="bold yellow")
    after_line = shown.after_line() if shown.evicting_count else None
    for line in shown.summary_lines():
        if line != after_line:
            text.append(one_line(line) + "\n", style="yellow")
    text.append(one_line(bridge.settings.mode_note) + ".\n", style="dim")
    disk = bridge.on_disk
    if disk.exists:
        text.append(one_line(f"On disk: {disk.path} (written {disk.written_at or '?'}) "
                             + ("says the same." if disk.matches else "differs from this.")) + "\n", style="dim")
    handoff = bridge.handoff
    text.append(f"\nLast Session · {handoff.tokens} tok", style="bold")
    text.append(f" · {one_line(handoff.session_id) if handoff.state == 'found' else handoff.state}\n")
    for line in handoff.lines[2:-1]:
        text.append(f"     {one_line(line)}\n")
    if handoff.problem:
        text.append(f"     CLEO stops here: {one_line(handoff.problem)}\n", style="bold red")
    elif handoff.state != "found" and handoff.note:
        text.append(f"     {one_line(handoff.note)}\n", style="dim")
    for section in shown.sections:
        text.append(f"\n{section.title} · {len(section.items)} · {section.tokens} tok\n", style="bold")
        if section.note:
            text.append(f"     {one_line(section.note)}\n", style="dim")
        for item in section.items:
            text.append_text(item_text(item, after, shown.tokenizer, item.id in instead))
            text.append("\n")
    text.append("\nMarks: evicted = invalid_at is set · hidden = quality below CLEO's search floor (0.3) · "
                "evicting = this step evicts it — CLEO's bridge reads neither, so it injects them all.",
                style="dim")
    return text


class BridgeScreen(ForwardWorkerErrors, ModalScreen[None]):
    """The bridge as CLEO would write it; with a pending step, `a` switches between now and after it."""

    DEFAULT_CSS = """
    BridgeScreen #bridge-scroll { height: 1fr; }
    """

    BINDINGS = [
        Binding("escape,q", "close", "Close", id="bridge.close"),
        Binding("a", "toggle_view", "Next view", id="bridge.view",
                tooltip="Now · after the pending step · as eviction intends (evicted rows left out)"),
        Binding("v", "view_text", "As written", id="bridge.text", tooltip="The whole file as CLEO writes it"),
        Binding("g", "regenerate", "Regenerate", id="bridge.regenerate",
                tooltip="Ask CLEO to regenerate its bridge (`cleo refresh-memory`; asks first)"),
        Binding("r", "reload", "Reload", id="bridge.reload", tooltip="Read the brain again"),
    ]

    def __init__(self, brain: Brain, evicting: frozenset[str] = frozenset(), step: str | None = None,
                 tokenizer: str | None = None) -> None:
        super().__init__(classes="modal")
        self.brain = brain
        self.evicting = evicting
        self.step = step
        self.tokenizer = tokenizer if tokenizer in TOKENIZER_NAMES and tokenizer != CHARS4 else None
        self.view = AFTER if step else NOW
        self.bridge: Bridge | None = None
        self.generation = 0

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label(self._title(), id="bridge-title", classes="dialog-title")
            with VerticalScroll(id="bridge-scroll"):
                yield Static(Text("Reading the bridge…", style="italic"), id="bridge-body")
            yield Label(self._hint(), id="bridge-hint", classes="dialog-hint")

    def _title(self) -> Text:
        where = {AFTER: f"after {one_line(self.step or '', 60)}", INTENDED: "as eviction intends (not CLEO)"}
        return Text(f"What CLEO injects at session start — {where.get(self.view, 'now')}")

    def views(self) -> list[str]:
        """The views this screen offers, in the order `a` steps through them."""
        return [NOW, *([AFTER] if self.step else []), INTENDED]

    def _hint(self) -> Text:
        keys = ["esc close", "a view", "v text", "r reload"]
        if cleo_executable() and project_dir(self.brain) is not None and not self.brain.read_only:
            keys.append("g regenerate (CLEO)")
        return Text(" · ".join(keys))

    def on_mount(self) -> None:
        for part in ("#bridge-title", "#bridge-hint"):  # the app's dialog margins: rows an 80×24 screen needs
            self.query_one(part).styles.margin = 0
        self.load()

    def load(self) -> None:
        self.generation += 1
        self._read(self.generation)

    @work(thread=True, group="bridge", exclusive=True, exit_on_error=False)
    def _read(self, generation: int) -> None:
        counter = get_tokenizer(self.tokenizer).count_text if self.tokenizer else None
        bridge = read_bridge(self.brain, current_time(), self.evicting, counter, self.tokenizer, with_intended=True)
        self.post_message(BridgeRead(generation, bridge))

    def on_bridge_read(self, message: BridgeRead) -> None:
        if message.generation == self.generation:
            self.bridge = message.bridge
            self.show()

    def show(self) -> None:
        if self.bridge is None:
            return
        self.query_one("#bridge-title", Label).update(self._title())
        self.query_one("#bridge-body", Static).update(bridge_text(self.bridge, self.view, self.step))

    def action_close(self) -> None:
        self.dismiss(None)

    def action_toggle_view(self) -> None:
        views = self.views()
        self.view = views[(views.index(self.view) + 1) % len(views)] if self.view in views else NOW
        self.show()

    def action_view_text(self) -> None:
        if self.bridge is not None:
            if self.view == INTENDED and self.bridge.intended is not None:
                self.app.push_screen(TextViewer("The memory bridge as eviction intends (CLEO does not write this)",
                                                self.bridge.intended.text))
            else:
                self.app.push_screen(TextViewer("The memory bridge as CLEO writes it", self.bridge.text))

    def action_reload(self) -> None:
        self.load()

    def action_regenerate(self) -> None:
        if self.brain.read_only:
            self.notify(f"This brain is open read-only ({self.brain.read_only_reason}): cleo-tui does not start "
                        "CLEO's writes either. Run `cleo refresh-memory` yourself.", severity="warning")
            return
        project = project_dir(self.brain)
        if project is None:
            self.notify("This brain is not in a CLEO project's .cleo folder: CLEO cannot regenerate its bridge "
                        "from here.", severity="warning")
            return
        if cleo_executable() is None:
            self.notify("CLEO's `cleo` command is not on PATH: install CLEO, or run `cleo refresh-memory` where "
                        "it is.", severity="warning")
            return
        mode = self.bridge.settings.mode_note if self.bridge else ""
        body = (f"Run `cleo refresh-memory` in {printable(project)}?\n\nCLEO regenerates "
                f"{printable(project / '.cleo' / 'memory-bridge.md')} itself; cleo-tui writes nothing.\n\n"
                f"{printable(mode)}.")
        def answered(yes: bool | None) -> None:
            if yes:
                self._run_refresh(project)

        self.app.push_screen(ConfirmModal("Regenerate CLEO's bridge", body, confirm_label="Run"), answered)

    @work(thread=True, group="bridge-refresh", exclusive=True, exit_on_error=False)
    def _run_refresh(self, project: Path) -> None:
        self.post_message(BridgeRefreshed(refresh_through_cleo(project)))

    def on_bridge_refreshed(self, message: BridgeRefreshed) -> None:
        outcome = message.outcome
        if outcome.error:
            body = f"`cleo refresh-memory` failed: {outcome.error}."
        else:
            body = (f"`cleo refresh-memory` answered (exit {outcome.returncode}):\n\n"
                    f"{outcome.stdout}{outcome.stderr}".rstrip())
        self.app.push_screen(MessageModal("CLEO's answer", body, error=not outcome.ok))
        self.load()
