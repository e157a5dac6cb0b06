"""A scripted fake LLM provider for tests: Anthropic Messages and OpenAI chat completions.

Two ways to reach it, with the same scripting and the same request log:

    fake = FakeLLM([text_reply('[...]'), error_reply(429, "slow down")])
    client = fake.http_client()          # httpx2.Client over httpx2.MockTransport
    run_observer(brain, http_client=client)

    with FakeLLMServer([text_reply('[...]')]) as server:   # real HTTP on 127.0.0.1
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)   # ends in /v1
        ...
        server.requests[0].prompt     # what the model was asked

Replies are consumed in order; when the script is empty, `default` answers (a
500 unless given). A reply answers in the dialect of the request's path
(`/v1/messages` → Anthropic, `/v1/chat/completions` → OpenAI):
- `text_reply(text, input_tokens=, output_tokens=, stop="end")` — a normal answer;
  `stop="length"` marks it cut off at the token limit;
- `error_reply(status, message)` — an error body in the provider's format;
- `hang_reply()` — never answers: the client times out (MockTransport raises
  `httpx2.ReadTimeout` at once; the server holds the request until it stops);
- `raw_reply(status, body_bytes)` — anything else;
- a callable `f(request) -> reply` — computed from the request (see `ids_in_prompt`).
Nothing here sleeps; the server binds port 0 on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2

ANTHROPIC_PATH = "/v1/messages"
OPENAI_PATH = "/v1/chat/completions"
HANG_LIMIT_S = 30  # a hung request is released at stop(), or after this at the latest


@dataclass(frozen=True)
class Reply:
    """One scripted answer. `text` set → rendered per dialect; else `status` + `raw`/`error`."""

    status: int = 200
    text: str | None = None
    error: str | None = None
    raw: bytes | None = None
    hang: bool = False
    input_tokens: int = 11
    output_tokens: int = 7
    stop: str = "end"  # "end" or "length"


@dataclass
class RecordedRequest:
    """A request the fake received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any = field(default=None)

    @property
    def dialect(self) -> str:
        return "anthropic" if self.path.endswith("/messages") else "openai"

    @property
    def system(self) -> str:
        if self.dialect == "anthropic":
            return str((self.json or {}).get("system") or "")
        return "".join(m.get("content", "") for m in (self.json or {}).get("messages", []) if m.get("role") == "system")

    @property
    def prompt(self) -> str:
        """The user message's text."""
        messages = (self.json or {}).get("messages", [])
        return "".join(m.get("content", "") for m in messages
                       if m.get("role") == "user" and isinstance(m.get("content"), str))


ReplyLike = Reply | Callable[[RecordedRequest], Reply]


def text_reply(text: str, input_tokens: int = 11, output_tokens: int = 7, stop: str = "end") -> Reply:
    return Reply(text=text, input_tokens=input_tokens, output_tokens=output_tokens, stop=stop)


def error_reply(status: int, message: str = "error") -> Reply:
    return Reply(status=status, error=message)


def hang_reply() -> Reply:
    return Reply(hang=True)


def raw_reply(status: int, body: bytes) -> Reply:
    return Reply(status=status, raw=body)


def ids_in_prompt(request: RecordedRequest) -> list[str]:
    """The `[id]` at the start of each input line of the prompt, in order."""
    return re.findall(r"^\[([^\]]+)\]", request.prompt, flags=re.MULTILINE)


def anthropic_body(reply: Reply) -> dict[str, Any]:
    return {"id": "msg_fake", "type": "message", "role": "assistant", "model": "claude-fake",
            "content": [{"type": "text", "text": reply.text}],
            "stop_reason": "max_tokens" if reply.stop == "length" else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens}}


def openai_body(reply: Reply) -> dict[str, Any]:
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 1700000000, "model": "gpt-fake",
            "choices": [{"index": 0, "finish_reason": "length" if reply.stop == "length" else "stop",
                         "message": {"role": "assistant", "content": reply.text}}],
            "usage": {"prompt_tokens": reply.input_tokens, "completion_tokens": reply.output_tokens,
                      "total_tokens": reply.input_tokens + reply.output_tokens}}


def render(reply: Reply, request: RecordedRequest) -> tuple[int, bytes]:
    """Status and body bytes of `reply` in the dialect `request` expects."""
    if reply.raw is not None:
        return reply.status, reply.raw
    if reply.text is not None:
        body = anthropic_body(reply) if request.dialect == "anthropic" else openai_body(reply)
    elif request.dialect == "anthropic":
        body = {"type": "error", "error": {"type": "api_error", "message": reply.error or ""}}
    else:
        body = {"error": {"message": reply.error or "", "type": "server_error", "code": None}}
    return reply.status, json.dumps(body).encode("utf-8")


class FakeLLM:
    """Scripted replies and a log of requests; `http_client()` serves them through MockTransport."""

    def __init__(self, replies: Iterable[ReplyLike] = (), default: ReplyLike | None = None) -> None:
        self._script: deque[ReplyLike] = deque(replies)
        self._lock = threading.Lock()
        self.default: ReplyLike = default or error_reply(500, "the fake has no scripted reply left")
        self.requests: list[RecordedRequest] = []

    def push(self, *replies: ReplyLike) -> None:
        with self._lock:
            self._script.extend(replies)

    def next_reply(self, request: RecordedRequest) -> Reply:
        """Record `request` and return the reply it gets."""
        with self._lock:
            self.requests.append(request)
            reply = self._script.popleft() if self._script else self.default
        return reply(request) if callable(reply) else reply

    @staticmethod
    def record(method: str, path: str, headers: dict[str, str], body: bytes) -> RecordedRequest:
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        return RecordedRequest(method, path, {k.lower(): v for k, v in headers.items()}, body, parsed)

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        """An httpx2.MockTransport handler."""
        recorded = self.record(request.method, request.url.path, dict(request.headers), request.read())
        reply = self.next_reply(recorded)
        if reply.hang:
            raise httpx2.ReadTimeout("fake provider never answered", request=request)
        status, body = render(reply, recorded)
        return httpx2.Response(status, content=body, headers={"content-type": "application/json"})

    def http_client(self) -> httpx2.Client:
        return httpx2.Client(transport=httpx2.MockTransport(self.handler))


class FakeLLMServer(FakeLLM):
    """The same fake as a real HTTP server on 127.0.0.1 (a thread); use as a context manager."""

    def __init__(self, replies: Iterable[ReplyLike] = (), default: ReplyLike | None = None) -> None:
        super().__init__(replies, default)
        self._release = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-llm", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    def environment(self) -> dict[str, str]:
        """ANTHROPIC_BASE_URL and OPENAI_BASE_URL pointing here, for monkeypatch.setenv."""
        return {"ANTHROPIC_BASE_URL": self.anthropic_base_url, "OPENAI_BASE_URL": self.openai_base_url}

    def start(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                recorded = fake.record("POST", self.path.split("?")[0], dict(self.headers), self.rfile.read(length))
                reply = fake.next_reply(recorded)
                if reply.hang:
                    fake._release.wait(HANG_LIMIT_S)
                    return
                status, body = render(reply, recorded)
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

        return Handler
