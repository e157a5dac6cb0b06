"""The domain packages never import Textual, and the CLI loads heavy libraries only when a command needs them."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
import tempfile
from pathlib import Path

import cleo_tui

DOMAIN_PACKAGES = ("cleo_tui.brain", "cleo_tui.memory", "cleo_tui.llm", "cleo_tui.recall", "cleo_tui.demo")


def _all_modules() -> list[str]:
    """Every module of the domain packages, found on disk (new modules are checked too)."""
    names = []
    for info in pkgutil.walk_packages(cleo_tui.__path__, "cleo_tui."):
        if info.name.startswith(DOMAIN_PACKAGES) or info.name in DOMAIN_PACKAGES:
            names.append(info.name)
    return names


def test_domain_packages_do_not_import_textual():
    modules = _all_modules()
    assert "cleo_tui.brain.store" in modules and "cleo_tui.demo.generator" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"imported: {result.stdout.strip()}"


def test_no_command_module_imports_textual():
    code = ("import importlib, sys\nfrom cleo_tui import cli\nfrom cleo_tui.commands import COMMANDS\n"
            "for module in set(COMMANDS.values()):\n    importlib.import_module(module)\n"
            "cli.build_parser()\nprint('textual' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_version_and_light_commands_load_no_heavy_library():
    """`--version` and `info` stay fast: no sqlite-utils (it loads numpy), LLM clients or Textual."""
    heavy = ("sqlite_utils", "numpy", "textual", "httpx2", "anthropic", "openai", "tiktoken")
    code = ("import sys\nfrom cleo_tui import cli\n"
            "try:\n    cli.main(['--version'])\nexcept SystemExit:\n    pass\n"
            "cli.main(['info', '--db', sys.argv[1]])\n"
            f"print('loaded:' + ','.join(m for m in {heavy!r} if m in sys.modules))")
    db = Path(tempfile.mkdtemp()) / "missing.db"  # info fails cleanly: the import path is what counts
    result = subprocess.run([sys.executable, "-c", code, str(db)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "loaded:", result.stdout
