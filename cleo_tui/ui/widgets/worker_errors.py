"""Worker failures become popups wherever the worker ran.

Textual's Worker.StateChanged does not bubble, so every screen or widget that
starts workers mixes this in and hands failures to the app.
"""

from __future__ import annotations

from textual.app import App
from textual.worker import Worker, WorkerState


class ForwardWorkerErrors:
    """Mixin for a Textual node: its failed workers are reported by the app as popups."""

    app: App[object]

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            from cleo_tui.ui.widgets.chrome import cleo_app  # chrome builds on this mixin
            cleo_app(self.app).report_worker_failure(event.worker)
