"""Worker failures become popups wherever the worker ran, in words (`failure_text`), never a traceback.

Textual's Worker.StateChanged does not bubble, so every screen or widget that
starts workers mixes this in and hands failures to the app.
"""

from __future__ import annotations

import os
import traceback
from pathlib import Path

from textual.app import App
from textual.worker import Worker, WorkerState

from cleo_tui.brain import BrainError
from cleo_tui.brain.observation_reads import database_failure_text, is_database_error
from cleo_tui.config import cache_dir
from cleo_tui.ui.host import host_of


class ForwardWorkerErrors:
    """Mixin for a Textual node: its failed workers are reported by the app as popups."""

    app: App[object]

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            host_of(self.app).report_worker_failure(event.worker)


def failure_text(error: BaseException) -> tuple[str, str]:
    """The popup's title and text for a worker's failure (with CLEO_TUI_DEBUG=1, where its traceback went)."""
    if isinstance(error, BrainError):
        return "That did not work", str(error)
    where = log_failure(error)
    if is_database_error(error):
        title, body = database_failure_text(error)
    else:
        title, body = "Something went wrong", (f"{type(error).__name__}: {error}\n\nNothing was written "
                                               "unless a message said so.")
    if where:
        body += f"\n\nDetails were written to {where}."
    return title, body


def log_failure(error: BaseException) -> Path | None:
    """With CLEO_TUI_DEBUG=1, append the traceback to a log in the cache directory."""
    if not os.environ.get("CLEO_TUI_DEBUG"):
        return None
    path = cache_dir() / "cleo-tui.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as log:
        log.write("".join(traceback.format_exception(error)) + "\n")
    return path
