"""`cleo-tui sweeps [--json] [--run ID]`: CLEO's staged and past noise sweeps, approved or rolled back through CLEO.

`--approve RUN` / `--rollback RUN` run CLEO's own `cleo memory sweep --approve|--rollback RUN` (after a
confirmation, or `--yes`) in the brain's project directory and print CLEO's answer; without `cleo` on
PATH they print the exact command and write nothing. `--veto CANDIDATE` sets one pending candidate of a
staged run to `skipped`, which CLEO's approve leaves out (journalled: `cleo-tui prune --undo RUN_ID`).
"""

from __future__ import annotations

import argparse
import shlex
import sys

from cleo_tui.brain.rows import JsonObject
from cleo_tui.brain.store import Brain
from cleo_tui.commands.common import (
    AddCommand,
    UsageError,
    add_brain_options,
    brain_from_args,
    confirmed,
    emit_json,
    is_terminal,
)
from cleo_tui.commands.text_width import wrapped
from cleo_tui.memory.cleo_command import APPROVE, ROLLBACK, CleoCommand, run_cleo, sweep_command
from cleo_tui.memory.sweeps import STAGED, SweepRun, list_runs, purge_ids, veto_row
from cleo_tui.recall.sweep_impact import sweep_recall_impact
from cleo_tui.safe_text import one_line, plural

EXIT_CLEO_FAILED = 1


def register(add: AddCommand) -> None:
    sweeps = add("sweeps", help="CLEO's staged and past noise sweeps; approve or roll back through CLEO",
                 description="List the runs `cleo memory sweep` staged (and past ones) with their rows: the "
                             "action, the target's values now, its text, and the recall impact. --approve RUN "
                             "or --rollback RUN runs CLEO's own command (when `cleo` is on PATH; otherwise it "
                             "prints the command and writes nothing). --veto CANDIDATE leaves one row out of "
                             "CLEO's approve (CLEO applies only pending rows).")
    sweeps.add_argument("--run", metavar="ID", help="only this run")
    sweeps.add_argument("--json", action="store_true", help="print JSON")
    act = sweeps.add_mutually_exclusive_group()
    act.add_argument("--approve", metavar="RUN", help="run `cleo memory sweep --approve RUN`")
    act.add_argument("--rollback", metavar="RUN", help="run `cleo memory sweep --rollback RUN`")
    act.add_argument("--veto", metavar="CANDIDATE", help="set a pending candidate (bos-…) to skipped (undoable)")
    sweeps.add_argument("--yes", action="store_true", help="do not ask before --approve or --rollback")
    add_brain_options(sweeps, read_only_flag=False)
    sweeps.set_defaults(func=cmd_sweeps, needs="observations")


def cmd_sweeps(args: argparse.Namespace) -> int:
    if args.approve or args.rollback:
        return _through_cleo(args, APPROVE if args.approve else ROLLBACK, args.approve or args.rollback)
    if args.veto:
        brain = brain_from_args(args, read_only=False)
        try:
            run_id = veto_row(brain, args.veto)
        finally:
            brain.close()
        print(f"Vetoed {one_line(args.veto, 60)}: CLEO's approve leaves it out. Undo with "
              f"`cleo-tui prune --undo {run_id}`.")
        return 0
    brain = brain_from_args(args, read_only=True)
    try:
        runs = list_runs(brain, args.run)
        if args.run is not None and not runs:
            raise UsageError(f"There is no sweep run {one_line(args.run, 60)!r} in {brain.path}. "
                             "`cleo-tui sweeps` lists the runs.")
        if args.json:
            emit_json({"runs": [_run_json(brain, run) for run in runs]})
            return 0
        print("\n".join(run_lines(brain, runs)))
    finally:
        brain.close()
    return 0


def _run_json(brain: Brain, run: SweepRun) -> JsonObject:
    out = run.to_dict()
    out["impact"] = sweep_recall_impact(brain, purge_ids(run)).to_dict()
    return out


def run_lines(brain: Brain, runs: list[SweepRun]) -> list[str]:
    """Each run, its counts, its recall impact and its rows, in lines of at most 80 columns."""
    if not runs:
        return ["No sweep runs in this brain (`cleo memory sweep` stages one)."]
    lines: list[str] = []
    for run in runs:
        counts = ", ".join(f"{n} {status}" for status, n in sorted(run.counts().items()))
        approved = f", approved {run.approved_at} by {run.approved_by or '?'}" if run.approved_at else ""
        lines += wrapped(f"run {run.id} ({run.kind}) {run.status}, created {run.created_at or '?'}{approved}", "")
        lines += wrapped(f"rows: {counts or 'none'}")
        impact = sweep_recall_impact(brain, purge_ids(run))
        if run.status == STAGED:
            lines += wrapped(f"recall impact of approving: {impact.affected_retrievals} of {impact.retrievals} "
                           f"recorded retrievals returned a row it purges; {impact.affected_used} of them a task "
                           "used")
            command = sweep_command(brain.path, APPROVE, run.id)
            where = f" in {command.cwd}" if command.cwd is not None else ""
            lines += wrapped(f"approve{where} with:")  # the command itself unwrapped, to copy
            lines.append("    " + one_line(" ".join(shlex.quote(a) for a in ("cleo", *command.argv[1:])), 200))
        for row in run.rows:
            now = row.current
            state = "gone" if now is None else ("evicted" if now.get("invalid_at") else "live")
            quality = "-" if now is None or now.get("quality_score") is None else f"{now['quality_score']:.2f}"
            lost = impact.by_id().get(row.source_id)
            recalls = f", recalled {lost.recalls}x" if lost and lost.recalls else ""
            lines += wrapped(f"{row.id} {row.action} {row.source_id} [{row.validation_status}] now {state}, "
                           f"quality {quality}{recalls}: {one_line(row.title or row.text, 60)}")
    return lines


def _confirm(command: CleoCommand, run: SweepRun | None, action: str) -> None:
    what = (f"{plural(len(purge_ids(run)), 'purge')} of {plural(len(run.rows), 'row')}" if run is not None
            else "this run")
    question = f"Run `{one_line(command.shown)}` ({action} {what})? [y/N] "
    if not is_terminal(sys.stdin):
        raise UsageError(f"--{action} needs --yes when not run from a terminal; nothing was run.")
    if not confirmed(question):
        raise UsageError("Not confirmed; nothing was run.")


def _through_cleo(args: argparse.Namespace, action: str, run_id: str) -> int:
    brain = brain_from_args(args, read_only=True)
    try:
        runs = list_runs(brain, run_id)
        command = sweep_command(brain.path, action, run_id)
    finally:
        brain.close()
    if not runs:
        raise UsageError(f"There is no sweep run {one_line(run_id, 60)!r} in this brain. `cleo-tui sweeps` lists "
                         "the runs.")
    if runs[0].status != STAGED:
        raise UsageError(f"Run {one_line(run_id, 60)} is {one_line(runs[0].status, 20)}: CLEO approves or rolls "
                         "back only a staged run. Nothing was run.")
    if not command.runnable:
        print(f"Not run ({one_line(command.why_not)}). Nothing was written. The command is:\n  "
              f"{one_line(command.shown)}")
        return 0
    if not args.yes:
        _confirm(command, runs[0], action)
    answer = run_cleo(command)
    print(f"$ {one_line(command.shown)}")
    print(_literal(answer.text()))
    if not answer.ok:
        return EXIT_CLEO_FAILED
    brain = brain_from_args(args, read_only=True)  # read again: what CLEO wrote
    try:
        after = list_runs(brain, run_id)
    finally:
        brain.close()
    if after:
        print(f"run {one_line(after[0].id, 60)} is now {one_line(after[0].status, 20)}")
    return 0


def _literal(text: str) -> str:
    """CLEO's answer line by line, each shown literally (no escape sequences reach the terminal)."""
    return "\n".join(one_line(line, 2000) for line in text.splitlines())
