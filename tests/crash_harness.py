"""SIGKILL a curation step at random points and check the brain is exactly before or after.

    python -m tests.crash_harness OP KILLS SEED WORKDIR      (OP: prune, reflect, undo)

Run as a subprocess by tests/test_reliability_crash.py. For each trial it copies a
prepared brain, forks, and the child runs the step with an SQLite progress handler
that SIGKILLs the child after a random number of VM steps (spread over the whole
step, a little past its end so some trials finish); every other trial the child instead
tells the parent (through a pipe, from SQLite's trace callback) that COMMIT is starting,
and the parent SIGKILLs it within a random 0-3 ms, so the kill lands before, while or
just after the transaction is written out. The parent then checks:
- `PRAGMA integrity_check` is ok;
- the brain is exactly as before (full dump of every ordinary table), or
- exactly after: the step's run is in the journal, every row it recorded holds its
  `after` values, every evicted observation is in the run log and, undoing the run on
  a copy gives back exactly the before dump (for an undo step: the dump equals the
  state before the undone prune).
Steps are written in chunks of CHUNK_ROWS rows (each its own transaction, one run
'in_progress' until the last), so most kills land between chunks: the judge first
opens the brain the way every command does, which rolls an interrupted run back,
and then requires exactly before or exactly after. An undo sets updated_at to now
(CLEO's reads change it anyway), so "undoing gives back before" compares
observations without updated_at.
It prints one JSON object: trials, killed, before, after, recovered, failures.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import sys
import time
from pathlib import Path

from cleo_tui.brain import journal, journal_pacing, open_brain
from cleo_tui.brain.migrations import PROPOSALS
from cleo_tui.memory import curation
from cleo_tui.memory.pruner import commit_prune, prepare_pool
from tests.brain_fixtures import make_cleo_consolidated
from tests.reliability_fixtures import insert_rows, integrity, plain_rows, table_dump

BUDGET = 3_000
CHUNK_ROWS = 7  # many chunks per step: kills land between them
UPDATED_AT = 15  # brain_observations.updated_at, CLEO's 16th column
JOURNAL = ("cleo_tui_runs", "cleo_tui_run_changes", PROPOSALS)
OVERSHOOT = 1.15  # kill points reach a little past the end: some trials complete
COMMIT_WINDOW_S = 0.003  # at-commit kills land up to this long after COMMIT starts


def _checkpoint(path: Path) -> None:
    """Recover and fold the -wal into the file, so copying the file copies the brain."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def _copy(source: Path, target: Path) -> Path:
    _checkpoint(source)
    for suffix in ("-wal", "-shm"):
        Path(str(target) + suffix).unlink(missing_ok=True)
    shutil.copy(source, target)
    return target


def build_base(workdir: Path, op: str) -> tuple[Path, Path]:
    """The brain each trial starts from, and the 'reference' brain before an undone prune."""
    path = make_cleo_consolidated(workdir / "base.db")
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    insert_rows(conn, plain_rows(150))
    conn.execute("COMMIT")
    conn.close()
    brain = open_brain(path)
    if op == "reflect":
        _add_reflector_proposal(brain)
    brain.close()
    reference = _copy(path, workdir / "reference.db")
    if op == "undo":
        brain = open_brain(path)
        commit_prune(brain, prepare_pool(brain).preview(BUDGET))
        brain.close()
    return path, reference


def _add_reflector_proposal(brain) -> None:
    from cleo_tui.llm.inputs import fingerprint
    from cleo_tui.llm.proposals import REFLECTOR, create_proposal
    ids = [f"O-plain{i:04d}" for i in range(20)]
    create_proposal(brain, REFLECTOR, None, "anthropic", "fake-model", [{"id": i} for i in ids],
                    {"patterns": [{"pattern": "Run tests before commits", "context": "CI"},
                                  {"pattern": "Keep transactions short", "context": "CLEO"}],
                     "learnings": [{"insight": "WAL avoids blocking", "confidence": 0.9}],
                     "superseded": [{"id": i, "reason": "covered"} for i in ids[:8]],
                     "dropped_ids": [], "scope": "test"},
                    "{}", {}, fingerprint(brain, ids))


def run_step(path: Path, op: str, kill_after: int | None, commit_signal: int | None = None) -> int:
    """Do the step on `path`; with kill_after, SIGKILL this process after that many VM steps.

    With `commit_signal` (a pipe's write end), write one byte to it just before COMMIT runs,
    so the parent can SIGKILL this process while SQLite writes the transaction out.
    Returns the number of progress-handler calls the step took (when not killed).
    """
    journal_pacing.CHUNK_ROWS = CHUNK_ROWS  # the default every ChunkBudget takes
    brain = open_brain(path)
    preview = prepare_pool(brain).preview(BUDGET) if op == "prune" else None
    calls = 0
    if commit_signal is not None:
        brain.conn.set_trace_callback(lambda sql: os.write(commit_signal, b"c") if sql == "COMMIT" else None)

    def tick() -> int:
        nonlocal calls
        calls += 1
        if kill_after is not None and calls >= kill_after:
            os.kill(os.getpid(), signal.SIGKILL)
        return 0

    brain.conn.set_progress_handler(tick, 10)  # every 10 VM steps
    if op == "prune":
        commit_prune(brain, preview)
    elif op == "reflect":
        from cleo_tui.llm.reflector import apply_reflection
        proposal_id = brain.scalar(f"SELECT id FROM {PROPOSALS}")
        superseded = [f"O-plain{i:04d}" for i in range(8)]
        apply_reflection(brain, proposal_id, superseded, [0, 1], [0], confirm_protected=superseded)
    else:
        curation.undo(brain, brain.scalar("SELECT max(id) FROM cleo_tui_runs"))
    brain.conn.set_progress_handler(None, 0)
    brain.close()
    return calls


def _spin(seconds: float) -> None:
    """Busy-wait (a random kill point, not a synchronisation: the kill lands wherever it lands)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def _without(dump: dict, tables: tuple[str, ...], updated_at: bool = True) -> dict:
    """The dump without `tables` (and, with updated_at=False, without observations' updated_at)."""
    kept = {t: rows for t, rows in dump.items() if t not in tables}
    if not updated_at and "brain_observations" in kept:
        kept["brain_observations"] = sorted((r[:UPDATED_AT] + r[UPDATED_AT + 1:] for r in kept["brain_observations"]),
                                            key=repr)
    return kept


def recover(trial: Path) -> int:
    """Open the brain as every command does (an interrupted run is rolled back); runs recovered."""
    brain = open_brain(trial)
    try:
        return len(brain.recovered)
    finally:
        brain.close()


def judge(trial: Path, before: dict, reference: dict, op: str, workdir: Path) -> str:
    """'before', 'after', or a description of what is wrong."""
    if integrity(trial) != "ok":
        return f"integrity: {integrity(trial)}"
    recover(trial)
    now = table_dump(trial)
    if now == before:
        return "before"
    brain = open_brain(trial)
    try:
        run = journal.list_runs(brain.conn, limit=1)[0]
        expected_kind = {"prune": "prune", "reflect": "reflect", "undo": "undo"}[op]
        if run.kind != expected_kind:
            return f"changed, but the last run is {run.kind}"
        if run.status != journal.DONE:
            return f"run {run.id} is still {run.status} after recovery"
        for table, key, _before, after in journal.run_changes(brain.conn, run.id):
            if after is None:
                continue
            where = " AND ".join(f'"{k}" IS ?' for k in [*key, *after])
            if brain.scalar(f'SELECT count(*) FROM "{table}" WHERE {where}', [*key.values(), *after.values()]) != 1:
                return f"row {key} of {table} does not hold the run's after values"
        evicted = {r[0] for r in brain.query("SELECT id FROM brain_observations WHERE invalid_at IS NOT NULL")}
        logged = _evicted_by_runs(brain)
        if evicted != logged:
            return f"invalid_at and the run log disagree: {sorted(evicted ^ logged)[:5]}"
        if op == "undo":
            same = _without(now, JOURNAL, updated_at=False) == _without(reference, JOURNAL, updated_at=False)
            return "after" if same else "undo left a partial state"
    finally:
        brain.close()
    copy = _copy(trial, workdir / "undo-check.db")
    brain = open_brain(copy)
    curation.undo(brain, run.id)
    brain.close()
    same = _without(table_dump(copy), JOURNAL, updated_at=False) == _without(before, JOURNAL, updated_at=False)
    return "after" if same else "after-state is not exactly before + the run"


def _evicted_by_runs(brain) -> set[str]:
    """Observations whose invalid_at the journal says is set now (last change per row wins)."""
    state: dict[str, bool] = {}
    rows = brain.query("SELECT row_key, after_json FROM cleo_tui_run_changes WHERE table_name = "
                       "'brain_observations' ORDER BY run_id, seq")
    for key, after in rows:
        values = json.loads(after) if after else {}
        if "invalid_at" in values:
            state[json.loads(key)["id"]] = values["invalid_at"] is not None
    return {i for i, on in state.items() if on}


def _interrupted(trial: Path) -> int:
    """Runs a kill left in progress (read before the judge's open recovers them)."""
    conn = sqlite3.connect(f"file:{trial}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM cleo_tui_runs WHERE status = 'in_progress'").fetchone()[0])
    finally:
        conn.close()


def main(op: str, kills: int, seed: int, workdir: Path) -> dict:
    base, reference_path = build_base(workdir, op)
    before = table_dump(base)
    reference = table_dump(reference_path)
    total = run_step(_copy(base, workdir / "measure.db"), op, None)
    rng = random.Random(seed)
    outcome = {"op": op, "trials": 0, "killed": 0, "before": 0, "after": 0, "failures": [], "steps": total,
               "killed_at_commit": 0, "recovered": 0}
    for index in range(kills):
        trial = _copy(base, workdir / "trial.db")
        at_commit = index % 2 == 1  # every other trial: killed by the parent during COMMIT
        kill_after = None if at_commit else rng.randint(1, max(2, int(total * OVERSHOOT)))
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: do the step, probably die in the middle of it
            try:
                os.close(read_end)
                run_step(trial, op, kill_after, write_end if at_commit else None)
            finally:
                os._exit(0)
        os.close(write_end)
        if at_commit and os.read(read_end, 1):  # the child is committing right now
            _spin(rng.uniform(0, COMMIT_WINDOW_S))  # a random point in the commit's write-out
            os.kill(pid, signal.SIGKILL)
        os.close(read_end)
        _, status = os.waitpid(pid, 0)
        outcome["trials"] += 1
        killed = int(os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL)
        outcome["killed"] += killed
        outcome["killed_at_commit"] += killed if at_commit else 0
        outcome["recovered"] += _interrupted(trial)
        verdict = judge(trial, before, reference, op, workdir)
        if verdict in ("before", "after"):
            outcome[verdict] += 1
        else:
            outcome["failures"].append({"kill_after": kill_after, "verdict": verdict})
    return outcome


if __name__ == "__main__":
    result = main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]))
    print(json.dumps(result))
