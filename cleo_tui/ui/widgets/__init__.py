"""Widgets and modal screens the panes are built from."""
