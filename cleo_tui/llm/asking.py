"""The steps the observer and reflector share: the credential and write gates, and one ask.

Each returns a `Problem` instead of raising, so the callers can stop early and
say why, as CLEO's best-effort paths do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import httpx2

from cleo_tui.brain.store import Brain
from cleo_tui.llm import results as r
from cleo_tui.llm.parsing import Unparsable
from cleo_tui.llm.providers import Cancelled, CancelToken, Completion, ProviderFailure, complete
from cleo_tui.llm.resolve import Resolved, display_url

T = TypeVar("T")
RAW_TEXT_LIMIT = 20_000  # raw answers shown for inspection are cut here
RAW_KEEP_LIMIT = 64 * 1024  # raw answers stored with a proposal are cut here


def keep_raw(text: str) -> str:
    """The raw answer as it is stored beside a proposal: at most RAW_KEEP_LIMIT characters."""
    if len(text) <= RAW_KEEP_LIMIT:
        return text
    note = f"\n[… cut: the answer had {len(text):,} characters]"
    return text[: RAW_KEEP_LIMIT - len(note)] + note


def credential_problem(resolved: Resolved) -> r.Problem | None:
    if resolved.has_credential:
        return None
    return r.Problem(r.NO_CREDENTIAL, resolved.missing_credential(),
                     {"provider": resolved.provider, "env_vars": [resolved.key_env]})


def first_gates(enabled: bool, who: str, config: object, resolved: Resolved) -> r.Problem | None:
    """CLEO's first two gates of the observer and the reflector (`who`): enabled in its config, a credential."""
    if not enabled:
        return r.Problem(r.DISABLED, f"The {who} is disabled in CLEO's config (brain.{who}.enabled is false).",
                         {"config": str(config)})
    return credential_problem(resolved)


def read_only_problem(brain: Brain) -> r.Problem | None:
    if not brain.read_only:
        return None
    return r.Problem(r.READ_ONLY, f"This brain is read-only ({brain.read_only_reason}), so nothing the model "
                                  "proposed could be kept; the model was not asked.")


OnAsk = Callable[[Resolved], None]


def asking_line(resolved: Resolved) -> str:
    """What is about to be asked and where (issue 19 item 7); the host never shows user info."""
    where = display_url(resolved.base_url) or f"{resolved.provider}'s default API"
    return f"asking {resolved.provider} {resolved.model} at {where} … (Ctrl-C cancels)"


def ask(resolved: Resolved, system: str, prompt: str, max_tokens: int, http_client: httpx2.Client | None,
        cancel: CancelToken | None, on_ask: OnAsk | None = None) -> tuple[Completion | None, r.Problem | None]:
    """One call; a failure or a cancellation comes back as a Problem. `on_ask` hears of it first."""
    if on_ask is not None:
        on_ask(resolved)
    try:
        return complete(resolved, system, prompt, max_tokens, http_client=http_client, cancel=cancel), None
    except Cancelled:
        return None, r.Problem(r.CANCELLED, "Cancelled; nothing was stored.")
    except ProviderFailure as failure:
        where = display_url(resolved.base_url) or f"{resolved.provider}'s default API"
        return None, r.Problem(r.PROVIDER_ERROR, f"{resolved.provider} at {where} did not answer: "
                                                 f"{failure.message}. Nothing was stored.",
                               {"status": failure.status, "error": failure.kind})


def parse_answer(completion: Completion, parse: Callable[[str], T]) -> tuple[T | None, r.Problem | None]:
    """Parse the answer; unparsable output is reported with its raw text kept for inspection."""
    try:
        return parse(completion.text), None
    except Unparsable as exc:
        why = f"{exc}; the answer was cut off at the token limit" if completion.truncated else str(exc)
        return None, r.Problem(r.UNPARSABLE, f"The model's answer could not be used ({why}). Nothing was stored.",
                               {"raw_text": completion.text[:RAW_TEXT_LIMIT], "truncated": completion.truncated,
                                "usage": completion.usage.to_dict()})
