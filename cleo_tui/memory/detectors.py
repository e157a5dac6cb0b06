"""Protection detectors: what in an observation's text makes it too valuable to prune.

The pruner's home project names the kinds (user assertions, completions,
errors, unique identifiers) but not its detectors; these are cleo-tui's own.
Each detector is a regular expression compiled once; `rules.RULES_MARKDOWN`
shows them to the user, so a protection is never a mystery.
"""

from __future__ import annotations

import hashlib
import re
import threading
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import cast

import numpy as np

from cleo_tui.memory.distinct import distinct_values
from cleo_tui.memory.token_cache import TokenCache, line_key
from cleo_tui.safe_text import one_line

# (name, what it looks for, examples, pattern). The name starts each reason.
TEXT_DETECTORS: tuple[tuple[str, str, str, str], ...] = (
    ("user assertion",
     "the user or owner stating, asking, preferring, correcting or deciding something, "
     "or a line that starts with `User:`",
     "`user prefers tabs`, `the owner said never to force-push`, `User: call me Sam`",
     r"(?i:\b(?:user|owner)(?:'s)?\s+(?:said|says|stated|states|asserted|insists?|wants?|"
     r"prefers?|preference|asked|requires?|required|corrected|confirmed|decided|likes|dislikes|"
     r"explicitly|always|never)\b|^\s*(?:user|owner)\s*:)"),
    ("completion",
     "a concrete completion that must not be redone: CLEO's `Task complete:` titles, or "
     "completed, finished, shipped, merged, released or deployed",
     "`Task complete: T123`, `merged PR #42`, `deployed v2.1 to production`",
     r"(?i:\btask\s+(?:complete|completed|done)\b|\b(?:completed|finished|shipped|merged|"
     r"released|deployed)\b)"),
    ("error",
     "an error message: an exception or error class name, a traceback, `error:` / `fatal:` / "
     "`panic:`, an errno, a non-zero exit status",
     "`TypeError: x is undefined`, `Traceback (most recent call last)`, `exit code 2`",
     r"\b[A-Z]\w*(?:Error|Exception)\b|\bTraceback\b|(?i:\b(?:error|fatal|panic)\s*:|"
     r"\bexit(?:ed)?\s+(?:with\s+)?(?:code|status)\s+[1-9]\d*|\berrno\s*\d+|\bsegmentation fault\b)"),
)

_FILE_EXTENSIONS = ("py|pyi|ts|tsx|js|jsx|mjs|cjs|rs|go|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|"
                    "md|rst|txt|json|jsonl|toml|yaml|yml|ini|cfg|sql|db|sh|bash|zsh|css|scss|html|"
                    "vue|svelte|lock|xml|csv|proto|graphql|tf|env")

# (kind, examples, pattern). Order matters: the first alternative that matches wins.
IDENTIFIER_KINDS: tuple[tuple[str, str, str], ...] = (
    ("file path", "`src/auth/token.py`, `./scripts/run.sh`, `/etc/hosts`, `docs/api/v2`, `package.json` "
                  "(not `and/or`, `12/03/2026` or markup such as `[/link]`: one slash needs an extension, "
                  "two need a letter, a leading slash needs a second part or an extension)",
     r"(?<![\w@./\[-])(?:\.{1,2}/(?:[\w@.-]+/)*[\w.-]*\w"
     r"|/(?:[\w@.-]+/)+[\w.-]*\w|/[\w-]*\.[A-Za-z0-9]{1,8}\b"
     r"|(?=[\w@./-]*[A-Za-z])(?:[\w@.-]+/){2,}[\w.-]*\w"
     r"|(?:[\w@.-]+/)+[\w-]*\.[A-Za-z0-9]{1,8}\b)"
     r"|\b[\w-]+\.(?:" + _FILE_EXTENSIONS + r")\b"),
    ("task id", "`T123`, `T4521`", r"\bT\d+\b"),
    ("ticket or issue", "`cleo#42`, `owner/repo#7`, `issue #42`, `PR #9`, `GH-17`, `PROJ-1234` "
                        "(a bare `#2` is not: a repo or a word such as issue, PR, bug or fixes goes before it)",
     r"(?<![\w&#/.-])[A-Za-z][\w.-]*(?:/[\w.-]+)?#\d+\b"
     r"|(?i:\b(?:issues?|prs?|pull(?:[ \t]+request)?|mr|bugs?|tickets?|fix(?:es|ed)?|close[sd]?|"
     r"resolve[sd]?)[ \t]+#\d+\b)"
     r"|\b[A-Z][A-Z0-9]+-\d+\b"),
    ("commit SHA", "`3f9a1c2`, a full 40-hex SHA (7–40 hex digits, with a letter and a digit)",
     r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b"),
    ("error code", "`ENOENT`, `ECONNREFUSED`, `TS2345`, `E0425`",
     r"\bE(?:NO|ACCES|PERM|EXIST|CONN|ADDR|TIMEDOUT|PIPE|ISDIR|NOTDIR|INVAL|AGAIN|BUSY|MFILE)[A-Z]*\b"
     r"|\b[A-Z]{1,4}\d{3,5}\b"),
    ("dotted name", "`cleo_tui.memory.pruner`, `os.path.join` (parts of two or more characters)",
     r"\b[A-Za-z_]\w+(?:\.[A-Za-z_]\w+)+\b"),
    ("function name", "`refresh_token()`, `parseConfig()`", r"\b[A-Za-z_]\w*\(\)"),
    ("snake or camel name", "`parse_config`, `MAX_BUDGET`, `parseConfig` (not `iPhone` or `macOS`)",
     r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b|\b[a-z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b"),
)

_TEXT_PATTERNS = {name: re.compile(pattern, re.MULTILINE) for name, _, _, pattern in TEXT_DETECTORS}
_IDENTIFIER = re.compile("|".join(f"(?:{pattern})" for _, _, pattern in IDENTIFIER_KINDS))
MAX_LISTED_IDENTIFIERS = 3

# Speed. Running the patterns above over every text of a 100,000-row brain takes
# seconds: they can match almost anywhere, so the regex engine tries each
# position. Instead, all texts are joined into one corpus (newline-separated:
# no pattern crosses a line between texts) and scanned with *hint* patterns
# that start with a literal or a character set, which the engine skips to at C
# speed. The full patterns then run only where a hint was found. Every match of
# a full pattern contains a hint, so the result is the same as searching each
# text with the full patterns (a test checks that).

# Words (any case) without which a text detector cannot match: a match holds one of its detector's.
# (The longest that hold: a longer word is found quicker, `completed` than `complete`.)
_TEXT_HINTS = {
    "user": "user assertion", "owner": "user assertion",
    "task": "completion", "completed": "completion", "finished": "completion", "shipped": "completion",
    "merged": "completion", "released": "completion", "deployed": "completion",
    "error": "error", "exception": "error", "traceback": "error", "fatal": "error", "panic": "error",
    "exit": "error", "errno": "error", "segmentation fault": "error",
}
# A text detector's match starts at a hint word, or before it by word characters (`[A-Z]\w*Error`),
# or by white space after a line start (`^\s*user:`): its search may start where such a stretch
# before the first hint starts (the text reversed from there, `\w*\s*` matched).
_BEFORE_HINT = re.compile(r"\w*\s*")
# Every identifier holds one of these: '/' ; '#' and a digit ; '()' ; '.' before a word
# character ; an upper-case letter run reaching a digit ; 7+ hex digits ; an E-errno name ;
# '_' before a letter or digit ; a lower-case letter or digit before an upper-case one.
# An issue number may take the word before it (`issue #4`): for the '#' hint the token
# before, on the same line, is searched too.
# A run of 7+ hex digits holding a digit is found from a digit with hex around it.
# (The window starting at the digit is tried first: most digits are in short numbers, and it
# fails soonest.)
_HEX_RUN = "|".join(("(?=[0-9a-f]{6})", *(f"(?<=[0-9a-f]{{{k}}})(?=[0-9a-f]{{{7 - k}}})" for k in range(2, 7)),
                     "(?<=[0-9a-f]{7})"))
_IDENTIFIER_HINTS = tuple(re.compile(p + r"\S*") for p in (
    r"/", r"#\d", r"\(\)", r"\.\w", r"[A-Z][A-Z0-9-]*\d", rf"\d(?:{_HEX_RUN})", r"_[A-Za-z0-9]",
    r"[A-Z](?<=[a-z0-9][A-Z])",
    r"E(?:NO|ACCES|PERM|EXIST|CONN|ADDR|TIMEDOUT|PIPE|ISDIR|NOTDIR|INVAL|AGAIN|BUSY|MFILE)"))
_NUMBER_HINT = _IDENTIFIER_HINTS[1]
# The regex engine skips at C speed to a literal first character, not to a class such as
# [A-Z] or \d. So the hints that start with one run over a copy of the text with every ASCII
# digit made '0' and every ASCII capital 'A' (same length, same positions), where they
# start with a literal: the same matches, several times quicker. (Only when the text has no
# other decimal digit, which \d would also match.)
_FOLDED_HINTS = {4: re.compile(r"A[A0-]*0\S*"), 5: re.compile(rf"0(?:{_HEX_RUN})\S*"),
                 7: re.compile(r"A(?<=[a-z0]A)\S*")}
_TOKEN_REST = re.compile(r"\S*")
_BLANKS = re.compile(r"[ \t]*")


class _Corpus:
    """Texts joined by newlines, with each text's start offset for mapping a position back."""

    def __init__(self, texts: Sequence[str], joined: str | None = None) -> None:
        self.text = "\n".join(texts) if joined is None else joined
        # Each text starts one past the end of the one before (the newline); the lengths are summed by numpy.
        ends = np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)) + 1)
        self.starts: list[int] = [0, *ends[:-1].tolist()] if len(texts) else []
        self._reversed = ""

    @classmethod
    def lowered(cls, texts: Sequence[str]) -> _Corpus:
        """The texts lower-cased, joined. The whole corpus is lower-cased at once when no text changes
        length (as is the rule: only 'İ' lower-cases to two characters, and none to fewer), else text by
        text. (The newlines between texts are neither cased nor case-ignorable, so the final-sigma rule
        sees each text's ends as a text alone does.)"""
        joined = "\n".join(texts)
        lowered = joined.lower()
        if len(lowered) != len(joined):
            return cls([t.lower() for t in texts])
        corpus = cls(texts, joined)
        corpus.text = lowered
        return corpus

    def text_at(self, index: int) -> str:
        """The text at `index`, as stored in the corpus."""
        end = self.starts[index + 1] - 1 if index + 1 < len(self.starts) else len(self.text)
        return self.text[self.starts[index]:end]

    def index_of(self, position: int) -> int:
        return bisect_right(self.starts, position) - 1

    def previous_token_start(self, start: int) -> int:
        """Where the token before the one starting at `start` starts, if on the same line (else `start`)."""
        text = self.text
        self._reversed = self._reversed or text[::-1]
        blanks = _BLANKS.match(self._reversed, len(text) - start)  # [ \t]* always matches
        blank_start = len(text) - (blanks.end() if blanks else len(text) - start)
        if blank_start == start or blank_start == 0 or text[blank_start - 1].isspace():
            return start
        return self.token_start(blank_start - 1)

    def token_start(self, position: int) -> int:
        """Where the whitespace-delimited token holding `position` starts."""
        text = self.text
        self._reversed = self._reversed or text[::-1]
        rest = _TOKEN_REST.match(self._reversed, len(text) - position)
        assert rest is not None  # the pattern matches the empty string too
        return len(text) - rest.end()


# Identifiers of each distinct token searched (tokens repeat a lot, across texts and across
# calls: the tagger analyses a pool a few thousand texts at a time). Bounded; a plain dict,
# whose get and set are safe from several threads.
_TOKEN_MEMO_LIMIT = 100_000  # about 15 MB at most
_token_memo: dict[str, tuple[str, ...]] = {}


def _token_identifiers(token: str) -> tuple[str, ...]:
    """The identifiers in one token (or a token and the one before it), remembered."""
    found = tuple(_IDENTIFIER.findall(token))
    if len(_token_memo) < _TOKEN_MEMO_LIMIT:
        _token_memo[token] = found
    return found


def identifiers_of(texts: Sequence[str]) -> list[set[str]]:
    """For each text, every identifier in it (paths, task ids, SHAs, issue numbers, codes, names)."""
    corpus = _Corpus(texts)
    found: list[set[str]] = [set() for _ in texts]
    text = corpus.text
    starts, ends, number = _hinted_tokens(text)
    for k in np.flatnonzero(number).tolist():  # an issue number may take the token before it
        starts[k] = corpus.previous_token_start(int(starts[k]))
    owners = np.searchsorted(np.asarray(corpus.starts, dtype=np.int64), starts, side="right") - 1
    memo = _token_memo
    for start, end, owner in zip(starts.tolist(), ends.tolist(), owners.tolist(), strict=True):
        token = text[start:end]
        identifiers = memo.get(token)
        if identifiers is None:
            identifiers = _token_identifiers(token)
        if identifiers:
            found[owner].update(identifiers)
    return found


def _hinted_tokens(text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, found by the issue-number hint) of each whitespace-delimited token of `text`
    holding a hint, in order of their ends.

    Every hint match runs to the end of its token, so a token is known by its end; when the
    issue-number hint is among the hints that find it, the token before it is searched too.
    Positions are gathered a hint at a time and worked out with numpy.
    """
    if text.isascii():  # the usual case: bytes, and a byte table folds them (no decimal digit beyond ASCII)
        raw = text.encode("ascii")
        codes: np.ndarray = np.frombuffer(raw, dtype=np.uint8)
        folded: str | None = raw.translate(_ASCII_FOLD).decode("ascii")
    else:
        codes = _codes(text)
        folded = _folded(codes)
    passes = ([(hint, text) for hint in _IDENTIFIER_SPLITTERS] if folded is None else
              [(_FOLDED_TOGETHER, folded), *((_IDENTIFIER_SPLITTERS[n], text) for n in _NOT_FOLDED)])
    spans, ranks = [], []
    for number, (hint, searched) in enumerate(passes):  # (the '#' hint is the second pass either way)
        found = _match_spans(hint, searched)
        spans.append(found)
        ranks.append(np.full(len(found), number, dtype=np.int8))
    span, rank = np.concatenate(spans), np.concatenate(ranks)
    order = np.lexsort((rank, span[:, 1]))  # by end, then by pass
    span, rank = span[order], rank[order]
    first = np.ones(len(span), dtype=bool)
    first[1:] = span[1:, 1] != span[:-1, 1]
    # The token before is searched too when the '#' hint is among its hints, first or not
    # (`issue #12/x`: the '/' hint ends the token as well).
    by_number = np.zeros(int(first.sum()), dtype=bool)
    by_number[(np.cumsum(first) - 1)[rank == _NUMBER_RANK]] = True
    span = span[first]
    return _token_starts(codes, span[:, 0]), span[:, 1].copy(), by_number


def _splitter(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """The pattern as one capturing group, for `_match_spans` (the hints capture nothing themselves)."""
    assert pattern.groups == 0
    return re.compile(f"({pattern.pattern})", pattern.flags)


_IDENTIFIER_SPLITTERS = tuple(map(_splitter, _IDENTIFIER_HINTS))
# Over the folded copy, the hints but two are one pattern, each an alternative: one pass over the
# text instead of seven (at 100,000 demo rows, 0.53 → 0.40 s of CPU). A match still runs to the end
# of its token, so each token holding a hint is still found, by the first one in it. The two others
# run over the text itself: the '#' hint's own pass says which tokens take the one before them, and
# folded, the errno names' 'E' would be every capital.
_NOT_FOLDED = (1, 8)  # '#' and a digit; the errno names (`test_tags` checks the numbers)
_FOLDED_TOGETHER = _splitter(re.compile("(?:" + "|".join(
    (_FOLDED_HINTS.get(n) or hint).pattern.removesuffix(r"\S*") for n, hint in enumerate(_IDENTIFIER_HINTS)
    if n not in _NOT_FOLDED) + r")\S*"))


def _match_spans(splitter: re.Pattern[str], text: str) -> np.ndarray:
    """(start, end) of each match of a `_splitter` pattern in `text`, as an n × 2 int64 array.

    `split` alternates the text between matches and the matches; their lengths, summed, are
    the positions (no Match object per match: there are 100,000s). No hint matches the empty
    string, so the parts are exactly that."""
    parts = splitter.split(text)
    ends = np.cumsum(np.fromiter(map(len, parts), dtype=np.int64, count=len(parts)))
    return np.asarray(ends[:-1].reshape(-1, 2))  # each pair: (end of the text before, end of the match)


def _codes(text: str) -> np.ndarray:
    """The code points of `text` (uint32; a lone surrogate as itself)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _folded(codes: np.ndarray) -> str | None:
    """The text of `codes` with ASCII digits made '0' and ASCII capitals 'A' (see `_FOLDED_HINTS`), or None
    when it holds a decimal digit outside ASCII."""
    if any(chr(c).isdecimal() for c in distinct_values(codes[codes > 127]).tolist()):
        return None
    folded = codes.copy()
    folded[(codes >= 48) & (codes <= 57)] = 48
    folded[(codes >= 65) & (codes <= 90)] = 65
    return folded.tobytes().decode("utf-32-le", "surrogatepass")


_ASCII_FOLD = bytes(48 if 48 <= c <= 57 else 65 if 65 <= c <= 90 else c for c in range(256))  # `_folded` of ASCII


def _token_starts(codes: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Where the whitespace-delimited token holding each position starts (positions on non-space),
    from the text's code points (or its bytes, when it is ASCII)."""
    space = _SPACE_TABLE[codes if codes.dtype == np.uint8 else np.minimum(codes, len(_SPACE_TABLE) - 1)]
    blanks = np.concatenate(([-1], np.flatnonzero(space)))  # -1: as if white space stood before the text
    return blanks[np.searchsorted(blanks, positions) - 1] + 1  # after the last white space before each


def _space_table() -> np.ndarray:
    """bool by code point: str.isspace() (which regex `\\s` follows). Unicode's last white space
    character is U+3000; the table's last entry stands for every larger code point."""
    return np.array([chr(c).isspace() for c in range(0x3002)], dtype=bool)


_SPACE_TABLE = _space_table()
_NUMBER_RANK = _IDENTIFIER_HINTS.index(_NUMBER_HINT)


def identifiers_in(text: str) -> set[str]:
    """Every identifier in one text."""
    return identifiers_of([text])[0]


def _quote(snippet: str) -> str:
    return '"' + one_line(snippet, 60) + '"'


def text_reasons_of(texts: Sequence[str]) -> list[list[str]]:
    """For each text, the text detectors' reasons, each naming what matched (`error: "TypeError"`)."""
    corpus = _Corpus.lowered(texts)
    first_hint = _first_hints(corpus)
    reasons: list[list[str]] = [[] for _ in texts]
    for (index, name), offset in sorted(first_hint.items(), key=lambda c: (c[0][0], _DETECTOR_ORDER[c[0][1]])):
        text = texts[index]
        # Every match holds a hint at or after the first, and starts before it only by word
        # characters, then white space (see `_BEFORE_HINT`): the search starts there, not at the
        # text's start (at 100,000 demo rows 0.28 → 0.16 s of CPU; from 0 when lower-casing moved
        # the offsets). A hint is a letter, and a stretch before a later hint reaching back past
        # the first one also holds the first one's.
        start = 0
        if offset and len(corpus.text_at(index)) == len(text):
            before = _BEFORE_HINT.match(text[offset - 1::-1])
            start = offset - (before.end() if before else 0)
        found = _TEXT_PATTERNS[name].search(text, start)
        if found:
            reasons[index].append(f"{name}: {_quote(found.group())}")
    return reasons


def _first_hints(corpus: _Corpus) -> dict[tuple[int, str], int]:
    """(text index, detector) → the offset in the text of the detector's first hint word.

    Each hint word is looked for on its own with `str.find` (a fast substring search; one
    regular expression of all the words would try each position of the corpus in turn), and
    after a word is found in a text the search goes on from the next text. Words are found
    where they overlap too (`ownerror`), so no hint is hidden behind another."""
    text, starts = corpus.text, corpus.starts
    ends = [*starts[1:], len(text)]
    first: dict[tuple[int, str], int] = {}
    for word, name in _TEXT_HINTS.items():
        find = text.find
        at = find(word)
        while at >= 0:
            index = corpus.index_of(at)
            offset = at - starts[index]
            key = (index, name)
            if offset < first.get(key, offset + 1):
                first[key] = offset
            at = find(word, ends[index])
    return first


_DETECTOR_ORDER = {name: rank for rank, (name, _, _, _) in enumerate(TEXT_DETECTORS)}


def text_reasons(text: str) -> list[str]:
    """The text detectors' reasons for one text."""
    return text_reasons_of([text])[0]


# What a text holds does not change between calls: the TUI tags the whole brain
# again after every curation step, so each text's findings are remembered (keyed
# by the text's hash and length) for the life of the process, up to a bound, and
# in the cache database across processes (keyed by the text's BLAKE2b and a hash
# of the detectors, so a change of rules is never served stale findings).
_MEMO_LIMIT = 400_000
_CHUNK = 4_000
_CHUNK_CHARACTERS = 500_000
_memo: dict[tuple[int, int], tuple[tuple[str, ...], tuple[str, ...]]] = {}
_memo_lock = threading.Lock()
_FINDINGS_FORMAT = "4"  # 3: an issue number found behind another hint of its token; 4: a text detector
# match however far before its hint (it was missed 300 characters before)
RULES_KEY = hashlib.sha256(repr((_FINDINGS_FORMAT, TEXT_DETECTORS, IDENTIFIER_KINDS)).encode()).hexdigest()[:16]
Findings = tuple[tuple[str, ...], tuple[str, ...]]  # (identifiers, text reasons)


def _encode(findings: Findings) -> str:
    # Identifiers and reasons never hold control characters (reasons pass one_line).
    return "\x1f".join(findings[0]) + "\x1e" + "\x1f".join(findings[1])


def _decode(encoded: str) -> Findings:
    ids, _, reasons = encoded.partition("\x1e")
    return tuple(ids.split("\x1f")) if ids else (), tuple(reasons.split("\x1f")) if reasons else ()


def _from_cache(texts: Sequence[str], missing: list[int], known: list[Findings | None], cache: TokenCache) -> list[int]:
    """Fill `known` from the cache database; returns the indexes still missing."""
    store = _store_findings.get()
    # (No findings of these rules cached, as on a first run: no text is hashed and looked up in vain.)
    held = cache.holds_findings(RULES_KEY)
    keys = {i: line_key(texts[i]) for i in missing} if held or store else {}
    if held:
        stored = cache.lookup_findings(RULES_KEY, list(keys.values()))
        for i, key in keys.items():
            if key in stored:
                known[i] = _decode(stored[key])
    still = [i for i in missing if known[i] is None]
    for chunk in _batches(still, texts):
        # In batches: a corpus of 100,000 texts holding one emoji is stored at four
        # bytes a character, and it is copied (reversed, lower-cased, folded) a few times.
        subset = [texts[i] for i in chunk]
        for i, ids, reasons in zip(chunk, identifiers_of(subset), text_reasons_of(subset), strict=True):
            known[i] = (tuple(sorted(ids)), tuple(reasons))
    if store:
        # In key order: SQLite then appends to its index pages rather than splitting them at random.
        cache.store_findings(RULES_KEY, sorted((keys[i], _encode(cast(Findings, known[i]))) for i in still))
    return still


def _batches(indexes: list[int], texts: Sequence[str]) -> Iterator[list[int]]:
    """`indexes` in runs of at most `_CHUNK` texts and about `_CHUNK_CHARACTERS` characters (at least one
    text each). Long texts (1,400 characters on average in a real brain, some of 200 kB) in batches of
    4,000 made a corpus's copies cost 190 MB at the peak; of half a million characters, 100 MB (40,000 rows).

    Each run is the longest that fits, found by a binary search in the lengths' running sums
    (not text by text in Python)."""
    ends = np.cumsum(np.fromiter(map(len, map(texts.__getitem__, indexes)), dtype=np.int64, count=len(indexes)))
    start = 0
    while start < len(indexes):
        before = int(ends[start - 1]) if start else 0
        fits = int(np.searchsorted(ends, before + _CHUNK_CHARACTERS, side="right"))
        stop = max(start + 1, min(start + _CHUNK, fits))
        yield indexes[start:stop]
        start = stop


_store_findings: ContextVar[bool] = ContextVar("store_findings", default=True)


@contextmanager
def findings_not_stored() -> Iterator[None]:
    """Within this block (in this thread), new findings are not added to the cache database.

    For a scan whose findings are kept anyway in the per-brain findings file (`pool_scan`),
    where a later scan of the brain reads them: storing 100,000 texts' findings a second
    time costs about a second. The cache database is still read."""
    token = _store_findings.set(False)
    try:
        yield
    finally:
        _store_findings.reset(token)


_remember_findings: ContextVar[bool] = ContextVar("remember_findings", default=True)


@contextmanager
def findings_not_remembered() -> Iterator[None]:
    """Within this block (in this thread), texts' findings are neither looked up in nor added to this
    process's memo (`_memo`).

    For a scan whose process will not analyse the texts again, as `dedup --json`'s: at 100,000
    demo rows the memo's keys and entries cost its cold run about 0.04 s of CPU and 25 MB held
    through the rest of the scan (its peak: the finder's tag scan now runs before its candidates)."""
    token = _remember_findings.set(False)
    try:
        yield
    finally:
        _remember_findings.reset(token)


def analyse_texts(texts: Sequence[str], cache: TokenCache | None = None) -> list[Findings]:
    """(identifiers, text reasons) of each text, remembered across calls (unless within
    `findings_not_remembered`) and processes."""
    if not _remember_findings.get():
        known: list[Findings | None] = [None] * len(texts)
        if texts:
            _analysed_afresh(texts, list(range(len(texts))), known, cache)
        return known  # type: ignore[return-value]
    keys = [(hash(t), len(t)) for t in texts]
    with _memo_lock:
        known = [_memo.get(k) for k in keys]
    missing = [i for i, found in enumerate(known) if found is None]
    if missing:
        _analysed_afresh(texts, missing, known, cache)
        with _memo_lock:
            if len(_memo) + len(missing) > _MEMO_LIMIT:
                _memo.clear()
            _memo.update((keys[i], cast(Findings, known[i])) for i in missing[:_MEMO_LIMIT])
    return known  # type: ignore[return-value]


def _analysed_afresh(texts: Sequence[str], missing: list[int], known: list[Findings | None],
                     cache: TokenCache | None) -> None:
    """Fill `known` at `missing` from the cache database or the detectors (`cache`: the database, or
    None to open it for this call)."""
    own_cache = cache is None
    cache = cache or TokenCache()
    try:
        _from_cache(texts, missing, known, cache)
    finally:
        if own_cache:
            cache.close()


def unique_identifier_reasons(identifiers: Iterable[str], counts: dict[str, int], own: int) -> list[str]:
    """Reasons for identifiers that appear in no other observation or reflection.

    `counts` holds, per identifier, how many live observations and reflections
    contain it; `own` is 1 when the text being judged is itself one of them.
    """
    if not identifiers:
        return []
    unique = sorted(i for i in identifiers if counts.get(i, 0) <= own)
    reasons = [f"unique identifier: {one_line(i, 80)} appears in no other observation"
               for i in unique[:MAX_LISTED_IDENTIFIERS]]
    if len(unique) > MAX_LISTED_IDENTIFIERS:
        reasons.append(f"unique identifier: and {len(unique) - MAX_LISTED_IDENTIFIERS} more "
                       "that appear in no other observation")
    return reasons
