"""What makes the suite cheaper to run without changing any test: bytecode kept, work done once per run.

- **Bytecode kept.** With PYTHONDONTWRITEBYTECODE set (as on this machine and its CI), every
  process — each of xdist's workers, each `python -m cleo_tui` a test starts — compiled cleo_tui and
  pytest re-rewrote the assertions of every test module: collecting the suite cost 10.3 s of CPU
  per process instead of 3.3 s with the compiled modules kept. `keep_bytecode` lets the test run
  write bytecode where Python keeps it (`__pycache__` beside each module, ignored by git), and
  passes that on to the processes it starts. Not in a folder of its own (`sys.pycache_prefix`),
  as it first was: Python then looks for every module's bytecode there, the standard library's
  and the virtual environment's too (which pip compiled into their `__pycache__`), so a fresh
  clone's run compiled every library again, in every worker at once: importing cleo_tui's UI,
  the LLM SDKs, Hypothesis and datasketch cost 11.1 s of CPU in a new folder against 4.6 s with
  the bytecode pip wrote (each worker and each CLI subprocess paid its share). Measured on two fresh
  clones side by side, one process running four test files (test_llm_observer, test_duplicates,
  test_ui_welcome, test_cli_basics): 26.8 -> 20.9 s of CPU on the first run, 16.0 vs 14.5 s once warm.
- **Compiled once, before the workers start.** The workers start together, so each would miss
  the cache and rewrite every module itself; `precompile` does it once in the process that starts
  them (pytest's own rewrite, stored where pytest looks for it).
- **Demo brains generated once per run.** `share_demo_folder` names one folder for the run, in
  which `tests.ui_helpers.copy_demo` keeps each demo brain it generated, for every worker.
- **Fewer headless frames.** The apps under Pilot draw 5 frames a second on their own instead of
  60 (`slow_headless_frames`): a test sees only the frames Pilot draws when it pauses or presses.
- **CSS parsed once per process** (`share_css_parses`), not once per app a test starts.
- **Full garbage collections that walk the test process's own heap.** A test process holds
  what no user's process does: pytest's collected items and reports, every module of the suite,
  and Textual's per-process caches filled by the apps of earlier tests (its method caches keep
  up to 1,024 styles caches of closed apps, each with its rendered lines). Each full (oldest
  generation) collection walked all of that, about twice per Pilot test: 0.1-0.25 s each, 29% of
  tests/test_ui_prune.py's CPU. `settle_heap` freezes what exists once the tests are collected
  (never collected again) and lets a full collection wait for ten times as many young ones;
  young collections are Python's default. Measured with -n 0 in one sitting, before and after:
  tests/test_ui_review.py and test_ui_session.py 50.7 -> 35.5 s CPU (collecting 15.7 -> 5.0 s);
  test_ui_observations, test_ui_traces, test_ui_snapshots, test_ui_snapshots_prune 54.2 -> 38.9 s.
  The whole suite (-n 2, two sittings): 389 -> 345 s CPU, peak RSS unchanged (491 MB).
"""

from __future__ import annotations

import compileall
import gc
import os
import shutil
import sys
import tempfile
from pathlib import Path

SHARED_DEMOS = "CLEO_TUI_TEST_DEMOS"  # the run's folder of generated demo brains (see share_demo_folder)


def keep_bytecode() -> None:
    """Write bytecode (beside the sources) in this process and the processes it starts, when it was off."""
    if not sys.dont_write_bytecode and not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return
    sys.dont_write_bytecode = False
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def precompile(config, tests: Path) -> None:
    """Compile cleo_tui and the test helpers, and rewrite the test modules as pytest does, once.

    Only where bytecode is written; a module whose cached code is current is skipped. The
    rewrite uses pytest's own functions (pinned pytest): if they moved, nothing is compiled
    ahead and each process compiles for itself as before.
    """
    if sys.dont_write_bytecode or config.getoption("assertmode", "rewrite") != "rewrite":
        return
    compileall.compile_dir(str(tests.parent / "cleo_tui"), quiet=2)
    compileall.compile_dir(str(tests), quiet=2, maxlevels=0, rx=_TestModule())
    try:
        from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc, _rewrite_test, _write_pyc, get_cache_dir
        from _pytest.assertion.rewrite import assertstate_key as state_key
    except ImportError:
        return
    state = config.stash.get(state_key, None)
    if state is None:
        return
    for module in [*sorted(tests.glob("test_*.py")), tests / "conftest.py"]:
        pyc = get_cache_dir(module) / (module.name[:-3] + PYC_TAIL)
        if _read_pyc(module, pyc, state.trace) is None:
            pyc.parent.mkdir(parents=True, exist_ok=True)
            source_stat, code = _rewrite_test(module, config)
            _write_pyc(state, code, source_stat, pyc)


class _TestModule:
    """compileall's `rx`: skip the test modules (pytest rewrites those), compile the helpers."""

    def search(self, path: str) -> bool:
        name = Path(path).name
        return name.startswith("test_") or name == "conftest.py"


def share_demo_folder(config) -> None:
    """One folder for the run's generated demo brains, removed when the run ends."""
    if os.environ.get(SHARED_DEMOS):
        return
    folder = tempfile.mkdtemp(prefix="cleo-tui-test-demos-")
    os.environ[SHARED_DEMOS] = folder
    config.add_cleanup(lambda: (shutil.rmtree(folder, True), os.environ.pop(SHARED_DEMOS, None)))


HEADLESS_FPS = 5  # frames a second an app under Pilot draws on its own (Textual's default: 60)


def slow_headless_frames(fps: int = HEADLESS_FPS) -> None:
    """Let the screens of the apps this process runs under Pilot refresh `fps` times a second.

    Textual draws a screen on a timer, 60 times a second (`textual.screen.UPDATE_PERIOD`, read each
    time a screen starts its timer). Under Pilot nobody sees those frames: `pilot.pause()` and every
    key press draw what is pending before the test goes on (`Screen._on_timer_update`), and
    `export_screenshot` renders the whole screen. The timer's frames in between were rendered
    for nothing. Measured in one sitting, -n 0, test_ui_traces, _observations, _live, _session,
    _startup, test_ui_snapshots and _snapshots_narrow (92 tests): 93.8 s of CPU at 60 frames a
    second, 65.1 s at 5, 64.5 s at 1 (but 30% more wall time: some steps wait for a frame). The
    whole suite (-n 3, 1,096 tests, the machine shared: CPU seconds inflate with its load), before
    and after: 350 -> 225 s of CPU at load 4-5 (5 min 49 s -> 4 min 26 s), 373 -> 302 s at load 7-9
    (12 min 26 s -> 7 min 26 s); the whole suite also passes at 1 frame a second.
    Only this process: the apps that tests start as subprocesses (pseudo-terminal, CLI, browser) keep
    Textual's rate, as a user's do.
    """
    import textual.screen

    assert hasattr(textual.screen, "UPDATE_PERIOD"), "Textual renamed its frame period: update slow_headless_frames"
    textual.screen.UPDATE_PERIOD = 1 / fps


YOUNG_COLLECTION_THRESHOLD = 5_000  # allocations between young collections (Python's default: 700)


def settle_heap() -> None:
    """Freeze the objects of the collected suite and make collections rarer (see above).

    Young collections wait for 5,000 allocations instead of 700: an app under Pilot allocates
    and frees (by reference count) hundreds of thousands of short-lived objects a test — strips,
    segments, styles — and at 700 enough of them were alive at each young collection to be
    promoted and walked again by the middle and full ones. Measured with -n 0, test_ui_prune and
    test_ui_session, two sittings: time in collections 4.9-5.5 s -> 3.6 s, of which full
    collections 2.9-3.2 -> 0.35-0.42 s (12 -> 8 of them); 50,000 was no better than 700.
    Nothing the tests assert changes: every object created afterwards is collected as before,
    and a test that calls `gc.collect()` still gets a full collection at once."""
    gc.collect()
    gc.freeze()
    _, middle, _ = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, middle, 100)


def share_css_parses() -> None:
    """Parse each piece of Textual CSS once per test process instead of once per app.

    Every app keeps its own cache of parsed CSS (`Stylesheet._parse_rules`, keyed by the CSS
    text), so each app a test starts parsed the same widget CSS again, several times over as
    its panes mounted: 17 parses of ~22 sources an app. Here the parsed rule sets are shared by
    every app of the process, keyed as Textual keys them plus the CSS variables they were parsed
    with (the theme). The rule sets are read-only once parsed (an app copies their styles onto
    its nodes), as they already are between the parses of one app. Measured: 0.054 -> 0.019 s
    of CPU parsing CSS per app start (8 starts, each opening three panes).
    Only this process's apps under Pilot and snapshot tests: the apps that tests start as
    subprocesses parse as a user's do.
    """
    from textual.css.stylesheet import Stylesheet

    parse_rules = Stylesheet._parse_rules
    assert getattr(parse_rules, "__name__", "") == "_parse_rules", "Textual moved its CSS parse: see share_css_parses"
    parsed: dict[tuple, list] = {}

    def shared_parse_rules(self, css, read_from, is_default_rules=False, tie_breaker=0, scope=""):
        key = (css, read_from, is_default_rules, tie_breaker, scope, tuple(self._variables.items()))
        rules = parsed.get(key)
        if rules is None:
            rules = parsed[key] = parse_rules(self, css, read_from, is_default_rules, tie_breaker, scope)
        return rules

    Stylesheet._parse_rules = shared_parse_rules
