"""`cleo-tui evict|restore|pin [filters]` and `cleo-tui export [filters]`: act on every observation a
filter shows, with the Observations pane's filters."""

from __future__ import annotations

import argparse
import sys

from cleo_tui.brain import Brain
from cleo_tui.commands.argtypes import nonblank_filter
from cleo_tui.commands.common import (
    STANDARD_OUTPUT,
    AddCommand,
    UsageError,
    add_brain_options,
    brain_from_args,
    emit_json,
    print_undo,
    write_output,
)
from cleo_tui.memory.bulk import ACTIONS, PAST, BulkAction, apply_bulk, plan_selection
from cleo_tui.memory.export_rows import FORMATS, write_rows
from cleo_tui.memory.selection import COVERAGES, Selection, selected_rows, unknown_ids, whole_rows
from cleo_tui.memory.tags import tag_brain
from cleo_tui.recall.impact import impact_of
from cleo_tui.safe_text import one_line, plural


def _add_ids(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("ids", nargs="*", metavar="ID",
                        help="only these observations (with filters: those of them the filters select too)")


def _check_ids(brain: Brain, selection: Selection) -> None:
    """UsageError (the brain closed) when an id names no observation: a typo must not act on the rest."""
    unknown = unknown_ids(brain, selection.ids)
    if unknown:
        brain.close()
        raise UsageError(f"{plural(len(unknown), 'id')} name{'s' if len(unknown) == 1 else ''} no observation "
                         f"in this brain: {one_line(', '.join(unknown), 300)}. Nothing was written.")


def _add_filters(parser: argparse.ArgumentParser, state: str) -> None:
    parser.add_argument("--state", choices=("live", "evicted", "all"), default=state,
                        help=f"live, evicted or all observations (default: {state})")
    parser.add_argument("--type", type=nonblank_filter("--type"), help="only this type (discovery, decision, diary, …)")
    parser.add_argument("--coverage", choices=COVERAGES, help="only uncited, cited or reinforced observations")
    parser.add_argument("--protected", choices=("yes", "no"), help="only protected (yes) or unprotected (no) ones")
    parser.add_argument("--tier", type=nonblank_filter("--tier"), help="only this memory tier (short, medium, long)")
    parser.add_argument("--session", type=nonblank_filter("--session"), help="only this session's observations")
    parser.add_argument("--search", type=nonblank_filter("--search"),
                        help="only those matching this text (full-text where the brain has it)")
    parser.add_argument("--since", type=_date, help="created on or after this date (YYYY-MM-DD)")
    parser.add_argument("--before", type=_date, help="created before this date (YYYY-MM-DD)")


def _date(value: str) -> str:
    from datetime import date
    try:
        return date.fromisoformat(value.strip()).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date: {value!r} (use YYYY-MM-DD)") from None


def register(add: AddCommand) -> None:
    for action, state in zip(ACTIONS, ("live", "evicted", "live"), strict=True):
        parser = add(action, help=f"{action} the observations named or a filter shows, as one undoable run",
                     description=f"{action.capitalize()} the observations named (IDs) or every one the filters "
                                 "select, as one journalled "
                                 "run written in short chunks (CLEO never waits long). Without --yes, prints the "
                                 "plan and writes nothing. Undo with --undo RUN_ID.")
        add_brain_options(parser, read_only_flag=False)
        _add_ids(parser)
        _add_filters(parser, state)
        parser.add_argument("--yes", action="store_true", help="write (without it: the plan only)")
        parser.add_argument("--json", action="store_true", help="print JSON")
        if action == "evict":
            parser.add_argument("--include-protected", action="store_true",
                                help="evict protected observations too (left out otherwise)")
        parser.add_argument("--undo", metavar="RUN_ID", type=int, help="undo an earlier run instead")
        parser.set_defaults(func=cmd_bulk, action=action, needs="observations")
    export = add("export", help="write the observations named or a filter shows as JSON, JSONL or Markdown",
                 description="Export the observations named (IDs) or the filters select, each with its tags and "
                             "their reasons. "
                             "Never writes over a brain or any SQLite file; asks for --force to replace a file.")
    add_brain_options(export)
    _add_ids(export)
    _add_filters(export, "all")
    export.add_argument("--format", choices=FORMATS, required=True, help="json, jsonl or md (Markdown)")
    export.add_argument("--out", required=True, metavar="FILE", help="the file to write (- for standard output)")
    export.add_argument("--force", action="store_true", help="replace FILE if it exists")
    export.set_defaults(func=cmd_export, needs="observations")


def selection_of(args: argparse.Namespace) -> Selection:
    ids = tuple(dict.fromkeys(args.ids))
    if any(not i.strip() for i in ids):
        raise UsageError("An ID is blank: give observation ids, as the Observations pane's id column shows "
                         "them. Nothing was written.")
    return Selection(state=args.state, type=args.type or None, coverage=args.coverage,
                     protected=None if args.protected is None else args.protected == "yes",
                     tier=args.tier or None, session=args.session or None, search=args.search or "",
                     since=args.since, before=args.before, ids=ids)


def cmd_export(args: argparse.Namespace) -> int:
    if not args.out.strip():
        raise UsageError("--out needs a file name; nothing was written.")
    selection = selection_of(args)
    brain = brain_from_args(args)
    _check_ids(brain, selection)
    try:
        tags = tag_brain(brain)
        rows = whole_rows(brain, selected_rows(brain, selection, tags))
        count = write_output("--out", args.out, lambda handle: write_rows(handle, rows, args.format, tags,
                                                                          selection.describe()),
                             brain.path, args.force)
    finally:
        brain.close()
    piped = args.out == STANDARD_OUTPUT  # (then standard output holds the rows: the summary goes to stderr)
    print(f"Wrote {plural(count, 'observation')} ({selection.describe()}) to "
          f"{'standard output' if piped else one_line(args.out)} as {args.format}.",
          file=sys.stderr if piped else sys.stdout)
    return 0


def cmd_bulk(args: argparse.Namespace) -> int:
    action: BulkAction = args.action
    if args.undo is not None:
        if args.ids:
            raise UsageError(f"--undo takes a run id alone, not observation ids ({one_line(' '.join(args.ids), 80)}).")
        from cleo_tui.memory.curation import undo_detailed
        brain = brain_from_args(args, read_only=False)
        try:
            print_undo(undo_detailed(brain, args.undo), f"cleo-tui {action} --undo {args.undo}")
        finally:
            brain.close()
        return 0
    selection = selection_of(args)
    brain = brain_from_args(args, read_only=not args.yes)
    _check_ids(brain, selection)
    try:
        planned = plan_selection(brain, selection, tag_brain(brain))  # (as the Observations pane plans)
        ids = planned.ids_for(action, getattr(args, "include_protected", False))
        left_out = len(planned.ids_for(action, include_protected=True)) - len(ids)
        tokens = planned.tokens_of(ids)
        plan = {"action": action, "selection": selection.describe(), "count": len(ids), "tokens": tokens,
                "protected_left_out": left_out}
        if action == "evict":
            plan["impact"] = impact_of(brain, ids).to_json()
        if not args.yes or not ids:
            if args.json:
                emit_json(plan | {"ids": ids, "run_id": None})
            else:
                print(f"Would {action} {plural(len(ids), 'observation')} ({selection.describe()}), "
                      f"about {plural(tokens, 'token')}"
                      + (f"; {left_out:,} protected left out (--include-protected takes them)" if left_out else "")
                      + ("." if ids else ". Nothing to do.") + ("\nNothing was written. Run again with --yes."
                                                              if ids else ""))
            return 0
        result = apply_bulk(brain, action, ids, selection.describe())
    finally:
        brain.close()
    if args.json:
        emit_json(plan | result.to_json())
    else:
        print(f"{PAST[action].capitalize()} {plural(len(result.done), 'observation')} ({selection.describe()}) as run "
              f"{result.run_id}" + (f"; {result.left:,} had changed and were left alone" if result.left else "")
              + f". Undo with `cleo-tui {action} --undo {result.run_id}`.")
        if action == "evict":
            print("CLEO's own memory find and fetch still return evicted rows.", file=sys.stderr)
    return 0
