"""Old home of the demo generator, now `cleo_tui.demo` (a re-export until `ui/welcome.py` moves over).

It sits in `brain/` but imports from above it: tests/test_layering.py names it as the
one allowed exception, to be deleted once nothing imports `cleo_tui.brain.demo`.
"""

from cleo_tui.demo.generator import generate_demo

__all__ = ["generate_demo"]
