"""The secrets view: what a scan of every text column found, masked; `r` asks to redact them.

The screen is given a way to open a read-only view of the brain (it scans in a worker) and
dismisses with the scan when the user asks to redact, so the owner confirms and writes: the
view itself never writes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, Static

from cleo_tui.brain.store import Brain
from cleo_tui.memory.redaction import scanned
from cleo_tui.memory.secrets import SecretScan, scan_brain
from cleo_tui.safe_text import one_line, plural

SHOWN = 2000  # rows listed; `cleo-tui secrets --json` lists every finding
CLOSE_KEY = "esc close"
REDACT_KEY = "r redact all (asks first; cannot be undone) · "


class SecretsScreen(ModalScreen[SecretScan | None]):
    """Findings of a secrets scan; dismisses with the scan on `r` (redact) or None on Esc."""

    DEFAULT_CSS = """
    SecretsScreen { align: center middle; }
    SecretsScreen > Vertical { width: 100%; max-width: 130; height: 90%; border: thick $warning;
                               background: $surface; padding: 0 1; }
    SecretsScreen #secrets-status { height: auto; }
    SecretsScreen DataTable { height: 1fr; }
    SecretsScreen #secrets-keys { height: auto; color: $text-muted; }
    """
    BINDINGS: ClassVar = [
        Binding("r", "redact", "Redact all", id="secrets.redact"),
        Binding("escape,q", "close", "Close", id="secrets.close"),
    ]

    @dataclass(eq=False)
    class ScanDone(Message):
        scan: SecretScan

    @dataclass(eq=False)
    class ScanProgress(Message):
        done: int
        total: int

    def __init__(self, open_reader: Callable[[], Brain], read_only_reason: str | None = None) -> None:
        super().__init__()
        self.open_reader = open_reader
        self.read_only_reason = read_only_reason
        self.scan: SecretScan | None = None

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text("Secrets in the brain"), classes="dialog-title")
            yield Static(Text("Scanning every text column…"), id="secrets-status")
            yield DataTable(cursor_type="row", zebra_stripes=True)
            yield Static(Text(CLOSE_KEY), id="secrets-keys")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("table", "row", "column", "kind", "preview (masked)")
        table.display = False  # until the scan finds something (`show`)
        table.focus()
        self.run_scan()

    @work(thread=True, exclusive=True, exit_on_error=False)
    def run_scan(self) -> None:
        def progress(done: int, total: int) -> None:
            self.post_message(self.ScanProgress(done, total))

        reader = self.open_reader()
        try:
            scan = scan_brain(reader, progress)
        finally:
            reader.close()
        self.post_message(self.ScanDone(scan))

    def on_secrets_screen_scan_progress(self, message: ScanProgress) -> None:
        if self.scan is None:
            percent = message.done * 100 // message.total if message.total else 0
            self.query_one("#secrets-status", Static).update(Text(f"Scanning every text column… {percent}%"))

    def on_secrets_screen_scan_done(self, message: ScanDone) -> None:
        self.show(message.scan)

    def show(self, scan: SecretScan) -> None:
        """List the findings (at most SHOWN) and say what was scanned."""
        self.scan = scan
        table = self.query_one(DataTable)
        table.clear()
        for f in scan.findings[:SHOWN]:
            table.add_row(*(Text(one_line(v, w)) for v, w in ((f.table, 28), (f.row_id, 24), (f.column, 20),
                                                              (f.kind, 22), (f.preview, 40))))
        more = len(scan.findings) - SHOWN
        status = (f"{plural(len(scan.findings), 'possible secret')} in {scanned(scan)}; previews are masked."
                  if scan.findings else f"No secrets found in {scanned(scan)}.")
        if more > 0:
            status += f" The first {SHOWN:,} are listed; `cleo-tui secrets --json` lists all."
        if scan.findings and self.read_only_reason:
            status += f" Read-only ({self.read_only_reason}): redaction is not possible here."
        self.query_one("#secrets-status", Static).update(Text(status))
        table.display = bool(scan.findings)  # (nothing found: the sentence alone)
        redactable = scan.findings and not self.read_only_reason
        self.query_one("#secrets-keys", Static).update(Text((REDACT_KEY if redactable else "") + CLOSE_KEY))

    def action_redact(self) -> None:
        if self.scan is None:
            self.notify("Still scanning.", severity="warning")
        elif not self.scan.findings:
            self.notify("Nothing to redact.")
        elif self.read_only_reason:
            self.notify(f"This brain is read-only ({self.read_only_reason}).", severity="warning", markup=False)
        else:
            self.dismiss(self.scan)

    def action_close(self) -> None:
        self.dismiss(None)
