"""Brains on disk: locating, opening, creating, reading. Imports nothing from Textual."""

from cleo_tui.brain.create import BrainPlan, CreatedBrain, create_brain, create_project_brain, plan_project_brain
from cleo_tui.brain.errors import (
    BrainError,
    BrainNotFound,
    BrainUnreadable,
    NotABrain,
    NotSQLite,
    ReadOnlyBrain,
    StaleState,
)
from cleo_tui.brain.kinds import KIND_CLEO, KIND_CLEO_LEGACY, KIND_CLEO_TUI, KIND_HIPPO, BrainKind
from cleo_tui.brain.store import Brain, files_to_suggest, locate_brain, open_brain

__all__ = [
    "KIND_CLEO",
    "KIND_CLEO_LEGACY",
    "KIND_CLEO_TUI",
    "KIND_HIPPO",
    "Brain",
    "BrainError",
    "BrainKind",
    "BrainNotFound",
    "BrainPlan",
    "BrainUnreadable",
    "CreatedBrain",
    "NotABrain",
    "NotSQLite",
    "ReadOnlyBrain",
    "StaleState",
    "create_brain",
    "create_project_brain",
    "files_to_suggest",
    "locate_brain",
    "open_brain",
    "plan_project_brain",
]
