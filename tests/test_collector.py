"""One garbage-collector pause for the whole program, counted across threads (issue 30.4).

Threads are stepped with events (each waits for the other's signal), never with sleeps.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from cleo_tui import collector


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    assert gc.isenabled() and collector.holders() == 0
    yield
    gc.enable()


def frozen(objects: list) -> set[bool]:
    """Whether each object is frozen (`gc.freeze`: no collection walks it), as a set. (Counting the
    frozen objects instead is not reproducible: any frozen object another thread frees leaves the count.)"""
    walked = {id(o) for o in gc.get_objects()}  # (every generation a collection walks)
    return {id(o) not in walked for o in objects}


def test_the_collector_comes_back_only_when_the_last_thread_leaves():
    entered, leave_first, first_left, leave_second = (threading.Event() for _ in range(4))
    seen: list[bool] = []

    def first() -> None:
        with collector.paused():
            entered.set()
            leave_first.wait()
        first_left.set()

    def second() -> None:
        entered.wait()
        with collector.paused():
            leave_first.set()
            first_left.wait()
            seen.append(gc.isenabled())  # the first thread has left: still paused for this one
            leave_second.wait()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    first_left.wait()
    assert collector.holders() == 1 and not gc.isenabled()
    leave_second.set()
    for thread in threads:
        thread.join()
    assert seen == [False] and gc.isenabled() and collector.holders() == 0


def test_nested_pauses_put_back_a_collector_that_was_off_as_off():
    gc.disable()
    with collector.paused(), collector.paused(collect_young=True):
        pass
    assert not gc.isenabled()


@contextmanager
def collections_started() -> Iterator[list[int]]:
    """The generation of each collection that starts inside, in order."""
    collections: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.callbacks.append(seen)
    try:
        yield collections
    finally:
        gc.callbacks.remove(seen)


def test_a_young_collection_asked_by_any_holder_runs_once_when_the_last_leaves():
    with collections_started() as collections:
        with collector.paused():
            with collector.paused(collect_young=True):
                pass
            assert collections == [] and not gc.isenabled()  # the outer pause still holds
        assert collections[:1] == [0] and gc.isenabled()


def test_a_process_about_to_end_skips_the_young_collection_a_pause_asked_for():
    # A CLI command (`cli.dispatch`): the young collection would only walk what the command made.
    with collections_started() as collections:
        with collector.paused():
            collector.skip_young_on_leave()
            with collector.paused(collect_young=True):
                pass
        assert collections == [] and gc.isenabled()
        with collector.paused(collect_young=True):
            pass
        assert collections[:1] == [0]  # the next pause collects as asked again


_AFTER_A_COMMAND = """
import gc
from cleo_tui import collector
walked = []
gc.callbacks.append(lambda phase, info: walked.append(info["generation"]) if phase == "start" else None)
with collector.paused():
    collector.skip_young_on_leave()
    made = [[n] for n in range(50_000)]  # what a command makes, all young with the collector paused
    assert gc.get_count()[0] >= 50_000
assert gc.isenabled() and walked == [], walked  # (the old way: a young collection at once, of all of them)
assert any(x is made for x in gc.get_objects(generation=2))  # moved to the oldest generation, unwalked
more = [[n] for n in range(2_000)]
assert walked and walked[0] == 0  # the collector is back: a young collection, of what was made since
print("ok")
"""


def test_a_process_about_to_end_leaves_what_it_made_out_of_the_next_young_collection():
    # Issue 33: allocations are counted while the collector is off, so the first allocation after it
    # came back started a young collection walking everything the command had made (0.2-0.3 s after
    # `dedup` at 100,000 demo rows). They are moved to the oldest generation unwalked instead. In a
    # process of its own: the suite keeps its heap frozen (tests/suite_speed.py), and then the move,
    # which thaws and freezes, is not made.
    done = subprocess.run([sys.executable, "-c", _AFTER_A_COMMAND], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok")


def test_a_pause_asked_to_freeze_freezes_instead_of_collecting_when_the_last_leaves():
    # Issue 33: a large brain's tags are frozen out of collections, which would walk their millions
    # of objects holding the GIL (no key served meanwhile); freezing costs nothing at once.
    with collections_started() as collections:  # (what was frozen stays so, as the suite's own heap does)
        with collector.paused(collect_young=True):
            with collector.paused():
                built = [[i] for i in range(1000)]
                collector.freeze_on_leave()
            assert frozen(built) == {False}  # the outer pause still holds
        assert collections == [] and gc.isenabled() and frozen(built) == {True}
        with collector.paused(collect_young=True):
            pass
        assert collections[:1] == [0]  # the next pause collects as asked again


def test_freezing_outside_a_pause_does_nothing():
    made = [[i] for i in range(100)]
    collector.freeze_on_leave()
    with collector.paused():
        pass
    assert frozen(made) == {False}


def test_freezing_again_freezes_only_in_a_program_that_froze_its_tags(monkeypatch):
    # Issue 33: a large brain's app freezes its help once made (every pane imported, its lines rendered),
    # so later full collections, which hold the GIL, do not walk it; a small brain's app never freezes.
    monkeypatch.setattr(collector._holders, "froze", False)
    kept = [[i] for i in range(1000)]
    assert not collector.freeze_again() and frozen(kept) == {False}
    collector.freeze_now()  # what a large brain's first scan does
    assert frozen(kept) == {True}
    later = [[i] for i in range(1000)]
    with collector.paused():
        assert collector.freeze_again()
        assert frozen(later) == {False}  # not inside a pause: when it ends
    assert frozen(later) == {True} and gc.isenabled()
    last = [[i] for i in range(1000)]
    assert collector.freeze_again() and frozen(last) == {True}  # outside a pause: at once
