"""Keys from one source: the bindings (each with an id) plus the user's keymap.

A pane declares its keys once, as `BINDINGS` with an `id` ("obs.evict"). The
user's `"keys": {"obs.evict": "E"}` in config.json becomes the app's keymap
(Textual's `App.set_keymap`), which the footer already follows. The help's key
tables and the command palette are generated here from the same bindings with
the same keymap applied, so a remapped key reads the same everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from textual.app import App
from textual.binding import Binding, BindingType


@dataclass(frozen=True)
class KeyedAction:
    """One binding as the palette and the help show it: its name, its live key, what it does."""

    binding: Binding
    name: str
    key: str
    help: str


def declared_bindings(bindings: Iterable[BindingType]) -> list[Binding]:
    """The `Binding`s with an id among a class's BINDINGS (tuples are not user-remappable)."""
    return [b for b in bindings if isinstance(b, Binding) and b.id]


def live_keys(binding: Binding, keymap: Mapping[str, str]) -> list[str]:
    """The keys that trigger `binding` now: the keymap's, else its own."""
    keys = keymap.get(binding.id or "") or binding.key
    return [k.strip() for k in keys.split(",") if k.strip()]


def key_label(app: App[Any], binding: Binding, keymap: Mapping[str, str], every: bool = False) -> str:
    """How the live key of `binding` is written: as the footer does (`every`: all its keys, "a / b")."""
    remapped = bool(binding.id and keymap.get(binding.id))
    if binding.key_display and not remapped:
        return binding.key_display
    keys = live_keys(binding, keymap)
    labels = [app.get_key_display(binding.with_key(key=k, key_display=None)) for k in keys]
    return " / ".join(labels) if every else labels[0]


def palette_name(binding: Binding) -> str:
    """The name a binding has in the palette: pane switches read "Go to …"."""
    if (binding.id or "").startswith("pane."):
        return f"Go to {binding.description}"
    return binding.description


def keyed_actions(app: App[Any], bindings: Iterable[BindingType], keymap: Mapping[str, str],
                  help_texts: Mapping[str, str] | None = None) -> list[KeyedAction]:
    """Every declared binding with its live key, once per id (in declaration order)."""
    seen: set[str] = set()
    actions: list[KeyedAction] = []
    for binding in declared_bindings(bindings):
        if binding.id in seen:
            continue
        seen.add(binding.id or "")
        text = (help_texts or {}).get(binding.id or "") or binding.tooltip or binding.description
        actions.append(KeyedAction(binding, palette_name(binding), key_label(app, binding, keymap, every=True), text))
    return actions


def keys_table(actions: Iterable[KeyedAction], extra_rows: Iterable[tuple[str, str]] = ()) -> str:
    """A markdown table `| key | action |`: the fixed rows first, then the bindings."""
    lines = ["| key | action |", "|-----|--------|"]
    lines += [f"| {key} | {text} |" for key, text in extra_rows]
    lines += [f"| {md_key(a.key)} | {a.help} |" for a in actions]
    return "\n".join(lines)


def md_key(key: str) -> str:
    """A key label that cannot break a markdown table cell."""
    return key.replace("|", "\\|")
