"""`cleo-tui bridge`: what CLEO's memory bridge injects at session start, marked; `--refresh` asks CLEO to
regenerate it (`cleo refresh-memory`), after a confirmation."""

from __future__ import annotations

import argparse
import sys

from cleo_tui.brain.clock import current_time
from cleo_tui.commands.common import (
    AddCommand,
    UsageError,
    add_brain_options,
    brain_from_args,
    confirmed,
    emit_json,
    is_terminal,
    tokenizer_of,
)
from cleo_tui.commands.text_width import WIDTH, wrapped
from cleo_tui.memory.bridge import Bridge, build_bridge
from cleo_tui.memory.bridge_project import RefreshOutcome, cleo_executable, project_dir, refresh_through_cleo
from cleo_tui.memory.pruner import BadBudget, parse_budget, prepare_pool
from cleo_tui.memory.tokenizers import CHARS4, TOKENIZER_NAMES, get_tokenizer
from cleo_tui.safe_text import one_line, plural, printable


def register(add: AddCommand) -> None:
    bridge = add(
        "bridge", help="what CLEO's memory bridge injects at session start",
        description="The last handoff, learnings (after CLEO's confidence decay), patterns, decisions and "
                    "recent observations CLEO's memory bridge selects, each with its tokens. Marks rows you "
                    "evicted (CLEO ignores invalid_at there) and, with --after-budget, rows that prune would "
                    "evict. --refresh runs `cleo refresh-memory` (CLEO writes the file, never cleo-tui).")
    add_brain_options(bridge, read_only_flag=False)
    bridge.add_argument("--json", action="store_true", help="print JSON")
    bridge.add_argument("--tokenizer", metavar="NAME", choices=TOKENIZER_NAMES,
                        help="also count with this tokenizer (CLEO's own estimate is 4 characters a token)")
    bridge.add_argument("--after-budget", metavar="N",
                        help="mark the rows a prune to this budget would evict (the prune preview's dropped rows)")
    bridge.add_argument("--refresh", action="store_true",
                        help="run `cleo refresh-memory` in the project (asks first; needs cleo on PATH)")
    bridge.add_argument("--yes", action="store_true", help="with --refresh: do not ask")
    bridge.set_defaults(func=cmd_bridge, needs="observations")


def cmd_bridge(args: argparse.Namespace) -> int:
    budget = None
    if args.after_budget is not None:
        try:
            budget = parse_budget(args.after_budget)
        except BadBudget as exc:
            raise UsageError(f"--after-budget: {exc}") from None
    if args.yes and not args.refresh:
        raise UsageError("--yes confirms --refresh; without --refresh nothing is run or written.")
    tokenizer_name = tokenizer_of(args)
    brain = brain_from_args(args, read_only=True)
    try:
        project = project_dir(brain)
        if args.refresh:
            _check_refresh(project)
        evicting: list[str] = []
        if budget is not None:
            evicting = prepare_pool(brain, tokenizer_name).preview(budget).dropped_ids
        counter = None if tokenizer_name == CHARS4 else get_tokenizer(tokenizer_name).count_text
        bridge = build_bridge(brain, current_time(), evicting, counter, None if counter is None else tokenizer_name,
                              with_intended=True)
    finally:
        brain.close()
    outcome = None
    if args.refresh and project is not None:
        if not args.yes:
            _confirm(bridge, project)
        outcome = refresh_through_cleo(project)
    if args.json:
        emit_json({**bridge.to_json(), **({"after_budget": budget} if budget is not None else {}),
                   **({"refresh": outcome.to_json()} if outcome else {})})
    else:
        print("\n".join(bridge_lines(bridge, budget)))
        if outcome is not None:
            print("\n".join(refresh_lines(outcome)))
    return 0 if outcome is None or outcome.ok else 1


def _check_refresh(project: object) -> None:
    if project is None:
        raise UsageError("--refresh runs `cleo refresh-memory` in the brain's CLEO project, but this brain is not "
                         "in a .cleo folder. Open the project's .cleo/cleo.db.")
    if cleo_executable() is None:
        raise UsageError("--refresh needs CLEO's `cleo` command on PATH; it was not found. Nothing was run.")


def _confirm(bridge: Bridge, project: object) -> None:
    if not is_terminal(sys.stdin):
        raise UsageError("--refresh needs --yes when not run from a terminal; nothing was run.")
    question = (f"Run `cleo refresh-memory` in {one_line(project, 200)}? CLEO regenerates "
                f"{bridge.on_disk.path or '.cleo/memory-bridge.md'} itself ({bridge.settings.mode_note}). [y/N] ")
    if not confirmed(question):
        raise UsageError("Not confirmed; nothing was run.")


def _wrap(text: str, indent: str = "") -> list[str]:
    return wrapped(text, indent)


def bridge_lines(bridge: Bridge, budget: int | None = None) -> list[str]:
    """The bridge as text of at most 80 columns: each section's items with tokens and marks, then notes."""
    extra = f", {bridge.tokenizer_tokens:,} {bridge.tokenizer}" if bridge.tokenizer else ""
    lines = _wrap(f"CLEO's memory bridge at {bridge.generated_at}: {plural(len(bridge.items), 'item')}, "
                  f"{plural(bridge.tokens, 'token')} (4 chars a token{extra})")
    lines += _wrap(bridge.settings.mode_note + ".")
    handoff = bridge.handoff
    lines.append(f"Last Session ({handoff.tokens} tok): "
                 + (one_line(handoff.session_id, 40) if handoff.state == "found" else handoff.state))
    lines += [line for text in handoff.lines[2:-1] for line in _wrap(text, "  ")]
    if handoff.problem:
        lines += _wrap(f"CLEO stops here: {handoff.problem}", "  ")
    elif handoff.note and handoff.state != "found":
        lines += _wrap(handoff.note, "  ")
    for section in bridge.sections:
        lines.append(f"{section.title} ({len(section.items)}, {section.tokens} tok)")
        if section.note:
            lines += _wrap(section.note, "  ")
        for item in section.items:
            marks = f" [{', '.join(item.marks)}]" if item.marks else ""
            lines.append(one_line(f"  {item.tokens:>4} {item.line}", WIDTH - len(marks)) + marks)
    after = f"at budget {budget:,}: " if budget is not None else ""
    if budget is not None and not bridge.evicting_count:
        lines.append(f"{after}the prune preview drops nothing.")
    lines += [line for text in bridge.summary_lines() for line in _wrap(text)]
    brief = bridge.intended_json()
    if brief is not None and (brief["left_out"] or brief["instead"]):
        lines += _wrap(f"As eviction intends (evicted rows{' and the step' + chr(39) + 's' if budget else ''} left "
                       f"out, {brief['tokens']:,} tokens): {len(brief['left_out'])} left out "
                       f"({', '.join(brief['left_out'][:6])}{'…' if len(brief['left_out']) > 6 else ''}), "
                       f"{len(brief['instead'])} in their places. CLEO does not do this; --json lists them.")
    disk = bridge.on_disk
    if disk.exists:
        lines += _wrap(f"On disk: {disk.path} (written {disk.written_at or '?'}) "
                       + ("says the same." if disk.matches else "differs from this."))
    if any(item.marks for item in bridge.items):
        lines += _wrap("Marks: evicted = invalid_at is set; hidden = quality below CLEO's search floor (0.3); "
                       "evicting = the step evicts it; missing = the row is gone since it was read.")
    return lines


def refresh_lines(outcome: RefreshOutcome) -> list[str]:
    """CLEO's answer to `cleo refresh-memory`, shown literally."""
    if outcome.error:
        return [f"`cleo refresh-memory` failed: {outcome.error}."]
    lines = [f"`cleo refresh-memory` answered (exit {outcome.returncode}):"]
    lines += [f"  {line}" for line in printable(outcome.stdout + outcome.stderr).splitlines()[:40]]
    return lines
