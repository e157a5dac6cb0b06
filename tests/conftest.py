"""Shared fixtures: every test gets private config/cache directories and no network keys."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import Phase, settings

from tests import suite_speed

# Reproducible property tests: with CI set, every run draws the same examples and a failure is
# reported as found (no shrinking phase that can take minutes); locally, new examples each run.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True,
                          phases=(Phase.explicit, Phase.reuse, Phase.generate))
# Hypothesis itself derandomizes its defaults when CI is set: "dev" says it does not, explicitly.
settings.register_profile("dev", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))

# Compiled test modules (assertions rewritten) and cleo_tui's bytecode are kept, in __pycache__, for every process
# of the run — xdist's workers and the CLI subprocesses — even where PYTHONDONTWRITEBYTECODE is set: see suite_speed.
suite_speed.keep_bytecode()

# The apps that Pilot runs in this process draw 5 frames a second on their own, not 60: every frame a
# test looks at is still drawn (see suite_speed.slow_headless_frames).
suite_speed.slow_headless_frames()
# Each piece of Textual CSS is parsed once per test process, not once per app (see suite_speed.share_css_parses).
suite_speed.share_css_parses()


def pytest_configure(config):
    """In the process that starts xdist's workers (or runs alone): compile the test modules and
    cleo_tui once, before any worker needs them, and give the run one folder of shared demo brains."""
    if not hasattr(config, "workerinput"):
        suite_speed.precompile(config, Path(__file__).resolve().parent)
        suite_speed.share_demo_folder(config)


def pytest_collection_finish(session):
    """In each process that runs tests: the collected suite is frozen out of full collections."""
    suite_speed.settle_heap()


@pytest.fixture(autouse=True)
def _isolated_environment(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "CLEO_OBSERVER_MODEL", "ANTHROPIC_BASE_URL",
                 "OPENAI_BASE_URL", "CLEO_TUI_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    modals = sys.modules.get("cleo_tui.ui.widgets.modals")  # only where a UI test imported it
    if modals is not None:  # Pilot presses e, y at once: no danger-dialog guard (test_ui_session tests it)
        monkeypatch.setattr(modals.ConfirmModal, "guard_seconds", 0.0)
    live = sys.modules.get("cleo_tui.ui.live")  # the live-brain watcher polls only when a test says so
    if live is not None:  # (tests/test_ui_live.py drives it with check_now)
        monkeypatch.setattr(live.BrainWatcher, "interval", 3600.0)
    monkeypatch.setenv("CLEO_TUI_NOW", "2026-06-01T09:00:00+00:00")  # the demo's "now": the TUI's liveness
    # warnings count days from it, so the header and the History pane read the same every day


@pytest.fixture
def brain(tmp_path, monkeypatch):
    """A small demo brain in the test's own directory, which is also the working directory
    (the UI shows the brain's path, and a relative one keeps snapshots the same everywhere).
    Test modules that need another brain define their own `brain` fixture."""
    from tests.ui_helpers import demo_brain

    monkeypatch.chdir(tmp_path)
    opened = demo_brain(tmp_path)
    yield opened
    opened.close()


@pytest.fixture
def app(brain):
    """The app on the `brain` fixture (the snapshot tests drive it)."""
    from cleo_tui.ui.app import CleoApp

    return CleoApp(brain=brain)
