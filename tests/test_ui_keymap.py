"""The user's key remaps are checked: an unknown action, no key, or a clash is dropped and said."""

from __future__ import annotations

from textual.binding import Binding

from cleo_tui.ui.keys import check_keymap

PANE = [Binding("p", "pin", "Pin", id="obs.pin"), Binding("e", "evict", "Evict", id="obs.evict"),
        Binding("v", "view", "Full text", id="obs.view")]
APP = [Binding("q", "quit", "Quit", id="app.quit"), Binding("escape", "cancel", "Stop waiting", id="app.cancel"),
       ("tab", "focus_next", "Focus next")]
TABLE = [Binding("down,j", "cursor_down", "Down")]
SCOPES = {"the Observations pane": [*PANE, *TABLE, *APP]}


def test_a_good_remap_is_kept():
    checked = check_keymap({"obs.evict": "E", "obs.view": "V,f"}, SCOPES)
    assert checked.keymap == {"obs.evict": "E", "obs.view": "V,f"} and checked.problems == []


def test_a_clash_an_unknown_action_and_a_missing_key_are_dropped_and_said():
    checked = check_keymap({"obs.evict": "p", "obs.evcit": "z", "obs.view": "", "obs.pin": "j",
                            "app.quit": "tab", 3: "x"}, SCOPES)
    assert checked.keymap == {}
    said = "\n".join(checked.problems)
    assert len(checked.problems) == 6
    assert '"obs.evict" → p clashes with Pin (the Observations pane); Evict keeps its default key e' in said
    assert '"obs.pin" → j clashes with Down' in said and '"app.quit" → tab clashes with Focus next' in said
    assert '"obs.evcit" is not an action of cleo-tui; the remap is ignored (did you mean obs.evict?)' in said
    assert '"3" is not an action of cleo-tui; the remap is ignored.' in said
    assert '"obs.view" is given no key' in said


def test_two_remaps_to_one_key_keep_the_first():
    checked = check_keymap({"obs.evict": "x", "obs.view": "x"}, SCOPES)
    assert checked.keymap == {"obs.evict": "x"}
    assert checked.problems == ['keys: "obs.view" → x clashes with Evict (the Observations pane); '
                                "Full text keeps its default key v."]


def test_a_swap_of_two_keys_is_a_clash_for_the_first_one_remapped():
    """Remaps are checked in order against the keys in force: e→p while p is still Pin's clashes."""
    checked = check_keymap({"obs.evict": "p", "obs.pin": "e"}, SCOPES)
    assert list(checked.keymap) == [] and len(checked.problems) == 2
