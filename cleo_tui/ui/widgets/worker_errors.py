"""Worker failures become popups wherever the worker ran.

Textual's Worker.StateChanged does not bubble, so every screen or widget that
starts workers mixes this in and hands failures to the app.
"""

from __future__ import annotations

from textual.worker import Worker, WorkerState


class ForwardWorkerErrors:
    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            self.app.report_worker_failure(event.worker)
