"""`cleo-tui observe` and `cleo-tui reflect`: the observer and reflector from the command line.

observe                      CLEO's observer: every usable note stored (ObserverResult)
observe --propose            keep the notes as a pending proposal, store nothing
observe --store ID [--notes 0,2]   store chosen notes of a pending observer proposal
reflect                      ask the reflector; its answer becomes a pending proposal
reflect --apply              ask and apply everything (CLEO's behaviour) → ReflectorResult
reflect --apply --proposal ID [--approve IDS] [--patterns N,..] [--learnings N,..]
                             [--confirm-protected IDS]  (protected rows: asked, or refused)
reflect --list | --show ID | --discard ID | --undo ID
When the model is not asked or its answer is unusable, the reason is printed
(and is the `problem` of the JSON); the exit status is 1 for failures a user
should act on (no credential, provider error, unusable answer), 0 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from cleo_tui.commands.argtypes import nonblank_text, sqlite_int
from cleo_tui.commands.common import (
    AddCommand,
    UsageError,
    add_brain_options,
    brain_from_args,
    confirmed,
    emit_json,
    is_terminal,
    print_undo,
)
from cleo_tui.llm import results as r
from cleo_tui.llm.asking import asking_line
from cleo_tui.llm.observer import (
    propose_observer_notes,
    run_observer,
    store_observer_notes,
)
from cleo_tui.llm.proposals import (
    STATUSES,
    Proposal,
    discard_proposal,
    get_proposal,
    list_proposals,
    undo_proposal,
)
from cleo_tui.llm.reflector import (
    ProtectedEviction,
    apply_reflection,
    propose_reflection,
    superseded_details,
)
from cleo_tui.llm.resolve import PROVIDERS, Resolved
from cleo_tui.memory.cleo_effects import EVICTION_IN_CLEO
from cleo_tui.safe_text import one_line, plural

FAILURES = {r.NO_CREDENTIAL, r.PROVIDER_ERROR, r.UNPARSABLE, r.READ_ONLY, r.CANCELLED, r.ERROR}


def _provider_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--session", metavar="ID", type=nonblank_text("--session"),
                        help="the CLEO session (source_session_id) to work on")
    parser.add_argument("--provider", choices=PROVIDERS, help="LLM provider (default: resolved from config/env)")
    parser.add_argument("--model", metavar="NAME", type=nonblank_text("--model"),
                        help="model name (default: CLEO_OBSERVER_MODEL, config, built-in)")
    parser.add_argument("--base-url", metavar="URL", type=nonblank_text("--base-url"),
                        help="provider endpoint, e.g. a local OpenAI-compatible server's /v1")
    parser.add_argument("--json", action="store_true", help="print JSON")


def register(add: AddCommand) -> None:
    observe = add("observe", help="compress the session's observations into notes (CLEO's observer)",
                  description="Run CLEO's observer. Without an API key it says so and does nothing.")
    add_brain_options(observe, read_only_flag=False)
    _provider_options(observe)
    observe.add_argument("--threshold", metavar="N",
                         type=sqlite_int("--threshold", low=1, what="a number of observations (1 or more)"),
                         help="run at N uncompressed observations (default: config, 10)")
    mode = observe.add_mutually_exclusive_group()
    mode.add_argument("--propose", action="store_true", help="keep the notes as a pending proposal; store nothing")
    mode.add_argument("--store", metavar="PROPOSAL_ID", type=sqlite_int("--store"),
                      help="store notes of a pending observer proposal")
    observe.add_argument("--notes", metavar="N,N", help="with --store: which notes (0-based; default: all)")
    observe.set_defaults(func=cmd_observe, needs="observations")

    reflect = add("reflect", help="propose patterns, learnings and superseded observations for review",
                  description="Ask CLEO's reflector. Its answer is kept as a pending proposal; "
                              "--apply writes it (all of it, or the parts you choose).")
    add_brain_options(reflect, read_only_flag=False)
    _provider_options(reflect)
    action = reflect.add_mutually_exclusive_group()
    action.add_argument("--apply", action="store_true", help="apply: a new proposal in full, or --proposal ID")
    reflect.add_argument("--proposal", metavar="ID", type=sqlite_int("--proposal"),
                         help="with --apply: the pending proposal to apply")
    reflect.add_argument("--approve", metavar="IDS",
                         help="superseded ids to evict, comma-separated (default: all; '' for none)")
    reflect.add_argument("--patterns", metavar="N,N", help="patterns to store, 0-based (default: all; '' for none)")
    reflect.add_argument("--learnings", metavar="N,N", help="learnings to store, 0-based (default: all; '' for none)")
    reflect.add_argument("--confirm-protected", metavar="IDS",
                         help="with --apply: protected superseded ids you confirm evicting (otherwise asked, "
                              "or refused when not at a terminal)")
    action.add_argument("--list", action="store_true", help="list proposals (observer and reflector)")
    reflect.add_argument("--status", choices=STATUSES, help="with --list: only this status")
    action.add_argument("--show", metavar="ID", type=sqlite_int("--show"), help="show one proposal in full")
    action.add_argument("--discard", metavar="ID", type=sqlite_int("--discard"), help="discard a pending proposal")
    action.add_argument("--undo", metavar="ID", type=sqlite_int("--undo"), help="undo an applied proposal")
    reflect.set_defaults(func=cmd_reflect, needs="observations")


def _indexes(text: str | None, flag: str) -> list[int] | None:
    """`0,2` → [0, 2]; None when the flag was not given."""
    if text is None:
        return None
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"{flag} takes numbers separated by commas, e.g. {flag} 0,2.") from None


def _ids(text: str | None) -> list[str] | None:
    return None if text is None else [part.strip() for part in text.split(",") if part.strip()]


def _exit(problem: r.Problem | None) -> int:
    return 1 if problem is not None and problem.kind in FAILURES else 0


def _print_problem(problem: r.Problem | None) -> None:
    if problem is not None:
        print(f"Nothing done: {one_line(problem.message)}")
        if problem.details.get("raw_text"):
            print("The model's answer:\n" + one_line(problem.details["raw_text"], 2000))


def _print_provider(described: dict[str, Any] | None) -> None:
    if described:
        url = f" at {one_line(described['base_url'])}" if described.get("base_url") else ""
        print(f"model: {described['provider']} · {one_line(described['model'])}{url}")
        for warning in described.get("warnings", []):
            print(f"warning: {one_line(warning)}")


def _print_observer(result: r.ObserverResult) -> None:
    _print_provider(result.provider)
    _print_problem(result.problem)
    for note, note_id in zip(result.notes, result.note_ids, strict=True):
        print(f"{note_id}  p{note['priority']} {note['date']}  {one_line(note['observation'])}")
        print(f"    compresses: {one_line(', '.join(note['source_ids'])) or '(no known id)'}")
    if result.ran and result.problem is None:
        usage = f"; tokens in/out {result.usage.input_tokens}/{result.usage.output_tokens}" if result.usage else ""
        print(f"stored {plural(result.stored, 'note')}, run {result.run_id}{usage}")


def _print_proposal(proposal: Proposal, details: list[dict[str, Any]] | None = None) -> None:
    usage = proposal.usage or {}
    print(f"proposal {proposal.id} ({proposal.kind}, {proposal.status}) by {one_line(proposal.provider)} · "
          f"{one_line(proposal.model)}; tokens in/out {usage.get('input_tokens', 0)}/{usage.get('output_tokens', 0)}; "
          f"{plural(len(proposal.input), 'input line')}")
    for i, note in enumerate(proposal.notes):
        print(f"  note {i}: p{note['priority']} {note['date']} {one_line(note['observation'])} "
              f"[{one_line(', '.join(note['source_ids']))}]")
    for i, item in enumerate(proposal.patterns):
        print(f"  pattern {i}: {one_line(item['pattern'])} — {one_line(item['context'])}")
    for i, item in enumerate(proposal.learnings):
        print(f"  learning {i}: {one_line(item['insight'])} (confidence {item['confidence']})")
    for item in details or [{**i, "row": {}} for i in proposal.superseded]:
        title = one_line(item["row"].get("title", ""), 80)
        print(f"  superseded {one_line(item['id'])}: {title} — {one_line(item['reason']) or 'no reason given'}")
        if item.get("protected"):
            print(f"    PROTECTED: {one_line('; '.join(item.get('reasons', [])), 300)}")
    if proposal.items.get("dropped_ids"):
        print(f"  ids the model named that were not in its input (dropped): "
              f"{one_line(', '.join(proposal.items['dropped_ids']), 200)}")


def _print_outcome(outcome: r.ProposeOutcome, details: list[dict[str, Any]] | None = None) -> None:
    _print_provider(outcome.provider)
    _print_problem(outcome.problem)
    proposal = outcome.proposal
    if proposal is not None:
        _print_proposal(proposal, details)
        if proposal.kind == "observer":
            print(f"store with: cleo-tui observe --store {proposal.id} [--notes N,N]")
        else:
            print(f"apply with: cleo-tui reflect --apply --proposal {proposal.id} "
                  "[--approve IDS] [--patterns N,N] [--learnings N,N]")


def _merged_text(result: r.ReflectorResult) -> str:
    """`; merged into existing pattern P-1, learning L-2` (empty when nothing matched a stored row)."""
    named = [f"pattern {i}" for i in result.merged_pattern_ids] + [f"learning {i}" for i in result.merged_learning_ids]
    return f"; merged into existing {one_line(', '.join(named))}" if named else ""


def _print_reflector(result: r.ReflectorResult) -> None:
    _print_problem(result.problem)
    if result.ran and result.problem is None:
        print(f"proposal {result.proposal_id} applied (run {result.run_id}): stored "
              f"{plural(result.patterns_stored, 'new pattern')}, {plural(result.learnings_stored, 'new learning')}"
              f"{_merged_text(result)}; "
              f"evicted {len(result.superseded_ids)}: {one_line(', '.join(result.superseded_ids)) or '-'}")
        if result.superseded_ids:
            print(EVICTION_IN_CLEO)


def _say_asking(resolved: Resolved) -> None:
    """Before a model call: what is asked where, on stderr (stdout stays the answer, or JSON)."""
    print(asking_line(resolved), file=sys.stderr, flush=True)


def cmd_observe(args: argparse.Namespace) -> int:
    brain = brain_from_args(args, read_only=False)
    try:
        if args.store is not None:
            proposal = get_proposal(brain, args.store)
            chosen = _indexes(args.notes, "--notes")
            result = store_observer_notes(brain, args.store, range(len(proposal.notes)) if chosen is None else chosen)
        elif args.propose:
            outcome = propose_observer_notes(brain, args.session, args.threshold, args.provider, args.model,
                                             args.base_url, on_ask=_say_asking)
            emit_json(outcome.to_dict()) if args.json else _print_outcome(outcome)
            return _exit(outcome.problem)
        else:
            result = run_observer(brain, args.session, args.threshold, args.provider, args.model, args.base_url,
                                  on_ask=_say_asking)
    finally:
        brain.close()
    emit_json(result.to_dict()) if args.json else _print_observer(result)
    return _exit(result.problem)


def _confirm_protected_at_terminal(refused: ProtectedEviction, json_out: bool) -> bool:
    """Ask, once, before evicting protected rows; only at an interactive terminal (not with --json)."""
    if json_out or not (is_terminal(sys.stdin) and is_terminal(sys.stdout)):
        return False
    print(f"{len(refused.refused)} of the observations to evict are protected:")
    for observation_id, protection in refused.refused.items():
        print(f"  {one_line(observation_id)}: {one_line('; '.join(protection.reasons), 300)}")
    return confirmed("Evict them anyway? [y/N] ")


def _apply_existing(brain: Any, args: argparse.Namespace) -> r.ReflectorResult:
    proposal = get_proposal(brain, args.proposal)
    approve = _ids(args.approve)
    patterns = _indexes(args.patterns, "--patterns")
    learnings = _indexes(args.learnings, "--learnings")
    chosen = ([i["id"] for i in proposal.superseded] if approve is None else approve,
              range(len(proposal.patterns)) if patterns is None else list(patterns),
              range(len(proposal.learnings)) if learnings is None else list(learnings))
    confirmed = _ids(getattr(args, "confirm_protected", None)) or []
    try:
        return apply_reflection(brain, args.proposal, *chosen, confirm_protected=confirmed)
    except ProtectedEviction as refused:
        if not _confirm_protected_at_terminal(refused, args.json):
            raise
        return apply_reflection(brain, args.proposal, *chosen, confirm_protected=[*confirmed, *refused.refused])


def _manage(brain: Any, args: argparse.Namespace) -> int:
    """--list, --show, --discard, --undo."""
    if args.list:
        proposals = list_proposals(brain, status=args.status)
        if args.json:
            emit_json([p.to_dict() for p in proposals])
        for p in [] if args.json else proposals:
            print(f"{p.id:>5}  {p.kind:<9} {p.status:<9} {p.created_at}  {one_line(p.model, 30)}")
        return 0
    if args.show is not None:
        proposal = get_proposal(brain, args.show)
        details = superseded_details(brain, proposal)
        if args.json:
            emit_json({**proposal.to_dict(), "superseded_details": details})
        else:
            _print_proposal(proposal, details)
        return 0
    if args.discard is not None:
        proposal = discard_proposal(brain, args.discard)
        emit_json(proposal.to_dict()) if args.json else print(f"proposal {proposal.id} discarded")
        return 0
    undone = undo_proposal(brain, args.undo)
    if args.json:
        emit_json(undone.to_dict())
    elif undone.outcome is not None:
        state = "undone" if undone.outcome.complete else "partly undone, still applied"
        print(f"proposal {undone.proposal_id} {state}.")
        print_undo(undone.outcome, f"cleo-tui reflect --undo {undone.proposal_id}")
    return 0


def cmd_reflect(args: argparse.Namespace) -> int:
    managing = args.list or args.show is not None or args.discard is not None or args.undo is not None
    if args.proposal is not None and not args.apply:
        raise UsageError("--proposal ID goes with --apply (to review a proposal, use --show ID).")
    brain = brain_from_args(args, read_only=args.list or args.show is not None)
    try:
        if managing:
            return _manage(brain, args)
        if args.apply and args.proposal is not None:
            result = _apply_existing(brain, args)
        else:
            outcome = propose_reflection(brain, args.session, args.provider, args.model, args.base_url,
                                         on_ask=_say_asking)
            if not args.apply:
                details = superseded_details(brain, outcome.proposal) if outcome.proposal else None
                if args.json:
                    emit_json({**outcome.to_dict(), "superseded_details": details or []})
                else:
                    _print_outcome(outcome, details)
                return _exit(outcome.problem)
            if outcome.proposal is None:
                result = r.ReflectorResult(ran=outcome.ran, problem=outcome.problem)
            else:
                args.proposal = outcome.proposal.id
                result = _apply_existing(brain, args)
    finally:
        brain.close()
    emit_json(result.to_dict()) if args.json else _print_reflector(result)
    return _exit(result.problem)
