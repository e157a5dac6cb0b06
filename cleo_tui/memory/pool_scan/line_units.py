"""The size of each scanned row's pool line (`[id] YYYY-MM-DD HH:MM [relevance] content`):
chars4 units in numpy arrays for the usual rows, or counted by a tokenizer (with its cache).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cleo_tui.memory import mapping
from cleo_tui.memory.pool_scan.findings_cache import decode_lenient
from cleo_tui.memory.pool_scan.reading import ChunkColumns
from cleo_tui.memory.seed_types import render_line
from cleo_tui.memory.token_cache import CountStats, TokenCache, count_line_units
from cleo_tui.memory.tokenizers import Tokenizer, utf16_length

_ASCII_BLANKS = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"  # what str.isspace() accepts in ASCII


RULE_RELEVANCE = [mapping.relevance_of_rule(code, 0.0)[0] if code in range(1, 10) or code >= mapping.RULE_OVERRIDE
                   else "medium" for code in range(mapping.RULE_CODES_END)]


def chunk_units(c: ChunkColumns, tokenizer: Tokenizer, session: str | None, cache: TokenCache | None,
                 stats: CountStats) -> np.ndarray:
    """Line units of a chunk's rows in scope (`[id] YYYY-MM-DD HH:MM [relevance] content`); 0 elsewhere."""
    units = np.zeros(len(c.ids), dtype=np.int64)
    in_scope = range(len(c.ids)) if session is None else [i for i, s in enumerate(c.sessions) if s == session]
    if not in_scope:
        return units
    if not tokenizer.cached and session is None:  # chars4 over every row: in arrays where plain
        values: Any = plain_line_units(c)
        chunk_stats = CountStats(lines=len(values), counted=len(values))
    elif not tokenizer.cached:  # chars4: UTF-16 lengths, no line is built (cheaper here than in SQL)
        values = [line_units(c, i) for i in in_scope]
        chunk_stats = CountStats(lines=len(values), counted=len(values))
    else:
        relevance = [RULE_RELEVANCE[r] for r in np.asarray(c.rules).tolist()]
        lines = [render_line(c.ids[i], mapping.minute_timestamp(c.created[i]), relevance[i],
                             content_of_row(c.titles[i], c.narratives[i])) for i in in_scope]
        values, chunk_stats = count_line_units(lines, tokenizer, None, cache)
    units[np.fromiter(in_scope, dtype=np.int64, count=len(in_scope))] = values
    stats.lines += chunk_stats.lines
    stats.from_cache += chunk_stats.from_cache
    stats.counted += chunk_stats.counted
    stats.cache_used = stats.cache_used or chunk_stats.cache_used
    stats.seconds += chunk_stats.seconds
    return units


def line_units(c: ChunkColumns, i: int) -> int:
    """chars4 units (UTF-16 length) of row i's pool line `[id] YYYY-MM-DD HH:MM [relevance] content`."""
    return (7 + utf16_length(c.ids[i]) + minute_length(c.created[i]) + int(_RELEVANCE_LENGTH[c.rules[i]])
            + content_units(c.titles[i], c.narratives[i]))


_RELEVANCE_LENGTH = np.array([len(r) for r in RULE_RELEVANCE], dtype=np.int64)
_NOT_SPACE = np.ones(256, dtype=bool)
_NOT_SPACE[[ord(ch) for ch in " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"]] = False  # str.isspace() in ASCII


def plain_line_units(c: ChunkColumns) -> np.ndarray:
    """`line_units` of every row of a chunk, in arrays for the usual rows (ASCII id, a date
    of the usual shape, an ASCII narrative that starts with no blank); row by row for the others."""
    count = len(c.ids)
    ids_plain = np.fromiter(map(str.isascii, c.ids), dtype=bool, count=count)
    id_length = np.fromiter(map(len, c.ids), dtype=np.int64, count=count)
    narrative = np.fromiter(map(len, c.narratives), dtype=np.int64, count=count)
    plain = ids_plain & (narrative > 0) & usual_dates(c.created)
    text = np.frombuffer(b"".join(c.narratives), dtype=np.uint8)
    starts = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(narrative)[:-1]])
    filled = np.flatnonzero(narrative > 0)
    if len(filled):  # an ASCII narrative starting with a non-blank is its own content
        plain[filled] &= (np.maximum.reduceat(text, starts[filled]) < 128) & _NOT_SPACE[text[starts[filled]]]
    units = 7 + id_length + 16 + _RELEVANCE_LENGTH[np.array(c.rules, dtype=np.int64)] + narrative
    for i in np.flatnonzero(~plain).tolist():
        units[i] = line_units(c, i)
    return units


def usual_dates(created: list[str]) -> np.ndarray:
    """bool per date: `minute_length` is 16 (ASCII, YYYY-MM-DD?HH:MM…, no leading blank)."""
    count = len(created)
    length = np.fromiter(map(len, created), dtype=np.int64, count=count)
    joined = "".join(created)
    if not joined.isascii():  # (character offsets are not byte offsets): row by row
        return np.zeros(count, dtype=bool)
    text = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
    starts = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(length)[:-1]])
    usual = length >= 16
    at = starts[usual]
    usual[usual] = (text[at + 4] == ord("-")) & ((text[at + 10] == ord(" ")) | (text[at + 10] == ord("T"))) \
        & _NOT_SPACE[text[at]]
    return usual




def content_of_row(title: bytes, narrative: bytes) -> str:
    """A row's content as a pool line shows it: the narrative, or the title when it is blank."""
    narrative_text = decode_lenient(narrative)
    return narrative_text if narrative_text.strip() else decode_lenient(title)


def minute_length(created: str) -> int:
    """len(mapping.minute_timestamp(created)), without building it for the usual shape."""
    if len(created) >= 16 and created[4] == "-" and created[10] in " T" and not created[0].isspace():
        return 16
    return len(mapping.minute_timestamp(created))


def content_units(title: bytes, narrative: bytes) -> int:
    """UTF-16 length of the seed's content (narrative, or title when it is blank)."""
    if narrative.isascii() and narrative.strip(_ASCII_BLANKS):
        return len(narrative)
    return utf16_length(content_of_row(title, narrative))


