"""Helpers for driving the app with Pilot: brains to open and ways to wait for workers."""

from __future__ import annotations

import atexit
import fcntl
import os
import shutil
import tempfile
from functools import cache
from pathlib import Path

from textual.worker import WorkerFailed

from cleo_tui.brain import Brain, open_brain
from cleo_tui.demo import generate_demo
from cleo_tui.demo.generator import demo_path
from tests.suite_speed import SHARED_DEMOS

HOSTILE_TITLE = "[bold red]x[/] and [link=http://example.com]click[/link]"
HOSTILE_NARRATIVE = ("before \x1b[31mred\x1b[0m \x1b]8;;http://evil.example\x07link\x1b]8;;\x07 "
                     "\x1b]52;c;aGk=\x07 \x00 after")


@cache
def _generated_demo(observations: int, seed: int) -> Path:
    """The demo brain of (observations, seed), generated once per run (in the run's shared folder,
    tests/suite_speed.py: the first worker to need it generates it, the others wait and copy it),
    else once per test process."""
    shared = os.environ.get(SHARED_DEMOS)
    if not shared or not Path(shared).is_dir():
        folder = tempfile.mkdtemp(prefix="cleo-tui-demo-")
        atexit.register(shutil.rmtree, folder, True)
        return generate_demo(folder, observations=observations, seed=seed)
    folder = Path(shared) / f"demo-{observations}-{seed}"
    with open(Path(shared) / f"demo-{observations}-{seed}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not demo_path(folder).is_file():
            shutil.rmtree(folder, ignore_errors=True)  # a worker that died while generating
            generate_demo(folder, observations=observations, seed=seed)
    return demo_path(folder)


def copy_demo(directory: str | Path, observations: int = 300, seed: int = 3) -> Path:
    """DIR/.cleo/cleo.db holding the demo brain of (observations, seed), as `generate_demo` writes
    it (the generator is deterministic), copied from one generated per process: generating costs
    a UI test a third of a second, copying a millisecond."""
    target = demo_path(directory)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_generated_demo(observations, seed), target)
    return target


def demo_brain(directory: Path, observations: int = 300, seed: int = 3, read_only: bool = False) -> Brain:
    """A small demo brain plus one hostile row of our own, opened by a relative path.

    The relative path keeps snapshots identical wherever the test runs; the caller
    must have chdir'd to `directory`.
    """
    copy_demo(directory, observations, seed)
    path = Path(".cleo/cleo.db")
    brain = open_brain(path)
    with brain.write() as conn:
        conn.execute(
            "INSERT INTO brain_observations(id, type, title, narrative, created_at) VALUES (?, ?, ?, ?, ?)",
            ("O-hostile", "discovery", HOSTILE_TITLE, HOSTILE_NARRATIVE, "2020-01-01 00:00:00"))
    if read_only:
        brain.close()
        brain = open_brain(path, read_only=True)
    return brain


async def settle(app, pilot) -> None:
    """Wait until every worker is done and the screen has caught up (twice: workers start workers)."""
    for _ in range(3):
        await pilot.pause()
        await app.workers.wait_for_complete()
    await pilot.pause()


async def settle_scrolled(app, pilot) -> None:
    """`settle`, then wait for the scroll that focusing a widget starts: Textual animates it, and
    a loaded machine can finish `settle` while the bar is still part-way there."""
    await settle(app, pilot)
    await pilot.wait_for_scheduled_animations()


async def settle_past_failure(app, pilot) -> None:
    """`settle` where a worker is meant to fail: Textual's wait for the workers raises WorkerFailed
    when one it waits on fails, which happens only if that worker was still running when the wait
    began (a loaded machine); a finished worker has left the app's list. So: wait again."""
    for _ in range(10):
        try:
            return await settle(app, pilot)
        except WorkerFailed:
            continue
    await settle(app, pilot)


def posted(messages: list, kind: type) -> list:
    """The messages of `kind` that a Pilot run's `message_hook` saw, each once (a bubbling message
    reaches the hook again at each parent), in the order they arrived."""
    return list({id(m): m for m in messages if isinstance(m, kind)}.values())


def footer_actions(screen) -> set[str]:
    """The actions the footer of `screen` offers now."""
    from cleo_tui.ui.widgets.footer import CleoFooter

    return {k.action for k in screen.query_one(CleoFooter).keys}


async def search_for_nothing(app, pilot) -> None:
    """In the Observations pane: a search no row matches, applied."""
    await pilot.press("slash")
    await pilot.press(*"zzqqxxnothing", "enter")
    await settle(app, pilot)
