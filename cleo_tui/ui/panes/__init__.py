"""The panes: one screen per module."""
