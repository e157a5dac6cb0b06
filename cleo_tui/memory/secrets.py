"""Secrets in the brain: well-known key shapes and long random tokens, found in every text column.

Agents observe what they read (environment dumps, `.env` files, curl commands with headers), so
keys end up in observations, patterns, learnings, decisions and CLEO's raw retrieval queries. This
module finds them and describes each finding with a *masked* preview; the secret itself never
leaves this module in a finding (no screen, JSON, log or cache gets it). Only the redaction, which
re-reads the rows, sees the matched text, and only to replace it.

Why our own patterns and not `detect-secrets` (the maintained Python detector): measured here on
2,000 plain observation lines it took 25 s (12 ms a line; a 100,000-row brain would take minutes)
and reported 34,015 "high entropy" findings on commit SHAs, UUIDs and content hashes, which are not
secrets. The shapes below are each anchored on a literal prefix or an assignment, and a text is
searched only for the shapes whose hint it holds; the entropy check runs only on the rare long
tokens that pass a cheap character-class test, and never on hex (hashes, SHAs) or UUIDs.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from cleo_tui.brain.store import Brain
from cleo_tui.memory.mapping import as_text

# Each kind: its pattern, and the named group holding the secret when only part of the match is
# secret (an assignment's value, a connection string's password); else the whole match.
_SHAPES: dict[str, str] = {
    "private-key": r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:.{0,8192}?-----END (?:[A-Z0-9]+ )*"
                   r"PRIVATE KEY(?: BLOCK)?-----|.{0,8192})",
    "aws-access-key": r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
    "aws-secret-key": r"(?i:aws_?secret_?(?:access_?)?key)[\"']?\s*[:=]\s*[\"']?(?P<aws>[A-Za-z0-9/+=]{40})\b",
    "github-token": r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{60,255})\b",
    "gitlab-token": r"\bglpat-[A-Za-z0-9_\-]{20,}",
    "slack-token": r"\bxox[abposre]-[A-Za-z0-9-]{10,}|https://hooks\.slack\.com/services/[A-Za-z0-9/]{20,}",
    "stripe-key": r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b|\bwhsec_[A-Za-z0-9]{24,}\b",
    "anthropic-key": r"\bsk-ant-[a-z]{3,6}\d{2}-[A-Za-z0-9_\-]{20,}",
    "openai-key": r"\bsk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",
    "google-api-key": r"\bAIza[0-9A-Za-z_\-]{35}",
    "jwt": r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
    "authorization-header": r"(?i:authorization\s*:\s*(?:bearer|basic|token|bot)\s+)(?P<auth>[A-Za-z0-9._~+/=\-]{8,})",
    "connection-string": r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://[^\s:/@\"'<>]{1,64}:(?P<dsn>[^\s@/\"'<>]{3,128})@"
                         r"[A-Za-z0-9.\-\[\]]+",
    "password-assignment": r"(?i:(?<![A-Za-z0-9])(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|"
                           r"auth[_-]?token|client[_-]?secret|private[_-]?key)(?![A-Za-z0-9]))[\"']?\s*[:=]\s*(?P<q>[\"']?)"
                           r"(?P<pw>[^\s\"'&;,)}\]]{6,200})(?P=q)",
}
_SECRET_GROUP = {"aws-secret-key": "aws", "authorization-header": "auth", "connection-string": "dsn",
                 "password-assignment": "pw"}
_SCAN = re.compile("|".join(f"(?P<k{i}>{pattern})" for i, pattern in enumerate(_SHAPES.values())), re.DOTALL)
_KINDS = tuple(_SHAPES)
# What each shape's match holds, found in the case-folded text: a text without a shape's hint is
# not searched for that shape (one alternation of all fourteen tried every position of every text,
# 35 s of CPU over the 110 MB of real-layout narratives that pass the check below).
_HINTS: dict[str, str] = {
    "private-key": r"-----begin", "aws-access-key": r"akia|asia|abia|acca", "aws-secret-key": r"secret",
    "github-token": r"gh[pousr]_|github_pat_", "gitlab-token": r"glpat-", "slack-token": r"xox|hooks\.slack",
    "stripe-key": r"sk_|rk_|whsec_", "anthropic-key": r"sk-ant-", "openai-key": r"sk-", "google-api-key": r"aiza",
    "jwt": r"eyj", "authorization-header": r"authorization", "connection-string": r"://",
    "password-assignment": r"passw|pwd|secret|api.?key|private.?key|token",
}
assert tuple(_HINTS) == _KINDS
_KIND_SCANS = tuple(zip((re.compile(pattern, re.DOTALL) for pattern in _SHAPES.values()),
                        (re.compile(hint) for hint in _HINTS.values()), strict=True))
# A row whose case-folded text holds no hint nor a long token is ruled out by these two searches.
_MAYBE_PREFIX = re.compile("|".join(_HINTS.values()))
# Case folding as the shapes' (?i: …) parts match: `re` takes the dotted capital I (U+0130) and the
# dotless i (U+0131) for "i" too, where casefold gives "i" and a combining dot (U+0307), and U+0131
# itself. A fold that finds a hint too often costs a search; one that missed a hint would miss a secret.
_AS_RE_FOLDS = str.maketrans({"\u0131": "i", "\u0307": ""})
_MAYBE_TOKEN = re.compile(r"[A-Za-z0-9+/_\-]{32}")
# A long token that may be random: base64/base64url characters, 32 or more of them.
_TOKEN = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]{32,}={0,2}")
_HEX_LIKE = re.compile(r"[0-9a-fA-F\-]+")
PROGRESS_ROWS = 2_000  # rows between two reports of a brain scan's progress
ENTROPY_BITS = 4.3  # Shannon bits a character; random base64 of 32+ characters sits at 4.5-5.9
HIGH_ENTROPY = "high-entropy-token"
# Values an assignment takes in docs and config templates: not secrets.
_PLACEHOLDERS = re.compile(r"(?i)^(?:\*+|x+|\.+|none|null|nil|true|false|undefined|changeme|password|secret|"
                           r"example|redacted|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|<[^>]*>|\[redacted[^\]]*\]?|"
                           r"%\(?[a-z_]+\)?s?)$")
_PUBLIC_PREFIX = {"aws-access-key": 4, "github-token": 4, "gitlab-token": 6, "slack-token": 5, "stripe-key": 8,
                  "anthropic-key": 7, "openai-key": 3, "google-api-key": 4, "jwt": 3}

# Tables a secret can sit in: CLEO's brain tables and cleo-tui's own (its journal and proposals
# keep copies of text). FTS5's shadow tables hold the index, purged by the redaction, not scanned.
SCANNED_PREFIXES = ("brain_", "cleo_tui_", "recall_trace")
_FTS_SHADOWS = ("_data", "_idx", "_content", "_docsize", "_config")


@dataclass(frozen=True)
class Match:
    """Where a secret sits in one text: the span of the secret itself and its kind."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class Finding:
    """One secret in one column of one row, described without the secret."""

    table: str
    row_id: str
    column: str
    kind: str
    preview: str

    def to_json(self) -> dict[str, str]:
        return {"table": self.table, "row_id": self.row_id, "column": self.column, "kind": self.kind,
                "preview": self.preview}


@dataclass(frozen=True)
class SecretScan:
    """Every finding, and how many rows of how many tables were read."""

    findings: list[Finding]
    scanned_rows: int
    tables: list[str]

    def to_json(self) -> dict[str, object]:
        return {"findings": [f.to_json() for f in self.findings], "scanned_rows": self.scanned_rows,
                "tables": self.tables}


def entropy(token: str) -> float:
    """Shannon entropy of a string, in bits a character."""
    counts = Counter(token)
    total = len(token)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def _looks_random(token: str) -> bool:
    """Long, mixed-class and high-entropy; never hex-only (hashes, SHAs) or UUID-shaped."""
    core = token.rstrip("=")
    if _HEX_LIKE.fullmatch(core):
        return False
    if not (any(c.isupper() for c in core) and any(c.islower() for c in core) and any(c.isdigit() for c in core)):
        return False  # identifiers, paths and words; random keys mix all three
    if core.count("/") > 2 or core.count("_") + core.count("-") > len(core) // 6:
        return False  # a path, or snake/kebab-case words
    return entropy(core) >= ENTROPY_BITS


def _shape_of(value: str) -> str | None:
    """The key shape an assigned value has as a whole, if any."""
    m = _SCAN.fullmatch(value)
    if m is None:
        return None
    kind = _KINDS[int((m.lastgroup or "k0")[1:])]
    return None if kind in _SECRET_GROUP else kind


def _folded(text: str) -> str:
    """`text` case-folded as the shapes match it, to look for their hints in."""
    return text.casefold().translate(_AS_RE_FOLDS)


def _shape_matches(text: str) -> Iterator[tuple[int, re.Match[str]]]:
    """(kind index, match) of each shape in `text`, as `_SCAN.finditer` finds them (leftmost first; at
    one position the kind first in `_SHAPES`; on from the end of each), each kind searched on its own
    and only when the text holds its hint."""
    folded = _folded(text)
    scans = {k: scan for k, (scan, hint) in enumerate(_KIND_SCANS) if hint.search(folded)}
    ahead: dict[int, re.Match[str]] = {}  # each kind's leftmost match from where the scan stands
    position = 0
    while True:
        for k in list(scans):
            m = ahead.get(k)
            if m is None or m.start() < position:
                m = scans[k].search(text, position)
                if m is None:
                    del scans[k]
                    ahead.pop(k, None)
                    continue
                ahead[k] = m
        if not ahead:
            return
        k = min(ahead, key=lambda kind: (ahead[kind].start(), kind))
        m = ahead.pop(k)
        yield k, m
        position = m.end()


def find_secrets(text: str) -> list[Match]:
    """The secrets in one text, in order, without overlaps."""
    out: list[Match] = []
    for index, m in _shape_matches(text):
        kind = _KINDS[index]
        group = _SECRET_GROUP.get(kind)
        start, end = m.span(group) if group else m.span()
        if "[redacted:" in m.group():
            continue  # what an earlier redaction left
        if group:
            value = text[start:end]
            if _PLACEHOLDERS.match(value):
                continue
            kind = _shape_of(value) or kind  # `OPENAI_API_KEY=sk-…` is an OpenAI key, not just a password
        out.append(Match(kind, start, end))
    taken = [(s.start, s.end) for s in out]
    for m in _TOKEN.finditer(text):
        if any(m.start() < end and start < m.end() for start, end in taken):
            continue
        if _looks_random(m.group()):
            out.append(Match(HIGH_ENTROPY, m.start(), m.end()))
    return sorted(out, key=lambda s: s.start)


def mask(kind: str, secret: str) -> str:
    """A preview that names the kind and length and shows at most a public prefix (`ghp_…`)."""
    keep = secret.find("-----", 5) + 5 if kind == "private-key" else _PUBLIC_PREFIX.get(kind, 0)
    shown = secret[:keep] if keep and len(secret) > 2 * keep else ""
    shown = "".join(c if c.isprintable() else "?" for c in shown)
    return f"{shown}…({len(secret)} chars)"


def marker(kind: str) -> str:
    """What a redaction writes in place of a secret."""
    return f"[redacted:{kind}]"


def redact_text(text: str) -> tuple[str, list[Match]]:
    """`text` with every secret replaced by its marker, and what was replaced."""
    matches = find_secrets(text)
    if not matches:
        return text, []
    parts: list[str] = []
    at = 0
    for match in matches:
        parts.append(text[at:match.start])
        parts.append(marker(match.kind))
        at = match.end
    parts.append(text[at:])
    return "".join(parts), matches


def scanned_tables(brain: Brain) -> list[str]:
    """The tables the scan reads, in name order (FTS5 and its shadow tables excluded)."""
    virtual = {str(r[0]) for r in brain.query("SELECT name FROM sqlite_master WHERE type = 'table' "
                                              "AND sql LIKE 'CREATE VIRTUAL TABLE%'")}
    shadows = {v + suffix for v in virtual for suffix in _FTS_SHADOWS}
    return sorted(t for t in brain.features.tables
                  if t.startswith(SCANNED_PREFIXES) and t not in virtual and t not in shadows)


def may_hold_text(declared_type: object) -> bool:
    """A column of this declared type may hold text: TEXT, BLOB or none (SQLite stores anything there)."""
    return not str(declared_type).upper().startswith(("INT", "REAL", "FLOA", "DOUB", "NUM", "BOOL", "DATE"))


def key_columns(info: list[Any], without_rowid: bool) -> tuple[str, ...]:
    """What names a row, from `PRAGMA table_info`: `id` where the table has one, else SQLite's rowid,
    else (a WITHOUT ROWID table) its primary key's columns."""
    names = [str(r[1]) for r in info]
    if "id" in names:
        return ("id",)
    if not without_rowid:
        return ("rowid",)
    return tuple(str(r[1]) for r in sorted((r for r in info if r[5]), key=lambda r: r[5]))


def row_label(values: list[object]) -> str:
    """A row's key as the text findings carry (a composite key as a JSON list)."""
    return as_text(values[0]) if len(values) == 1 else json.dumps([as_text(v) for v in values])


def row_key_values(label: str, key: tuple[str, ...]) -> list[object]:
    """The values `row_label` made `label` from."""
    if key == ("rowid",):
        return [int(label)]
    return [label] if len(key) == 1 else list(json.loads(label))


def table_shape(brain: Brain, table: str) -> tuple[tuple[str, ...], list[str]]:
    """(the columns naming a row, the columns that may hold text) of `table`."""
    info = brain.query(f'PRAGMA table_info("{table}")')
    sql = as_text(brain.scalar("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)))
    return key_columns(info, "WITHOUT ROWID" in sql.upper()), [str(r[1]) for r in info if may_hold_text(r[2])]


def iter_rows(brain: Brain, table: str, key: tuple[str, ...], columns: list[str],
              page: int = 2000) -> Iterator[tuple[str, list[object]]]:
    """(row label, values of `columns`) for every row, read in key order a page at a time, so CLEO's
    writes interleave between pages."""
    keys = ", ".join(f'"{k}"' for k in key)
    cols = ", ".join(f'"{c}"' for c in columns)
    after: list[object] | None = None
    while True:
        where = "" if after is None else f"WHERE ({keys}) > ({', '.join('?' for _ in key)})"
        rows = brain.query(f'SELECT {keys}, {cols} FROM "{table}" {where} ORDER BY {keys} LIMIT ?',
                           [*(after or []), page])
        for row in rows:
            yield row_label(list(row[:len(key)])), list(row[len(key):])
        if len(rows) < page:
            return
        after = list(rows[-1][:len(key)])


def scan_values(table: str, row_id: str, columns: Iterable[str], values: Iterable[object]) -> list[Finding]:
    """The findings in one row's values (text and blobs decoded leniently)."""
    found: list[Finding] = []
    texts = [(c, v if isinstance(v, str) else as_text(v)) for c, v in zip(columns, values, strict=True)
             if v is not None and not isinstance(v, int | float)]
    joined = "\n".join(t for _c, t in texts)
    if not _MAYBE_PREFIX.search(_folded(joined)) and not _MAYBE_TOKEN.search(joined):
        return found
    for column, text in texts:
        for match in find_secrets(text):
            found.append(Finding(table, row_id, column, match.kind, mask(match.kind, text[match.start:match.end])))
    return found


def scan_brain(brain: Brain, progress: Callable[[int, int], None] | None = None) -> SecretScan:
    """Every finding in every text column of the brain's tables and CLEO's retrieval log;
    `progress(rows read, rows in all)` is told every `PROGRESS_ROWS` rows (a large brain takes a while)."""
    findings: list[Finding] = []
    rows = 0
    tables = scanned_tables(brain)
    shapes = [(table, *table_shape(brain, table)) for table in tables]
    shapes = [(table, key, columns) for table, key, columns in shapes if columns and key]
    total = sum(int(brain.scalar(f'SELECT count(*) FROM "{table}"') or 0) for table, _k, _c in shapes) \
        if progress else 0
    for table, key, columns in shapes:
        for row_id, values in iter_rows(brain, table, key, columns):
            rows += 1
            findings.extend(scan_values(table, row_id, columns, values))
            if progress and rows % PROGRESS_ROWS == 0:
                progress(rows, max(total, rows))
    return SecretScan(findings, rows, tables)
