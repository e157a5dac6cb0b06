"""Parsing the model's answers: fences, prose, wrong types, limits, invented ids."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cleo_tui.llm.parsing import Unparsable, extract_json, parse_notes, parse_reflection

IDS = ["O-1", "O-2", "O-3"]
NOTE = {"date": "2026-11-30", "priority": 2, "observation": "Chose X", "source_ids": ["O-1", "O-2"]}


@pytest.mark.parametrize("text", [
    json.dumps([NOTE]),
    "```json\n" + json.dumps([NOTE]) + "\n```",
    "```\n" + json.dumps([NOTE]) + "\n```",
    "Here are the notes you asked for:\n" + json.dumps([NOTE]) + "\nLet me know if you need more.",
    "Sure! ```json\n" + json.dumps([NOTE], indent=2) + "\n``` Hope this helps [1].",
])
def test_notes_found_in_fences_and_prose(text):
    parsed = parse_notes(text, IDS)
    assert parsed.notes == [NOTE]
    assert parsed.dropped_ids == []


@pytest.mark.parametrize("text", ["", "   \n", "I could not find anything worth noting."])
def test_no_json_is_unparsable(text):
    with pytest.raises(Unparsable):
        parse_notes(text, IDS)


def test_truncated_array_is_unparsable_not_an_inner_value():
    whole = json.dumps([NOTE, NOTE])
    with pytest.raises(Unparsable):
        parse_notes(whole[: whole.rindex("source_ids") + 5], IDS)  # inner ["O-1","O-2"] must not count


def test_truncated_object_is_unparsable_not_an_inner_pattern():
    whole = json.dumps({"patterns": [{"pattern": "p", "context": "c"}], "learnings": [{"insight": "i"}]})
    with pytest.raises(Unparsable):
        parse_reflection(whole[:-20], IDS)


def test_invented_ids_dropped_and_reported():
    note = {**NOTE, "source_ids": ["O-1", "O-404", "O-1", 7, None, "O-3"]}
    parsed = parse_notes(json.dumps([note]), IDS)
    assert parsed.notes[0]["source_ids"] == ["O-1", "O-3"]
    assert parsed.dropped_ids == ["O-404", "7"]


def test_wrong_types_limits_and_ranges():
    notes = [
        {"date": "yesterday", "priority": "9", "observation": "x" * 500 + "\nsecond line", "source_ids": ["O-1"]},
        {"date": "2026-01-02T10:00:00Z", "priority": -3, "observation": "ok", "source_ids": []},
        {"date": "2026-01-02", "priority": "high", "observation": "default priority", "source_ids": ["O-2"]},
        {"priority": 1, "observation": "", "source_ids": ["O-1"]},          # empty text: not a note
        {"priority": 1, "observation": "no ids", "source_ids": "O-1"},      # ids not an array
        "just a string",
    ]
    parsed = parse_notes(json.dumps(notes), IDS)
    assert [n["priority"] for n in parsed.notes] == [5, 1, 3]
    assert len(parsed.notes[0]["observation"]) == 300 and "\n" not in parsed.notes[0]["observation"]
    assert parsed.notes[0]["date"] != "yesterday" and len(parsed.notes[0]["date"]) == 10
    assert parsed.notes[1]["date"] == "2026-01-02"
    assert parsed.rejected == 3


def test_raw_newlines_inside_strings_are_accepted():
    text = '[{"date": "2026-11-30", "priority": 2, "observation": "line one\nline two", "source_ids": ["O-1"]}]'
    assert parse_notes(text, IDS).notes[0]["observation"] == "line one line two"


def test_reflection_clamps_and_limits():
    answer = {
        "patterns": [{"pattern": f"p{i}", "context": "c" * 400} for i in range(8)] + [{"context": "no text"}],
        "learnings": [{"insight": "a", "confidence": 7}, {"insight": "b", "confidence": -1},
                      {"insight": "c"}, {"insight": "d", "confidence": "0.35"}, "plain insight"],
        "superseded": ["O-2", {"id": "O-3", "reason": "repeated in O-1"}, "O-99", {"id": "O-2"}],
    }
    parsed = parse_reflection("Reflection:\n" + json.dumps(answer), IDS)
    assert len(parsed.patterns) == 5 and all(len(p["context"]) == 150 for p in parsed.patterns)
    assert [learning["confidence"] for learning in parsed.learnings] == [1.0, 0.1, 0.7, 0.35, 0.7]
    assert parsed.superseded == [{"id": "O-2", "reason": ""}, {"id": "O-3", "reason": "repeated in O-1"}]
    assert parsed.dropped_ids == ["O-99"]


def test_reflection_of_wrong_shape_is_unparsable():
    with pytest.raises(Unparsable):
        parse_reflection(json.dumps([NOTE]), IDS)


def test_extract_prefers_fenced_block_over_prose_brackets():
    text = "Notes [see below]:\n```json\n[1, 2]\n```"
    assert extract_json(text, list) == [1, 2]


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=300))
def test_any_text_parses_or_is_unparsable(text):
    for parse in (parse_notes, parse_reflection):
        try:
            parse(text, IDS)
        except Unparsable:
            pass
