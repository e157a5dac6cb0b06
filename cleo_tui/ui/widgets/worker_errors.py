"""Worker failures become popups wherever the worker ran.

Textual's Worker.StateChanged does not bubble, so every screen or widget that
starts workers mixes this in and hands failures to the app.
"""

from __future__ import annotations

from textual.app import App
from textual.worker import Worker, WorkerState

from cleo_tui.ui.host import host_of


class ForwardWorkerErrors:
    """Mixin for a Textual node: its failed workers are reported by the app as popups."""

    app: App[object]

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            host_of(self.app).report_worker_failure(event.worker)
