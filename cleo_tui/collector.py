"""Pausing Python's cyclic garbage collector while many long-lived objects are built.

A light module (no numpy, no brain): the CLI pauses it for a whole command, the pool
and tag builders around their work.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused(collect_young: bool = False) -> Iterator[None]:
    """No cyclic collection inside; the collector is put back as it was after.

    Each full collection walks every live object, and building a large pool would
    trigger many of them while creating no cycles; memory is still freed by
    reference counting. `collect_young`: on the way out (if the collector was on),
    collect the young generation at once, explicitly: the automatic collection the
    next allocation would start can escalate into a full one (0.1-0.25 s at a
    million rows), which would then land inside a 10-row fold; an explicit young
    collection never escalates.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if collect_young:
                gc.collect(0)
            gc.enable()
