"""Secrets benchmark: a scan of every text column at 100,000 observations, beside a floor; a redaction
of 100 planted secrets and how long it held CLEO's writes.

    python -m benchmarks.secrets [--sizes 100000] [--bench /work/bench]

The demo brain of each size (`benchmarks.dedup.demo_brain`) is copied and 100 secrets of every kind
are planted in the copy's observations. Figures:
- `scan`: `scan_brain` (every text column of every brain, cleo-tui and trace table), CPU seconds;
- `floor`: the plainest code doing the same reading and matching: the same columns read with
  sqlite3 and one regular-expression search (the key prefixes alone) per value;
- `redact`: `redact` of the findings: the longest short step (rows and full-text merges, CLEO
  interleaves between them) and the VACUUM (one wait CLEO is told about up front, with its estimate).
"""

from __future__ import annotations

import argparse
import re
import sqlite3
import tempfile
import time
from pathlib import Path

from benchmarks.dedup import demo_brain

SAMPLES = ("AKIAQ3EGRQWKXN7VTS{:02d}", "ghp_R7kd93JfL2mQp8XzT4vNc6BwY1sHe5GaU0{:02d}",
           "sk-ant-api03-Qm8vT2kL9pXz4Rf7Wn3Bc6Yh1Jd5Gs0U-aE8iO2u{:02d}", "DB_PASSWORD=Tr0ub4dor-horse{:02d}")
_FLOOR = re.compile(r"AKIA|ASIA|gh[pousr]_|glpat-|xox[abposr]-|sk_live|sk-|AIza|eyJ|-----BEGIN|password|"
                    r"authorization|://")


def planted_copy(source: Path, workdir: Path, count: int = 100) -> Path:
    target = workdir / ".cleo" / "cleo.db"
    target.parent.mkdir(parents=True)
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    dst = sqlite3.connect(str(target))
    src.backup(dst)
    src.close()
    ids = [r[0] for r in dst.execute("SELECT id FROM brain_observations ORDER BY rowid LIMIT ?", (count,))]
    for n, obs_id in enumerate(ids):
        secret = SAMPLES[n % len(SAMPLES)].format(n)
        dst.execute("UPDATE brain_observations SET narrative = narrative || ' ' || ? WHERE id = ?", (secret, obs_id))
    dst.commit()
    dst.close()
    return target


def floor(db: Path, tables: dict[str, list[str]]) -> tuple[float, int]:
    started = time.process_time()
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.text_factory = lambda b: b.decode("utf-8", "replace")
    hits = 0
    for table, columns in tables.items():
        cols = ", ".join(f'"{c}"' for c in columns)
        for row in conn.execute(f'SELECT {cols} FROM "{table}"'):
            hits += sum(1 for value in row if isinstance(value, str) and _FLOOR.search(value))
    conn.close()
    return time.process_time() - started, hits


def run_size(bench: Path, size: int) -> None:
    from cleo_tui.brain import open_brain
    from cleo_tui.memory.redaction import redact, vacuum_estimate
    from cleo_tui.memory.secrets import scan_brain, table_shape

    with tempfile.TemporaryDirectory() as tmp:
        db = planted_copy(demo_brain(bench, size), Path(tmp))
        brain = open_brain(db, read_only=True)
        try:
            started = time.process_time()
            scan = scan_brain(brain)
            scan_cpu = time.process_time() - started
            shapes = {t: table_shape(brain, t)[1] for t in scan.tables}
        finally:
            brain.close()
        floor_cpu, _ = floor(db, {t: c for t, c in shapes.items() if c})
        print(f"{size:>9,} observations, {scan.scanned_rows:,} rows scanned: scan {scan_cpu:.2f} s CPU, "
              f"floor {floor_cpu:.2f} s, ratio {scan_cpu / floor_cpu:.1f}x; {len(scan.findings)} findings")
        estimate = vacuum_estimate(db)
        brain = open_brain(db)
        try:
            started = time.perf_counter()
            result = redact(brain, scan.findings)
            wall = time.perf_counter() - started
        finally:
            brain.close()
        print(f"{'':>9} redaction of {result.secrets} secrets in {result.rows} rows: {wall:.2f} s in all; longest "
              f"step holding CLEO's writes {result.longest_chunk_ms:.0f} ms (target <= 250); VACUUM "
              f"{result.vacuum_seconds:.2f} s (estimated up front: {estimate:.1f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--bench", default="/work/bench")
    args = parser.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        run_size(Path(args.bench), size)


if __name__ == "__main__":
    main()
