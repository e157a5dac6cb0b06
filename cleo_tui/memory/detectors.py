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
from collections.abc import Iterable, Sequence
from itertools import accumulate
from typing import cast

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

# Words (any case) without which a text detector cannot match.
_TEXT_HINTS = {
    "user": "user assertion", "owner": "user assertion",
    "task": "completion", "complete": "completion", "finish": "completion", "ship": "completion",
    "merge": "completion", "release": "completion", "deploy": "completion",
    "error": "error", "exception": "error", "traceback": "error", "fatal": "error", "panic": "error",
    "exit": "error", "errno": "error", "segmentation": "error",
}
_HINT_REACH = 300  # longest stretch of a text detector's match before its hint word
_TEXT_HINT = re.compile("|".join(sorted(_TEXT_HINTS, key=len, reverse=True)))  # on lower-cased text
# Every identifier holds one of these: '/' ; '#' and a digit ; '()' ; '.' before a word
# character ; an upper-case letter run reaching a digit ; 7+ hex digits ; an E-errno name ;
# '_' before a letter or digit ; a lower-case letter or digit before an upper-case one.
# An issue number may take the word before it (`issue #4`): for the '#' hint the token
# before, on the same line, is searched too.
# A run of 7+ hex digits holding a digit is found from a digit with hex around it.
_HEX_RUN = "|".join(f"(?<=[0-9a-f]{{{k}}})(?=[0-9a-f]{{{7 - k}}})" for k in range(1, 8))
_IDENTIFIER_HINTS = tuple(re.compile(p + r"\S*") for p in (
    r"/", r"#\d", r"\(\)", r"\.\w", r"[A-Z][A-Z0-9-]*\d", rf"\d(?:{_HEX_RUN})", r"_[A-Za-z0-9]",
    r"[a-z0-9][A-Z]",
    r"E(?:NO|ACCES|PERM|EXIST|CONN|ADDR|TIMEDOUT|PIPE|ISDIR|NOTDIR|INVAL|AGAIN|BUSY|MFILE)"))
_NUMBER_HINT = _IDENTIFIER_HINTS[1]
_TOKEN_REST = re.compile(r"\S*")
_BLANKS = re.compile(r"[ \t]*")


class _Corpus:
    """Texts joined by newlines, with each text's start offset for mapping a position back."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.text = "\n".join(texts)
        self.starts = [0, *accumulate(len(t) + 1 for t in texts)][:len(texts)]
        self._reversed = ""
        self._texts = texts

    def lowered(self) -> _Corpus:
        """The same texts lower-cased (text by text: 'İ' lower-cases to two characters)."""
        return _Corpus([t.lower() for t in self._texts])

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


def identifiers_of(texts: Sequence[str]) -> list[set[str]]:
    """For each text, every identifier in it (paths, task ids, SHAs, issue numbers, codes, names)."""
    corpus = _Corpus(texts)
    found: list[set[str]] = [set() for _ in texts]
    text = corpus.text
    done: set[int] = set()  # tokens already searched, by end offset (each hint match ends a token)
    known: dict[str, list[str]] = {}  # identifiers of each distinct token (paths repeat a lot)
    for hint in _IDENTIFIER_HINTS:
        for match in hint.finditer(text):
            start, end = match.span()
            if end in done:
                continue
            done.add(end)
            if start and not text[start - 1].isspace():
                start = corpus.token_start(start)
            if hint is _NUMBER_HINT:
                start = corpus.previous_token_start(start)
            token = text[start:end]
            identifiers = known.get(token)
            if identifiers is None:
                identifiers = known[token] = _IDENTIFIER.findall(token)
            if identifiers:
                found[corpus.index_of(start)].update(identifiers)
    return found


def identifiers_in(text: str) -> set[str]:
    """Every identifier in one text."""
    return identifiers_of([text])[0]


def _quote(snippet: str) -> str:
    return '"' + one_line(snippet, 60) + '"'


def text_reasons_of(texts: Sequence[str]) -> list[list[str]]:
    """For each text, the text detectors' reasons, each naming what matched (`error: "TypeError"`)."""
    corpus = _Corpus(texts).lowered()
    first_hint: dict[tuple[int, str], int] = {}  # (text index, detector) → first hint offset in the text
    for match in _TEXT_HINT.finditer(corpus.text):
        index = corpus.index_of(match.start())
        first_hint.setdefault((index, _TEXT_HINTS[match.group()]), match.start() - corpus.starts[index])
    reasons: list[list[str]] = [[] for _ in texts]
    for (index, name), offset in sorted(first_hint.items(), key=lambda c: (c[0][0], _DETECTOR_ORDER[c[0][1]])):
        text = texts[index]
        # A match holds its hint and starts at most a few words before it, so the
        # search may start there (from 0 when lower-casing moved the offsets).
        start = max(0, offset - _HINT_REACH) if len(corpus.text_at(index)) == len(text) else 0
        found = _TEXT_PATTERNS[name].search(text, start)
        if found:
            reasons[index].append(f"{name}: {_quote(found.group())}")
    return reasons


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
_memo: dict[tuple[int, int], tuple[tuple[str, ...], tuple[str, ...]]] = {}
_memo_lock = threading.Lock()
_FINDINGS_FORMAT = "2"
RULES_KEY = hashlib.sha256(repr((_FINDINGS_FORMAT, TEXT_DETECTORS, IDENTIFIER_KINDS)).encode()).hexdigest()[:16]
Findings = tuple[tuple[str, ...], tuple[str, ...]]  # (identifiers, text reasons)


def _encode(findings: Findings) -> str:
    # Identifiers and reasons never hold control characters (reasons pass one_line).
    return "\x1f".join(findings[0]) + "\x1e" + "\x1f".join(findings[1])


def _decode(encoded: str) -> Findings:
    ids, _, reasons = encoded.partition("\x1e")
    return tuple(ids.split("\x1f")) if ids else (), tuple(reasons.split("\x1f")) if reasons else ()


def _from_cache(texts: Sequence[str], missing: list[int], known: list, cache: TokenCache) -> list[int]:
    """Fill `known` from the cache database; returns the indexes still missing."""
    keys = {i: line_key(texts[i]) for i in missing}
    stored = cache.lookup_findings(RULES_KEY, list(keys.values()))
    for i, key in keys.items():
        if key in stored:
            known[i] = _decode(stored[key])
    still = [i for i in missing if known[i] is None]
    for first in range(0, len(still), _CHUNK):
        # In chunks: a corpus of 100,000 texts holding one emoji is stored at four
        # bytes a character, and it is copied (reversed, lower-cased) once or twice.
        chunk = still[first:first + _CHUNK]
        subset = [texts[i] for i in chunk]
        for i, ids, reasons in zip(chunk, identifiers_of(subset), text_reasons_of(subset), strict=True):
            known[i] = (tuple(sorted(ids)), tuple(reasons))
    cache.store_findings(RULES_KEY, [(keys[i], _encode(known[i])) for i in still])
    return still


def analyse_texts(texts: Sequence[str], cache: TokenCache | None = None) -> list[Findings]:
    """(identifiers, text reasons) of each text, remembered across calls and processes."""
    keys = [(hash(t), len(t)) for t in texts]
    with _memo_lock:
        known = [_memo.get(k) for k in keys]
    missing = [i for i, found in enumerate(known) if found is None]
    if missing:
        own_cache = cache is None
        cache = cache or TokenCache()
        try:
            _from_cache(texts, missing, known, cache)
        finally:
            if own_cache:
                cache.close()
        with _memo_lock:
            if len(_memo) + len(missing) > _MEMO_LIMIT:
                _memo.clear()
            _memo.update((keys[i], cast(Findings, known[i])) for i in missing[:_MEMO_LIMIT])
    return known  # type: ignore[return-value]


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
