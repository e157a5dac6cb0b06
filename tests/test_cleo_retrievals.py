"""CLEO's own retrievals as traces, on brains in CLEO's layout: listing, filters, the merge with the
traces, each returned id as CLEO sees it now, usage, export, history, read-only and hippo stores."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.store import open_brain
from cleo_tui.memory.timeline import brain_timeline
from cleo_tui.recall.export import export_retrievals, read_export
from cleo_tui.recall.reader import TraceFilter
from cleo_tui.recall.recorded import (
    QUERY_PREVIEW,
    CleoFilter,
    cleo_sessions,
    cleo_sources,
    count_cleo_retrievals,
    list_cleo_retrievals,
)
from cleo_tui.recall.resolve import CLEO_SEARCH_QUALITY
from cleo_tui.recall.retrievals import (
    RetrievalFilter,
    count_retrievals,
    list_retrievals,
    merged_order,
    open_cleo_retrieval,
    parse_key,
)
from cleo_tui.recall.traces import RecallTraceInput, TraceResultInput, query_hash, utf16_length, write_recall_trace
from tests.brain_fixtures import (
    add_cleo_recall_logs,
    file_digest,
    insert_observations,
    make_cleo_consolidated,
    observation,
)
from tests.recall_fixtures import open_hippo

HUGE = "stripe webhook " * 7000  # 105,000 characters: a pasted log as a query
HOSTILE = "[bold]x[/] \x1b[31mred\x1b]8;;http://evil\x07 NUL\x00here \x9b bidi \u202eevil"
LIVE, EVICTED, HIDDEN = "O-live0001-1", "O-evict001-2", "O-hidden01-3"
GONE = "O-gone0001-9"


def _add_records(db: Path) -> None:
    """A learning and a decision CLEO's find can return (its own layout, written directly)."""
    conn = sqlite3.connect(db)
    conn.execute(f"INSERT INTO {cs.LEARNINGS} (id, insight, source, confidence, actionable, created_at, "
                 "updated_at, quality_score) VALUES ('L-7e00641e', 'Webhooks retry with backoff', 'agent', 0.8, 1, "
                 "'2026-04-01 10:00:00', '2026-04-01 10:00:00', 0.7)")
    conn.execute(f"INSERT INTO {cs.DECISIONS} (id, type, decision, rationale, confidence, created_at, "
                 "quality_score) VALUES ('D001', 'technical', 'Use Stripe webhooks', 'fewer polls', 'high', "
                 "'2026-04-02 10:00:00', 0.1)")
    conn.commit()
    conn.close()


@pytest.fixture
def cleo_db(tmp_path) -> Path:
    return make_cleo_logged(tmp_path)


def make_cleo_logged(directory: Path) -> Path:
    """A CLEO brain whose log holds ordinary and hostile rows, and a usage log."""
    db = make_cleo_consolidated(directory / ".cleo" / "cleo.db")
    insert_observations(db, [
        observation(1, id=LIVE, title="Stripe webhook retries", quality_score=0.8, invalid_at=None),
        observation(2, id=EVICTED, title="Old webhook note", quality_score=0.9, invalid_at="2026-05-01 00:00:00"),
        observation(3, id=HIDDEN, title="Contradicted webhook note", quality_score=0.15, invalid_at=None),
    ])
    _add_records(db)
    add_cleo_recall_logs(db, retrievals=[
        {"query": "stripe webhook", "entry_ids": [LIVE, "L-7e00641e", EVICTED, HIDDEN, GONE, "D001"],
         "session_id": "ses_a", "created_at": "2026-05-01 10:00:00"},
        {"query": "not json at all", "entry_ids": "[unterminated", "created_at": "2026-05-02 10:00:00"},
        {"query": HUGE, "entry_ids": [LIVE], "created_at": "2026-05-03 10:00:00", "tokens_used": None},
        {"query": HOSTILE, "entry_ids": [GONE], "source": "hybrid", "created_at": "2026-05-04 10:00:00"},
        {"query": f"{LIVE},{EVICTED}", "entry_ids": [LIVE, EVICTED], "source": "fetch", "session_id": "ses_b",
         "tokens_used": 1000, "created_at": "2026-05-05 10:00:00"},
        {"query": "", "entry_ids": "{\"not\": \"a list\"}", "source": "timeline", "created_at": "not a date"},
    ], usage=[
        {"entry_id": LIVE, "task_id": "T12", "used": 1, "outcome": "success", "created_at": "2026-05-01 11:00:00"},
        {"entry_id": LIVE, "task_id": None, "used": 0, "created_at": "2026-05-02 11:00:00"},
        {"entry_id": EVICTED, "task_id": "T13", "used": 1, "outcome": "failure", "created_at": "2026-05-01 11:00:00"},
    ])
    return db


@pytest.fixture
def brain(cleo_db):
    opened = open_brain(cleo_db, read_only=True)
    yield opened
    opened.close()


def test_lists_newest_first_with_queries_cut_visibly_and_odd_rows_kept(brain):
    rows = list_cleo_retrievals(brain)
    assert [r.id for r in rows] == [6, 5, 4, 3, 2, 1]
    by_id = {r.id: r for r in rows}
    assert by_id[3].query_cut and len(by_id[3].query) == QUERY_PREVIEW and by_id[3].query_bytes == len(HUGE)
    assert by_id[4].query == HOSTILE and not by_id[4].query_cut  # NUL and controls kept: the face escapes them
    assert by_id[2].malformed and by_id[2].returned == () and by_id[6].malformed
    assert by_id[6].query == ""  # empty, not NULL
    assert by_id[3].tokens_used is None and by_id[5].tokens_used == 1000
    assert [r.id for r in list_cleo_retrievals(brain, limit=2, before_id=5)] == [4, 3]  # keyset paging
    assert cleo_sources(brain) == ["fetch", "find-rrf", "hybrid", "timeline"]
    assert cleo_sessions(brain) == ["ses_a", "ses_b"]


@pytest.mark.parametrize(("flt", "ids"), [
    (CleoFilter(source="fetch"), [5]),
    (CleoFilter(session_id="ses_a"), [1]),
    (CleoFilter(since="2026-05-03", until="2026-05-05"), [4, 3]),
    (CleoFilter(since="2026-05-04T10:00"), [6, 5, 4]),  # CLEO's space and the ISO T compare alike
    (CleoFilter(min_results=2), [5, 1]),
])
def test_filters_by_source_session_date_and_results(brain, flt, ids):
    assert [r.id for r in list_cleo_retrievals(brain, flt)] == ids
    assert count_cleo_retrievals(brain, flt) == len(ids)


def test_returned_ids_resolve_as_cleo_sees_them_with_usage(brain):
    opened = open_cleo_retrieval(brain, 1)
    assert opened is not None and opened.retrieval.query == "stripe webhook"
    states = [(r.rank, r.memory_id, r.memory.kind, r.state) for r in opened.results]
    assert states == [(1, LIVE, "observation", "live"), (2, "L-7e00641e", "learning", "live"),
                      (3, EVICTED, "observation", "evicted"), (4, HIDDEN, "observation", "hidden"),
                      (5, GONE, None, "deleted"), (6, "D001", "decision", "hidden")]
    assert opened.results[3].memory.quality is not None and opened.results[3].memory.quality < CLEO_SEARCH_QUALITY
    use = opened.results[0].use
    assert use is not None and (use.used, use.not_used) == (1, 1)
    assert [(e.task_id, e.outcome) for e in use.events] == [("T12", "success"), (None, "unknown")]
    assert opened.results[1].use is None
    whole = open_cleo_retrieval(brain, 3)
    assert whole is not None and whole.retrieval.query == HUGE and not whole.retrieval.query_cut
    assert open_cleo_retrieval(brain, 99) is None


def test_keys_name_a_trace_or_a_cleo_retrieval():
    assert parse_key("cleo:12") == ("cleo", 12) and parse_key(" CLEO:7 ") == ("cleo", 7)
    assert parse_key("12") == parse_key("cleo-tui:12") == parse_key("hippo:12") == ("trace", 12)
    assert parse_key("cleo:") is None and parse_key("x:1") is None and parse_key("-3") is None


def _trace(brain, ts: str, pipeline: str = "cli") -> int | None:
    return write_recall_trace(brain, RecallTraceInput(query="q", pipeline=pipeline, tenant_id="default",
                                                      session_id="ses_a", explain_mode=False,
                                                      results=(TraceResultInput(LIVE, 0.5),),
                                                      at=datetime.fromisoformat(ts)))


def test_traces_and_cleo_retrievals_merge_by_time_and_filters_pick_whose(cleo_db):
    brain = open_brain(cleo_db)
    try:
        late, early = _trace(brain, "2026-05-04T12:00:00+00:00"), _trace(brain, "2026-05-01T09:00:00+00:00", "api")
        order = [(which, ident) for _, which, ident in merged_order(brain, RetrievalFilter())]
        # By time, whatever order the rows were written in: CLEO's 5 (05-05), the trace of 05-04 12:00,
        # CLEO's 4 (05-04 10:00) … the trace of 05-01 09:00; the row whose time is not a date comes last.
        assert order == [(0, 5), (1, late), (0, 4), (0, 3), (0, 2), (0, 1), (1, early), (0, 6)]
        listed = list_retrievals(brain, limit=3)
        assert [(x.kind, x.key) for x in listed] == [("cleo", "cleo:5"), ("cleo-tui", str(late)), ("cleo", "cleo:4")]
        assert count_retrievals(brain) == (6, 2)
        # A trace-only condition (pipeline, outcome, tenant) leaves CLEO's rows out; a source leaves traces out.
        assert count_retrievals(brain, RetrievalFilter(trace=TraceFilter(pipeline="api"))) == (0, 1)
        assert count_retrievals(brain, RetrievalFilter(trace=TraceFilter(has_outcome=True))) == (0, 0)
        assert count_retrievals(brain, RetrievalFilter(source="fetch")) == (1, 0)
        assert count_retrievals(brain, RetrievalFilter(trace=TraceFilter(session_id="ses_a"))) == (1, 2)
        assert count_retrievals(brain, RetrievalFilter(cleo=False)) == (0, 2)
    finally:
        brain.close()


def test_export_keeps_hash_and_length_unless_the_text_is_asked_for(brain, tmp_path):
    assert export_retrievals(brain, tmp_path / "a.jsonl") == 6
    records = read_export(tmp_path / "a.jsonl")
    assert [r["retrieval_id"] for r in records] == [6, 1, 2, 3, 4, 5]  # oldest first (the undated one first)
    assert all("query" not in r for r in records)
    by_id = {r["retrieval_id"]: r for r in records}
    first = by_id[1]
    assert first["kind"] == "cleo" and first["query_hash"] == query_hash("stripe webhook")
    assert first["query_length"] == utf16_length("stripe webhook") and by_id[3]["query_length"] == len(HUGE)
    assert [s["memory_id"] for s in first["shown"]] == [LIVE, "L-7e00641e", EVICTED, HIDDEN, GONE, "D001"]
    assert {(u["memory_id"], u["task_id"], u["used"]) for u in first["usage"]} == {
        (LIVE, "T12", True), (LIVE, None, False), (EVICTED, "T13", True)}
    assert by_id[2]["malformed_entry_ids"] and by_id[2]["shown"] == []
    assert "stripe" not in (tmp_path / "a.jsonl").read_text()

    export_retrievals(brain, tmp_path / "b.jsonl", RetrievalFilter(source="hybrid"), with_query_text=True)
    [hostile] = read_export(tmp_path / "b.jsonl")
    assert hostile["query"] == HOSTILE  # the raw text, byte for byte, only because it was asked for


def test_history_counts_cleo_retrievals_per_day(brain):
    days = {d.day: d for d in brain_timeline(brain).days}
    assert [days[f"2026-05-0{n}"].recalls for n in range(1, 6)] == [1, 1, 1, 1, 1]
    assert brain_timeline(brain).undated.get("recalls") == 1  # "not a date" is counted aside


def test_read_only_and_older_brains_and_hippo_stores(tmp_path, cleo_db):
    before = file_digest(cleo_db)
    brain = open_brain(cleo_db, read_only=True)
    try:
        assert count_retrievals(brain) == (6, 0) and open_cleo_retrieval(brain, 1) is not None
    finally:
        brain.close()
    assert file_digest(cleo_db) == before
    older = make_cleo_consolidated(tmp_path / "older" / ".cleo" / "cleo.db")  # a CLEO without the logs
    brain = open_brain(older, read_only=True)
    try:
        assert count_retrievals(brain) == (0, 0) and list_retrievals(brain) == []
    finally:
        brain.close()
    hippo = open_hippo(tmp_path / ".hippo" / "hippo.db")
    try:
        hippo_before = file_digest(Path(hippo.path))
        listed = list_retrievals(hippo)
        assert listed and {x.kind for x in listed} == {"hippo"}
        assert count_retrievals(hippo)[0] == 0
    finally:
        hippo.close()
    assert file_digest(Path(hippo.path)) == hippo_before


def test_twenty_thousand_retrievals_page_by_id_at_any_depth(tmp_path):
    from cleo_tui.ui.widgets.trace_listing import RetrievalListing

    db = make_cleo_consolidated(tmp_path / ".cleo" / "cleo.db")
    start = datetime(2026, 1, 1)
    add_cleo_recall_logs(db, retrievals=({"query": f"query {i}", "entry_ids": [f"O-{i}"],
                                          "created_at": f"{start + timedelta(minutes=i):%Y-%m-%d %H:%M:%S}"}
                                         for i in range(1, 20_001)))
    brain = open_brain(db, read_only=True)
    try:
        listing = RetrievalListing(brain, RetrievalFilter())
        assert listing.count() == 20_000
        deep = listing.page(150)  # a jump: one read by id, no walk through the pages above
        assert listing.pages_read == 1 and len(deep) == 100 and not listing.merged  # one kind: by id
        assert [row["id"] for row in deep] == [f"cleo:{i}" for i in range(5000, 4900, -1)]  # newest first
        assert listing.index_of("cleo:5000") == 15_000
        below = listing.page(151)  # next to a cached page: keyset on the id, no OFFSET
        assert listing.keyset_reads == 1 and below[0]["id"] == "cleo:4900"
    finally:
        brain.close()


# -- the CLI ----------------------------------------------------------------------------------------

def run(capsys, *argv: str) -> tuple[int, str, str]:
    from cleo_tui.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_traces_json_lists_cleo_retrievals_with_their_kind_and_query(cleo_db, capsys):
    import json

    code, out, _ = run(capsys, "traces", "--json", "--db", str(cleo_db))
    payload = json.loads(out)
    assert code == 0 and payload["count"] == payload["cleo_retrievals"] == 6 and payload["recall_traces"] == 0
    first = payload["traces"][0]
    assert first["kind"] == "cleo" and first["key"] == "cleo:5" and first["source"] == "fetch"
    assert first["entry_ids"] == [LIVE, EVICTED] and first["session_id"] == "ses_b" and first["tokens_used"] == 1000
    assert first["created_at"] == "2026-05-05 10:00:00" and first["query"] == f"{LIVE},{EVICTED}"
    huge = next(t for t in payload["traces"] if t["id"] == 3)
    assert huge["query"] == HUGE and not huge["query_truncated"]  # JSON carries the whole text
    hostile = next(t for t in payload["traces"] if t["id"] == 4)
    assert hostile["query"] == HOSTILE and "\x1b" not in out  # escaped by JSON, never raw on the terminal

    code, out, _ = run(capsys, "traces", "--json", "--kind", "cleo", "--source", "hybrid", "--db", str(cleo_db))
    assert [t["key"] for t in json.loads(out)["traces"]] == ["cleo:4"]
    code, out, _ = run(capsys, "traces", "--json", "--kind", "cleo-tui", "--db", str(cleo_db))
    assert json.loads(out)["count"] == 0

    code, out, _ = run(capsys, "info", "--json", "--db", str(cleo_db))
    info = json.loads(out)
    assert code == 0 and info["cleo_retrievals"] == 6 and {"observations", "traces", "kind"} <= set(info)


def test_traces_lists_and_shows_a_cleo_retrieval_as_data(cleo_db, capsys):
    code, out, _ = run(capsys, "traces", "--db", str(cleo_db))
    assert code == 0 and "cleo:4" in out and "hybrid" in out
    assert "\x1b" not in out and "\x00" not in out and "␛[31mred" in out  # controls shown, never sent
    assert "ids?" in out  # the row whose entry_ids is not JSON

    code, out, _ = run(capsys, "traces", "--show", "cleo:1", "--db", str(cleo_db))
    assert code == 0
    lines = out.splitlines()
    assert "stripe webhook" in out and "[learning, live]" in out and "[decision, hidden]" in out
    assert f"{EVICTED}  [observation, evicted]" in out and f"{HIDDEN}  [observation, hidden]" in out
    assert f"{GONE}  [-, deleted]" in out
    assert any("T12 used (success)" in line for line in lines) and "T13 used (failure)" in out

    code, out, _ = run(capsys, "traces", "--show", "cleo:4", "--db", str(cleo_db))
    assert "[bold]x[/] ␛[31mred␛]8;;http://evil␇ NUL␀here <U+009B> bidi <U+202E>evil" in out

    code, out, _ = run(capsys, "traces", "--show", "cleo:2", "--json", "--db", str(cleo_db))
    assert code == 0 and '"entry_ids_malformed": true' in out and '"results": []' in out


def test_traces_export_and_mistakes_through_the_cli(cleo_db, capsys, tmp_path):
    target = tmp_path / "all.jsonl"
    code, out, _ = run(capsys, "traces", "--export", str(target), "--db", str(cleo_db))
    assert code == 0 and "Exported 6 traces" in out
    assert all("query" not in r and r["kind"] == "cleo" for r in read_export(target))
    code, _, _ = run(capsys, "traces", "--export", str(target), "--force", "--with-query-text", "--kind", "cleo",
                     "--source", "fetch", "--db", str(cleo_db))
    assert code == 0 and [r["query"] for r in read_export(target)] == [f"{LIVE},{EVICTED}"]

    for argv, words in ((("--show", "cleo:99"), "no CLEO retrieval cleo:99"),
                        (("--show", "cleo:x"), "cleo:NUMBER"),
                        (("--with-query-text",), "goes with --export")):
        code, _, err = run(capsys, "traces", *argv, "--db", str(cleo_db))
        assert code == 2 and words in err and "Traceback" not in err
    with pytest.raises(SystemExit):
        run(capsys, "traces", "--help")
    assert "CLEO retrieval (cleo:12)" in capsys.readouterr().out


def test_the_demo_brain_logs_cleo_retrievals_of_every_source_and_state(tmp_path):
    from collections import Counter

    from cleo_tui.demo.retrievals import HOSTILE_QUERY
    from tests.ui_helpers import copy_demo

    brain = open_brain(copy_demo(tmp_path), read_only=True)
    try:
        logged = list_cleo_retrievals(brain, limit=1000, query_chars=None)
        assert 30 <= len(logged) <= 40
        assert {"find-rrf", "find", "fetch", "hybrid", "timeline"} <= {r.source for r in logged}
        assert any(r.query == HOSTILE_QUERY for r in logged) and not any(r.malformed for r in logged)
        opened = [open_cleo_retrieval(brain, r.id) for r in logged]
        results = [x for o in opened if o is not None for x in o.results]
        states = Counter(x.state for x in results)
        assert {"live", "evicted", "hidden", "deleted"} <= set(states) and states["live"] > states["evicted"]
        assert {"observation", "learning", "pattern", "decision"} <= {x.memory.kind for x in results}
        assert any(x.use is not None and x.use.used for x in results)  # tasks used some of what they got
        fetches = [r for r in logged if r.source == "fetch"]
        assert all(r.query == ",".join(r.returned) for r in fetches)  # CLEO logs a fetch's ids as its query
        # Every returned memory existed when it was returned.
        for o in opened:
            assert o is not None
            for x in o.results:
                if x.memory.created_at:
                    assert x.memory.created_at[:19].replace("T", " ") <= o.retrieval.created_at
    finally:
        brain.close()
