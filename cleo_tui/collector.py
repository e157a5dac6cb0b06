"""Pausing Python's cyclic garbage collector while many long-lived objects are built or written.

A light module (no numpy, no brain): the CLI pauses it for a whole command, the pool
and tag builders around their work, the journal's chunked runs for their length. The
one pause of the whole program: counted across threads, so the collector comes back
only when the last holder leaves, whichever thread it is.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class _Holders:
    """Who holds the collector paused now, and what to do when the last of them leaves."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0              # pauses entered and not yet left, every thread together
        self.was_enabled = True     # the collector's state when the first of them entered
        self.collect_young = False  # one of them asked for a young collection on the way out
        self.freeze = False         # one of them asked for every object then alive to be frozen (`gc.freeze`)
        self.skip_young = False     # one of them asked for no young collection: the process is about to end
        self.froze = False          # this program froze objects (`freeze_now`, `freeze_on_leave`): see `freeze_again`


_holders = _Holders()


@contextmanager
def paused(collect_young: bool = False) -> Iterator[None]:
    """No cyclic collection inside; when the last pause of any thread ends, the collector is put back.

    Each full collection walks every live object, and building a large pool would
    trigger many of them while creating no cycles; memory is still freed by
    reference counting. Pauses nest and overlap across threads (a chunked write in a
    worker while the tags are built in another): the first one in turns the collector
    off, the last one out puts it back as the first found it. `collect_young`: on the
    way out of the last pause (if the collector was on), collect the young generation
    at once, explicitly: the automatic collection the next allocation would start can
    escalate into a full one (0.1-0.25 s at a million rows), which would then land
    inside a 10-row fold; an explicit young collection never escalates.
    """
    _enter()
    try:
        yield
    finally:
        _leave(collect_young)


def _enter() -> None:
    """Count one more holder; the first turns the collector off."""
    with _holders.lock:
        if _holders.count == 0:
            _holders.was_enabled = gc.isenabled()
            _holders.collect_young = _holders.freeze = _holders.skip_young = False
            gc.disable()
        _holders.count += 1


def freeze_on_leave() -> None:
    """Inside a pause: when the last pause ends (the collector on), freeze (`gc.freeze`, which costs
    nothing at once) instead of any young collection: every object alive then is left out of
    every later collection.

    For a large brain's tags: a collection, young or full, would walk each of their millions
    of objects (a young one took 0.2 s at 100,000 rows, more at a million, holding the GIL: no
    key is served meanwhile), and they hold no cycle, so reference counting frees them when
    they are dropped. The price: a cycle alive at that moment that becomes garbage later is
    never collected (hence only for large brains, whose tags dwarf it)."""
    with _holders.lock:
        if _holders.count:
            _holders.freeze = _holders.froze = True


def skip_young_on_leave() -> None:
    """Inside a pause: when the last pause ends, put the collector back without the young collection
    any pause asked for, nor the automatic one the next allocation would start (`_age_unwalked`).
    For a process about to end (a CLI command): that collection would only walk every object the
    command made, all of them young with the collector paused (0.08 s of CPU after `dedup` at
    100,000 demo rows for the one asked for), and none of them is needed longer."""
    with _holders.lock:
        if _holders.count:
            _holders.skip_young = True


def freeze_now() -> None:
    """Leave every object alive now out of later collections (`gc.freeze`, which costs nothing
    at once); the collector goes on collecting what is made after.

    For a process about to run for minutes with the collector on, long after its start-up: the
    app while a first scan's process runs. Its modules, widgets and caches (most of its objects,
    and long-lived) were walked again by every full collection, one every few seconds of paging,
    each holding the GIL 70 ms of CPU (125 ms at load) and every key with it. The price, as for
    `freeze_on_leave`: a cycle alive now that becomes garbage later is never collected."""
    _holders.froze = True
    gc.freeze()


def freeze_again() -> bool:
    """If this program already left objects out of collections (a large brain's tags: `freeze_now`,
    `freeze_on_leave`), freeze every object alive now as well (at once, or when the last pause ends);
    True if so. Nothing otherwise: a small brain's app never freezes.

    For the objects a process makes once, after its first freeze, and keeps: the app's help
    (every pane's module imported, its Markdown rendered: about 10,000 objects) was walked by
    every later full collection, and the first of those came inside the help's own thread,
    holding the GIL for 24 ms of CPU (measured at 1,000,000 rows, loaded machine)."""
    if not _holders.froze:
        return False
    with _holders.lock:
        if _holders.count:
            _holders.freeze = True
            return True
    gc.freeze()
    return True


def _leave(collect_young: bool) -> None:
    """Count one holder fewer; the last puts the collector back (a freeze, or else a young collection
    first, if asked)."""
    with _holders.lock:
        _holders.count -= 1
        _holders.collect_young = _holders.collect_young or collect_young
        if _holders.count or not _holders.was_enabled:
            return
        if _holders.freeze:
            gc.freeze()
        elif _holders.skip_young:
            _age_unwalked()
        elif _holders.collect_young:
            gc.collect(0)
        gc.enable()


def _age_unwalked() -> None:
    """Move every young object to the oldest generation without walking it (a freeze undone at once:
    two list splices), so the young collection the next allocation would start once the collector is
    back has nothing to walk. Counted allocations go on while it is off: after `dedup` at 100,000 demo
    rows that automatic collection walked every object the command made, 0.2-0.3 s of CPU. Not done
    when a freeze is in force (unfreezing would undo it); the collection then runs as before."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def holders() -> int:
    """How many pauses are in force now, every thread together."""
    return _holders.count
