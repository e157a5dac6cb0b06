"""The Textual face of cleo-tui."""
