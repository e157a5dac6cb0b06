"""`cleo-tui dedup`: find reworded duplicate observations, merge them, undo a merge.

Without --apply the brain is opened read-only, so a scan never writes to it.
"""

from __future__ import annotations

import argparse
import sys

from cleo_tui.commands.argtypes import sqlite_int
from cleo_tui.commands.common import (
    AddCommand,
    UsageError,
    add_brain_options,
    brain_from_args,
    confirmed,
    emit_compact_json,
    emit_json,
    is_terminal,
    print_undo,
)
from cleo_tui.commands.progress import TerminalProgress
from cleo_tui.memory import curation
from cleo_tui.memory.cleo_effects import EVICTION_IN_CLEO
from cleo_tui.memory.dedup_merge import RUN_KIND, MergeRequest, MergeResult, merge_duplicates
from cleo_tui.memory.duplicates import (
    DEFAULT_THRESHOLD,
    BadThreshold,
    Cluster,
    parse_threshold,
    scan_duplicates,
)
from cleo_tui.recall.impact import AnyImpact, impact_of
from cleo_tui.safe_text import one_line, plural

SHOWN_CLUSTERS = 20
LISTED_UPDATES = 1_000
# The last scan's objects, held when the command returns rather than freed one by one (100,000s of
# them: 0.24 s of CPU at 100,000 demo rows): its process ends right after, at once (`cli.run`), and
# the kernel takes the memory back in one go. (A process running commands in turn, as the tests
# do, holds one scan until the next.)
_held_to_the_end: list[object] = []


def register(add: AddCommand) -> None:
    dedup = add(
        "dedup", help="find reworded duplicate observations and merge them (undoably)",
        description="List clusters of live observations that restate the same fact in other words, with a "
                    "suggested keeper. --apply --yes merges them: the others are soft-evicted with a "
                    "supersedes edge from the keeper. Pairs that differ in a number, an identifier, a path or "
                    "a version, where only one says \"not\", or that name other things in otherwise identical "
                    "words are updates and are never merged. --undo RUN_ID reverses a merge.")
    add_brain_options(dedup, read_only_flag=False)
    dedup.add_argument("--threshold", metavar="X", default=str(DEFAULT_THRESHOLD),
                       help=f"similarity from 0.7 to 1 (default {DEFAULT_THRESHOLD})")
    dedup.add_argument("--json", action="store_true", help="print JSON")
    action = dedup.add_mutually_exclusive_group()
    action.add_argument("--apply", action="store_true", help="merge every cluster's duplicates")
    dedup.add_argument("--yes", action="store_true", help="do not ask before --apply")
    dedup.add_argument("--include-protected", action="store_true",
                       help="with --apply, also evict protected duplicates (otherwise they are kept)")
    action.add_argument("--undo", metavar="RUN_ID", type=sqlite_int("--undo", what="a run id (a whole number)"),
                        help="undo a merge run")
    dedup.set_defaults(func=cmd_dedup, needs="observations", end_at_once=True)  # (see `cli.run` and `_held_to_the_end`)


def cmd_dedup(args: argparse.Namespace) -> int:
    if args.undo is not None:
        if args.apply:
            raise UsageError("cleo-tui dedup takes --undo RUN_ID or --apply, not both.")
        return _undo(args)
    if (args.yes or args.include_protected) and not args.apply:
        raise UsageError("--yes and --include-protected only make sense with --apply.")
    try:
        threshold = parse_threshold(args.threshold)
    except BadThreshold as exc:
        raise UsageError(str(exc)) from None
    return _scan_and_report(args, threshold)  # (no cyclic collection in a command: cli.dispatch)


def _scan_and_report(args: argparse.Namespace, threshold: float) -> int:
    """Scan, print the clusters (and merge them with --apply)."""
    brain = brain_from_args(args, read_only=not args.apply)
    try:
        if args.apply:
            brain.ensure_writable()
        with TerminalProgress("dedup") as progress:  # (wiped before a question or the output)
            reader = brain.reader()
            try:
                scan = scan_duplicates(reader, progress=progress)
            finally:
                reader.close()
            progress(0, 0, "clustering")
            clusters = scan.clusters(threshold)
            updates = scan.updates(threshold, LISTED_UPDATES)
            update_count = scan.update_count(threshold)
            requests, _ = _requests(clusters, args.include_protected)
            impact = impact_of(brain, [i for r in requests for i in r.others])  # what a merge evicts
        merged = _apply(brain, clusters, args, impact) if args.apply else None
    finally:
        brain.close()
    _held_to_the_end[:] = [scan, clusters, updates, impact]
    run_id = merged.run_id if merged else None
    if args.json:
        # (its floats: similarities rounded to 4 places, and the threshold: `emit_compact_json` writes them as json)
        emit_compact_json({"threshold": threshold, "clusters": [c.to_json() for c in clusters],
                           "updates": [p.to_json() for p in updates], "updates_total": update_count,
                           "run_id": run_id, "scanned": scan.stats.rows, "impact": impact.to_json(),
                           "evicted": merged.evicted if merged else [],
                           "skipped": [{"id": s.id, "why": s.why} for s in merged.skipped] if merged else []})
    else:
        _print(clusters, update_count, threshold, run_id, args.apply, impact)
        for line in merged.lines() if merged else []:
            print(one_line(line, 300))
        if merged:
            print(EVICTION_IN_CLEO)
    return 0


def _requests(clusters: list[Cluster], include_protected: bool) -> tuple[list[MergeRequest], set[str]]:
    """One request per cluster with something to merge; protected duplicates only when asked."""
    requests = []
    confirmed: set[str] = set()
    for cluster in clusters:
        others = list(cluster.merge_ids)
        if include_protected:
            extra = [i for i in cluster.protected_ids if i not in others and
                     any(p.kind == "duplicate" and {p.a, p.b} == {cluster.keep, i} for p in cluster.pairs)]
            others += extra
            confirmed.update(extra)
        if others:
            requests.append(cluster.request(cluster.keep, others))
    return requests, confirmed


def _apply(brain: object, clusters: list[Cluster], args: argparse.Namespace,
           impact: AnyImpact) -> MergeResult | None:
    requests, protected_confirmed = _requests(clusters, args.include_protected)
    if not requests:
        return None
    count = sum(len(r.others) for r in requests)
    if not args.yes:
        if not is_terminal(sys.stdin):
            raise UsageError("--apply needs --yes when not run from a terminal; nothing was merged.")
        question = (f"Recall impact: {impact.confirmation()}\n"
                    f"Merge {plural(len(requests), 'cluster')}: soft-evict {plural(count, 'duplicate observation')}; "
                    "undo with `cleo-tui dedup --undo RUN_ID`. Proceed? [y/N] ")
        if not confirmed(question):
            raise UsageError("Not confirmed; nothing was merged.")
    return merge_duplicates(brain, requests, protected_confirmed)  # type: ignore[arg-type]


def _print(clusters: list[Cluster], updates: int, threshold: float, run_id: int | None, applied: bool,
           impact: AnyImpact) -> None:
    saved = sum(c.tokens_saved for c in clusters)
    differ = "pair differs" if updates == 1 else "pairs differ"
    print(f"{plural(len(clusters), 'cluster')} of duplicates at similarity {threshold:.2f}; merging saves "
          f"{plural(saved, 'token')} (chars4). {updates:,} more {differ} only in a detail (updates, never merged).")
    print(f"Recall impact of merging them all: {impact.sentence()}")
    for cluster in clusters[:SHOWN_CLUSTERS]:
        print(f"- keep {cluster.keep} ({one_line(cluster.reason, 120)}); saves {plural(cluster.tokens_saved, 'token')}")
        for member in cluster.members:
            mark = "keep " if member.id == cluster.keep else "merge" if member.id in cluster.merge_ids else "stay "
            print(f"    {mark} {member.id}  {one_line(member.title or member.content, 100)}")
        for pair in cluster.details[:3]:
            print(f"    differs in a detail: {pair.a} {', '.join(pair.only_a) or '–'} / "
                  f"{pair.b} {', '.join(pair.only_b) or '–'}")
    if len(clusters) > SHOWN_CLUSTERS:
        print(f"… and {len(clusters) - SHOWN_CLUSTERS:,} more (--json lists them all)")
    if run_id is not None:
        print(f"Merged as run {run_id}. Undo with: cleo-tui dedup --undo {run_id}")
    elif applied:
        print("Nothing to merge; nothing was written.")
    elif clusters:
        print("Preview only: nothing was written. Merge with --apply --yes.")


def _undo(args: argparse.Namespace) -> int:
    run_id = args.undo
    brain = brain_from_args(args, read_only=False)
    try:
        runs = {r.id: r for r in curation.list_curation_runs(brain, (RUN_KIND,), limit=100_000)}
        if run_id not in runs:
            raise UsageError(f"Run {run_id} is not a dedup merge; `cleo-tui prune --runs` lists every run "
                             "and `cleo-tui prune --undo RUN_ID` undoes any of them.")
        outcome = curation.undo_detailed(brain, run_id)
    finally:
        brain.close()
    if args.json:
        emit_json(outcome.to_json())
    else:
        print_undo(outcome, f"cleo-tui dedup --undo {run_id}")
    return 0
