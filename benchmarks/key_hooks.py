"""Hooks `benchmarks.first_key` starts inside the app it opens: a line "act T" each time the table's
PageDown acts, and "frame T" each time a frame is written (T: `time.monotonic()`, the benchmark's
clock too). For measuring only.

The hooks go in once the app itself has imported Textual: importing it first would settle
Textual's settings before the app made its own (ui/switching.frames_sooner)."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import time
from collections.abc import Callable
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import Any


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls `then()` right after the module `name` is first imported (once)."""

    def __init__(self, name: str, then: Callable[[], None]) -> None:
        self.name, self.then = name, then

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> ModuleSpec | None:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        run_module = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run_module(module)
            self.then()

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install(log: str) -> None:
    """Log page keys' actions and frames to `log` (one line each, appended as they come), from
    the moment the app imports its table widget."""
    sys.meta_path.insert(0, _AfterImport("cleo_tui.ui.widgets.table", lambda: _hook(log)))


def _hook(log: str) -> None:
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
