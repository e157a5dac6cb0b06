"""The observer: compress a session's observations into 3–5 dated, prioritised notes.

Two ways to use it:
- `run_observer` behaves as CLEO's: gates, one call, every usable note stored.
  It never raises; `ObserverResult.problem` says why nothing happened.
- `propose_observer_notes` asks the model and keeps the notes as a pending
  proposal; `store_observer_notes` stores the subset a person chose.
Both store through the curation journal (run kind 'observe'), so
`undo_proposal` removes exactly what was stored.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import httpx2

from cleo_tui.brain import journal
from cleo_tui.brain.project_config import load_project_settings
from cleo_tui.brain.store import Brain
from cleo_tui.llm import results as r
from cleo_tui.llm.asking import RAW_TEXT_LIMIT, OnAsk, first_gates, read_only_problem
from cleo_tui.llm.inputs import OBSERVER_MIN_ROWS, Selection, observer_selection
from cleo_tui.llm.parsing import ParsedNotes, parse_notes
from cleo_tui.llm.pipeline import ProposeSteps, propose
from cleo_tui.llm.prompts import (
    OBSERVER_MAX_TOKENS,
    OBSERVER_SYSTEM,
    observer_line,
    observer_prompt,
)
from cleo_tui.llm.proposals import (
    APPLIED,
    DISCARDED,
    NOTE,
    OBSERVER,
    chosen_indexes,
    get_proposal,
    mark_decided,
    marked_indexes,
    marks,
    require_pending,
)
from cleo_tui.llm.providers import CancelToken, Completion, redact
from cleo_tui.llm.resolve import Resolved
from cleo_tui.llm.storage import store_note
from cleo_tui.safe_text import plural

RUN_KIND = "observe"


def _gate(brain: Brain, resolved: Resolved, session_id: str | None,
          threshold_override: int | None) -> tuple[Selection | None, r.Problem | None]:
    """CLEO's gates in order: enabled, credential, threshold, at least two rows; then writability."""
    settings = load_project_settings(brain)
    problem = first_gates(settings.observer_enabled, "observer", settings.path, resolved)
    if problem:
        return None, problem
    selection = observer_selection(brain, session_id)
    threshold = threshold_override if threshold_override is not None else settings.observer_threshold
    if selection.uncompressed < threshold:
        return None, r.Problem(r.UNDER_THRESHOLD,
                               f"{plural(selection.uncompressed, 'uncompressed observation')} in scope "
                               f"({selection.scope}); the observer runs at {threshold}. Lower it with "
                               "--threshold to run anyway.",
                               {"count": selection.uncompressed, "threshold": threshold, "scope": selection.scope})
    if len(selection.rows) < OBSERVER_MIN_ROWS:
        return None, r.Problem(r.TOO_FEW_ROWS, f"Only {plural(len(selection.rows), 'observation')} to compress "
                                               f"({selection.scope}); the observer needs {OBSERVER_MIN_ROWS}.",
                               {"count": len(selection.rows), "minimum": OBSERVER_MIN_ROWS,
                                "scope": selection.scope})
    return selection, read_only_problem(brain)


def _nothing(parsed: ParsedNotes, completion: Completion) -> r.Problem | None:
    """The problem when the answer held no usable note."""
    if parsed.notes:
        return None
    return r.Problem(r.NOTHING_PROPOSED, "The model's answer held no usable note (each needs an observation text and "
                                         "a source_ids array). Nothing was stored.",
                     {"raw_text": completion.text[:RAW_TEXT_LIMIT], "rejected": parsed.rejected})


def _content(parsed: ParsedNotes, selection: Selection) -> dict[str, Any]:
    """What an observer proposal keeps: the notes, the ids and notes left out, the scope."""
    return {"notes": parsed.notes, "dropped_ids": parsed.dropped_ids, "rejected": parsed.rejected,
            "scope": selection.scope}


def observer_steps(session_id: str | None, threshold_override: int | None) -> ProposeSteps[ParsedNotes]:
    """The observer's parts of the shared propose pipeline."""
    return ProposeSteps(
        kind=OBSERVER, gate=lambda brain, resolved: _gate(brain, resolved, session_id, threshold_override),
        system=OBSERVER_SYSTEM, max_tokens=OBSERVER_MAX_TOKENS, line=observer_line, prompt=observer_prompt,
        parse=parse_notes, nothing=_nothing, content=_content)


def propose_observer_notes(brain: Brain, session_id: str | None = None, threshold_override: int | None = None,
                           provider: str | None = None, model: str | None = None, base_url: str | None = None,
                           cancel: CancelToken | None = None,
                           http_client: httpx2.Client | None = None, on_ask: OnAsk | None = None) -> r.ProposeOutcome:
    """Ask the model for notes and keep them as a pending proposal (nothing else is written).

    Returns `ProposeOutcome(ran, proposal, problem, provider)`; `proposal` is
    None when a gate stopped it or the answer was unusable (`problem` says why).
    Raises only LlmConfigError for an unknown explicit provider name.
    """
    return propose(brain, observer_steps(session_id, threshold_override), session_id, provider, model, base_url,
                   cancel, http_client, on_ask)


def store_observer_notes(brain: Brain, proposal_id: int, note_indexes: Iterable[int]) -> r.ObserverResult:
    """Store the chosen notes of a pending observer proposal, as CLEO stores notes, in one transaction.

    Choosing none discards the proposal. Raises ProposalError (not pending,
    bad index) or ReadOnlyBrain.
    """
    with brain.write() as conn:
        proposal = require_pending(conn, proposal_id, OBSERVER)
        chosen = chosen_indexes(note_indexes, len(proposal.notes), "notes", proposal_id)
        decision: dict[str, Any] = {"stored": chosen,
                                    "rejected": [i for i in range(len(proposal.notes)) if i not in chosen]}
        if not chosen:
            mark_decided(conn, proposal_id, DISCARDED, decision)
            return r.ObserverResult(ran=True, proposal_id=proposal_id)
        graph = load_project_settings(brain).auto_capture
        run_id = journal.start_run(conn, RUN_KIND, f"observer notes of proposal {proposal_id}",
                                   {"proposal_id": proposal_id, "notes": chosen})
        result = r.ObserverResult(ran=True, proposal_id=proposal_id, run_id=run_id,
                                  provider={"provider": proposal.provider, "model": proposal.model},
                                  usage=r.Usage(**(proposal.usage or {})))
        for index in chosen:
            note = proposal.notes[index]
            note_id, inserted = store_note(conn, run_id, brain, note, proposal.session_id, graph)
            result.stored += int(inserted)
            result.note_ids.append(note_id)
            result.notes.append(note)
            result.compressed_ids += [i for i in note["source_ids"] if i not in result.compressed_ids]
        mark_decided(conn, proposal_id, APPLIED, {**decision, "note_ids": result.note_ids}, run_id)
    return result


def run_observer(brain: Brain, session_id: str | None = None, threshold_override: int | None = None,
                 provider: str | None = None, model: str | None = None, base_url: str | None = None,
                 cancel: CancelToken | None = None, http_client: httpx2.Client | None = None,
                 on_ask: OnAsk | None = None) -> r.ObserverResult:
    """CLEO's observer: gates, one call, every usable note stored. Never raises."""
    described = None
    try:
        outcome = propose_observer_notes(brain, session_id, threshold_override, provider, model, base_url,
                                         cancel, http_client, on_ask)
        described = outcome.provider
        if outcome.proposal is None:
            return r.ObserverResult(ran=outcome.ran, problem=outcome.problem, provider=described)
        result = store_observer_notes(brain, outcome.proposal.id, range(len(outcome.proposal.notes)))
        result.provider = described
        return result
    except Exception as exc:  # best-effort like CLEO: report, never raise
        return r.ObserverResult(ran=False, provider=described,
                                problem=r.Problem(r.ERROR, redact(f"{type(exc).__name__}: {exc}", None)))


def store_marked_notes(brain: Brain, proposal_id: int) -> r.ObserverResult:
    """Store exactly the notes the proposal's kept marks accept (see `proposals.set_mark`)."""
    proposal = get_proposal(brain, proposal_id)
    return store_observer_notes(brain, proposal_id, marked_indexes(proposal, marks(brain, proposal_id), NOTE))
