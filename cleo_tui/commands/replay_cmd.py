"""`cleo-tui replay`: re-run CLEO's logged `memory find` queries now and after a step.

The brain is opened read-only: a replay never writes, not even CLEO's citation counts.
"""

from __future__ import annotations

import argparse

from cleo_tui.commands.argtypes import sqlite_int
from cleo_tui.commands.common import (
    AddCommand,
    UsageError,
    add_brain_options,
    brain_from_args,
    emit_json,
    tokenizer_of,
)
from cleo_tui.memory.pruner import BadBudget, parse_budget
from cleo_tui.memory.tokenizers import TOKENIZER_NAMES
from cleo_tui.recall.replay import (
    DEFAULT_QUERIES,
    NO_STEP,
    BrainFacts,
    ReplayReport,
    Step,
    budget_step,
    parse_ids,
    query_details,
    query_heading,
    replay,
    step_of,
    summary_lines,
)
from cleo_tui.safe_text import one_line, plural

MAX_QUERIES = 1_000_000
SHOWN_QUERIES = 50


def register(add: AddCommand) -> None:
    cmd = add(
        "replay", help="re-run CLEO's logged find queries as CLEO would, now and after a step",
        description="For each distinct query CLEO logged in brain_retrieval_log (newest first), run CLEO's own "
                    "`memory find` semantics against this brain: the agreement with the ids CLEO logged, and, "
                    "for a step (--budget or --evict), what each query would lose as CLEO behaves today "
                    "(it ignores invalid_at) and as eviction intends (evicted rows gone). Never writes.")
    add_brain_options(cmd, read_only_flag=False)
    cmd.add_argument("--limit", metavar="N", default=DEFAULT_QUERIES,
                     type=sqlite_int("--limit", 1, MAX_QUERIES, "a number of queries from 1"),
                     help=f"replay at most N distinct queries, newest first (default {DEFAULT_QUERIES})")
    step = cmd.add_mutually_exclusive_group()
    step.add_argument("--budget", metavar="B", help="the step: the prune preview at this token budget (e.g. 8000, 12k)")
    step.add_argument("--evict", metavar="IDS", help="the step: evict these ids (comma-separated)")
    cmd.add_argument("--hide-from-cleo", action="store_true",
                     help="the step also hides its rows from CLEO's search (as prune --apply --hide-from-cleo)")
    cmd.add_argument("--tokenizer", metavar="NAME", choices=TOKENIZER_NAMES,
                     help="how --budget counts tokens (default: the config file's, else chars4)")
    cmd.add_argument("--json", action="store_true", help="print JSON")
    cmd.set_defaults(func=cmd_replay, needs="observations")


def _check(args: argparse.Namespace) -> int | None:
    """The budget, checked before the brain is opened; the other flag mistakes too."""
    if args.hide_from_cleo and args.budget is None and args.evict is None:
        raise UsageError("--hide-from-cleo describes a step: give --budget B or --evict IDS with it.")
    if args.tokenizer and args.budget is None:
        raise UsageError("--tokenizer counts tokens for --budget; give --budget B with it.")
    if args.evict is not None and not parse_ids(args.evict):
        raise UsageError("--evict wants observation ids separated by commas, e.g. --evict O-abc,O-def.")
    if args.budget is None:
        return None
    try:
        return parse_budget(args.budget)
    except BadBudget as exc:
        raise UsageError(str(exc)) from None


def cmd_replay(args: argparse.Namespace) -> int:
    budget = _check(args)
    brain = brain_from_args(args, read_only=True)
    try:
        if budget is not None:
            step = budget_step(brain, budget, tokenizer_of(args), args.hide_from_cleo)
        elif args.evict is not None:
            step = _evict_step(brain, parse_ids(args.evict), args.hide_from_cleo)
        else:
            step = NO_STEP
        report = replay(brain, step, args.limit)
    finally:
        brain.close()
    if args.json:
        emit_json(report.to_json())
    else:
        for line in report_lines(report):
            print(line)
    return 0


def _evict_step(brain: object, ids: frozenset[str], hide: bool) -> Step:
    facts = BrainFacts.read(brain)  # type: ignore[arg-type]
    unknown = sorted(i for i in ids if i not in facts.added)
    if len(unknown) == len(ids):
        raise UsageError(f"--evict names no row of this brain ({one_line(', '.join(unknown[:5]), 120)}); "
                         "give ids of observations, patterns, learnings or decisions.")
    label = f"evict {plural(len(ids) - len(unknown), 'row')}"
    if unknown:
        label += (f" ({plural(len(unknown), 'id')} name{'s' if len(unknown) == 1 else ''} no row: "
                  f"{one_line(', '.join(unknown[:3]), 80)})")
    return step_of(ids - set(unknown), hide, label)


def report_lines(report: ReplayReport) -> list[str]:
    """The report as text: totals, then each query (at most SHOWN_QUERIES) with why it differs and what it loses."""
    lines = [one_line(line, 400) for line in summary_lines(report)]
    if report.queries:
        lines.append("")
        lines.append("Queries, newest first:")
        for q in report.queries[:SHOWN_QUERIES]:
            lines.append(f"  {one_line(query_heading(q), 200)}")
            lines += [f"      {one_line(line, 200)}" for line in query_details(q)]
        if len(report.queries) > SHOWN_QUERIES:
            lines.append(f"  … {len(report.queries) - SHOWN_QUERIES:,} more (--json lists them all)")
    return lines
