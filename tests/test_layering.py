"""The layers of cleo_tui, read from the source with `ast` (lazy imports inside functions count too).

    safe_text, config, collector  utilities
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
BASE = {"cleo_tui", "safe_text", "config", "collector"}  # the package root holds only __version__
ALLOWED: dict[str, set[str]] = {
    "safe_text": set(),
    "collector": set(),  # pausing the garbage collector
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
