"""Scanning a brain's observations into columns: what tags and the pruner both read.

A million observations as a million Python objects cost about a gigabyte and
seconds to build, so a scan keeps numbers in numpy arrays and only the ids,
dates and sessions as Python lists. Each row's relevance is computed in SQL
(`mapping.relevance_rule_sql`), and its detector findings (identifiers, text
reasons) come from a per-brain cache file in the platform cache directory, keyed
by rowid and a hash of the row's title and narrative: reopening a brain analyses
only rows that are new or edited. A scan can be brought up to date with the rows
that arrived since (`scan_rows_since`, `BrainScan.updated`) without reading the
others again.

One job per module:
- `model`: the scan (`BrainScan`) and folding a delta into it;
- `containers`: the index and sequence types that let a fold share a million rows'
  columns instead of copying them (`HashIndex`, `OverlaidMapping`, `AppendedList`, …);
- `reading`: the scan's SQL and fetching it a chunk at a time;
- `findings_table`: the findings of the scanned rows in flat arrays (`FindingsTable`), with
  the identifier counts and entry protection worked out on them;
- `findings_cache`: the per-brain file of detector findings by row;
- `citations`: reflection edges, citations and the reflections' identifiers;
- `line_units`: each row's pool-line size (chars4 in arrays, or a tokenizer);
- `scan_pass`: one reading of the rows into a scan (`scan_brain`, `scan_rows_since`);
- `in_subprocess`: a large brain's first scan in a child process (the app's keys stay free),
  which tells how far it got; `detector_workers`: that scan's detectors on the other cores;
- `check_in_subprocess`: a reopened large brain's rows checked against its snapshot in a child.
"""

from __future__ import annotations

from cleo_tui.memory.pool_scan.citations import EdgeSet, live_reflection_texts
from cleo_tui.memory.pool_scan.containers import HashIndex, positions_of
from cleo_tui.memory.pool_scan.model import BrainScan
from cleo_tui.memory.pool_scan.reading import SCAN_CHUNK, row_key_sql
from cleo_tui.memory.pool_scan.scan_pass import scan_brain, scan_rows_since

__all__ = ["SCAN_CHUNK", "BrainScan", "EdgeSet", "HashIndex", "live_reflection_texts", "positions_of",
           "row_key_sql", "scan_brain", "scan_rows_since"]
