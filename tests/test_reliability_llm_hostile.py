"""Hostile model answers, project configs and servers (issue 19): huge and deeply nested
answers, a project config that would send the key elsewhere, key shapes, servers that never
answer or drip bytes, numeric settings out of bounds.

Promise (DESIGN §4): LLM output is untrusted; API keys never leak; no call hangs past its
deadline.
"""

from __future__ import annotations

import json
import time

import pytest

from cleo_tui.llm.observer import run_observer
from cleo_tui.llm.parsing import Unparsable, extract_json, parse_notes, parse_reflection
from cleo_tui.llm.reflector import propose_reflection
from tests.fake_llm import FakeLLM, text_reply
from tests.llm_fixtures import (
    ANTHROPIC_KEY,
    OPENAI_KEY,
    SESSION,
    brain_with_observations,
    fast_config,
    write_own_config,
    write_project_config,
)
from tests.reliability_fixtures import record, run_cli

THEME = "LLM faults"
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def brain(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    fast_config(timeout=2.0)
    brain, _ids = brain_with_observations(tmp_path, 12)
    yield brain
    brain.close()


def test_huge_answers_are_bounded(brain):
    made_up = [f"O-fake-{i}" for i in range(100_000)]
    answer = json.dumps({"patterns": [{"pattern": "p", "context": "c"}], "learnings": [],
                         "superseded": made_up})
    started = time.process_time()
    parsed = parse_reflection(answer, [f"O-{i}" for i in range(20)])
    notes = parse_notes(json.dumps([{"observation": "x", "source_ids": made_up}]), ["O-1", "O-2"])
    cpu = time.process_time() - started
    assert cpu < 5, cpu
    assert len(parsed.dropped_ids) <= 20 and len(notes.dropped_ids) <= 2
    fake = FakeLLM([text_reply(answer)])
    outcome = propose_reflection(brain, SESSION, http_client=fake.http_client())
    assert outcome.proposal is not None
    stored = brain.query_one("SELECT length(raw_response), length(proposal_json) FROM cleo_tui_proposals")
    assert stored[0] <= 64 * 1024 and stored[1] <= 64 * 1024, tuple(stored)
    record(THEME, "an answer with 100,000 made-up ids (2 MB)", "parsed in well under a second of CPU; dropped "
           "ids capped at the input's size; at most 64 KB of raw answer and proposal kept in the brain",
           "passed", fixed="52 s of CPU and 3.4 MB stored (issue 19.10)", ids=len(made_up))


def test_deeply_nested_json_is_unparsable_not_a_crash(brain, tmp_path):
    with pytest.raises(Unparsable):
        extract_json(DEEP, list)
    fake = FakeLLM([text_reply(DEEP), text_reply("{\"patterns\": " + DEEP + "}")])
    observed = run_observer(brain, SESSION, threshold_override=1, http_client=fake.http_client())
    assert observed.problem is not None and observed.problem.kind == "unparsable", observed.to_dict()
    reflected = propose_reflection(brain, SESSION, http_client=fake.http_client())
    assert reflected.problem is not None and reflected.problem.kind in ("unparsable", "nothing_proposed")
    record(THEME, "a model answer nested 100,000 deep", "unparsable: 'could not be used', raw answer kept",
           "passed", fixed="RecursionError: internal error (issue 19.12)")


def test_deeply_nested_stored_json_and_configs_are_unparsable(tmp_path, monkeypatch):
    from cleo_tui.brain.project_config import load_project_settings
    from cleo_tui.config import config_path, load_config
    from cleo_tui.recall.export import export_traces, read_export
    from cleo_tui.recall.reader import trace_outcomes, trace_results
    from cleo_tui.recall.traces import RecallTraceInput, TraceResultInput, write_recall_trace
    brain, ids = brain_with_observations(tmp_path, 3)
    try:
        bad = write_recall_trace(brain, RecallTraceInput("q1", "api", (TraceResultInput(ids[0], 0.5),)))
        good = write_recall_trace(brain, RecallTraceInput("q2", "api", (TraceResultInput(ids[1], 0.4),)))
        with brain.write() as conn:
            conn.execute("UPDATE recall_trace_results SET rerank_json = ? WHERE trace_id = ?", (DEEP, bad))
            conn.execute("INSERT INTO recall_trace_outcomes (trace_id, ts, outcome, memory_ids_json) "
                         "VALUES (?, '2026-01-01T00:00:00.000Z', 'positive', ?)", (bad, DEEP))
        result = trace_results(brain, bad)[0]
        assert result.steps is None and result.steps_error and "rerank_json" in result.steps_error
        assert trace_outcomes(brain, bad)[0].memory_ids == ()
        out = tmp_path / "out.jsonl"
        assert export_traces(brain, out) == 2
        assert [r["trace_id"] for r in read_export(out)] == [bad, good]
        write_project_config(brain, {})
        (tmp_path / "project" / ".cleo" / "config.json").write_text('{"llm": ' + DEEP + "}", encoding="utf-8")
        project = load_project_settings(brain)
        assert project.raw == {} and project.warning and "could not be read" in project.warning
    finally:
        brain.close()
    config_path().parent.mkdir(parents=True, exist_ok=True)
    config_path().write_text('{"theme": ' + DEEP + "}", encoding="utf-8")
    settings, problem = load_config()
    assert problem and "could not be read" in problem and settings["theme"] == "cleo"
    code, _out, err = run_cli("info", "--db", str(tmp_path / "project" / ".cleo" / "cleo.db"))
    assert code == 0, err
    record(THEME, "JSON nested 100,000 deep in a stored rerank_json and outcome ids, CLEO's config.json and "
           "cleo-tui's config.json", "the trace marked with a steps error, the export still writes every trace, "
           "each config ignored with a warning", "passed",
           fixed="RecursionError: internal error; one bad trace broke the whole export (issue 19.12)")


def test_a_project_config_cannot_send_the_key_to_its_own_host(brain, monkeypatch):
    from cleo_tui.llm.asking import credential_problem
    from cleo_tui.llm.resolve import resolve_provider
    write_project_config(brain, {"llm": {"default": {"provider": "anthropic",
                                                     "base_url": "https://collector.example.net/v1"}}})
    resolved = resolve_provider(brain)
    assert resolved.api_key is None and not resolved.has_credential
    problem = credential_problem(resolved)
    assert problem is not None and "collector.example.net" in problem.message
    fake = FakeLLM([text_reply("[]")])
    outcome = propose_reflection(brain, SESSION, http_client=fake.http_client())
    assert outcome.problem is not None and not fake.requests
    monkeypatch.setenv("CLEO_TUI_ALLOW_HOSTS", "collector.example.net")
    assert resolve_provider(brain).api_key == ANTHROPIC_KEY
    monkeypatch.delenv("CLEO_TUI_ALLOW_HOSTS")
    write_own_config({"max_retries": 0, "timeout": 2.0, "allow_hosts": ["collector.example.net"]})
    assert resolve_provider(brain).api_key == ANTHROPIC_KEY
    write_own_config({"max_retries": 0, "timeout": 2.0})
    assert resolve_provider(brain, base_url="https://collector.example.net/v1").api_key == ANTHROPIC_KEY
    record(THEME, "a project's .cleo/config.json points llm.default.base_url at another host",
           "no key attached and nothing sent; the message names the host; allowed by the user's config, "
           "CLEO_TUI_ALLOW_HOSTS or --base-url", "passed",
           fixed="the repository's host received the user's key and the brain's text (issue 19.5)")


def test_key_shapes_are_never_shown(brain):
    from cleo_tui.llm.providers import redact
    from cleo_tui.llm.resolve import resolve_provider
    resolved = resolve_provider(brain, base_url=f"https://user:{ANTHROPIC_KEY}@proxy.example.org/v1")
    shown = json.dumps(resolved.describe()) + resolved.label()
    assert ANTHROPIC_KEY not in shown and "proxy.example.org" in shown and "user" not in shown
    altered = "Your key: " + ANTHROPIC_KEY[:-1].upper()[:3] + ANTHROPIC_KEY[3:-2] + "Z!"
    cleaned = redact(altered, ANTHROPIC_KEY)
    assert ANTHROPIC_KEY[3:-2] not in cleaned and "[redacted]" in cleaned
    fake = FakeLLM([text_reply(f"echo {ANTHROPIC_KEY[5:]}-x")])
    outcome = propose_reflection(brain, SESSION, http_client=fake.http_client())
    assert ANTHROPIC_KEY[5:] not in json.dumps(outcome.to_dict(), default=str)
    record(THEME, "a base URL with the key as its user part; an endpoint echoing the key slightly altered",
           "user info stripped from every shown URL; runs of 8+ of the key's characters redacted in what is "
           "shown and stored", "passed", fixed="printed verbatim, shown and stored (issue 19.6)")


def test_one_deadline_per_call_and_bounded_settings(brain, monkeypatch):
    from cleo_tui.llm.resolve import MAX_RETRIES, resolve_provider
    from tests.fake_llm import FakeLLMServer, hang_reply
    write_own_config({"max_retries": 1e30, "timeout": 1e30})
    resolved = resolve_provider(brain)
    assert resolved.max_retries <= MAX_RETRIES and resolved.timeout <= 600 and len(resolved.warnings) == 2
    write_own_config({"max_retries": 3, "timeout": 30, "deadline": 1})  # retries would take 2 minutes
    with FakeLLMServer(default=hang_reply()) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        started = time.monotonic()
        outcome = propose_reflection(brain, SESSION)
        elapsed = time.monotonic() - started
    assert outcome.problem is not None and "no answer within 1 s" in outcome.problem.message, outcome.to_dict()
    assert elapsed < 10, elapsed
    record(THEME, "a server that never answers, with timeout 30 s and 3 retries, deadline 1 s; max_retries and "
           "timeout of 1e30", "the call gives up at the deadline with one message; settings bounded (≤ 10 "
           "retries, ≤ 600 s) with a warning", "passed",
           fixed="no overall deadline (minutes of silence); max_retries 1e30 looped forever (issue 19.7)")


def test_the_default_deadline_is_under_90_s(brain):
    from cleo_tui.llm.resolve import resolve_provider
    write_own_config({})
    assert resolve_provider(brain).deadline < 90


def test_a_server_that_accepts_and_never_answers_ends_at_the_deadline_saying_what_timed_out(brain, monkeypatch,
                                                                                           capsys):
    """Issue 29.16: `cleo-tui reflect` was held 123 s by a server that accepted and never answered.
    The socket listens and is never accepted from: the kernel completes the connection, nobody reads."""
    import socket

    from cleo_tui import cli
    write_own_config({"max_retries": 3, "timeout": 30, "deadline": 1.5})
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    port = listener.getsockname()[1]
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{port}")
    path = str(brain.path)
    brain.close()
    try:
        started = time.monotonic()
        code = cli.main(["reflect", "--db", path, "--session", SESSION])
        elapsed = time.monotonic() - started
    finally:
        listener.close()
    out = capsys.readouterr().out
    # The whole command, client set-up included: the deadline, plus room for importing and building
    # the SDK client on a loaded CI machine; ignoring the deadline takes 30 s (the timeout) or more.
    assert code == 1 and elapsed < 1.5 + 4.0, (elapsed, out)
    assert f"127.0.0.1:{port}" in out and "did not answer: no answer within 1.5 s" in out, out
    assert "connecting" in out and "every retry" in out and "llm.deadline" in out, out
