"""Scale benchmark (issue 18): each goal as floor, ours and their ratio, measured in the same run.

    python -m benchmarks.scale [--sizes 100000,1000000] [--workdir DIR] [--runs 3]
                               [--commit-max 100000] [--no-tui] [--tokenizers chars4,o200k_base,cl100k_base]
                               [--no-real] [--real-db SIZE=PATH] [--prune-only]

For each demo brain (seed 7; built once in --workdir, or pass existing ones with
--db SIZE=PATH) and, with --real (the default), each real-layout brain of the same size
(`benchmarks.real_layout`: long narratives, JSON columns, hostile rows, CLEO's triggers;
built once in --workdir as real-SIZE, or --real-db SIZE=PATH), the prune rows; the rest
on the demo brain only:

- prune: the whole process `cleo-tui prune --budget 500000 --json [--tokenizer T] > file`
  against a floor: a plain script that reads the same live pool (id, created_at, title,
  narrative), renders each line `[id] YYYY-MM-DD HH:MM [medium] content`, measures it,
  sorts the rows by date and prefix-sums their sizes. For chars4 (FLOOR_SCRIPT) a line
  measures (len + 3) // 4; for a tiktoken encoding (FLOOR_TIKTOKEN_SCRIPT) it measures
  len(encoding.encode_ordinary(line)) with that encoding, loaded as cleo-tui loads it
  (offline), so that floor counts every line's tokens on every run. Each tokenizer of
  --tokenizers is measured with a cache folder of its own, empty at first: ours runs
  once "cold" (nothing cached: every text analysed, every line counted), then --runs
  times "warm" (a user's second run) interleaved with the floor; the best CPU (user+sys)
  and wall of each are kept (a tiktoken floor runs once: it takes seconds and varies
  little). A warm tiktoken run is also set against the chars4 floor: with every line's
  count cached it has no more to do than a chars4 run.
- tags: `tag_brain` in a new process on warm caches (its snapshot too), against the same
  plain read: when they are shown (from the snapshot) and when every row has been checked.
- incremental: 10 new rows written by a second connection, then
  `PreparedPool.refreshed` and `update_tags`, against a full prepare (the floor is what
  it replaces; the goal is well under 200 ms); then 10 rows naming files that only one old
  row held each, folded in (those rows lose their protection: the first such fold builds
  the index of which table entries hold an identifier).
- commit (up to --commit-max rows): `commit_prune` of the preview's dropped rows on a
  copy of the brain, against a bare `UPDATE … SET invalid_at, updated_at` of the same
  rows (CLEO's FTS triggers fire in both).
- tui: first screen on a pty, tags ready after it, peak RSS with tags and CPU per key
  (`benchmarks.tui`), against the goals (1 s, 5 s, 500 MB, 50 ms).

Child processes run with their bytecode cached (`bench_env`), as an installed package's are;
`--compile-each-run` keeps PYTHONDONTWRITEBYTECODE as the environment has it.

CPU seconds are the fairer figure on a shared machine; wall seconds are printed too.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from benchmarks import with_bytecode

_FLOOR_TEMPLATE = r'''
import sqlite3, sys
{setup}conn = sqlite3.connect(f"file:{{sys.argv[1]}}?mode=ro", uri=True)
conn.text_factory = lambda b: b.decode("utf-8", "replace")
rows = conn.execute("SELECT id, created_at, title, narrative FROM brain_observations "
                    "WHERE invalid_at IS NULL").fetchall()
items = []
for i, (oid, created, title, narrative) in enumerate(rows):
    content = narrative if narrative and narrative.strip() else (title or "")
    line = f"[{{oid}}] {{str(created)[:16]}} [medium] {{content}}"
    items.append(({size}, str(created), i))
items.sort(key=lambda t: (t[1], t[2]))
total, prefix = 0, []
for t in items:
    total += t[0]
    prefix.append(total)
print(len(prefix), total)
'''
FLOOR_SCRIPT = _FLOOR_TEMPLATE.format(setup="", size="(len(line) + 3) // 4")
FLOOR_TIKTOKEN_SCRIPT = _FLOOR_TEMPLATE.format(
    setup="from cleo_tui.memory.tokenizers import get_encoding  # the encoding file, loaded offline\n"
          "encode = get_encoding(sys.argv[2]).encode_ordinary\n",
    size="len(encode(line))")
TOKENIZERS = ("chars4", "o200k_base", "cl100k_base")


_PYCACHE = Path(tempfile.gettempdir()) / "cleo-scale-bench-pycache"
_SETTINGS = {"cache_bytecode": True}


def bench_env() -> dict[str, str]:
    """The children's environment: bytecode cached outside the tree (`with_bytecode`), unless
    --compile-each-run."""
    if not _SETTINGS["cache_bytecode"]:
        return dict(os.environ)
    return with_bytecode(os.environ, _PYCACHE)


def _run(command: list[str], out: Path | None = None, env: dict | None = None) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of a whole child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with open(out or os.devnull, "wb") as sink:
        subprocess.run(command, stdout=sink, check=True, env=env if env is not None else bench_env())
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def _best(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return min(r[0] for r in runs), min(r[1] for r in runs)


def measure_prune(db: Path, runs: int, tokenizer: str = "chars4") -> dict:
    """Ours cold (an empty cache folder), then warm, against the floor for `tokenizer` (module docstring)."""
    work = Path(tempfile.mkdtemp())
    floor_script = work / "floor.py"
    floor_script.write_text(FLOOR_SCRIPT if tokenizer == "chars4" else FLOOR_TIKTOKEN_SCRIPT)
    floor_cmd = [sys.executable, str(floor_script), str(db), *([] if tokenizer == "chars4" else [tokenizer])]
    ours_cmd = [sys.executable, "-m", "cleo_tui", "prune", "--db", str(db), "--budget", "500000", "--json",
                "--tokenizer", tokenizer]
    env = {**bench_env(), "XDG_CACHE_HOME": str(work / "cache")}  # this measure's own caches, empty at first
    out = work / "prune.json"
    cold = _run(ours_cmd, out, env)
    floor, ours = [], []
    for k in range(runs):
        if tokenizer == "chars4" or k == 0:
            floor.append(_run(floor_cmd, env=env))
        ours.append(_run(ours_cmd, out, env))
    result = {"floor": _best(floor), "ours": _best(ours), "cold": cold, "json_mb": out.stat().st_size / 1e6,
              "tokenizer": tokenizer}
    shutil.rmtree(work)
    return result


def measure_tags(db: Path, runs: int) -> dict:
    floor_script = Path(tempfile.mkdtemp()) / "floor.py"
    floor_script.write_text(FLOOR_SCRIPT)
    # The CPU seconds of the process when the tags are first shown (from the snapshot) go to stdout.
    code = ("import sys, time; from cleo_tui.brain import open_brain; from cleo_tui.memory.tags import tag_brain; "
            "b = open_brain(sys.argv[1], read_only=True); shown = []; "
            "t = tag_brain(b, lambda early: shown.append((time.process_time(), len(early.protected_ids())))); "
            "t.protected_ids(); print(shown[0][0] if shown else time.process_time())")
    ours_cmd = [sys.executable, "-c", code, str(db)]
    out = floor_script.with_name("early.txt")
    _run(ours_cmd)
    floor, ours, early = [], [], []
    for _ in range(runs):
        floor.append(_run([sys.executable, str(floor_script), str(db)]))
        ours.append(_run(ours_cmd, out))
        early.append(float(out.read_text()))
    shutil.rmtree(floor_script.parent)
    return {"floor": _best(floor), "ours": _best(ours), "early": min(early), "cold": measure_tags_cold(ours_cmd)}


def measure_tags_cold(ours_cmd: list[str]) -> tuple[float, float]:
    """(CPU, wall) of the same tagging process on a brain never opened (an empty XDG cache directory:
    no snapshot, no findings); the CPU includes the scan process it starts (issue 33)."""
    with tempfile.TemporaryDirectory(prefix="cleo-tui-cold-cache-") as home:
        return _run(ours_cmd, env={**bench_env(), "XDG_CACHE_HOME": home})


T = TypeVar("T")


def _timed(call: Callable[[], T]) -> tuple[T, float, float]:
    started, cpu = time.perf_counter(), time.process_time()
    value = call()
    return value, time.process_time() - cpu, time.perf_counter() - started


def measure_incremental(db: Path) -> dict:
    """In a copy of the brain: prepare, add 10 rows (one a reflection citing old rows), fold them in."""
    from cleo_tui.brain import open_brain
    from cleo_tui.memory.pruner import prepare_pool
    from cleo_tui.memory.tags import tag_brain, update_tags

    with tempfile.TemporaryDirectory(dir=db.parent.parent.parent) as tmp:
        copy = Path(tmp) / "cleo.db"
        shutil.copyfile(db, copy)
        brain = open_brain(copy)
        try:
            pool, prepare_cpu, prepare_wall = _timed(lambda: prepare_pool(brain, "chars4"))
            tags = tag_brain(brain)
            old_ids = pool.droppable.ids(3)
            with brain.write() as conn:
                for i in range(9):
                    conn.execute("INSERT INTO brain_observations (id, type, title, narrative, created_at) "
                                 "VALUES (?, 'discovery', ?, ?, '2099-01-01 00:00:00')",
                                 (f"O-bench-{i}", f"new row {i}", f"A new row {i} about src/bench/new_{i}.py"))
                conn.execute("INSERT INTO brain_patterns (id, type, pattern, context) "
                             "VALUES ('P-bench', 'workflow', 'a new pattern', '')")
                for old in old_ids:
                    conn.execute("INSERT INTO brain_page_edges (from_id, to_id, edge_type) "
                                 "VALUES (?, ?, 'derived_from')",
                                 ("pattern:P-bench", f"observation:{old}"))
            brain.refresh()
            new_pool, pool_cpu, pool_wall = _timed(lambda: pool.refreshed(brain))
            _, tags_cpu, tags_wall = _timed(lambda: update_tags(brain, tags))
            assert len(new_pool) == len(pool) + 9
            named = _unique_identifiers(new_pool, 10)
            with brain.write() as conn:
                for i, identifier in enumerate(named):
                    conn.execute("INSERT INTO brain_observations (id, type, title, narrative, created_at) "
                                 "VALUES (?, 'discovery', ?, ?, '2099-01-02 00:00:00')",
                                 (f"O-bench-again-{i}", f"again {i}", f"Touched {identifier} again"))
            brain.refresh()
            _, flip_cpu, flip_wall = _timed(lambda: new_pool.refreshed(brain))
        finally:
            brain.close()
    return {"prepare": (prepare_cpu, prepare_wall), "pool": (pool_cpu, pool_wall), "tags": (tags_cpu, tags_wall),
            "flip": (flip_cpu, flip_wall), "flipped": len(named)}


def _unique_identifiers(pool: object, count: int) -> list[str]:
    """Identifiers that only one live row holds (what protects it), from `count` such rows."""
    scan = pool.scan  # type: ignore[attr-defined]
    counts, found = scan.counts, []
    for i in map(int, scan.protected.nonzero()[0]):
        unique = [x for x in scan.table[scan.findings[i]][0] if counts.get(x, 0) == 1]
        if unique:
            found.append(unique[0])
        if len(found) == count:
            break
    return found


def measure_commit(db: Path) -> dict:
    """commit_preview of a half-pool preview against a bare UPDATE of the same rows, each on a fresh copy.

    Besides its wall time (the pauses left to CLEO included), the commit's own run
    says how long its chunks held the write lock (`journal.RunStats.held`, BEGIN
    granted to COMMIT done, summed) and how long its checkpoints in the pauses took;
    the bare UPDATE's wall holds its one transaction and the checkpoint its COMMIT runs.
    """
    from cleo_tui.brain import open_brain
    from cleo_tui.brain.clock import cleo_timestamp
    from cleo_tui.memory.pruner import commit_preview, prepare_pool

    result: dict[str, tuple[float, float] | int | float | dict] = {}
    with tempfile.TemporaryDirectory(prefix="scale-commit-") as tmp:  # in /tmp: the bench brains stay untouched
        copy = Path(tmp) / "cleo.db"
        shutil.copyfile(db, copy)
        brain = open_brain(copy)
        pool = prepare_pool(brain, "chars4")
        preview = pool.preview(500_000)
        ids = preview.dropped_ids
        with brain.lock:  # the prepare's caches, written to the WAL, are not the commit's to copy
            brain.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        commit, cpu, wall = _timed(lambda: commit_preview(brain, preview))
        result["ours"] = (cpu, wall)
        stats = commit.stats
        assert stats is not None
        result["writing"] = stats.held
        result["checkpoints"] = stats.checkpoints
        result["stats"] = stats.to_json()
        brain.close()
        shutil.copyfile(db, copy)
        for suffix in ("-wal", "-shm"):
            Path(str(copy) + suffix).unlink(missing_ok=True)
        import sqlite3
        conn = sqlite3.connect(copy, isolation_level=None)
        now = cleo_timestamp()

        def bare() -> None:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany("UPDATE brain_observations SET invalid_at = ?, updated_at = ? WHERE id = ?",
                             [(now, now, i) for i in ids])
            conn.execute("COMMIT")
        _, cpu, wall = _timed(bare)
        result["floor"] = (cpu, wall)
        result["rows"] = len(ids)
        conn.close()
    return result


def measure_tui(db: Path) -> dict:
    out = subprocess.run([sys.executable, "-m", "benchmarks.scale", "--child-tui", str(db)],
                         capture_output=True, text=True, check=True)
    figures: dict = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def _child_tui(db: Path) -> None:
    import asyncio

    from benchmarks.tui import measure
    figures = asyncio.run(measure(db))
    figures["peak RSS (MB)"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(figures))


def _ratio(floor: float, ours: float) -> str:
    return f"{ours / floor:.2f}×" if floor > 0 else "–"


def _row(label: str, floor: float, ours: float, unit: str = "s", goal: str = "") -> str:
    return f"| {label} | {floor:.3f} {unit} | {ours:.3f} {unit} | {_ratio(floor, ours)} | {goal} |"


def prune_rows(brain: str, measures: list[dict]) -> list[str]:
    """The prune rows of one brain: per tokenizer, warm CPU and wall and cold CPU against its floor, and a
    warm tiktoken run against the chars4 floor too."""
    lines = []
    chars4_floor = next((m["floor"][0] for m in measures if m["tokenizer"] == "chars4"), None)
    for m in measures:
        name, floor, ours = f"prune --json, {brain} brain, {m['tokenizer']}", m["floor"], m["ours"]
        lines.append(_row(f"{name}, warm, whole process, CPU", floor[0], ours[0], goal="≤ 2.5×"))
        lines.append(_row(f"{name}, warm, whole process, wall", floor[1], ours[1]))
        lines.append(_row(f"{name}, cold (empty caches), whole process, CPU", floor[0], m["cold"][0]))
        if m["tokenizer"] != "chars4" and chars4_floor is not None:
            lines.append(_row(f"{name}, warm, CPU, against the chars4 floor", chars4_floor, ours[0],
                              goal="≤ 2.5×"))
    return lines


def measure_prunes(db: Path, runs: int, tokenizers: list[str]) -> list[dict]:
    """`measure_prune` for each tokenizer."""
    return [measure_prune(db, runs, tokenizer) for tokenizer in tokenizers]


def real_brain(workdir: Path, size: int) -> Path:
    """The real-layout brain of `size` rows in workdir (`benchmarks.real_layout`), built on first use."""
    target = workdir / f"real-{size}"
    path = target / ".cleo" / "cleo.db"
    if not path.exists():
        from benchmarks.real_layout import build
        started = time.perf_counter()
        build(target, size, 7)
        print(f"  built real-layout brain of {size:,} rows in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return path


def report(size: int, r: dict) -> list[str]:
    lines = [f"\n### {size:,} observations\n", "| measure | floor | ours | ratio | goal |", "|---|---|---|---|---|"]
    for brain, measures in (("demo", r["prune"]), ("real-layout", r.get("real_prune", []))):
        lines += prune_rows(brain, measures)
    if "tags" not in r:
        return lines
    t = r["tags"]
    lines.append(_row("tags shown (new process, from the snapshot) vs plain read, CPU", t["floor"][0], t["early"],
                      goal="< 5 s"))
    lines.append(_row("tags checked (new process, every row) vs plain read, CPU", t["floor"][0], t["ours"][0]))
    lines.append(_row("tags cold (new process, empty cache dir) vs plain read, CPU", t["floor"][0], t["cold"][0]))
    lines.append(_row("tags cold (new process, empty cache dir) vs plain read, wall", t["floor"][1], t["cold"][1]))
    i = r["incremental"]
    lines.append(_row("10 new rows folded into the pool (vs full prepare), CPU",
                      i["prepare"][0], i["pool"][0], goal="< 0.200 s"))
    lines.append(_row("10 new rows folded into the pool (vs full prepare), wall",
                      i["prepare"][1], i["pool"][1], goal="< 0.200 s"))
    lines.append(_row("10 new rows: update_tags (vs full prepare), CPU", i["prepare"][0], i["tags"][0]))
    lines.append(_row(f"then {i['flipped']} rows naming files only one old row held (the first fold that "
                      "re-judges old rows), CPU", i["prepare"][0], i["flip"][0]))
    if "commit" in r:
        c = r["commit"]
        lines.append(_row(f"commit {c['rows']:,} rows vs bare UPDATE, wall (pauses for CLEO included)",
                          c["floor"][1], c["ours"][1]))
        lines.append(_row(f"commit {c['rows']:,} rows: time writing ({c['stats']['chunks']:,} chunks holding the "
                          "lock) vs bare UPDATE, wall", c["floor"][1], c["writing"], goal="≤ 1.5×"))
        lines.append(_row("  the same plus its checkpoints (in the pauses, lock free)", c["floor"][1],
                          c["writing"] + c["checkpoints"]))
        lines.append(_row(f"commit {c['rows']:,} rows vs bare UPDATE, CPU (this process)", c["floor"][0],
                          c["ours"][0]))
    if "tui" in r:
        u = r["tui"]
        first = u["first screen (pty)"]
        lines.append(_row("TUI first screen (pty), wall", 1.0, first, goal="< 1 s"))
        lines.append(_row("TUI tags ready after start, wall", 5.0, u["tags ready (background)"], goal="< 5 s"))
        lines.append(_row("TUI peak RSS with tags", 500, u["peak RSS (MB)"], "MB", goal="< 500 MB"))
        worst = max(v for k, v in u.items() if k.startswith("key:"))
        lines.append(_row("TUI worst key (CPU per press)", 0.050, worst, goal="< 0.050 s"))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--workdir", default="/tmp/cleo-prune-bench")
    parser.add_argument("--db", action="append", default=[], metavar="SIZE=PATH",
                        help="use an existing brain for a size, e.g. 1000000=/work/bench/1m/.cleo/cleo.db")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--commit-max", type=int, default=100_000)
    parser.add_argument("--no-tui", action="store_true")
    parser.add_argument("--compile-each-run", action="store_true",
                        help="do not cache the children's bytecode (as with PYTHONDONTWRITEBYTECODE=1)")
    parser.add_argument("--child-tui", metavar="DB", help=argparse.SUPPRESS)
    parser.add_argument("--tokenizers", default=",".join(TOKENIZERS),
                        help="the tokenizers prune is measured with (default: %(default)s)")
    parser.add_argument("--no-real", action="store_true", help="measure prune on the demo brains only")
    parser.add_argument("--real-db", action="append", default=[], metavar="SIZE=PATH",
                        help="use an existing real-layout brain for a size, e.g. 100000=/work/bench/real-100k/.cleo/"
                             "cleo.db")
    parser.add_argument("--prune-only", action="store_true", help="measure prune only (no tags, folds, commit, TUI)")
    args = parser.parse_args(argv)
    if args.child_tui:
        _child_tui(Path(args.child_tui))
        return 0
    _SETTINGS["cache_bytecode"] = not args.compile_each_run
    given = {int(k): Path(v) for k, v in (d.split("=", 1) for d in args.db)}
    given_real = {int(k): Path(v) for k, v in (d.split("=", 1) for d in args.real_db)}
    lines = []
    for size in [int(s) for s in args.sizes.split(",")]:
        if size in given:
            db = given[size]
        else:
            from benchmarks.prune import demo_brain
            Path(args.workdir).mkdir(parents=True, exist_ok=True)
            db = demo_brain(Path(args.workdir), size)
        print(f"  measuring {size:,} …", file=sys.stderr)
        tokenizers = args.tokenizers.split(",")
        r: dict = {"prune": measure_prunes(db, args.runs, tokenizers)}
        if not args.no_real:
            real = given_real.get(size) or real_brain(Path(args.workdir), size)
            r["real_prune"] = measure_prunes(real, args.runs, tokenizers)
        if not args.prune_only:
            r.update(tags=measure_tags(db, args.runs), incremental=measure_incremental(db))
            if size <= args.commit_max:
                r["commit"] = measure_commit(db)
            if not args.no_tui:
                r["tui"] = measure_tui(db)
        lines += report(size, r)
        print("\n".join(lines[-13:]), file=sys.stderr)
    print("\n".join(lines))
    print(f"\nload average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
