"""Both SDKs against a real HTTP fake on 127.0.0.1 (base URLs), cancellation, and the CLI."""

from __future__ import annotations

import json
import threading
import time

import pytest

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.cli import main
from cleo_tui.llm import results as r
from cleo_tui.llm.observer import run_observer
from cleo_tui.llm.proposals import get_proposal
from cleo_tui.llm.providers import CancelToken
from cleo_tui.llm.reflector import propose_reflection
from tests.fake_llm import FakeLLMServer, hang_reply, ids_in_prompt, text_reply
from tests.llm_fixtures import (
    ANTHROPIC_KEY,
    OPENAI_KEY,
    SESSION,
    brain_with_observations,
    fast_config,
    notes_answer,
    reflection_answer,
    snapshot,
    without_restored_updated_at,
)


@pytest.fixture
def server():
    with FakeLLMServer() as fake:
        yield fake


@pytest.fixture
def brain(tmp_path):
    brain, ids = brain_with_observations(tmp_path, 12)
    brain.ids = ids  # type: ignore[attr-defined]
    yield brain
    brain.close()


def test_anthropic_through_base_url_env(brain, server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
    fast_config()
    server.push(lambda request: text_reply(notes_answer(ids_in_prompt(request)[::-1]), 321, 45))
    result = run_observer(brain, SESSION)
    assert result.stored == 3 and result.usage.to_dict() == {"input_tokens": 321, "output_tokens": 45}
    request = server.requests[0]
    assert request.path == "/v1/messages" and request.json["max_tokens"] == 1024
    assert request.json["model"] == "claude-haiku-4-5" and "JSON" in request.system
    assert result.provider["base_url"] == server.anthropic_base_url


def test_openai_through_base_url_env(brain, server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    fast_config()
    server.push(text_reply(reflection_answer([brain.ids[0]]), 77, 33))
    outcome = propose_reflection(brain, SESSION, model="gpt-test")
    assert outcome.proposal.usage == {"input_tokens": 77, "output_tokens": 33}
    assert outcome.proposal.model == "gpt-fake"  # the model that answered
    request = server.requests[0]
    assert request.path == "/v1/chat/completions" and request.json["model"] == "gpt-test"
    assert request.json["max_completion_tokens"] == 2048
    assert request.headers["authorization"] == f"Bearer {OPENAI_KEY}"


def test_openai_compatible_local_server_needs_no_key(brain, server):
    fast_config()
    server.push(text_reply(notes_answer(brain.ids)))
    result = run_observer(brain, SESSION, provider="openai-compatible", model="llama3",
                          base_url=server.openai_base_url)
    assert result.stored == 3 and server.requests[0].json["max_tokens"] == 1024


def test_timeout_through_the_server(brain, server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
    fast_config(timeout=0.3)
    before = snapshot(brain)
    server.push(hang_reply())
    result = run_observer(brain, SESSION)
    assert (result.problem.kind, result.problem.details["error"]) == (r.PROVIDER_ERROR, "timeout")
    assert snapshot(brain) == before


def test_cancel_ends_a_waiting_call_at_once(brain, server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
    fast_config(timeout=20)
    arrived = threading.Event()
    server.push(lambda request: (arrived.set(), hang_reply())[1])
    token = CancelToken()
    outcome: dict = {}
    worker = threading.Thread(target=lambda: outcome.update(result=run_observer(brain, SESSION, cancel=token)))
    started = time.monotonic()
    worker.start()
    assert arrived.wait(10)
    token.cancel()
    worker.join(10)
    assert not worker.is_alive() and time.monotonic() - started < 10  # not the 20 s timeout
    assert outcome["result"].problem.kind == r.CANCELLED and outcome["result"].stored == 0


def _cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_observe_and_reflect_round_trip(brain, server, monkeypatch, capsys):
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
    fast_config()
    project = str(brain.path.parent.parent)
    outputs = []

    server.push(text_reply(notes_answer(brain.ids)))
    code, out, err = _cli(capsys, "observe", "--project", project, "--session", SESSION, "--json")
    outputs += [out, err]
    observed = json.loads(out)
    assert code == 0 and observed["stored"] == 3 and set(observed) >= {"ran", "stored", "compressed_ids", "notes"}

    before = snapshot(brain)
    server.push(text_reply(reflection_answer([brain.ids[1], brain.ids[2]])))
    code, out, err = _cli(capsys, "reflect", "--project", project, "--session", SESSION, "--json")
    outputs += [out, err]
    proposal = json.loads(out)["proposal"]
    assert code == 0 and proposal["status"] == "pending" and len(proposal["patterns"]) == 2
    details = {d["id"]: d for d in json.loads(out)["superseded_details"]}  # protection of each superseded id
    assert set(details) == {brain.ids[1], brain.ids[2]} and details[brain.ids[2]]["protected"]
    assert any("src/module_2.py" in reason for reason in details[brain.ids[2]]["reasons"])

    code, out, err = _cli(capsys, "reflect", "--project", project, "--show", str(proposal["id"]))
    outputs += [out, err]
    assert "superseded " + brain.ids[1] in out and "pattern 1:" in out

    apply = ("reflect", "--project", project, "--apply", "--proposal", str(proposal["id"]),
             "--approve", brain.ids[2], "--patterns", "1", "--learnings", "", "--json")
    code, out, err = _cli(capsys, *apply)  # a protected row: refused without a second confirmation
    assert code == 2 and brain.ids[2] in err and "--confirm-protected" in err and snapshot(brain) == before
    code, out, err = _cli(capsys, *apply, "--confirm-protected", brain.ids[2])
    outputs += [out, err]
    applied = json.loads(out)
    assert code == 0 and applied["superseded_ids"] == [brain.ids[2]] and applied["patterns_stored"] == 1
    assert applied["learnings_stored"] == 0 and applied["rejected_ids"] == [brain.ids[1]]

    code, out, err = _cli(capsys, "reflect", "--project", project, "--undo", str(proposal["id"]))
    outputs += [out, err]
    restored = (brain.ids[2],)  # the evicted row; its updated_at is the undo's time
    assert code == 0
    assert without_restored_updated_at(snapshot(brain), restored) == without_restored_updated_at(before, restored)
    assert get_proposal(brain, proposal["id"]).status == "undone"

    code, out, err = _cli(capsys, "reflect", "--project", project, "--list", "--json")
    outputs += [out, err]
    assert [p["status"] for p in json.loads(out)] == ["undone", "applied"]
    assert all(ANTHROPIC_KEY not in text for text in outputs)


def test_cli_explains_why_nothing_happened(brain, server, monkeypatch, capsys):
    project = str(brain.path.parent.parent)
    code, out, err = _cli(capsys, "observe", "--project", project)
    assert code == 1 and "ANTHROPIC_API_KEY" in out

    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    fast_config()
    server.push(text_reply("Sorry, here is prose instead of JSON."))
    code, out, err = _cli(capsys, "reflect", "--project", project, "--apply", "--json")
    result = json.loads(out)
    assert code == 1 and result["problem"]["kind"] == "unparsable" and not result["superseded_ids"]
    assert result["problem"]["raw_text"] == "Sorry, here is prose instead of JSON."

    code, out, err = _cli(capsys, "observe", "--project", project, "--threshold", "50")
    assert code == 0 and "the observer runs at 50" in out
    code, out, err = _cli(capsys, "reflect", "--project", project, "--apply", "--proposal", "99")
    assert code == 2 and "no proposal 99" in err and "Traceback" not in err
    assert OPENAI_KEY not in out + err
    assert brain.scalar(f"SELECT count(*) FROM {cs.PATTERNS}") == 0


def test_hostile_text_reaches_the_model_as_data_and_prints_escaped(tmp_path, server, monkeypatch, capsys):
    brain, ids = brain_with_observations(tmp_path, 3)
    try:
        with brain.write() as conn:
            conn.execute(f"UPDATE {cs.OBSERVATIONS} SET title = ?, narrative = ? WHERE id = ?",
                         ("\x1b[31mred\x1b]0;pwn\x07 [bold]x[/bold]", "nul\x00here\nsecond line", ids[0]))
        monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        fast_config()
        hostile = [{"date": "2026-11-30", "priority": 2, "observation": "\x1b[2Jwipe [link=x]y[/link]",
                    "source_ids": [ids[0]]}]
        server.push(text_reply(json.dumps(hostile)))
        code, out, err = _cli(capsys, "observe", "--project", str(brain.path.parent.parent), "--threshold", "1")
        assert code == 0 and "\x1b" not in out + err and "[link=x]y[/link]" in out
        assert "[bold]x[/bold]" in server.requests[0].prompt
        line = next(text for text in server.requests[0].prompt.splitlines() if text.startswith(f"[{ids[0]}]"))
        assert "second line" in line  # the narrative's newline does not break the one-line format
    finally:
        brain.close()


def test_cli_says_what_it_asks_where_before_the_call_without_user_info(brain, server, monkeypatch, capsys):
    """Issue 19 item 7: 'asking <provider> <model> at <host> … (Ctrl-C cancels)' on stderr."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    secret_url = server.anthropic_base_url.replace("http://", "http://user:s3cret@")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", secret_url)
    fast_config()
    project = str(brain.path.parent.parent)
    server.push(text_reply(reflection_answer([brain.ids[1]])))
    code, out, err = _cli(capsys, "reflect", "--project", project, "--session", SESSION, "--json")
    assert code == 0 and json.loads(out)["proposal"]["status"] == "pending"  # stdout stays JSON
    line = next(line for line in err.splitlines() if line.startswith("asking anthropic "))
    assert line.endswith("(Ctrl-C cancels)") and server.anthropic_base_url in line
    assert "s3cret" not in err and "user:" not in err
