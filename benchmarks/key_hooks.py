"""Hooks `benchmarks.first_key` starts inside the app it opens: a line "act T" each time the table's
PageDown acts, and "frame T" each time a frame is written (T: `time.monotonic()`, the benchmark's
clock too). For measuring only."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any


def install(log: str) -> None:
    """Log page keys' actions and frames to `log` (one line each, appended as they come)."""
    import textual.app

    from cleo_tui.ui.widgets import table

    out = Path(log).open("a", buffering=1)
    display = textual.app.App._display

    def displayed(app: Any, screen: Any, renderable: Any) -> None:
        display(app, screen, renderable)
        if renderable is not None:
            out.write(f"frame {time.monotonic()}\n")

    textual.app.App._display = displayed  # type: ignore[method-assign, assignment]
    page_down = table.LineTable.action_page_down

    def acted(widget: Any) -> None:
        out.write(f"act {time.monotonic()}\n")
        page_down(widget)

    table.LineTable.action_page_down = acted  # type: ignore[method-assign, assignment]
