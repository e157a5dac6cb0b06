"""One completion call through the `anthropic` or `openai` SDK, cancellable, key-safe.

`complete()` is the only function here that touches the network. It builds a
fresh SDK client per call (Anthropic Messages, OpenAI chat completions, or an
OpenAI-compatible server by base URL) with the resolved timeout and bounded
retries, and turns every failure into `ProviderFailure` (status and a short,
redacted message) or `Cancelled`. Tests inject `http_client` (an
`httpx2.Client` over `httpx2.MockTransport`) or point `base_url` at a loopback
fake server.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import httpx2

from cleo_tui.llm.resolve import ANTHROPIC, COMPATIBLE, Resolved
from cleo_tui.llm.results import Usage

_MESSAGE_LIMIT = 400
# Shapes of API keys, redacted even when they are not the key in use.
_KEY_SHAPES = re.compile(r"\b(sk-[A-Za-z0-9_\-]{6,}|sk_[A-Za-z0-9_\-]{6,})")


class ProviderFailure(Exception):
    """The provider did not give an answer: HTTP status (None for timeouts/connection) and why."""

    def __init__(self, status: int | None, message: str, kind: str = "http") -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind  # http, timeout, connection, other


class Cancelled(Exception):
    """The call was cancelled through its CancelToken."""


class CancelToken:
    """Cancel an LLM call from another thread (the TUI's cancel key).

    `cancel()` sets the flag, wakes the caller waiting on the call under way
    (it returns `Cancelled` at once instead of at the timeout) and closes that
    call's client. The observer and reflector check the flag before the call
    and again before storing anything, so a cancelled call never writes.
    One token per call: once cancelled it stays cancelled.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._closers: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        with self._lock:
            self._event.set()
            closers, self._closers = self._closers, []
        for close in closers:
            _quietly(close)

    def check(self) -> None:
        if self._event.is_set():
            raise Cancelled()

    @contextmanager
    def watching(self, close: Callable[[], None]) -> Iterator[None]:
        """Run a call during which `cancel()` will invoke `close`."""
        with self._lock:
            already = self._event.is_set()
            if not already:
                self._closers.append(close)
        if already:
            raise Cancelled()
        try:
            yield
        finally:
            with self._lock:
                if close in self._closers:
                    self._closers.remove(close)


@dataclass(frozen=True)
class Completion:
    """The model's answer: text, the model that answered, usage, why it stopped."""

    text: str
    model: str
    usage: Usage
    finish_reason: str | None

    @property
    def truncated(self) -> bool:
        """The answer hit the token limit (Anthropic `max_tokens`, OpenAI `length`)."""
        return self.finish_reason in ("max_tokens", "length")


def _quietly(fn: Callable[[], None]) -> None:
    try:
        fn()
    except Exception:  # closing a client that is mid-request may complain; nothing to do
        pass


RUN_LIMIT = 8  # this many characters in a row that also occur in the key are redacted


def redact_key_runs(text: str, secret: str | None) -> str:
    """`text` with the key, and every run of RUN_LIMIT+ characters found in the key, replaced.

    An endpoint may echo the key slightly altered (cut, one character changed):
    any long piece of it is still a secret.
    """
    if not secret or len(secret) < 4:
        return text
    text = text.replace(secret, "[redacted]")
    if len(secret) < RUN_LIMIT:
        return text
    pieces = {secret[i:i + RUN_LIMIT] for i in range(len(secret) - RUN_LIMIT + 1)}
    hits = [False] * len(text)
    for i in range(len(text) - RUN_LIMIT + 1):
        if text[i:i + RUN_LIMIT] in pieces:
            for j in range(i, i + RUN_LIMIT):
                hits[j] = True
    if not any(hits):
        return text
    out, i = [], 0
    while i < len(text):
        if hits[i]:
            while i < len(text) and hits[i]:
                i += 1
            out.append("[redacted]")
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def redact(text: str, secret: str | None) -> str:
    """`text` with the key (long runs of it, anything shaped like a key) replaced, and cut short."""
    text = redact_key_runs(text, secret)
    text = _KEY_SHAPES.sub("[redacted]", text)
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 1] + "…"


def _error_message(body: Any, fallback: str) -> str:
    """The provider's own error message from a JSON error body, else `fallback`."""
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return fallback


def _failure(exc: Exception, key: str | None) -> ProviderFailure:
    """Map either SDK's exception to a ProviderFailure with no key in it."""
    import anthropic  # the SDKs load in about 2 s: only when a model is really called
    import openai

    if isinstance(exc, (anthropic.APITimeoutError, openai.APITimeoutError)):
        return ProviderFailure(None, "the request timed out", "timeout")
    if isinstance(exc, (anthropic.APIStatusError, openai.APIStatusError)):
        status = exc.status_code
        message = _error_message(getattr(exc, "body", None), f"HTTP {status}")
        return ProviderFailure(status, redact(f"HTTP {status}: {message}", key))
    if isinstance(exc, (anthropic.APIConnectionError, openai.APIConnectionError)):
        return ProviderFailure(None, "could not connect to the provider", "connection")
    return ProviderFailure(None, redact(f"{type(exc).__name__}: {exc}", key), "other")


def _anthropic_call(resolved: Resolved, system: str, prompt: str, max_tokens: int,
                    http_client: httpx2.Client | None) -> tuple[Any, Callable[[], Completion]]:
    import anthropic

    client = anthropic.Anthropic(api_key=resolved.api_key, base_url=resolved.base_url,
                                 http_client=http_client, max_retries=resolved.max_retries,
                                 timeout=resolved.timeout)

    def call() -> Completion:
        message = client.messages.create(model=resolved.model, max_tokens=max_tokens, system=system,
                                         messages=[{"role": "user", "content": prompt}])
        text = "".join(getattr(block, "text", "") or "" for block in (message.content or [])
                       if getattr(block, "type", None) == "text")
        usage = Usage(int(message.usage.input_tokens or 0), int(message.usage.output_tokens or 0))
        return Completion(text, message.model or resolved.model, usage, message.stop_reason)

    return client, call


def _openai_call(resolved: Resolved, system: str, prompt: str, max_tokens: int,
                 http_client: httpx2.Client | None) -> tuple[Any, Callable[[], Completion]]:
    import openai

    client = openai.OpenAI(api_key=resolved.api_key, base_url=resolved.base_url,
                           http_client=http_client, max_retries=resolved.max_retries,
                           timeout=resolved.timeout)
    # OpenAI's newer models take max_completion_tokens; local servers know max_tokens.
    limit: dict[str, Any] = ({"max_tokens": max_tokens} if resolved.provider == COMPATIBLE
                             else {"max_completion_tokens": max_tokens})

    def call() -> Completion:
        response = client.chat.completions.create(
            model=resolved.model, messages=[{"role": "system", "content": system},
                                            {"role": "user", "content": prompt}], **limit)
        choice = response.choices[0] if response.choices else None
        text = (choice.message.content or "") if choice and choice.message else ""
        usage = response.usage
        tokens = Usage(int(getattr(usage, "prompt_tokens", 0) or 0),
                       int(getattr(usage, "completion_tokens", 0) or 0))
        return Completion(text, response.model or resolved.model, tokens,
                          choice.finish_reason if choice else None)

    return client, call


def _call_in_thread(call: Callable[[], Completion], token: CancelToken,
                    close: Callable[[], None], deadline: float | None = None) -> Completion:
    """Run `call` on a helper thread and return as soon as it ends or `token` is cancelled.

    Closing a client does not reliably interrupt a request that is waiting on
    the network, so a cancelled call is abandoned (its thread ends at the
    timeout at the latest) and the caller gets `Cancelled` at once.
    """
    wake = threading.Event()
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = call()
        except BaseException as exc:  # handed to the caller's thread below
            box["error"] = exc
        finally:
            wake.set()

    def wake_and_close() -> None:
        wake.set()
        close()

    with token.watching(wake_and_close):
        threading.Thread(target=target, name="llm-call", daemon=True).start()
        finished = wake.wait(deadline)
    if token.cancelled:
        raise Cancelled()
    if not finished:  # a server that never answers, or drips a byte at a time: give up, abandon it
        _quietly(close)
        raise ProviderFailure(None, f"no answer within {deadline:g} s, the deadline for the whole call (connecting, "
                                    "waiting for the answer and every retry); llm.deadline in cleo-tui's config "
                                    "sets it", "timeout")
    if "error" in box:
        raise box["error"]
    result: Completion = box["result"]
    return result


class _SetupFailed(Exception):
    """The SDK refused its arguments (a bad base URL ...): not the provider's answer."""


def complete(resolved: Resolved, system: str, prompt: str, max_tokens: int,
             http_client: httpx2.Client | None = None, cancel: CancelToken | None = None) -> Completion:
    """Ask the resolved provider once; raise ProviderFailure or Cancelled, never leak the key.

    One deadline (`resolved.deadline`) bounds the whole call: loading the SDK (seconds on a
    busy machine), connecting, waiting for the answer and every retry all happen on the
    helper thread the caller stops waiting for when it passes.
    """
    token = cancel or CancelToken()
    token.check()
    build = _anthropic_call if resolved.provider == ANTHROPIC else _openai_call
    # No single request may outlive the deadline either (the abandoned thread ends by then).
    bounded = replace(resolved, timeout=min(resolved.timeout, resolved.deadline))
    clients: list[Any] = []

    def whole() -> Completion:
        try:
            client, call = build(bounded, system, prompt, max_tokens, http_client)
        except Exception as exc:
            raise _SetupFailed(str(exc)) from None
        clients.append(client)
        token.check()
        return call()

    def close() -> None:
        for client in clients:
            client.close()

    cancelled = False
    try:
        completion = _call_in_thread(whole, token, close, resolved.deadline)
        # An endpoint may echo the key in its answer; the answer is kept and shown, the key never.
        cleaned = redact_key_runs(completion.text, resolved.api_key)
        if cleaned != completion.text:
            completion = replace(completion, text=cleaned)
        return completion
    except Cancelled:
        cancelled = True
        raise
    except ProviderFailure:
        raise
    except _SetupFailed as exc:
        raise ProviderFailure(None, redact(f"the client could not be set up: {exc}", resolved.api_key),
                              "other") from None
    except Exception as exc:
        if token.cancelled:
            cancelled = True
            raise Cancelled() from None
        raise _failure(exc, resolved.api_key) from None
    finally:
        if http_client is None and not cancelled:  # an injected client belongs to the caller
            _quietly(close)
