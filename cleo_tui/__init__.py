"""cleo-tui: inspect and curate an AI coding agent's long-term memory."""

__version__ = "0.1.0"
