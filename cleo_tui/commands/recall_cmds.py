"""`cleo-tui recall`, `cleo-tui outcome` and `cleo-tui traces`."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict

from cleo_tui.brain import Brain
from cleo_tui.brain.rows import JsonObject
from cleo_tui.commands.argtypes import BadNumber, iso_time, nonblank_text, nonempty_path, sqlite_int
from cleo_tui.commands.common import (
    STANDARD_OUTPUT,
    AddCommand,
    UsageError,
    add_brain_options,
    brain_from_args,
    emit_json,
    write_output,
)
from cleo_tui.recall.export import write_retrievals
from cleo_tui.recall.last_recall import credit_last_recall, recall_and_record
from cleo_tui.recall.reader import (
    TraceFilter,
    TraceSummary,
    get_trace,
    trace_outcomes,
    trace_results,
)
from cleo_tui.recall.recall import DEFAULT_LIMIT, MAX_LIMIT, RecallResult
from cleo_tui.recall.recorded import EntryUse, RecordedRetrieval
from cleo_tui.recall.rerank import RerankStep, format_chain
from cleo_tui.recall.retrievals import (
    KINDS,
    Listed,
    OpenCleoRetrieval,
    RetrievalFilter,
    count_retrievals,
    list_retrievals,
    open_cleo_retrieval,
    parse_key,
    trace_kind,
)
from cleo_tui.recall.traces import DEFAULT_TENANT, PIPELINES, query_hash
from cleo_tui.safe_text import one_line, printable, shown_id

TITLE_WIDTH = 80


def register(add: AddCommand) -> None:
    recall = add("recall", help="rank memories for a query and write a recall trace")
    recall.add_argument("query", metavar="QUERY", help="what to recall (stored only as a hash)")
    recall.add_argument("--why", action="store_true", help="show (and trace) each result's rerank steps")
    recall.add_argument("--limit", type=sqlite_int("--limit"), default=DEFAULT_LIMIT, metavar="K",
                        help=f"results to return (default {DEFAULT_LIMIT})")
    recall.add_argument("--session", metavar="ID", type=nonblank_text("--session"),
                        help="session id recorded on the trace")
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

    traces = add("traces", help="list recall traces and CLEO's own retrievals, show one, or export them as JSONL",
                 description="Recall traces (cleo-tui's, or hippo's in a hippo store) and, in a CLEO brain, "
                             "CLEO's own retrievals (its brain_retrieval_log: every memory find, fetch, hybrid "
                             "search and timeline), newest first; each says which kind it is. A trace is "
                             "named by its number (12), a CLEO retrieval by cleo:NUMBER (cleo:12).")
    what = traces.add_mutually_exclusive_group()
    what.add_argument("--show", type=retrieval_key, metavar="ID",
                      help="one trace (12) or CLEO retrieval (cleo:12): its results in rank order, what each "
                           "memory is now, and the trace's steps and outcomes or the usage CLEO logged")
    what.add_argument("--export", metavar="FILE.jsonl", type=nonempty_path("--export", "a file to write"),
                      help="write (query hash, shown, outcomes) per trace and per CLEO retrieval (- for standard "
                           "output)")
    traces.add_argument("--with-query-text", action="store_true",
                        help="with --export: also write CLEO's raw query text (by default only its hash and "
                             "length, as for traces)")
    traces.add_argument("--force", action="store_true", help="with --export: replace an existing file")
    traces.add_argument("--kind", choices=KINDS,
                        help="only this kind: cleo (CLEO's own retrievals), cleo-tui or hippo (the traces)")
    traces.add_argument("--source", metavar="NAME", type=nonblank_text("--source"),
                        help="only CLEO's retrievals of this source (find-rrf, find, fetch, hybrid, timeline, …)")
    traces.add_argument("--limit", type=sqlite_int("--limit", low=1, what="a number of traces (1 or more)"),
                        default=50, help="traces to list (default 50)")
    traces.add_argument("--tenant", type=nonblank_text("--tenant"), help="only traces of this tenant")
    traces.add_argument("--session", type=nonblank_text("--session"), help="only this session")
    traces.add_argument("--pipeline", choices=PIPELINES, help="only traces of this pipeline")
    traces.add_argument("--since", metavar="DATE", type=iso_time("--since"),
                        help="traces at or after this ISO date/time")
    traces.add_argument("--until", metavar="DATE", type=iso_time("--until"), help="traces before this ISO date/time")
    had = traces.add_mutually_exclusive_group()
    had.add_argument("--with-outcome", dest="has_outcome", action="store_const", const=True,
                     help="only traces with an outcome")
    had.add_argument("--without-outcome", dest="has_outcome", action="store_const", const=False,
                     help="only traces without an outcome")
    traces.add_argument("--json", action="store_true", help="print JSON")
    add_brain_options(traces, read_only_flag=False)
    traces.set_defaults(func=cmd_traces)


def _step_json(step: RerankStep) -> JsonObject:
    return asdict(step)


def _result_json(result: RecallResult, why: bool) -> JsonObject:
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
        print(f"{r.rank:>3}. {r.score:.3f}  {shown_id(r.memory_id, 40)}  [{r.kind}]  {one_line(r.title, TITLE_WIDTH)}")
        if args.why:
            print(f"      {one_line(format_chain(r.steps))}")
    if recorded.can_credit:
        print(f"trace {recorded.trace_id} written; credit it with `cleo-tui outcome --good` or `--bad`.")
    elif recorded.trace_id is not None:
        print(f"trace {recorded.trace_id} written ("
              + ("its results have no id, so none can be credited)." if recorded.results else "no results)."))
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


def retrieval_key(value: str) -> tuple[str, int]:
    """`--show`'s value: a trace's number (12, or cleo-tui:12 / hippo:12) or a CLEO retrieval (cleo:12)."""
    key = parse_key(value)
    if key is None:
        raise BadNumber(f"--show wants a trace's number (12) or a CLEO retrieval as cleo:NUMBER (cleo:12), "
                        f"not {one_line(value, 40)!r}.")
    sqlite_int("--show")(str(key[1]))  # the number's range, in the usual words
    return key


def _filter(args: argparse.Namespace) -> TraceFilter:
    return TraceFilter(tenant_id=args.tenant, session_id=args.session, pipeline=args.pipeline,
                       since=args.since, until=args.until, has_outcome=args.has_outcome)


def _retrieval_filter(args: argparse.Namespace, brain: Brain) -> RetrievalFilter:
    """--kind picks CLEO's retrievals or the traces (cleo-tui's or hippo's: whichever this file holds)."""
    kind = args.kind
    return RetrievalFilter(cleo=kind in (None, "cleo"), traces=kind is None or kind == trace_kind(brain),
                           source=args.source, trace=_filter(args))


def _summary_line(t: TraceSummary) -> str:
    session = one_line(t.session_id, 24) if t.session_id else "-"
    tenant = "" if t.tenant_id == DEFAULT_TENANT else f"  tenant {one_line(t.tenant_id, 24)}"
    return (f"#{t.id:<6} {one_line(t.ts, 24)}  {one_line(t.pipeline, 8):<7} {t.result_count:>3} "
            f"{_results(t.result_count)}  "
            f"{'why' if t.explain_mode else '   '}  outcome {t.outcome:<8} session {session}  "
            f"hash {one_line(t.query_hash, 16)}{tenant}")


QUERY_WIDTH = 60


def _results(count: int) -> str:
    """"results", or "result " for one (as wide, so the list's columns stay in line)."""
    return "result " if count == 1 else "results"


def _cleo_line(r: RecordedRetrieval) -> str:
    session = one_line(r.session_id, 24) if r.session_id else "-"
    count = "ids?" if r.malformed else f"{len(r.returned):>3} {_results(len(r.returned))}"
    return (f"cleo:{r.id:<6} {one_line(r.created_at, 24)}  {one_line(r.source, 9):<9} {count}  "
            f"session {session}  query {one_line(r.query if r.query is not None else '(NULL)', QUERY_WIDTH)}")


def cleo_json(r: RecordedRetrieval) -> JsonObject:
    """One CLEO retrieval as `traces --json` lists it (its query whole when `r` holds it whole)."""
    return {"kind": "cleo", "key": f"cleo:{r.id}", "id": r.id, "created_at": r.created_at, "source": r.source,
            "query": r.query, "query_truncated": r.query_cut, "query_bytes": r.query_bytes,
            "entry_ids": list(r.returned), "entry_ids_malformed": r.malformed, "entry_count": r.entry_count,
            "session_id": r.session_id, "tokens_used": r.tokens_used}


def _listed_json(listed: Listed) -> JsonObject:
    if listed.cleo is not None:
        return cleo_json(listed.cleo)
    t = listed.trace
    assert t is not None
    return {**asdict(t), "outcome": t.outcome, "kind": listed.kind, "key": listed.key}


def _use_text(result_use: EntryUse | None) -> str:
    """What brain_usage_log says of an entry: each task, used or not, with its outcome."""
    if result_use is None:
        return "no usage logged"
    parts = [f"{e.task_id or 'no task'} {'used' if e.used else 'not used'}"
             + (f" ({e.outcome})" if e.used and e.outcome else "") for e in result_use.events]
    return one_line("; ".join(parts), 100)


def _show_cleo(opened: OpenCleoRetrieval, as_json: bool) -> int:
    r = opened.retrieval
    if as_json:
        emit_json({"retrieval": cleo_json(r),
                   "results": [{"rank": x.rank, "memory_id": x.memory_id, "state": x.state,
                                "memory": asdict(x.memory),
                                "usage": [asdict(e) for e in x.use.events] if x.use else []}
                               for x in opened.results]})
        return 0
    print(_cleo_line(r).split("  query ")[0])
    print("query (CLEO's raw text, shown as data):")
    print(printable(r.query) if r.query is not None else "(NULL)")
    if r.malformed:
        print("entry_ids is not a JSON list of ids: CLEO's log row cannot say what it returned.")
    for x in opened.results:
        title = one_line(x.memory.title, TITLE_WIDTH) if x.memory.kind else ""
        print(f"{x.rank:>3}. {shown_id(x.memory_id, 40)}  [{x.memory.kind or '-'}, {x.state}]  {title}")
        print(f"      usage: {_use_text(x.use)}")
    return 0


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
        print(f"{r.rank:>3}. {r.score:.3f}  {shown_id(r.memory_id, 40)}  [{r.memory.kind or '-'}, "
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
    if args.with_query_text and not args.export:
        raise UsageError("--with-query-text goes with --export FILE.jsonl (the listing and --show print "
                         "CLEO's query text already).")
    brain = brain_from_args(args, read_only=True)
    try:
        if args.show is not None:
            kind, number = args.show
            if kind == "cleo":
                opened = open_cleo_retrieval(brain, number)
                if opened is None:
                    raise UsageError(f"There is no CLEO retrieval cleo:{number}; `cleo-tui traces --kind cleo` "
                                     "lists them.")
                return _show_cleo(opened, args.json)
            return _show_trace(brain, number, args.json)
        flt = _retrieval_filter(args, brain)
        if args.export:
            count = write_output("--export", args.export,
                                 lambda handle: write_retrievals(handle, brain, flt, args.with_query_text),
                                 brain.path, args.force)
            if args.export == STANDARD_OUTPUT:  # (standard output holds the records)
                print(f"Exported {count} trace{'s' if count != 1 else ''} to standard output", file=sys.stderr)
            elif args.json:
                emit_json({"exported": count, "file": args.export})
            else:
                print(f"Exported {count} trace{'s' if count != 1 else ''} to {one_line(args.export)}")
            return 0
        listed = list_retrievals(brain, flt, limit=args.limit, query_chars=None if args.json else QUERY_WIDTH)
        cleo_total, trace_total = count_retrievals(brain, flt)
    finally:
        brain.close()
    total = cleo_total + trace_total
    if args.json:
        emit_json({"count": total, "cleo_retrievals": cleo_total, "recall_traces": trace_total,
                   "traces": [_listed_json(x) for x in listed]})
        return 0
    if not listed:
        print("No recall traces or CLEO retrievals match.")
    for x in listed:
        print(_cleo_line(x.cleo) if x.cleo is not None else _summary_line(x.trace) if x.trace else "")
    if total > len(listed):
        print(f"({len(listed)} of {total} shown; --limit N shows more)")
    return 0
