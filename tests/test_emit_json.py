"""JSON output: `emit_json_with_rows` (long lists made and written a part at a time) prints the
very bytes `emit_json` prints for the whole, and `prune --json` is the preview's `to_json`."""

from __future__ import annotations

import json

import pytest

from cleo_tui.brain import open_brain
from cleo_tui.cli import main
from cleo_tui.commands.common import emit_json, emit_json_with_rows
from cleo_tui.memory import pruner_plan
from cleo_tui.memory.pruner import prepare_pool
from tests.pruner_fixtures import add_observation, add_pattern, new_brain

HOSTILE = ["plain", "café ☕ 𝄞", "\x1b[31mred\x00\x7f", 'quote " and \\ backslash', "line\nbreak", ""]


def _parts(rows, size):
    return [rows[at:at + size] for at in range(0, len(rows), size)]


def _printed(capsysbinary, emit, *args):
    emit(*args)
    return capsysbinary.readouterr().out


@pytest.mark.parametrize("size", [1, 2, 5, 100])
def test_rows_in_parts_print_the_bytes_of_the_whole(capsysbinary, size):
    dropped = [{"id": f"O-{i}{text}", "tokens": i, "why": text, "nested": {"a": [text, None, True]}}
               for i, text in enumerate(HOSTILE * 2)]
    protected = [{"id": text, "reasons": [text, "unique identifier: x"]} for text in HOSTILE]

    def head():
        return {"budget": 10, "session": "ses\n  \"dropped\": []", "dropped": [], "protected": [],
                "empty": [], "impact": {"lost": [{"id": "é"}]}, "run_id": None}

    whole = {**head(), "dropped": dropped, "protected": protected}
    expected = _printed(capsysbinary, emit_json, whole)
    got = _printed(capsysbinary, emit_json_with_rows, head(),
                   lambda: {"dropped": iter(_parts(dropped, size)), "protected": iter(_parts(protected, size)),
                            "empty": iter([[], []])})
    assert got == expected
    assert expected.isascii() and b"\x1b" not in expected and b"\x7f" not in expected


def test_a_lone_surrogate_falls_back_to_the_whole_as_before(capsysbinary):
    rows = [{"id": "O-1"}, {"id": "bad \udcff name"}]
    expected = _printed(capsysbinary, emit_json, {"dropped": rows, "kept": 1})
    got = _printed(capsysbinary, emit_json_with_rows, {"dropped": [], "kept": 1},
                   lambda: {"dropped": iter(_parts(rows, 1))})
    assert got == expected and b"\\udcff" in got


def test_prune_json_is_the_previews_to_json(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(pruner_plan, "JSON_PART", 3)  # several parts of each list
    brain = new_brain(tmp_path)
    for i in range(20):
        add_observation(brain, f"O-{i:02d}{HOSTILE[i % len(HOSTILE)]}", f"routine work {i} {HOSTILE[i % 6]} " * 5,
                        created_at=f"2026-01-{i % 28 + 1:02d} 10:00:00")
    add_observation(brain, "O-keep", "The user prefers terse commit messages")
    add_observation(brain, "O-keep2", "error: exit code 1 in src/app/main.py")
    add_pattern(brain, "P-1", "a pattern", cites=["O-00", "O-01"])
    brain.close()
    assert main(["prune", "--project", str(tmp_path), "--budget", "300", "--json"]) == 0
    out = capsys.readouterr().out
    brain = open_brain(tmp_path / ".cleo" / "cleo.db", read_only=True)
    try:
        shape = prepare_pool(brain, "chars4").preview(300).to_json()
    finally:
        brain.close()
    data = json.loads(out)
    assert len(data["dropped"]) > 3 and len(data["protected"]) >= 2
    assert {k: v for k, v in data.items() if k != "impact"} == shape
