"""`cleo-tui recall`, `cleo-tui outcome` and `cleo-tui traces`."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from cleo_tui.brain import Brain
from cleo_tui.commands.argtypes import iso_time, nonempty_path, sqlite_int
from cleo_tui.commands.common import AddCommand, UsageError, add_brain_options, brain_from_args, emit_json
from cleo_tui.recall.export import export_traces
from cleo_tui.recall.last_recall import credit_last_recall, recall_and_record
from cleo_tui.recall.reader import (
    TraceFilter,
    TraceSummary,
    count_traces,
    get_trace,
    list_traces,
    trace_outcomes,
    trace_results,
)
from cleo_tui.recall.recall import DEFAULT_LIMIT, MAX_LIMIT, RecallResult
from cleo_tui.recall.rerank import RerankStep, format_chain
from cleo_tui.recall.traces import DEFAULT_TENANT, PIPELINES, query_hash
from cleo_tui.safe_text import one_line

TITLE_WIDTH = 80


def register(add: AddCommand) -> None:
    recall = add("recall", help="rank memories for a query and write a recall trace")
    recall.add_argument("query", metavar="QUERY", help="what to recall (stored only as a hash)")
    recall.add_argument("--why", action="store_true", help="show (and trace) each result's rerank steps")
    recall.add_argument("--limit", type=sqlite_int("--limit"), default=DEFAULT_LIMIT, metavar="K",
                        help=f"results to return (default {DEFAULT_LIMIT})")
    recall.add_argument("--session", metavar="ID", help="session id recorded on the trace")
    recall.add_argument("--json", action="store_true", help="print JSON")
    add_brain_options(recall)
    recall.set_defaults(func=cmd_recall)

    outcome = add("outcome", help="record whether the last recall helped")
    which = outcome.add_mutually_exclusive_group(required=True)
    which.add_argument("--good", action="store_true", help="a positive outcome")
    which.add_argument("--bad", action="store_true", help="a negative outcome")
    outcome.add_argument("ids", nargs="*", metavar="IDS", help="memory ids to credit (default: all it returned)")
    outcome.add_argument("--json", action="store_true", help="print JSON")
    add_brain_options(outcome, read_only_flag=False)
    outcome.set_defaults(func=cmd_outcome)

    traces = add("traces", help="list recall traces, show one, or export them as JSONL")
    what = traces.add_mutually_exclusive_group()
    what.add_argument("--show", type=sqlite_int("--show"), metavar="TRACE_ID",
                      help="one trace's results, steps and outcomes")
    what.add_argument("--export", metavar="FILE.jsonl", type=nonempty_path("--export", "a file to write"),
                      help="write (query hash, shown, outcomes) per trace")
    traces.add_argument("--force", action="store_true", help="with --export: replace an existing file")
    traces.add_argument("--limit", type=sqlite_int("--limit", low=1, what="a number of traces (1 or more)"),
                        default=50, help="traces to list (default 50)")
    traces.add_argument("--tenant", help="only this tenant")
    traces.add_argument("--session", help="only this session")
    traces.add_argument("--pipeline", choices=PIPELINES, help="only this pipeline")
    traces.add_argument("--since", metavar="DATE", type=iso_time("--since"),
                        help="traces at or after this ISO date/time")
    traces.add_argument("--until", metavar="DATE", type=iso_time("--until"),
                        help="traces before this ISO date/time")
    had = traces.add_mutually_exclusive_group()
    had.add_argument("--with-outcome", dest="has_outcome", action="store_const", const=True,
                     help="only traces with an outcome")
    had.add_argument("--without-outcome", dest="has_outcome", action="store_const", const=False,
                     help="only traces without an outcome")
    traces.add_argument("--json", action="store_true", help="print JSON")
    add_brain_options(traces, read_only_flag=False)
    traces.set_defaults(func=cmd_traces)


def _step_json(step: RerankStep) -> dict:
    return asdict(step)


def _result_json(result: RecallResult, why: bool) -> dict:
    out = {"rank": result.rank, "memory_id": result.memory_id, "kind": result.kind, "title": result.title,
           "score": result.score, "base": result.base, "created_at": result.created_at}
    if why:
        out["steps"] = [_step_json(s) for s in result.steps]
    return out


def cmd_recall(args: argparse.Namespace) -> int:
    if not 1 <= args.limit <= MAX_LIMIT:
        raise UsageError(f"--limit must be between 1 and {MAX_LIMIT}; got {args.limit}.")
    if not args.query.strip():
        raise UsageError("The query is blank: it has no words or text to search for; give at least one word.")
    brain = brain_from_args(args)
    try:
        recorded = recall_and_record(brain, args.query, args.limit, args.why, pipeline="cli",
                                     session_id=args.session)
    finally:
        brain.close()
    if args.json:
        emit_json({"query_hash": query_hash(args.query), "trace_id": recorded.trace_id,
                   "matched_nothing": recorded.matched_nothing,
                   "results": [_result_json(r, args.why) for r in recorded.results]})
        return 0
    if not recorded.results:
        print("No live memory matches that query.")
    for r in recorded.results:
        print(f"{r.rank:>3}. {r.score:.3f}  {one_line(r.memory_id, 40)}  [{r.kind}]  {one_line(r.title, TITLE_WIDTH)}")
        if args.why:
            print(f"      {one_line(format_chain(r.steps))}")
    if recorded.can_credit:
        print(f"trace {recorded.trace_id} written; credit it with `cleo-tui outcome --good` or `--bad`.")
    elif recorded.trace_id is not None:
        print(f"trace {recorded.trace_id} written (no results).")
    return 0


def cmd_outcome(args: argparse.Namespace) -> int:
    brain = brain_from_args(args, read_only=False)
    try:
        credit = credit_last_recall(brain, "positive" if args.good else "negative", args.ids or None)
    finally:
        brain.close()
    if args.json:
        emit_json({"outcome_id": credit.outcome_id, "trace_id": credit.trace_id, "outcome": credit.outcome,
                   "memory_ids": list(credit.memory_ids)})
    else:
        ids = ", ".join(one_line(i, 40) for i in credit.memory_ids)
        print(f"Recorded a {credit.outcome} outcome on trace {credit.trace_id} for "
              f"{len(credit.memory_ids)} memor{'y' if len(credit.memory_ids) == 1 else 'ies'}: {ids}")
    return 0


def _filter(args: argparse.Namespace) -> TraceFilter:
    return TraceFilter(tenant_id=args.tenant, session_id=args.session, pipeline=args.pipeline,
                       since=args.since, until=args.until, has_outcome=args.has_outcome)


def _summary_line(t: TraceSummary) -> str:
    session = one_line(t.session_id, 24) if t.session_id else "-"
    tenant = "" if t.tenant_id == DEFAULT_TENANT else f"  tenant {one_line(t.tenant_id, 24)}"
    return (f"#{t.id:<6} {one_line(t.ts, 24)}  {one_line(t.pipeline, 8):<7} {t.result_count:>3} results  "
            f"{'why' if t.explain_mode else '   '}  outcome {t.outcome:<8} session {session}  "
            f"hash {one_line(t.query_hash, 16)}{tenant}")


def _show_trace(brain: Brain, trace_id: int, as_json: bool) -> int:
    trace = get_trace(brain, trace_id)
    if trace is None:
        raise UsageError(f"There is no trace {trace_id}; `cleo-tui traces` lists them.")
    results = trace_results(brain, trace_id)
    outcomes = trace_outcomes(brain, trace_id)
    if as_json:
        emit_json({"trace": {**asdict(trace), "outcome": trace.outcome},
                   "results": [{"rank": r.rank, "memory_id": r.memory_id, "score": r.score,
                                "steps": None if r.steps is None else [_step_json(s) for s in r.steps],
                                "steps_error": r.steps_error, "memory": asdict(r.memory)} for r in results],
                   "outcomes": [asdict(o) for o in outcomes]})
        return 0
    print(_summary_line(trace))
    for r in results:
        title = one_line(r.memory.title, TITLE_WIDTH) if r.memory.kind else ""
        print(f"{r.rank:>3}. {r.score:.3f}  {one_line(r.memory_id, 40)}  [{r.memory.kind or '-'}, "
              f"{r.memory.state}]  {title}")
        if r.steps:
            print(f"      {one_line(format_chain(r.steps))}")
        elif r.steps_error:
            print(f"      ({one_line(r.steps_error, 100)})")
    for o in outcomes:
        ids = ", ".join(one_line(i, 40) for i in o.memory_ids) or "(malformed ids)"
        print(f"  {o.outcome} at {one_line(o.ts, 24)}: {ids}")
    return 0


def cmd_traces(args: argparse.Namespace) -> int:
    brain = brain_from_args(args, read_only=True)
    try:
        if args.show is not None:
            return _show_trace(brain, args.show, args.json)
        flt = _filter(args)
        if args.export:
            count = export_traces(brain, args.export, flt, force=args.force)
            if args.json:
                emit_json({"exported": count, "file": args.export})
            else:
                print(f"Exported {count} trace{'s' if count != 1 else ''} to {one_line(args.export)}")
            return 0
        traces = list_traces(brain, flt, limit=args.limit)
        total = count_traces(brain, flt)
    finally:
        brain.close()
    if args.json:
        emit_json({"count": total, "traces": [{**asdict(t), "outcome": t.outcome} for t in traces]})
        return 0
    if not traces:
        print("No recall traces match.")
    for t in traces:
        print(_summary_line(t))
    if total > len(traces):
        print(f"({len(traces)} of {total} shown; --limit N shows more)")
    return 0
