"""The layers of cleo_tui, read from the source with `ast` (lazy imports inside functions count too).

    safe_text, config, collector, low_priority  utilities
    brain                       opening, schema, migrations, queries
    memory                      tokenizers, tags, pruner, curation
    llm, recall                 the observer and reflector; recall and traces (independent of each other)
    demo                        the demo brain generator (above brain and recall)
    ui, commands                the two faces: the Textual app and the command modules
    cli                         the command line (imports commands, never the reverse)

Only `ui` imports Textual or Rich.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "cleo_tui"
BASE = {"cleo_tui", "safe_text", "config", "collector", "low_priority"}  # the package root holds only __version__
ALLOWED: dict[str, set[str]] = {
    "safe_text": set(),
    "collector": set(),  # pausing the garbage collector
    "low_priority": set(),  # starting a child process below the app
    "config": {"safe_text"},
    "files": {"safe_text", "brain"},  # guarded file writing; its errors are BrainErrors
    "brain": set(BASE),
    "memory": BASE | {"files", "brain"},
    "llm": BASE | {"files", "brain", "memory"},
    "recall": BASE | {"files", "brain", "memory"},
    "demo": BASE | {"files", "brain", "memory", "recall"},
    "ui": BASE | {"files", "brain", "memory", "llm", "recall", "demo"},
    "commands": BASE | {"files", "brain", "memory", "llm", "recall", "demo"},
    "cli": BASE | {"commands", "brain", "ui"},
    "__main__": {"cli"},
    "cleo_tui": set(),
}
UI_LIBRARIES = {"textual", "rich"}
# Known, temporary exceptions: (importing file, imported layer) → why.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("commands/serve_cmd.py", "ui"): "serve starts the other face, the app, behind a web server",
}


def layer_of(module: str) -> str:
    """`cleo_tui.brain.store` → `brain`; `cleo_tui` → `cleo_tui`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, anywhere in the file, relative imports resolved."""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            found.add(".".join([*base, *([node.module] if node.module else [])]))
    return found


def violations() -> list[str]:
    """One line per import that crosses the layers the wrong way."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        mine = layer_of(name)
        relative = str(path.relative_to(PACKAGE))
        for target in sorted(imported_modules(path)):
            top = target.split(".")[0]
            if top in UI_LIBRARIES and mine != "ui":
                out.append(f"{relative} imports {target} (only ui/ may use Textual or Rich)")
            if top != "cleo_tui":
                continue
            theirs = layer_of(target)
            if theirs != mine and theirs not in ALLOWED[mine] and (relative, theirs) not in EXCEPTIONS:
                out.append(f"{relative} ({mine}) imports {target} ({theirs})")
    return out


def test_every_module_belongs_to_a_known_layer():
    layers = {layer_of(module_name(p)) for p in PACKAGE.rglob("*.py")}
    assert layers <= set(ALLOWED), f"add the new layer to ALLOWED: {layers - set(ALLOWED)}"


def test_imports_only_go_down_the_layers():
    assert violations() == []


def test_the_rule_catches_an_upward_import(tmp_path, monkeypatch):
    """The checker itself: a brain module reaching into recall, or a command into cli, is reported."""
    fake = tmp_path / "cleo_tui"
    (fake / "brain").mkdir(parents=True)
    (fake / "commands").mkdir()
    (fake / "brain" / "x.py").write_text("def f():\n    from cleo_tui.recall import traces\n")
    (fake / "commands" / "y.py").write_text("from ..cli import main\nimport rich\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    assert violations() == [
        "brain/x.py (brain) imports cleo_tui.recall (recall)",
        "commands/y.py (commands) imports cleo_tui.cli (cli)",
        "commands/y.py imports rich (only ui/ may use Textual or Rich)",
    ]


def test_the_exceptions_are_still_needed():
    """An exception whose import is gone must be deleted from EXCEPTIONS."""
    for relative, layer in EXCEPTIONS:
        targets = {layer_of(t) for t in imported_modules(PACKAGE / relative) if t.startswith("cleo_tui")}
        assert layer in targets, f"{relative} no longer imports {layer}: drop it from EXCEPTIONS"


# -- the layers inside ui/ (issue 30): app → panes → widgets → host ---------------------------
# A module may import its own rank or a lower one, never a higher: panes and widgets reach the
# app only through ui/host.py (the Host protocol, and the requests they post to it).
UI_RANKS: dict[str, int] = {
    "app": 3,  # the entry point and what only it uses: app.py, palette.py, web.py
    "panes": 2,  # ui/panes/*
    "widgets": 1,  # ui/widgets/*
    "host": 0,  # what all of them build on: host.py, session.py, messages.py, live.py, keys.py, help.py
}
UI_APP_LEVEL = {"cleo_tui.ui.app", "cleo_tui.ui.palette", "cleo_tui.ui.web"}
UI_ENTRY = "cleo_tui.ui.app"


def ui_rank(module: str) -> str:
    """The ui/ layer of a module of cleo_tui.ui."""
    if module in UI_APP_LEVEL:
        return "app"
    parts = module.split(".")
    if len(parts) > 3 and parts[2] in ("panes", "widgets"):
        return parts[2]
    return "host"


def ui_graph() -> dict[str, set[str]]:
    """Module → the ui modules it imports (anywhere in the file, type-only imports too).

    `from cleo_tui.ui.panes import history` counts as importing `cleo_tui.ui.panes.history`."""
    modules = {module_name(p): p for p in sorted((PACKAGE / "ui").rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = imported_modules(path)
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                module = ".".join([*base, *([node.module] if node.module else [])])
                targets |= {f"{module}.{alias.name}" for alias in node.names}
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def ui_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles among ui/'s modules (strongly connected components of more than one)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def ui_violations() -> list[str]:
    """One line per import inside ui/ that goes up its layers, or reaches app.py."""
    out = []
    for name, targets in sorted(ui_graph().items()):
        for target in sorted(targets):
            if target == UI_ENTRY and name != UI_ENTRY:
                out.append(f"{name} imports {target} (only the entry point is app.py)")
            elif UI_RANKS[ui_rank(target)] > UI_RANKS[ui_rank(name)]:
                out.append(f"{name} ({ui_rank(name)}) imports {target} ({ui_rank(target)})")
    return out


def test_the_ui_import_graph_has_no_cycle():
    assert ui_cycles(ui_graph()) == []


def test_ui_imports_go_down_its_layers_and_never_reach_the_app():
    assert ui_violations() == []


def test_the_ui_rules_catch_a_widget_reaching_up(tmp_path, monkeypatch):
    """The checker itself: a widget importing the app, a pane, and a cycle between two host modules."""
    ui = tmp_path / "cleo_tui" / "ui"
    (ui / "widgets").mkdir(parents=True)
    (ui / "panes").mkdir()
    (ui / "app.py").write_text("")
    (ui / "panes" / "p.py").write_text("")
    (ui / "widgets" / "w.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cleo_tui.ui.app import CleoApp\n"
        "def f():\n    from cleo_tui.ui.panes import p\n")
    (ui / "a.py").write_text("from cleo_tui.ui import b\n")
    (ui / "b.py").write_text("from . import a\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "cleo_tui")
    assert ui_violations() == [
        "cleo_tui.ui.widgets.w imports cleo_tui.ui.app (only the entry point is app.py)",
        "cleo_tui.ui.widgets.w (widgets) imports cleo_tui.ui.panes.p (panes)",
    ]
    assert ui_cycles(ui_graph()) == [["cleo_tui.ui.a", "cleo_tui.ui.b"]]


# -- one worker-to-UI style (issue 30): a pane's or widget's worker posts a typed message ------
# (a dataclass `Message` beside its handler) and never runs a callback on the UI thread through
# the app (`call_from_thread`) or the session (`from_worker`, the session's own, a model's).
UI_THREAD_CALLBACKS = {"call_from_thread", "from_worker"}


def thread_callback_uses() -> list[str]:
    """One line per use of a UI-thread callback in ui/panes or ui/widgets (attribute, name or string)."""
    out = []
    for folder in ("panes", "widgets"):
        for path in sorted((PACKAGE / "ui" / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                name = (node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name)
                        else node.value if isinstance(node, ast.Constant) else None)
                if name in UI_THREAD_CALLBACKS:
                    out.append(f"{path.relative_to(PACKAGE)}:{node.lineno} uses {name}")
    return out


def test_panes_and_widgets_hand_worker_results_back_as_messages_only():
    assert thread_callback_uses() == []


def test_the_worker_style_rule_catches_a_callback_through_the_app(tmp_path, monkeypatch):
    ui = tmp_path / "cleo_tui" / "ui"
    (ui / "panes").mkdir(parents=True)
    (ui / "widgets").mkdir()
    (ui / "panes" / "p.py").write_text("def done(self):\n    self.app.call_from_thread(self.show, 1)\n")
    (ui / "widgets" / "w.py").write_text("def f(s):\n    getattr(s, 'from_worker')(print)\n")
    (ui / "session.py").write_text("def f(app):\n    app.call_from_thread(print)\n")  # the session may
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "cleo_tui")
    assert thread_callback_uses() == ["ui/panes/p.py:2 uses call_from_thread", "ui/widgets/w.py:2 uses from_worker"]
