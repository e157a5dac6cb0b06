"""The reflector: patterns, learnings and superseded observations, proposed for review.

CLEO applies the reflector's superseded list without asking anyone; here the
answer becomes a pending proposal, and `apply_reflection` writes only what
the reviewer accepted — patterns and learnings stored as CLEO stores them,
approved ids soft-evicted while still live, `supersedes` edges — in one
journaled transaction (run kind 'reflect'), with the decision kept on the
proposal row. A proposal whose input rows changed since is refused.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import httpx2

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain import journal
from cleo_tui.brain.clock import cleo_timestamp
from cleo_tui.brain.errors import StaleState
from cleo_tui.brain.project_config import load_project_settings
from cleo_tui.brain.store import Brain
from cleo_tui.llm import results as r
from cleo_tui.llm.asking import RAW_TEXT_LIMIT, OnAsk, first_gates, read_only_problem
from cleo_tui.llm.inputs import REFLECTOR_MIN_ROWS, Selection, fingerprint, reflector_selection
from cleo_tui.llm.parsing import ParsedReflection, parse_reflection
from cleo_tui.llm.pipeline import ProposeSteps, propose
from cleo_tui.llm.prompts import (
    REFLECTOR_MAX_TOKENS,
    REFLECTOR_SYSTEM,
    reflector_line,
    reflector_prompt,
)
from cleo_tui.llm.proposals import (
    APPLIED,
    LEARNING,
    PATTERN,
    REFLECTOR,
    Proposal,
    ProposalError,
    chosen_indexes,
    get_proposal,
    mark_decided,
    marked_indexes,
    marked_superseded,
    marks,
    require_pending,
)
from cleo_tui.llm.providers import CancelToken, Completion
from cleo_tui.llm.resolve import Resolved
from cleo_tui.llm.storage import (
    REFLECTION_EDGE_WEIGHT,
    REFLECTION_PROVENANCE,
    add_edge,
    evict,
    matching_learning,
    matching_pattern,
    store_learning,
    store_pattern,
)
from cleo_tui.memory import detectors, mapping, pool_scan, tags
from cleo_tui.memory.mapping import as_text
from cleo_tui.safe_text import plural

RUN_KIND = "reflect"


def _gate(brain: Brain, resolved: Resolved, session_id: str | None) -> tuple[Selection | None, r.Problem | None]:
    """The reflector's gates in order: enabled, credential, at least 3 live rows; then writability."""
    settings = load_project_settings(brain)
    problem = first_gates(settings.reflector_enabled, "reflector", settings.path, resolved)
    if problem:
        return None, problem
    selection = reflector_selection(brain, session_id)
    if len(selection.rows) < REFLECTOR_MIN_ROWS:
        return None, r.Problem(r.TOO_FEW_ROWS, f"Only {plural(len(selection.rows), 'live observation')} to "
                                               f"reflect on ({selection.scope}); "
                                               f"the reflector needs {REFLECTOR_MIN_ROWS}.",
                               {"count": len(selection.rows), "minimum": REFLECTOR_MIN_ROWS,
                                "scope": selection.scope})
    return selection, read_only_problem(brain)


def _nothing(parsed: ParsedReflection, completion: Completion) -> r.Problem | None:
    """The problem when the model proposed nothing at all."""
    if not parsed.empty:
        return None
    return r.Problem(r.NOTHING_PROPOSED, "The model proposed no pattern, learning or superseded id. Nothing was "
                                         "stored.",
                     {"raw_text": completion.text[:RAW_TEXT_LIMIT], "dropped_ids": parsed.dropped_ids})


def _content(parsed: ParsedReflection, selection: Selection) -> dict[str, Any]:
    """What a reflector proposal keeps: patterns, learnings, superseded ids, the ids left out, the scope."""
    return {"patterns": parsed.patterns, "learnings": parsed.learnings, "superseded": parsed.superseded,
            "dropped_ids": parsed.dropped_ids, "scope": selection.scope}


def reflector_steps(session_id: str | None) -> ProposeSteps[ParsedReflection]:
    """The reflector's parts of the shared propose pipeline."""
    return ProposeSteps(
        kind=REFLECTOR, gate=lambda brain, resolved: _gate(brain, resolved, session_id),
        system=REFLECTOR_SYSTEM, max_tokens=REFLECTOR_MAX_TOKENS, line=reflector_line, prompt=reflector_prompt,
        parse=parse_reflection, nothing=_nothing, content=_content)


def propose_reflection(brain: Brain, session_id: str | None = None, provider: str | None = None,
                       model: str | None = None, base_url: str | None = None, cancel: CancelToken | None = None,
                       http_client: httpx2.Client | None = None, on_ask: OnAsk | None = None) -> r.ProposeOutcome:
    """Ask the model to reflect and keep its answer as a pending proposal (nothing else is written).

    Gates: enabled in CLEO's config, a credential, at least 3 live rows, a
    writable brain. Raises only LlmConfigError for an unknown explicit provider.
    """
    return propose(brain, reflector_steps(session_id), session_id, provider, model, base_url, cancel,
                   http_client, on_ask)


@dataclass(frozen=True)
class Protection:
    """Why an observation is protected, as the tags say it (memory/tags.py); `protected` only while live."""

    protected: bool
    reasons: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"protected": self.protected, "reasons": list(self.reasons)}


def _identifier_counts(brain: Brain, identifiers: set[str]) -> Counter[str]:
    """How many live observations and live reflections hold each identifier (as the tagger counts).

    Only rows whose title or narrative contains the identifier's text can hold
    it, so those few are read and analysed, not the whole brain.
    """
    counts: Counter[str] = Counter()
    if not identifiers:
        return counts
    have = brain.features.columns(cs.OBSERVATIONS)
    text_cols = [c for c in ("title", "narrative") if c in have]
    select = ", ".join(f'"{c}"' if c in have else f'NULL AS "{c}"' for c in tags.POOL_COLUMNS)
    live = "invalid_at IS NULL" if "invalid_at" in have else "1"
    for identifier in sorted(identifiers):
        holds = " OR ".join(f'instr(CAST("{c}" AS TEXT), ?) > 0' for c in text_cols) or "0"
        rows = brain.query(f"SELECT {select} FROM {cs.OBSERVATIONS} WHERE {live} AND ({holds})",
                           [identifier] * len(text_cols))
        texts = [tags.judged_text(dict(zip(tags.POOL_COLUMNS, row, strict=True))) for row in rows]
        counts[identifier] = sum(identifier in found for found in detectors.identifiers_of(texts))
    for found in detectors.identifiers_of(pool_scan.live_reflection_texts(brain)):
        counts.update(found & identifiers)
    return counts


def protection_of(brain: Brain, observation_ids: Iterable[str]) -> dict[str, Protection]:
    """Protection of just these observations, by id (ids not in the brain are left out).

    The same reasons the tags give (critical relevance, pins, completions,
    unique identifiers ...), computed on these rows only.
    """
    wanted = list(dict.fromkeys(observation_ids))
    if not wanted or not brain.features.has_table(cs.OBSERVATIONS):
        return {}
    have = brain.features.columns(cs.OBSERVATIONS)
    select = ", ".join(f'"{c}"' if c in have else f'NULL AS "{c}"' for c in tags.POOL_COLUMNS)
    rows = [dict(zip(tags.POOL_COLUMNS, r, strict=True)) for r in brain.query(
        f"SELECT {select} FROM {cs.OBSERVATIONS} WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(wanted),))]
    overrides = mapping.relevance_overrides(brain)
    findings = detectors.analyse_texts([tags.judged_text(row) for row in rows])
    counts = _identifier_counts(brain, {i for found in findings for i in found[0]})
    out = {}
    for row, (identifiers, text_reasons) in zip(rows, findings, strict=True):
        obs_id = as_text(row["id"])
        live = row["invalid_at"] is None
        relevance, why = mapping.derive_relevance(row, overrides.get(obs_id))
        reasons = tags.protection_reasons(list(text_reasons), relevance, why, identifiers, counts, own=1 if live else 0)
        out[obs_id] = Protection(live and bool(reasons), tuple(reasons))
    return out


def superseded_details(brain: Brain, proposal: Proposal) -> list[dict[str, Any]]:
    """Each proposed superseded observation in full, beside the model's reason, for review.

    Each entry also says whether the row is `protected` and why (`reasons`):
    evicting a protected row needs a second confirmation (`confirm_protected`).
    """
    has = brain.features.columns(cs.OBSERVATIONS)
    cols = [c for c in ("id", "type", "title", "narrative", "created_at", "source_type", "invalid_at") if c in has]
    protection = protection_of(brain, [item["id"] for item in proposal.superseded])
    out = []
    for item in proposal.superseded:
        row = brain.query_one(f"SELECT {', '.join(cols)} FROM {cs.OBSERVATIONS} WHERE id = ?", (item["id"],))
        found = {c: (as_text(row[c]) if row[c] is not None else None) for c in cols} if row else {}
        guard = protection.get(item["id"], Protection(False, ()))
        out.append({**item, "exists": row is not None,
                    "live": row is not None and found.get("invalid_at") is None, "row": found, **guard.to_dict()})
    return out


def merge_targets(brain: Brain, proposal: Proposal, patterns: Iterable[int],
                  learnings: Iterable[int]) -> tuple[dict[int, str], dict[int, str]]:
    """Which accepted patterns and learnings would merge into a stored row (index → its id), as
    `apply_reflection` merges them: the apply dialog says "merge into P-…", not "store"."""
    with brain.lock:
        merged_patterns = {i: found[0] for i in patterns
                           if (found := matching_pattern(brain.conn, brain, proposal.patterns[i]["pattern"]))}
        merged_learnings = {i: found[0] for i in learnings
                            if (found := matching_learning(brain.conn, brain, proposal.learnings[i]["insight"]))}
    return merged_patterns, merged_learnings


class ProtectedEviction(ProposalError):
    """Approved evictions of protected rows that were not confirmed a second time."""

    def __init__(self, proposal_id: int, refused: dict[str, Protection]) -> None:
        self.refused = refused
        named = "; ".join(f"{i} ({', '.join(p.reasons[:2])}{' …' if len(p.reasons) > 2 else ''})"
                          for i, p in refused.items())
        super().__init__(
            f"Reflector proposal {proposal_id} would evict {plural(len(refused), 'protected observation')}: {named}. "
            "Nothing was written. Confirm each one a second time (`--confirm-protected "
            f"{','.join(refused)}`), or keep them live.")


def _check_fresh(brain: Brain, proposal: Proposal) -> None:
    """Refuse a proposal whose input rows were changed, evicted or deleted since it was made."""
    if proposal.pool_fingerprint and fingerprint(brain, proposal.input_ids) != proposal.pool_fingerprint:
        raise StaleState(
            f"Reflector proposal {proposal.id} is stale: some of the {len(proposal.input_ids)} observations it "
            "was made from changed since (edited, evicted or removed). Nothing was written; discard it and "
            "run the reflector again.")


def _approved(proposal: Proposal, approved: Iterable[str]) -> list[str]:
    """Approved ids in the proposal's order; an id it did not propose is refused."""
    proposed = [item["id"] for item in proposal.superseded]
    approved_set = set(approved)
    unknown = sorted(approved_set - set(proposed))
    if unknown:
        raise ProposalError(f"Reflector proposal {proposal.id} did not propose superseding "
                            f"{', '.join(unknown)}; only its own superseded ids can be approved.")
    return [i for i in proposed if i in approved_set]


def apply_reflection(brain: Brain, proposal_id: int, approved_superseded: Iterable[str],
                     accepted_patterns: Iterable[int], accepted_learnings: Iterable[int],
                     confirm_protected: Iterable[str] = ()) -> r.ReflectorResult:
    """Write the accepted part of a pending reflector proposal in one transaction; returns ReflectorResult.

    An approved id whose row is protected (see `protection_of`) is evicted only
    when it is also in `confirm_protected` (the reviewer's second confirmation).
    Raises ProposalError (unknown or decided proposal, bad index or id),
    ProtectedEviction (a protected id not confirmed), StaleState (input rows
    changed since) or ReadOnlyBrain; nothing is written then.
    """
    confirmed = set(confirm_protected)
    with brain.write() as conn:
        proposal = require_pending(conn, proposal_id, REFLECTOR)
        patterns = chosen_indexes(accepted_patterns, len(proposal.patterns), "patterns", proposal_id)
        learnings = chosen_indexes(accepted_learnings, len(proposal.learnings), "learnings", proposal_id)
        approved = _approved(proposal, approved_superseded)
        _check_fresh(brain, proposal)
        refused = {i: p for i, p in protection_of(brain, approved).items() if p.protected and i not in confirmed}
        if refused:
            raise ProtectedEviction(proposal_id, refused)
        graph = load_project_settings(brain).auto_capture
        run_id = journal.start_run(conn, RUN_KIND, f"reflector proposal {proposal_id}",
                                   {"proposal_id": proposal_id, "patterns": patterns, "learnings": learnings,
                                    "superseded": approved})
        result = r.ReflectorResult(ran=True, proposal_id=proposal_id, run_id=run_id,
                                   rejected_ids=[i["id"] for i in proposal.superseded if i["id"] not in approved])
        for index in patterns:
            pattern_id, new = store_pattern(conn, run_id, brain, proposal.patterns[index], graph)
            result.pattern_ids.append(pattern_id)
            if not new:
                result.merged_pattern_ids.append(pattern_id)
        for index in learnings:
            learning_id, new = store_learning(conn, run_id, brain, proposal.learnings[index], graph)
            result.learning_ids.append(learning_id)
            if not new:
                result.merged_learning_ids.append(learning_id)
        result.patterns_merged = len(result.merged_pattern_ids)
        result.learnings_merged = len(result.merged_learning_ids)
        result.patterns_stored = len(patterns) - result.patterns_merged
        result.learnings_stored = len(learnings) - result.learnings_merged
        for observation_id in approved:
            target = result.superseded_ids if evict(conn, run_id, brain, observation_id) else result.already_evicted_ids
            target.append(observation_id)
        if graph:
            now = cleo_timestamp()
            for source in [f"pattern:{i}" for i in result.pattern_ids] + [f"learning:{i}" for i in result.learning_ids]:
                for observation_id in approved:
                    add_edge(conn, run_id, brain, source, f"observation:{observation_id}", REFLECTION_EDGE_WEIGHT,
                             now, REFLECTION_PROVENANCE)
        mark_decided(conn, proposal_id, APPLIED, {
            "accepted_patterns": patterns, "accepted_learnings": learnings, "approved_superseded": approved,
            "rejected_superseded": result.rejected_ids, "evicted": result.superseded_ids,
            "already_evicted": result.already_evicted_ids, "pattern_ids": result.pattern_ids,
            "learning_ids": result.learning_ids, "merged_pattern_ids": result.merged_pattern_ids,
            "merged_learning_ids": result.merged_learning_ids}, run_id)
    return result


def apply_marked_reflection(brain: Brain, proposal_id: int,
                            confirm_protected: Iterable[str] = ()) -> r.ReflectorResult:
    """Apply exactly what the proposal's kept marks accept (see `proposals.set_mark`)."""
    proposal = get_proposal(brain, proposal_id)
    current = marks(brain, proposal_id)
    return apply_reflection(brain, proposal_id, marked_superseded(proposal, current),
                            marked_indexes(proposal, current, PATTERN), marked_indexes(proposal, current, LEARNING),
                            confirm_protected)


def run_reflector(brain: Brain, session_id: str | None = None, provider: str | None = None,
                  model: str | None = None, base_url: str | None = None, cancel: CancelToken | None = None,
                  http_client: httpx2.Client | None = None) -> r.ReflectorResult:
    """CLEO's reflector without review: propose, then apply everything proposed. Never raises.

    Like CLEO it evicts every proposed row, protected ones included (calling it
    is the confirmation); the review path (`apply_reflection`) asks first.
    """
    try:
        outcome = propose_reflection(brain, session_id, provider, model, base_url, cancel, http_client)
        if outcome.proposal is None:
            return r.ReflectorResult(ran=outcome.ran, problem=outcome.problem)
        proposal = outcome.proposal
        every = [i["id"] for i in proposal.superseded]
        return apply_reflection(brain, proposal.id, every, range(len(proposal.patterns)),
                                range(len(proposal.learnings)), confirm_protected=every)
    except Exception as exc:  # best-effort like CLEO: report, never raise
        return r.ReflectorResult(ran=False, problem=r.Problem(r.ERROR, f"{type(exc).__name__}: {exc}"))
