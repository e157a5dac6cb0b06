"""`cleo-tui prune`: preview a pruning at a token budget, commit it, undo it, list runs.

Without --apply the brain is opened read-only, so a preview never writes to it.
"""

from __future__ import annotations

import argparse
import re
import sys

import orjson

from cleo_tui.brain.journal import Run
from cleo_tui.cli import UsageError, add_brain_options, brain_from_args, emit_json
from cleo_tui.config import load_config
from cleo_tui.memory import curation
from cleo_tui.memory.pruner import BadBudget, PrunePreview, commit_prune, parse_budget, prepare_pool
from cleo_tui.memory.tokenizers import TOKENIZER_NAMES
from cleo_tui.safe_text import one_line

SHOWN_ROWS = 20


def register(sub: argparse._SubParsersAction) -> None:
    prune = sub.add_parser(
        "prune", help="preview (or commit, or undo) a pruning of the live pool to a token budget",
        description="Preview which observations a deterministic prune to a token budget would "
                    "soft-evict, and why. --apply --yes commits it; --undo RUN_ID reverses a run.")
    add_brain_options(prune, read_only_flag=False)
    prune.add_argument("--budget", metavar="N", help="token budget, e.g. 8000 or 12k (the target is 80%% of it)")
    prune.add_argument("--tokenizer", metavar="NAME", choices=TOKENIZER_NAMES,
                       help=f"how tokens are counted: {', '.join(TOKENIZER_NAMES)} "
                            "(default: the config file's, else chars4)")
    prune.add_argument("--session", metavar="ID", help="prune only this session's live observations")
    prune.add_argument("--json", action="store_true", help="print JSON")
    prune.add_argument("--apply", action="store_true", help="commit: soft-evict the dropped observations")
    prune.add_argument("--yes", action="store_true", help="do not ask before --apply")
    prune.add_argument("--undo", metavar="RUN_ID", help="undo a curation run (see --runs)")
    prune.add_argument("--runs", action="store_true", help="list curation runs, most recent first")
    prune.set_defaults(func=cmd_prune)


def cmd_prune(args: argparse.Namespace) -> int:
    chosen = [flag for flag, on in (("--budget", args.budget is not None), ("--undo", args.undo is not None),
                                    ("--runs", args.runs)) if on]
    if len(chosen) != 1:
        raise UsageError("cleo-tui prune needs exactly one of --budget N (preview, with --apply to commit), "
                         "--undo RUN_ID or --runs" + (f"; got {' and '.join(chosen)}." if chosen else "."))
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


def _tokenizer(args: argparse.Namespace) -> str:
    if args.tokenizer:
        return args.tokenizer
    configured = load_config()[0].get("tokenizer")
    return configured if configured in TOKENIZER_NAMES else "chars4"


def _confirm(preview: PrunePreview) -> None:
    """Ask on a terminal; refuse without one (a script must say --yes)."""
    question = (f"Soft-evict {preview.drop_count:,} observations (tokens {preview.tokens_before:,} → "
                f"{preview.tokens_after:,}); undo with `cleo-tui prune --undo RUN_ID`. Proceed? [y/N] ")
    if not sys.stdin.isatty():
        raise UsageError("--apply needs --yes when not run from a terminal; nothing was evicted.")
    if input(question).strip().lower() not in ("y", "yes"):
        raise UsageError("Not confirmed; nothing was evicted.")


def _prune(args: argparse.Namespace) -> int:
    budget = _budget(args)
    brain = brain_from_args(args, read_only=not args.apply)
    try:
        if args.apply:
            brain.ensure_writable()  # say so before the work of a preview
        preview = prepare_pool(brain, _tokenizer(args), args.session).preview(budget)
        run_id = None
        if args.apply and preview.drop_count:
            if not args.yes:
                _confirm(preview)
            run_id = commit_prune(brain, preview)
    finally:
        brain.close()
    if args.json:
        _emit_large_json(preview.to_json(run_id))
    else:
        _print_preview(preview, run_id)
    return 0


_NON_ASCII = re.compile(r"[^\x00-\x7e]")  # as json.dumps(ensure_ascii=True): DEL and beyond


def _ascii_escape(match: re.Match) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _emit_large_json(value: dict) -> None:
    """Like `emit_json` (indented, non-ASCII escaped so no control byte reaches a terminal),
    through orjson: a preview of 100,000 dropped rows is 25 MB of JSON."""
    data = orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=str)
    if not data.isascii() or b"\x7f" in data:
        data = _NON_ASCII.sub(_ascii_escape, data.decode("utf-8")).encode("ascii")
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text stream (tests, embedding): the data is ASCII by now
        sys.stdout.write(data.decode("ascii") + "\n")
        return
    sys.stdout.flush()
    buffer.write(data + b"\n")
    buffer.flush()


def _print_preview(preview: PrunePreview, run_id: int | None) -> None:
    scope = f"session {one_line(preview.pool.session, 60)}" if preview.pool.session else "the whole live pool"
    print(f"Pruning {scope} to {preview.budget:,} tokens ({preview.tokenizer}); target {preview.target:,}")
    print(f"tokens:    {preview.tokens_before:,} → {preview.tokens_after:,}")
    print(f"dropped:   {preview.drop_count:,}   kept: {preview.kept:,}   protected: {len(preview.protected):,}")
    if preview.fell_back:
        print("fell back: the target cannot be reached without dropping protected observations")
    _print_rows("Dropped, in drop order:", [f"{e.id}  {e.why}" for e in preview.dropped])
    _print_rows("Protected:", [f"{e.id}  {'; '.join(e.reasons)}" for e in preview.protected])
    if run_id is not None:
        print(f"Committed as run {run_id}. Undo with: cleo-tui prune --undo {run_id}")
    elif not preview.drop_count:
        print("Nothing to drop: the pool is within its target; nothing was written.")
    else:
        print("Preview only: nothing was written. Commit with --apply --yes.")


def _print_rows(title: str, lines: list[str]) -> None:
    if not lines:
        return
    print(title)
    for line in lines[:SHOWN_ROWS]:
        print("  " + one_line(line, 200))
    if len(lines) > SHOWN_ROWS:
        print(f"  … and {len(lines) - SHOWN_ROWS:,} more (--json lists them all)")


def _undo(args: argparse.Namespace) -> int:
    try:
        run_id = int(str(args.undo).strip())
    except ValueError:
        raise UsageError(f"--undo wants a run id (a whole number, see --runs), not {one_line(args.undo, 40)!r}.") from None
    brain = brain_from_args(args, read_only=False)
    try:
        undo_id, restored = curation.undo(brain, run_id)
    finally:
        brain.close()
    if args.json:
        emit_json({"undone": run_id, "run_id": undo_id, "restored": restored})
    else:
        print(f"Undid run {run_id}: {restored:,} rows restored (recorded as run {undo_id}).")
    return 0


def _run_json(run: Run) -> dict:
    return {"id": run.id, "kind": run.kind, "created_at": run.created_at, "summary": run.summary,
            "undoes": run.undoes, "undone_by": run.undone_by,
            **{k: v for k, v in run.params.items() if k != "ids"},
            "count": len(run.params.get("ids", []))}


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
        state = f"  (undone by run {run.undone_by})" if run.undone_by else ""
        print(f"{run.id:>6}  {run.created_at}  {run.kind:<8} {one_line(run.summary, 100)}{state}")
    return 0
