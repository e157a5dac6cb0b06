"""Placeholder: filled in by its issue."""


def register(sub) -> None:
    pass
