"""`cleo-tui recall`, `outcome` and `traces` end to end, and the demo's traces."""

from __future__ import annotations

import json
import random

import pytest

from cleo_tui.cli import main
from cleo_tui.demo.traces import FORGOTTEN_ID, add_demo_traces
from cleo_tui.recall.export import read_export
from cleo_tui.recall.reader import list_traces, trace_outcomes, trace_results
from tests.recall_fixtures import make_big_brain, make_brain, make_hippo_store

ODD_ID = "O-'quote\"-ü"


@pytest.fixture
def db(tmp_path):
    brain = make_brain(tmp_path)
    with brain.write() as conn:  # hostile text must print as data
        conn.execute("INSERT INTO brain_observations (id, type, title, narrative) VALUES "
                     "('O-evil', 'discovery', 'database \x1b]8;;http://x\x07[bold]link\x1b[0m', 'database')")
    brain.close()
    return str(tmp_path / ".cleo" / "cleo.db")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_recall_why_prints_chains_and_writes_a_trace(db, capsys):
    code, out, err = run(capsys, "recall", "database schema", "--why", "--db", db)
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert "O-aaa-1" in lines[0]
    assert lines[1].strip().startswith("base ") and "→ recency ×" in lines[1] and "→ diversity ×" in lines[1]
    assert "\x1b" not in out and "\x07" not in out and "␛" in out
    assert "trace 1 written" in out


def test_recall_json_then_outcome_then_traces(db, capsys, tmp_path):
    code, out, _ = run(capsys, "recall", "database", "--limit", "3", "--json", "--db", db)
    payload = json.loads(out)
    assert code == 0 and payload["trace_id"] == 1 and len(payload["results"]) == 3
    assert set(payload["results"][0]) == {"rank", "memory_id", "kind", "title", "score", "base", "created_at"}
    shown = [r["memory_id"] for r in payload["results"]]

    code, out, _ = run(capsys, "outcome", "--bad", shown[-1], "--json", "--db", db)
    assert code == 0 and json.loads(out) == {"outcome_id": 1, "trace_id": 1, "outcome": "negative",
                                             "memory_ids": [shown[-1]]}
    code, out, _ = run(capsys, "outcome", "--good", "--db", db)
    assert code == 0 and "positive outcome on trace 1 for 3 memories" in out

    code, out, _ = run(capsys, "traces", "--json", "--db", db)
    listing = json.loads(out)
    assert listing["count"] == 1 and listing["traces"][0]["outcome"] == "mixed"
    assert "query" not in json.dumps(listing).replace("query_hash", "").replace("query_length", "")

    code, out, _ = run(capsys, "traces", "--show", "1", "--db", db)
    assert code == 0 and "[observation, live]" in out and "negative at" in out

    target = tmp_path / "t.jsonl"
    code, out, _ = run(capsys, "traces", "--export", str(target), "--db", db)
    assert code == 0 and "Exported 1 trace" in out
    [record] = read_export(target)
    assert [s["memory_id"] for s in record["shown"]] == shown
    assert [o["outcome"] for o in record["outcomes"]] == ["negative", "positive"]


def test_odd_ids_through_the_cli(db, capsys):
    run(capsys, "recall", "ünïcode", "--db", db)
    code, out, _ = run(capsys, "outcome", "--good", ODD_ID, "--json", "--db", db)
    assert code == 0 and json.loads(out)["memory_ids"] == [ODD_ID]


def test_user_mistakes_are_one_paragraph(db, capsys, tmp_path):
    code, _, err = run(capsys, "outcome", "--good", "--db", db)
    assert code == 2 and "no recall to credit" in err and "Traceback" not in err
    code, _, err = run(capsys, "recall", "database", "--limit", "0", "--db", db)
    assert code == 2 and "--limit" in err
    code, _, err = run(capsys, "recall", "   ", "--db", db)
    assert code == 2 and "no words" in err
    code, _, err = run(capsys, "traces", "--show", "42", "--db", db)
    assert code == 2 and "no trace 42" in err
    code, _, err = run(capsys, "recall", "x", "--project", str(tmp_path / "empty"))
    assert code == 2


def test_read_only_recall_answers_with_one_warning(db, capsys):
    code, out, err = run(capsys, "recall", "database", "--read-only", "--db", db)
    assert code == 0 and "O-aaa-1" in out and err.count("\n") == 1 and "read-only" in err


def test_traces_on_a_hippo_store(tmp_path, capsys):
    store = make_hippo_store(tmp_path / ".hippo" / "hippo.db")
    code, out, _ = run(capsys, "traces", "--show", "1", "--db", str(store))
    assert code == 0
    assert "base 0.420 → interference ×0.30 → 0.126" in out
    assert "[hippo, evicted]" in out and "[-, forgotten]" in out and "malformed rerank_json" in out


def test_recall_on_a_hippo_store_answers_without_writing(tmp_path, capsys):
    store = make_hippo_store(tmp_path / ".hippo" / "hippo.db")
    code, out, err = run(capsys, "recall", "WAL mode", "--db", str(store))
    assert code == 0 and "mem-1" in out and "[hippo]" in out
    assert err.count("\n") == 1 and "hippo stores are opened for reading" in err


def _trace_rows(brain):
    return [tuple(r) for r in brain.query("SELECT * FROM recall_traces ORDER BY id")] + \
        [tuple(r) for r in brain.query("SELECT * FROM recall_trace_results ORDER BY trace_id, result_rank")] + \
        [tuple(r) for r in brain.query("SELECT * FROM recall_trace_outcomes ORDER BY id")]


def test_demo_traces_show_every_state_and_are_deterministic(tmp_path):
    first, second = make_big_brain(tmp_path / "a"), make_big_brain(tmp_path / "b")
    try:
        count = add_demo_traces(first, random.Random(7))
        assert count == add_demo_traces(second, random.Random(7)) >= 10
        assert _trace_rows(first) == _trace_rows(second)
        traces = list_traces(first)
        assert {t.explain_mode for t in traces} == {True, False}
        assert any(t.positive for t in traces) and any(t.negative for t in traces)
        assert len({t.pipeline for t in traces}) >= 2
        states = {r.memory.state for t in traces for r in trace_results(first, t.id)}
        assert states == {"live", "evicted", "forgotten"}
        assert any(r.memory_id == FORGOTTEN_ID for r in trace_results(first, traces[0].id))
        assert max(t.ts for t in traces) < "2026-06-01"  # from the brain's dates, not the wall clock
        assert all(o.ts < "2026-06-01" for t in traces for o in trace_outcomes(first, t.id))
        runs = first.query("SELECT created_at FROM cleo_tui_runs WHERE kind = 'evict'")
        assert len(runs) == 1 and runs[0][0] < "2026-06-01"
    finally:
        first.close()
        second.close()


def test_cli_default_limit_is_the_domain_default(tmp_path, capsys):
    from cleo_tui.recall.recall import DEFAULT_LIMIT

    make_big_brain(tmp_path).close()
    code, out, _ = run(capsys, "recall", "database", "--json", "--db", str(tmp_path / ".cleo" / "cleo.db"))
    assert code == 0 and len(json.loads(out)["results"]) == DEFAULT_LIMIT


def test_cli_recall_that_matched_nothing_does_not_suggest_crediting(db, capsys):
    code, out, _ = run(capsys, "recall", "!!!", "--db", db)
    assert code == 0 and "No live memory matches" in out and "credit" not in out
    code, out, _ = run(capsys, "recall", "zzzqqq", "--db", db)
    assert code == 0 and "credit" not in out


def test_a_trace_of_one_result_is_listed_in_the_singular_and_in_line(db, capsys):
    assert run(capsys, "recall", "database", "--limit", "1", "--db", db)[0] == 0
    assert run(capsys, "recall", "database", "--limit", "2", "--db", db)[0] == 0
    code, out, _ = run(capsys, "traces", "--db", db)
    one, two = sorted(out.splitlines(), key=lambda line: "  1 result " not in line)[:2]
    assert code == 0 and "  1 result  " in one and "  2 results  " in two, out
    assert one.index("outcome") == two.index("outcome")  # the columns stay in line
