"""Keys from one source: the bindings (each with an id) plus the user's keymap.

A pane declares its keys once, as `BINDINGS` with an `id` ("obs.evict"). The
user's `"keys": {"obs.evict": "E"}` in config.json becomes the app's keymap
(Textual's `App.set_keymap`), which the footer already follows. The help's key
tables and the command palette are generated here from the same bindings with
the same keymap applied, so a remapped key reads the same everywhere.
"""

from __future__ import annotations

import difflib
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


@dataclass(frozen=True)
class KeymapCheck:
    """The remaps kept (`keymap`) and, for each one dropped, a sentence saying why (`problems`)."""

    keymap: dict[str, str]
    problems: list[str]


def binding_keys(binding: BindingType, keymap: Mapping[str, str]) -> list[str]:
    """The keys any binding (a declared one, one without an id, or a tuple) answers to now."""
    if isinstance(binding, Binding):
        return live_keys(binding, keymap) if binding.id else [k.strip() for k in binding.key.split(",") if k.strip()]
    return [k.strip() for k in str(binding[0]).split(",") if k.strip()]


def check_keymap(keymap: Mapping[Any, Any], scopes: Mapping[str, Iterable[BindingType]]) -> KeymapCheck:
    """Keep the remaps that name a known action with keys no other binding answers to in any
    `scope` it belongs to (a scope: the bindings active together, e.g. a pane's, the app's and its
    table's). A remap naming an unknown action, giving no key, or clashing is dropped: that
    action keeps its default key, and the sentence says so."""
    kept: dict[str, str] = {}
    problems: list[str] = []
    scoped = {name: list(bindings) for name, bindings in scopes.items()}
    known = {b.id for bindings in scoped.values() for b in declared_bindings(bindings)}
    for action, keys in keymap.items():
        action_id, wanted = str(action), keys if isinstance(keys, str) else ""
        new_keys = [k.strip() for k in wanted.split(",") if k.strip()]
        if action_id not in known:
            near = difflib.get_close_matches(action_id, sorted(i for i in known if i), n=1)
            problems.append(f'keys: "{action_id}" is not an action of cleo-tui; the remap is ignored'
                            + (f" (did you mean {near[0]}?)" if near else "") + ".")
            continue
        if not new_keys:
            problems.append(f'keys: "{action_id}" is given no key; it keeps its default key.')
            continue
        clash = None
        for name, bindings in scoped.items():
            owner = next((b for b in declared_bindings(bindings) if b.id == action_id), None)
            if owner is None:
                continue
            trial = {**kept, action_id: ",".join(new_keys)}
            for other in bindings:
                if isinstance(other, Binding) and other.id == action_id:
                    continue
                taken = set(binding_keys(other, trial)) & set(new_keys)
                if taken:
                    what = other.description if isinstance(other, Binding) else str(other[-1])
                    clash = (", ".join(sorted(taken)), what or "another key", name, owner)
                    break
            if clash:
                break
        if clash is not None:
            key, what, name, owner = clash
            problems.append(f'keys: "{action_id}" → {key} clashes with {what} ({name}); '
                            f"{owner.description} keeps its default key {owner.key}.")
            continue
        kept[action_id] = ",".join(new_keys)
    return KeymapCheck(kept, problems)
