"""`cleo-tui history` and the liveness keys of `info`: JSON keys, 80 columns, user mistakes exit 2."""

from __future__ import annotations

import json

import pytest

from cleo_tui.brain import open_brain
from cleo_tui.cli import main
from tests.brain_fixtures import make_cleo_consolidated
from tests.recall_fixtures import make_hippo_store

DAY_KEYS = {"day", "added", "added_by_source", "evicted", "live", "live_tokens", "observer_notes", "reflections",
            "recalls"}


@pytest.fixture
def project(tmp_path):
    db = make_cleo_consolidated(tmp_path / ".cleo" / "cleo.db")
    brain = open_brain(db)
    with brain.write() as conn:
        conn.executemany(
            "INSERT INTO brain_observations (id, type, title, narrative, created_at, source_type, invalid_at) "
            "VALUES (?, 'discovery', ?, ?, ?, ?, ?)", [
                ("O-1", "first", "The first thing " * 30, "2026-04-01 10:00:00", "agent", None),
                ("O-2", "second \x1b[31m[bold]", "Evicted by CLEO's reflector", "2026-04-02 10:00:00", "manual",
                 "2026-04-03 09:00:00"),
                ("O-3", "third", "a note", "2026-04-03 11:00:00", "observer-compressed", None)])
        conn.execute("INSERT INTO brain_patterns (id, type, pattern, context, extracted_at) "
                     "VALUES ('P-1', 'workflow', 'A pattern', '', '2026-04-03 09:00:00')")
        conn.execute("INSERT INTO brain_page_edges (from_id, to_id, edge_type, provenance, created_at) VALUES "
                     "('pattern:P-1', 'observation:O-2', 'supersedes', 'reflector-synthesized:x', "
                     "'2026-04-03 09:00:00'), ('pattern:P-1', 'observation:O-gone', 'cites', NULL, "
                     "'2026-04-03 09:00:00')")
    brain.close()
    return tmp_path


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_history_json_has_the_days_keys(project, capsys):
    code, out, err = run(capsys, "history", "--project", str(project), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert [d["day"] for d in data["days"]] == ["2026-04-01", "2026-04-02", "2026-04-03"]
    assert all(set(d) == DAY_KEYS for d in data["days"])
    third = data["days"][2]
    assert third["evicted"] == {"cleo-reflector": 1}
    assert (third["live"], third["observer_notes"], third["reflections"]) == (2, 1, 1)
    assert data["days"][1]["added_by_source"] == {"manual": 1}
    assert data["tokenizer"] == "chars4"
    assert data["missing"] == 1  # O-gone, named by an edge only


def test_one_missing_id_is_said_in_the_singular(project, capsys):
    code, out, _ = run(capsys, "history", "--project", str(project))
    assert code == 0 and "missing: 1 id is named by edges, traces, outcomes or the journal but held by no row" \
        in " ".join(out.split())


def test_since_limits_the_days(project, capsys):
    code, out, _ = run(capsys, "history", "--project", str(project), "--since", "2026-04-03", "--json")
    assert code == 0
    assert [d["day"] for d in json.loads(out)["days"]] == ["2026-04-03"]


def test_one_memory_json(project, capsys):
    code, out, err = run(capsys, "history", "O-2", "--project", str(project), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert set(data) == {"id", "kind", "state", "title", "written", "journal", "edges", "cause", "mentions",
                         "traces", "cleo_marks", "keep_in_cleo"}
    assert data["state"] == "evicted" and data["cause"]["cause"] == "cleo-reflector"
    assert data["cause"]["reflections"][0]["node_id"] == "pattern:P-1"
    assert set(data["written"]) == {"at", "source_type", "session_id", "agent", "type", "source_confidence"}


def test_a_missing_id_is_listed_with_where_it_is_named(project, capsys):
    code, out, _ = run(capsys, "history", "O-gone", "--project", str(project))
    assert code == 0
    assert "O-gone  (unknown, missing)" in out
    assert "deleted outside cleo-tui" in out
    assert "pattern:P-1 -cites-> observation:O-gone" in out


@pytest.mark.parametrize("argv", [("history",), ("history", "O-2"), ("history", "O-gone")])
def test_text_output_fits_80_columns_and_carries_no_control_bytes(project, capsys, argv):
    code, out, _ = run(capsys, *argv, "--project", str(project))
    assert code == 0
    assert out.strip()
    assert all(len(line) <= 80 for line in out.splitlines()), out
    assert "\x1b" not in out


@pytest.mark.parametrize("argv, words", [
    (("history", "--since", "2026-02-30"), "--since wants a date as YYYY-MM-DD"),
    (("history", "--since", "yesterday"), "--since wants a date as YYYY-MM-DD"),
    (("history", "O-nowhere"), "No memory 'O-nowhere'"),
    (("history", "O-1", "--since", "2026-04-01"), "does not apply to one memory"),
])
def test_user_mistakes_are_one_paragraph_and_exit_2(project, capsys, argv, words):
    code, out, err = run(capsys, *argv, "--project", str(project))
    assert code == 2
    assert words in err and "Traceback" not in err
    assert err.count("\n") == 1 and out == ""


def test_info_json_gains_liveness(project, capsys):
    code, out, err = run(capsys, "info", "--project", str(project), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert {"db", "kind", "observations", "patterns", "learnings", "traces"} <= set(data)
    live = data["liveness"]
    assert set(live) == {"observer_last_run", "reflector_last_run", "reflector_evidence", "consolidation_last",
                         "consolidation_table", "dream_state", "warnings"}
    assert live["observer_last_run"] == "2026-04-03 11:00:00"
    assert live["reflector_last_run"] == "2026-04-03 09:00:00"


def test_info_text_shows_the_agents(project, capsys):
    code, out, _ = run(capsys, "info", "--project", str(project))
    assert code == 0
    assert "observer:      last note 2026-04-03 11:00:00" in out
    assert "consolidation: no brain_consolidation_events table" in out


def test_history_of_a_hippo_store(tmp_path, capsys):
    db = make_hippo_store(tmp_path / "hippo.db")
    code, out, _ = run(capsys, "history", "mem-gone", "--db", str(db), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["state"] == "forgotten" and data["traces"][0]["trace_id"] == 1
    code, out, _ = run(capsys, "history", "--db", str(db), "--json")
    assert code == 0 and json.loads(out)["days"]
