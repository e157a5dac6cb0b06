"""The suite itself: reproducible property tests under CI, and plain `pytest` collects every module."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hypothesis import Phase, settings

ROOT = Path(__file__).resolve().parent.parent


def test_ci_profile_is_derandomized_and_does_not_shrink():
    ci = settings.get_profile("ci")
    assert ci.derandomize and ci.database is None
    assert Phase.shrink not in ci.phases
    assert not settings.get_profile("dev").derandomize


def test_the_loaded_profile_follows_the_ci_variable():
    expected = bool(os.environ.get("CI")) and not os.environ.get("HYPOTHESIS_PROFILE")
    if expected:
        assert settings.default.derandomize
    elif not os.environ.get("HYPOTHESIS_PROFILE"):
        assert not settings.default.derandomize


def test_plain_pytest_collects_modules_of_both_kinds():
    """`pytest` (the script, not `python -m pytest`): the root is not on sys.path by itself."""
    script = Path(sys.executable).with_name("pytest")
    done = subprocess.run([str(script), "--collect-only", "-q", "-p", "no:cacheprovider",
                           "tests/test_recall.py", "tests/test_llm_reflector.py", "tests/test_tags.py"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "errors" not in done.stdout.splitlines()[-1]


def test_the_collected_suite_is_frozen_out_of_full_collections():
    """tests/suite_speed.settle_heap ran in this process: full collections skip the collected suite
    (pytest's items, the modules) and wait for a hundred young ones."""
    import gc

    assert gc.get_freeze_count() > 10_000
    assert gc.get_threshold()[2] == 100
