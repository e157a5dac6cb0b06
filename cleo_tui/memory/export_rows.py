"""Exporting the observations a selection shows: JSON, JSONL or Markdown, each row with its tags.

JSON and JSONL round-trip the rows (every column as stored, plus `tags`: coverage, relevance and
its reason, protection and its reasons). Markdown is for a person: a section per observation with
its date, type, tags and text. Observation text is data: in Markdown it is put in a fenced block
whose fence is longer than any backtick run inside it, and control characters are shown as
visible stand-ins (ESC as ␛), so nothing in it becomes markup or terminal control.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any, Literal

import orjson

from cleo_tui.files import write_export_atomically
from cleo_tui.memory.mapping import as_text, content_of
from cleo_tui.memory.tags import TagTable
from cleo_tui.safe_text import one_line, printable, shown_id

ExportFormat = Literal["json", "jsonl", "md"]
FORMATS: tuple[ExportFormat, ...] = ("json", "jsonl", "md")
_INTERNAL = ("_rowid", "narrative_length")


def _record(row: dict[str, Any], tags: TagTable | None) -> dict[str, Any]:
    out = {k: v.decode("utf-8", "replace") if isinstance(v, bytes) else v for k, v in row.items()}
    for name in _INTERNAL:
        out.pop(name, None)
    fields = tags.fields(str(row.get("id"))) if tags is not None else None
    if fields is not None:
        out["tags"] = fields
    return out


def _fenced(text: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{printable(text, keep_newlines=True)}\n{fence}"


def _markdown(record: dict[str, Any]) -> str:
    tags = record.get("tags") or {}
    heading_id = shown_id(record.get("id"), 80)
    lines = [f"## {heading_id} — {one_line(record.get('title') or '', 100)}".rstrip(" —"),
             "", f"- date: {one_line(record.get('created_at'), 40)}", f"- type: {one_line(record.get('type'), 40)}",
             f"- state: {'evicted ' + one_line(record.get('invalid_at'), 40) if record.get('invalid_at') else 'live'}"]
    if tags:
        lines += [f"- coverage: {tags['coverage']} ({tags['citations']} citations)",
                  f"- relevance: {tags['relevance']} — {one_line(tags['relevance_reason'], 200)}",
                  "- protection: " + ("; ".join(one_line(r, 200) for r in tags["protection_reasons"])
                                      if tags["protected"] else "not known yet (being computed)"
                                      if tags["protected"] is None else "not protected")]
    lines += ["", _fenced(content_of({k: as_text(v) for k, v in record.items()
                                      if k in ("narrative", "title")})), ""]
    return "\n".join(lines)


def write_rows(handle: IO[str], rows: Iterable[dict[str, Any]], fmt: ExportFormat, tags: TagTable | None,
               title: str) -> int:
    """Write `rows` in `fmt` to `handle`; how many."""
    count = 0
    if fmt == "json":
        handle.write("[")
    elif fmt == "md":
        handle.write(f"# Observations: {one_line(title, 200)}\n\n")
    for row in rows:
        record = _record(row, tags)
        if fmt == "md":
            handle.write(_markdown(record) + "\n")
        else:
            data = orjson.dumps(record, default=str).decode()
            handle.write(("," if count and fmt == "json" else "") + ("\n" if fmt == "json" else "") + data
                         + ("\n" if fmt == "jsonl" else ""))
        count += 1
    if fmt == "json":
        handle.write("\n]\n")
    return count


def export_rows(path: Path | str, rows: Iterable[dict[str, Any]], fmt: ExportFormat, tags: TagTable | None,
                title: str, brain_path: Path | str | None = None, force: bool = False) -> int:
    """Write the rows to `path` atomically (never over a brain or any SQLite file); how many."""
    return write_export_atomically(path, lambda handle: write_rows(handle, rows, fmt, tags, title),
                                   brain_path, force)
