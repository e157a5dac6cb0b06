"""One propose pipeline for the observer and the reflector; each passes in the parts that differ.

Both ask the model the same way: resolve the provider, run their gates (CLEO's, in CLEO's
order), show the model the selected rows one line each, fingerprint those rows, ask once,
parse, refuse an answer with nothing usable or a cancelled call, and keep the answer as a
pending proposal (nothing else is written). What differs is a `ProposeSteps`: the gates,
the prompt, the parser, what "nothing usable" means, and what the proposal keeps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import httpx2

from cleo_tui.brain.store import Brain
from cleo_tui.llm import results as r
from cleo_tui.llm.asking import OnAsk, ask, keep_raw, parse_answer
from cleo_tui.llm.inputs import InputRow, Selection, fingerprint
from cleo_tui.llm.proposals import create_proposal
from cleo_tui.llm.providers import CancelToken, Completion
from cleo_tui.llm.resolve import Resolved, resolve_provider

P = TypeVar("P")  # what the parser makes of the answer (ParsedNotes, ParsedReflection)

Gate = Callable[[Brain, Resolved], tuple[Selection | None, r.Problem | None]]


@dataclass(frozen=True)
class ProposeSteps(Generic[P]):
    """The parts of the propose pipeline one kind (observer, reflector) brings.

    - `gate(brain, resolved)`: the rows to show, or the problem that stops before the model is asked;
    - `line(row)` and `prompt(lines)`: what the model reads, with `system` and `max_tokens`;
    - `parse(text, ids)`: the answer, keeping only ids the model was shown (raises Unparsable);
    - `nothing(parsed, completion)`: the problem when the answer holds nothing usable, else None;
    - `content(parsed, selection)`: what the proposal keeps of the answer.
    """

    kind: str
    gate: Gate
    system: str
    max_tokens: int
    line: Callable[[InputRow], str]
    prompt: Callable[[list[str]], str]
    parse: Callable[[str, list[str]], P]
    nothing: Callable[[P, Completion], r.Problem | None]
    content: Callable[[P, Selection], dict[str, Any]]


def propose(brain: Brain, steps: ProposeSteps[P], session_id: str | None, provider: str | None,
            model: str | None, base_url: str | None, cancel: CancelToken | None,
            http_client: httpx2.Client | None, on_ask: OnAsk | None) -> r.ProposeOutcome:
    """Gate, ask, parse and keep the answer as a pending proposal of `steps.kind`.

    Returns `ProposeOutcome(ran, proposal, problem, provider)`: `ran` is False when a gate
    stopped it before the model was asked; `proposal` is None when the answer was unusable.
    Raises only LlmConfigError for an unknown explicit provider name.
    """
    resolved = resolve_provider(brain, provider, model, base_url)
    described = resolved.describe()
    selection, problem = steps.gate(brain, resolved)
    if problem or selection is None:
        return r.ProposeOutcome(False, None, problem, described)
    lines = [steps.line(row) for row in selection.rows]
    pool = fingerprint(brain, selection.ids)  # the rows as the model sees them, not as they are after
    completion, problem = ask(resolved, steps.system, steps.prompt(lines), steps.max_tokens,
                              http_client, cancel, on_ask)
    if completion is None:
        return r.ProposeOutcome(True, None, problem, described)
    parsed, problem = parse_answer(completion, lambda text: steps.parse(text, selection.ids))
    if parsed is None:
        return r.ProposeOutcome(True, None, problem, described)
    problem = steps.nothing(parsed, completion)
    if problem:
        return r.ProposeOutcome(True, None, problem, described)
    if cancel is not None and cancel.cancelled:
        return r.ProposeOutcome(True, None, r.Problem(r.CANCELLED, "Cancelled; nothing was stored."), described)
    proposal = create_proposal(
        brain, steps.kind, session_id, resolved.provider, completion.model,
        [{**row.to_dict(), "line": line} for row, line in zip(selection.rows, lines, strict=True)],
        steps.content(parsed, selection), keep_raw(completion.text), completion.usage.to_dict(), pool)
    return r.ProposeOutcome(True, proposal, None, described)
