"""`cleo-tui prune`: preview a pruning at a token budget, commit it, undo it, list runs.

Without --apply the brain is opened read-only, so a preview never writes to it.
"""

from __future__ import annotations

import argparse
import sys

from cleo_tui.brain.journal import Run
from cleo_tui.brain.rows import JsonObject
from cleo_tui.commands.argtypes import nonblank_text, sqlite_int
from cleo_tui.commands.common import (
    AddCommand,
    UsageError,
    add_brain_options,
    brain_from_args,
    confirmed,
    emit_json,
    emit_json_with_rows,
    is_terminal,
    print_rows,
    print_undo,
    tokenizer_of,
)
from cleo_tui.commands.progress import TerminalProgress
from cleo_tui.memory import curation
from cleo_tui.memory import packed_strings as packed
from cleo_tui.memory.cleo_effects import eviction_in_cleo
from cleo_tui.memory.pruner import (
    BadBudget,
    CommitResult,
    PrunePreview,
    commit_preview,
    parse_budget,
    prepare_pool,
)
from cleo_tui.memory.tokenizers import TOKENIZER_NAMES
from cleo_tui.recall.impact import AnyImpact, impact_of
from cleo_tui.safe_text import one_line, plural

EVICTION_IN_CLEO = eviction_in_cleo("commit with --hide-from-cleo")


def register(add: AddCommand) -> None:
    prune = add(
        "prune", help="preview (or commit, or undo) a pruning of the live pool to a token budget",
        description="Preview which observations a deterministic prune to a token budget would "
                    "soft-evict, and why. --apply --yes commits it; --undo RUN_ID reverses a run.")
    add_brain_options(prune, read_only_flag=False)
    action = prune.add_mutually_exclusive_group()
    action.add_argument("--budget", metavar="N", help="token budget, e.g. 8000 or 12k (the target is 80%% of it)")
    action.add_argument("--undo", metavar="RUN_ID",
                        type=sqlite_int("--undo", what="a run id (a whole number, see --runs)"),
                        help="undo a curation run (see --runs)")
    action.add_argument("--runs", action="store_true", help="list curation runs, most recent first")
    prune.add_argument("--tokenizer", metavar="NAME", choices=TOKENIZER_NAMES,
                       help=f"how tokens are counted: {', '.join(TOKENIZER_NAMES)} "
                            "(default: the config file's, else chars4)")
    prune.add_argument("--session", metavar="ID", type=nonblank_text("--session"),
                       help="prune only this session's live observations")
    prune.add_argument("--json", action="store_true", help="print JSON")
    prune.add_argument("--apply", action="store_true", help="commit: soft-evict the dropped observations")
    prune.add_argument("--yes", action="store_true", help="do not ask before --apply")
    prune.add_argument("--hide-from-cleo", action="store_true",
                       help="with --apply: also hide the evicted rows from CLEO's own search "
                            "(quality_score below its 0.3 threshold; undone exactly)")
    prune.set_defaults(func=cmd_prune, needs="observations")


def cmd_prune(args: argparse.Namespace) -> int:
    if args.budget is None and args.undo is None and not args.runs:  # two at once: argparse refuses
        raise UsageError("cleo-tui prune needs exactly one of --budget N (preview, with --apply to commit), "
                         "--undo RUN_ID or --runs.")
    if args.hide_from_cleo and not args.apply:
        raise UsageError("--hide-from-cleo hides the rows a commit evicts, so it goes with --apply; without "
                         "--apply nothing is written or hidden. Add --apply (and --yes), or leave it out.")
    if args.runs:
        return _list_runs(args)
    if args.undo is not None:
        return _undo(args)
    return _prune(args)


def _budget(args: argparse.Namespace) -> int:
    try:
        return parse_budget(args.budget)
    except BadBudget as exc:
        raise UsageError(str(exc)) from None


def _confirm(preview: PrunePreview, impact: AnyImpact) -> None:
    """Ask on a terminal; refuse without one (a script must say --yes)."""
    question = (f"{EVICTION_IN_CLEO}\nRecall impact: {impact.confirmation()}\n"
                f"Soft-evict {plural(preview.drop_count, 'observation')} (tokens "
                f"{preview.tokens_before:,} → {preview.tokens_after:,}); undo with "
                "`cleo-tui prune --undo RUN_ID`. Proceed? [y/N] ")
    if not is_terminal(sys.stdin):
        raise UsageError("--apply needs --yes when not run from a terminal; nothing was evicted.")
    if not confirmed(question):
        raise UsageError("Not confirmed; nothing was evicted.")


def _prune(args: argparse.Namespace) -> int:
    budget = _budget(args)
    brain = brain_from_args(args, read_only=not args.apply)
    try:
        if args.apply:
            brain.ensure_writable()  # say so before the work of a preview
        # (packing would only be undone for the output: the pool is read once and printed)
        with packed.kept_as_lists(), TerminalProgress("prune") as progress:
            pool = prepare_pool(brain, tokenizer_of(args), args.session,
                                lambda done, total: progress(done, total, "reading the pool"))
        preview = pool.preview(budget)
        # The Prune pane's computation: the drop order prepared once, this budget looked up.
        impact = impact_of(brain, drop_order=pool.droppable.ids(), count=preview.drop_count)
        result: CommitResult | None = None
        if args.apply and preview.drop_count:
            if not args.yes:
                _confirm(preview, impact)
            result = commit_preview(brain, preview, hide_from_cleo=args.hide_from_cleo)
    finally:
        brain.close()
    if args.json:
        emit_json_with_rows({**preview.json_head(result.run_id if result else None), "impact": impact.to_json(),
                             **(result.to_json() if result else {})}, preview.json_rows)
    else:
        _print_preview(preview, result, impact)
    return 0


def _print_preview(preview: PrunePreview, result: CommitResult | None, impact: AnyImpact) -> None:
    scope = f"session {one_line(preview.pool.session, 60)}" if preview.pool.session else "the whole live pool"
    print(f"Pruning {scope} to {preview.budget:,} tokens ({preview.tokenizer}); target {preview.target:,}")
    print(f"tokens:    {preview.tokens_before:,} → {preview.tokens_after:,}")
    print(f"dropped:   {preview.drop_count:,}   kept: {preview.kept:,}   protected: {len(preview.protected):,}")
    if preview.fell_back:
        print("fell back: the target cannot be reached without dropping protected observations")
    print(f"recall:    {impact.sentence()}")
    print_rows("Dropped, in drop order:", [f"{e.id}  {e.why}" for e in preview.dropped])
    print_rows("Protected:", [f"{e.id}  {'; '.join(e.reasons)}" for e in preview.protected])
    if result is not None:
        for line in result.lines():
            print(line)
        print(f"Undo with: cleo-tui prune --undo {result.run_id}")
        if not result.hidden_from_cleo:
            print(EVICTION_IN_CLEO)
    elif not preview.drop_count:
        print("Nothing to drop: the pool is within its target; nothing was written.")
    else:
        print("Preview only: nothing was written. Commit with --apply --yes.")


def _undo(args: argparse.Namespace) -> int:
    run_id = args.undo
    brain = brain_from_args(args, read_only=False)
    try:
        outcome = curation.undo_detailed(brain, run_id)
    finally:
        brain.close()
    if args.json:
        emit_json(outcome.to_json())
        return 0
    print_undo(outcome, f"cleo-tui prune --undo {run_id}")
    return 0


def _run_json(run: Run) -> JsonObject:
    return {"id": run.id, "kind": run.kind, "created_at": run.created_at, "summary": run.summary,
            "undoes": run.undoes, "undone_by": run.undone_by, "status": run.status,
            **{k: v for k, v in run.params.items() if k != "ids"},
            "count": run.params.get("count", len(run.params.get("ids", [])))}


def _list_runs(args: argparse.Namespace) -> int:
    brain = brain_from_args(args, read_only=True)
    try:
        runs = curation.list_curation_runs(brain)
    finally:
        brain.close()
    if args.json:
        emit_json([_run_json(run) for run in runs])
        return 0
    if not runs:
        print("No curation runs yet.")
    for run in runs:
        state = (f"  (undone by run {run.undone_by})" if run.undone_by
                 else "  (in progress)" if run.status != "done" else "")
        print(f"{run.id:>6}  {run.created_at}  {run.kind:<8} {one_line(run.summary, 100)}{state}")
    return 0
