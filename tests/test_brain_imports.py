"""The domain packages never import Textual: the CLI and scripts stay light and testable."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

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


def test_the_cli_info_path_does_not_import_textual():
    code = ("import sys\nfrom cleo_tui import cli\nfrom cleo_tui.commands import brain_cmds\n"
            "print('textual' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
