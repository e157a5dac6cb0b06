"""Brains on disk: locating, opening, creating, reading. Imports nothing from Textual."""

from cleo_tui.brain.errors import (
    BrainError, BrainNotFound, BrainUnreadable, NotABrain, NotSQLite, ReadOnlyBrain, StaleState,
)
from cleo_tui.brain.store import (
    KIND_CLEO, KIND_CLEO_LEGACY, KIND_CLEO_TUI, KIND_HIPPO, Brain, create_brain, locate_brain,
    open_brain,
)

__all__ = [
    "Brain", "BrainError", "BrainNotFound", "BrainUnreadable", "NotABrain", "NotSQLite",
    "ReadOnlyBrain", "StaleState", "KIND_CLEO", "KIND_CLEO_LEGACY", "KIND_CLEO_TUI", "KIND_HIPPO",
    "create_brain", "locate_brain", "open_brain",
]
