"""The config file's settings that change what the memory layer computes, typed, with what is ignored.

A setting of the wrong kind falls back to its default rather than stop anything, so a
typo must be said: a prune run with recall-aware protection silently off evicts what
the user meant to keep. Both faces say `ignored_settings` at start (the TUI in a notification,
the CLI on stderr).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cleo_tui.config import protect_settings
from cleo_tui.memory.tokenizers import CHARS4, TOKENIZER_NAMES


def configured_tokenizer(settings: Mapping[str, Any]) -> str:
    """The tokenizer the config names (`tokenizer`), or chars4 when it names none cleo-tui has."""
    name = settings.get("tokenizer")
    return name if isinstance(name, str) and name in TOKENIZER_NAMES else CHARS4


def ignored_settings(settings: Mapping[str, Any]) -> list[str]:
    """Each setting ignored, in words: an unknown tokenizer, a `protect` section of the wrong kind."""
    found = []
    name = settings.get("tokenizer")
    if name is not None and configured_tokenizer(settings) != name:
        found.append(f"tokenizer: {str(name)[:80]!r} is not a tokenizer; using {CHARS4} "
                     f"(one of {', '.join(TOKENIZER_NAMES)}).")
    protect_problem = protect_settings(settings)[1]
    if protect_problem:
        found.append(protect_problem)
    return found
