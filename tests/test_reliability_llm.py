"""Bad LLM output and transport faults through the fake provider; API keys never leak.

Promise (DESIGN §4): LLM output is untrusted: malformed output is reported, not stored,
with the raw answer kept for inspection; ids it invents are dropped; API keys never
appear on screen, in logs, in errors or in exported files.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from cleo_tui.llm.observer import run_observer
from cleo_tui.llm.reflector import propose_reflection
from tests.fake_llm import FakeLLM, FakeLLMServer, error_reply, hang_reply, raw_reply, text_reply
from tests.llm_fixtures import (
    ANTHROPIC_KEY,
    OPENAI_KEY,
    SESSION,
    brain_with_observations,
    fast_config,
    reflection_answer,
    snapshot,
)
from tests.reliability_fixtures import record, run_cli

THEME = "LLM faults"
PROPOSALS = "cleo_tui_proposals"

BAD_OUTPUTS = {
    "prose instead of JSON": text_reply("Sure! Here are some patterns I noticed: run tests."),
    "JSON cut off": text_reply('```json\n{"patterns": [{"pattern": "x"'),
    "answer stopped at the token limit": text_reply('{"patterns": [{"pattern": "Run tests"', stop="length"),
    "wrong shapes": text_reply('{"patterns": "none", "learnings": 5, "superseded": {"a": 1}}'),
    "only invented ids": text_reply(reflection_answer(["O-invented-1", "O-invented-2"], [], [])),
    "empty answer": text_reply(""),
    "HTML from a proxy (200)": raw_reply(200, b"<html><body>502 Bad Gateway</body></html>"),
    "JSON without content (200)": raw_reply(200, b'{"content": null, "type": "message"}'),
    "hostile text, no JSON": text_reply("\x1b]52;c;aGk=\x07[bold]x[/] \x00"),
}
TRANSPORT_FAULTS = {
    "HTTP 500": error_reply(500, "internal error"),
    "HTTP 429 rate limit": error_reply(429, "slow down"),
    "HTTP 401 echoing the key": error_reply(401, f"invalid x-api-key: {ANTHROPIC_KEY}"),
    "timeout": hang_reply(),
    "garbage body (502)": raw_reply(502, b"\xff\xfe not json \x00"),
}


@pytest.fixture
def brain(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    fast_config(timeout=2.0)
    brain, _ids = brain_with_observations(tmp_path, 12)
    yield brain
    brain.close()


def _assert_no_key(*texts: object) -> None:
    for text in texts:
        shown = text if isinstance(text, str) else json.dumps(text, default=str)
        assert ANTHROPIC_KEY not in shown and OPENAI_KEY not in shown


@pytest.mark.parametrize("case", list(BAD_OUTPUTS) + list(TRANSPORT_FAULTS))
def test_bad_answer_stores_nothing_and_explains(brain, case, caplog):
    reply = BAD_OUTPUTS.get(case) or TRANSPORT_FAULTS[case]
    before = snapshot(brain, (*("brain_observations", "brain_patterns", "brain_learnings",
                                 "brain_page_edges", "brain_page_nodes"), PROPOSALS))
    fake = FakeLLM([reply, reply])
    caplog.set_level(logging.DEBUG)
    outcome = propose_reflection(brain, SESSION, http_client=fake.http_client())
    observed = run_observer(brain, SESSION, threshold_override=1, http_client=fake.http_client())
    assert outcome.proposal is None and outcome.problem is not None
    assert observed.stored == 0 and observed.problem is not None
    for problem in (outcome.problem, observed.problem):
        assert problem.message and "Traceback" not in problem.message
        assert "Nothing was stored" in problem.message or "nothing" in problem.message.lower()
    if case in BAD_OUTPUTS and reply.status == 200 and reply.text is not None:
        # the raw answer stays inspectable (unless it was valid but proposed nothing usable)
        assert outcome.problem.details.get("raw_text") == reply.text
    assert snapshot(brain, (*("brain_observations", "brain_patterns", "brain_learnings",
                               "brain_page_edges", "brain_page_nodes"), PROPOSALS)) == before
    _assert_no_key(outcome.to_dict(), observed.to_dict(), caplog.text)
    if case in BAD_OUTPUTS:
        record(THEME, f"bad output: {case}", "observer and reflector store nothing and say why in one message; "
               "an unusable answer is kept for inspection; no key in results or logs", "passed")
    else:
        record(THEME, f"transport fault: {case}", "observer and reflector store nothing and name the fault "
               "(status, timeout) in one message; no key in results or logs", "passed")


def test_model_echoing_the_key_is_redacted_everywhere(brain, caplog):
    """A (hostile) endpoint answers with the key inside its text: it must not be kept or shown."""
    fake = FakeLLM([text_reply(f"I cannot do that. Your key is {ANTHROPIC_KEY}.")])
    caplog.set_level(logging.DEBUG)
    outcome = propose_reflection(brain, SESSION, http_client=fake.http_client())
    assert outcome.problem is not None and outcome.proposal is None
    assert "[redacted]" in outcome.problem.details["raw_text"]
    _assert_no_key(outcome.to_dict(), caplog.text)
    record(THEME, "the endpoint puts the API key in its answer", "the raw answer kept for inspection has "
           "the key replaced by [redacted]", "passed",
           fixed="the raw answer (shown for inspection, stored as raw_response) kept the key")


def test_cli_outputs_logs_and_files_never_hold_the_key(tmp_path, monkeypatch, caplog):
    """Through a real HTTP fake: a failed call, a good proposal, --show, --list and a trace export."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("CLEO_TUI_DEBUG", "1")
    fast_config(timeout=2.0)
    brain, ids = brain_with_observations(tmp_path, 12)
    db = str(brain.path)
    brain.close()
    caplog.set_level(logging.DEBUG)
    outputs: list[str] = []
    with FakeLLMServer([error_reply(401, f"bad key {ANTHROPIC_KEY}"), text_reply(reflection_answer(ids[:2])),
                        error_reply(403, f"forbidden for {OPENAI_KEY}")]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        for args in (("reflect", "--db", db), ("reflect", "--db", db, "--json"), ("reflect", "--list", "--db", db),
                     ("reflect", "--show", "1", "--db", db),
                     ("observe", "--db", db, "--provider", "openai", "--threshold", "1", "--json"),
                     ("recall", "step", "--db", db), ("traces", "--export", str(tmp_path / "t.jsonl"), "--db", db)):
            _code, out, err = run_cli(*args)
            outputs += [out, err]
        assert server.requests and all(r.headers.get("x-api-key", r.headers.get("authorization", ""))
                                       for r in server.requests)  # the key was really sent
    _assert_no_key(*outputs, caplog.text)
    scanned = 0
    places = [tmp_path] + [Path(os.environ[v]) for v in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME")
                           if Path(os.environ[v]).exists()]  # config, token cache, data: the test's own
    for path in (p for place in places for p in place.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            assert ANTHROPIC_KEY.encode() not in data and OPENAI_KEY.encode() not in data, path
            scanned += 1
    record(THEME, "CLI observe/reflect (failing and good calls), --list, --show, recall, trace export, with "
                  "CLEO_TUI_DEBUG=1",
           "neither key in stdout, stderr, logs, the brain or any file written (project, config, cache and "
           "data directories)",
           "passed", files_scanned=scanned, outputs_scanned=len(outputs))


def _screen_text(app) -> str:
    """The screen's text with runs of whitespace (and wrapped lines) joined by one space."""
    return " ".join(" ".join(strip.text for strip in app.screen._compositor.render_strips()).split())


async def test_review_pane_explains_bad_answers_shows_raw_and_never_the_key(tmp_path, monkeypatch):
    """Review pane: an unusable answer (holding the key) and a 401 echoing the key, through real HTTP."""
    from cleo_tui.ui.app import CleoApp
    from cleo_tui.ui.widgets.modals import TextViewer
    from tests.ui_helpers import settle
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    fast_config(timeout=2.0)
    brain, _ids = brain_with_observations(tmp_path, 12)
    before = snapshot(brain, ("brain_observations", PROPOSALS))
    screens = []
    with FakeLLMServer([text_reply(f"Sure! Here you go, {ANTHROPIC_KEY}"),
                        error_reply(401, f"invalid x-api-key {ANTHROPIC_KEY}")]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        app = CleoApp(brain=brain)
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(app, pilot)
            await pilot.press("3", "r")
            await settle(app, pilot)
            screens.append(_screen_text(app))
            assert "could not be used" in screens[-1] and "Nothing was stored" in screens[-1]
            await pilot.press("v")
            await settle(app, pilot)
            assert isinstance(app.screen, TextViewer)
            screens.append(_screen_text(app))
            assert "Sure! Here you go, [redacted]" in screens[-1]  # the raw answer, inspectable
            app.pop_screen()
            await pilot.press("r")
            await settle(app, pilot)
            screens.append(_screen_text(app))
            assert "HTTP 401" in screens[-1] and "[redacted]" in screens[-1]
    _assert_no_key(*screens)
    assert snapshot(brain, ("brain_observations", PROPOSALS)) == before
    brain.close()
    record(THEME, "Review pane over real HTTP: an unusable answer holding the key, then a 401 echoing it",
           "'could not be used … Nothing was stored', v shows the raw answer with the key redacted, the 401 "
           "explained; nothing stored; the key never on screen", "passed", screens_checked=len(screens))
