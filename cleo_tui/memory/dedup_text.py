"""How two observation texts are compared for the duplicate finder: words, details, similarity.

A text becomes a list of *words*: lower-cased, stripped of punctuation, common
function words dropped, plain words lightly stemmed ("capped" → "cap") so a
rewording still shares its words. Some words are *details*: anything with a
digit (numbers, versions, ids, SHAs), an identifier — a path, a dotted or
snake_case name, a camelCase name — or a negation ("not", "never", each read as
"not", so two texts that both negate agree). Words swapped in texts that
otherwise line up word for word ("use ruff for billing" / "use Vite for search",
a note restated about another feature) count as differing details too. Two
texts whose details differ state different facts ("capped at 30 s" vs "capped
at 60 s" is an update), however alike the rest is.

Similarity is rapidfuzz's token-set ratio of the word lists (0..1), which
forgives word order and a few added words. Because it also scores a short text
contained in a long one as 1.0, a pair only counts as a duplicate when the
shorter text has at least `LENGTH_GUARD` of the longer one's words.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

LENGTH_GUARD = 0.67
ALIGNED_SHARE = 0.6       # words in the same order on both sides, for a swap to count as a substitution
SUBSTITUTION_FLOOR = 0.5  # below this similarity nobody asks whether words were swapped

# Words that carry no fact; dropping them lets rewordings line up.
_STOP = frozenset(
    ["a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "by", "for", "from", "with", "into", "onto",
     "as", "is", "are", "was", "were", "be", "been", "being", "it", "its", "this", "that", "these", "those", "there",
     "here", "we", "our", "us", "you", "your", "i", "my", "me", "they", "them", "their", "he", "she", "his", "her",
     "so", "then", "than", "also", "just", "now", "only", "very", "too", "do", "does", "did", "done", "has", "have",
     "had", "having", "will", "would", "can", "could", "should", "may", "might", "must", "shall", "any", "all", "some",
     "each", "every", "which", "who", "whom", "what", "when", "where", "while", "how", "why", "if", "else", "because",
     "about", "after", "before", "over", "under", "up", "down", "out", "off", "again", "more", "most", "other", "such",
     "own", "same", "both", "few", "once", "per", "via", "instead", "rather"])
# Unit spellings that mean the same thing, so "30 s" and "30 seconds" agree.
_UNITS = {"sec": "s", "secs": "s", "second": "s", "seconds": "s", "msec": "ms", "millisecond": "ms",
          "milliseconds": "ms", "mins": "min", "minute": "min", "minutes": "min", "hr": "h", "hrs": "h",
          "hour": "h", "hours": "h", "day": "d", "days": "d", "bytes": "b", "byte": "b"}
_WORD = re.compile(r"[\w@#$%+~/.:\\-]*\w[%+]?|[\w%]")
_NUMBER_UNIT = re.compile(r"^(\d+(?:[.,]\d+)*)([a-z]{1,12})$")
_IDENTIFIER_MARK = re.compile(r"[_/\\@#:]|\w\.\w")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2,}[a-z]")
# Polarity words count as details: "X runs" and "X does not run" are different facts; each is
# read as "not", so two texts that both negate, in other words, agree.
_POLARITY = frozenset({"not", "no", "never", "without", "cannot"})
_NOT = re.compile(r"n't\b", re.IGNORECASE)
_SIBILANT_ES = ("ses", "xes", "zes", "ches", "shes")


@dataclass(frozen=True, slots=True)
class TextKey:
    """What the comparisons need of one text (cheap to rebuild, never stored in the brain)."""

    words: tuple[str, ...]      # in text order, details included
    details: frozenset[str]     # the detail words (numbers, ids, paths, versions, negations)
    joined: str                 # the words joined by spaces: what rapidfuzz compares
    distinct: int               # how many different words

    def encode(self) -> str:
        """The key as one string for the cache: the words, NUL, the details (each space-separated)."""
        return " ".join(self.words) + "\x00" + " ".join(sorted(self.details))

    @classmethod
    def decode(cls, encoded: str) -> TextKey:
        """The key `encode` wrote."""
        joined, _, details = encoded.partition("\x00")
        words = tuple(joined.split(" ")) if joined else ()
        return cls(words, frozenset(details.split(" ")) if details else frozenset(), joined, len(set(words)))


def _stem(word: str) -> str:
    """A light suffix strip for plain words, so "capped", "caps" and "cap" agree."""
    if len(word) <= 3:
        return word
    if word.endswith(("ies", "ied")):
        return word[:-3] + "y"
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if word[-1] == word[-2] and word[-1] not in "aeiousl":
                word = word[:-1]  # "capp" → "cap"
            break
    else:
        if word.endswith(_SIBILANT_ES):
            word = word[:-2]
        elif word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
    if len(word) >= 4 and word.endswith("e") and word[:-1] not in _POLARITY:  # "note" must not become "not"
        word = word[:-1]
    return word


def is_detail(raw: str) -> bool:
    """A word that names a specific thing: a number, version, id, path or code identifier."""
    return any(c.isdigit() for c in raw) or bool(_IDENTIFIER_MARK.search(raw)) or bool(_CAMEL.search(raw))


def _normal_detail(word: str) -> str:
    """One spelling per detail: `v2.1` and `2.1` agree, trailing dots go."""
    word = word.rstrip(".:,;")
    if len(word) > 1 and word[0] == "v" and word[1].isdigit():
        word = word[1:]
    return word


_word_memo: dict[str, tuple[tuple[str, ...], bool]] = {}
_MEMO_LIMIT = 200_000
_NOTHING: tuple[tuple[str, ...], bool] = ((), False)


def _normal_words(token: str) -> tuple[tuple[str, ...], bool]:
    """(words, are they details) for one token as `_WORD` matched it; memoised, texts repeat their
    vocabulary (so the memo is keyed by the token before its edge punctuation is stripped)."""
    found = _word_memo.get(token)
    if found is not None:
        return found
    raw = token.strip(".:-/\\")
    lowered = raw.lower()
    number_unit = _NUMBER_UNIT.match(lowered)
    if not raw:
        found = _NOTHING
    elif number_unit and (number_unit.group(2) in _UNITS or len(number_unit.group(2)) <= 3):
        number, unit = number_unit.groups()
        found = ((number, _UNITS.get(unit, unit)), True)  # the unit is a word, the number a detail
    elif lowered in _POLARITY:
        found = (("not",), True)  # one negation, however said: "never X" and "do not X" agree
    elif is_detail(raw):
        found = ((_normal_detail(lowered),), True)
    elif lowered in _STOP:
        found = _NOTHING
    else:
        found = ((_UNITS.get(lowered) or _stem(lowered),), False)
    if len(_word_memo) < _MEMO_LIMIT:
        _word_memo[token] = found
    return found


_chunk_memo: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}


def _chunk_words(chunk: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(words, detail words) of one whitespace-free stretch of text; memoised like `_normal_words`."""
    found = _chunk_memo.get(chunk)
    if found is None:
        words: list[str] = []
        details: list[str] = []
        for token in _WORD.findall(chunk):
            normal, detail = _normal_words(token)
            words += normal
            if detail:
                details.append(normal[0])
        found = (tuple(words), tuple(details))
        if len(_chunk_memo) < _MEMO_LIMIT:
            _chunk_memo[chunk] = found
    return found


def text_words(text: str) -> tuple[list[str], set[str]]:
    """(words in text order, detail words) of one text: what `text_key` keeps (see the module docstring).

    No word spans whitespace, so the text is split on it first (in C) and each stretch is looked up
    in a memo: most stretches are words seen before, and the regex runs only on new ones."""
    if "'" in text:
        text = _NOT.sub(" not", text)
    words: list[str] = []
    details: set[str] = set()
    memo = _chunk_memo
    for chunk in text.split():
        found = memo.get(chunk) or _chunk_words(chunk)
        words += found[0]
        if found[1]:
            details.update(found[1])
    return words, details


def as_written(text: str, words: Sequence[str]) -> tuple[str, ...]:
    """Each of `words` (as `text_words` made them: lower-cased, stemmed) as `text` writes it, for
    showing: "invoic" is shown as "invoices". A word the text does not hold stays as it is."""
    if not words:
        return ()
    written = written_forms(text)
    return tuple(written.get(w) or w for w in words)


@lru_cache(maxsize=4_096)
def written_forms(text: str) -> dict[str, str]:
    """`forms_written(text)`, remembered for the last 4,096 texts asked. Do not change the dict."""
    return forms_written(text)


def forms_written(text: str) -> dict[str, str]:
    """Each word of `text` (as `text_words` makes them) → how the text first writes it.

    Each whitespace-free stretch is remembered: clusters show the differing details of 70,000
    pairs at 100,000 rows, a text often in several pairs, and tokenising each text again per
    pair cost 1.2 s of CPU (0.3 s so). A caller asking for many texts' forms remembers them
    per text (`written_forms`, or the duplicate scan's own memo while it builds clusters)."""
    written: dict[str, str] = {}
    memo = _written_memo
    for chunk in (_NOT.sub(" not", text) if "'" in text else text).split():
        found = memo.get(chunk)
        if found is None:
            found = _chunk_written(chunk)
        for word, shown in found:
            if word not in written:
                written[word] = shown
    return written


_written_memo: dict[str, tuple[tuple[str, str], ...]] = {}


def _chunk_written(chunk: str) -> tuple[tuple[str, str], ...]:
    """(word, the token as written) of each word of one whitespace-free stretch; memoised."""
    found = tuple((word, token.strip(".:-/\\,;!?()'\"`")) for token in _WORD.findall(chunk)
                  for word in _normal_words(token)[0])
    if len(_written_memo) < _MEMO_LIMIT:
        _written_memo[chunk] = found
    return found


def text_key(text: str) -> TextKey:
    """The words and details of one text (see the module docstring)."""
    words, details = text_words(text)
    return TextKey(tuple(words), frozenset(details), " ".join(words), len(set(words)))


@dataclass(frozen=True, slots=True)
class PairVerdict:
    """How two texts compare: similarity 0..1, whether the length guard holds, the differing details."""

    similarity: float
    comparable: bool                 # the shorter has at least LENGTH_GUARD of the longer's words
    only_a: tuple[str, ...]          # details only in the first text
    only_b: tuple[str, ...]          # details only in the second

    @property
    def differs_in_detail(self) -> bool:
        return bool(self.only_a or self.only_b)

    def is_duplicate(self, threshold: float) -> bool:
        """Same fact in other words: similar enough, comparable in length, and no detail differs."""
        return self.comparable and self.similarity >= threshold and not self.differs_in_detail

    def is_update(self, threshold: float) -> bool:
        """Alike except for a detail: shown beside a cluster, never merged by default."""
        return self.comparable and self.similarity >= threshold and self.differs_in_detail


def _substitutions(a: Sequence[str], b: Sequence[str]) -> tuple[set[str], set[str]]:
    """Words swapped for others in two texts that otherwise line up word by word.

    A note restated about another thing ("use ruff for billing" / "use Vite for search",
    "idempotency keys on payments works end to end …" / "invoice PDF export works end to end …")
    keeps its word order and swaps a stretch of words; a rewording moves words around. So when
    most words align (`ALIGNED_SHARE`), each stretch removed in one place and added in the same
    place is a substitution, whatever its length, and its words are details. Words are counted,
    not just seen: a word merely moved is in both texts as often, and is no detail; a word
    swapped for one the text uses elsewhere ("The invoices report … invoices" / "The reports
    report … invoices") is in one text more often than in the other, and is.
    """
    if not a or not b:
        return set(), set()
    # Opcodes as plain tuples (tag, src_start, src_end, dest_start, dest_end): this runs for
    # every verified pair whose details agree, tens of thousands in a large brain.
    ops = _indel().opcodes(a, b).as_list()
    aligned = sum([op[2] - op[1] for op in ops if op[0] == "equal"])
    if aligned / max(len(a), len(b)) < ALIGNED_SHARE:
        return set(), set()
    removed: list[str] = []
    added: list[str] = []
    for equal, stretch in itertools.groupby(ops, key=lambda op: op[0] == "equal"):
        if not equal:
            edits = list(stretch)
            lost = a[edits[0][1]:edits[-1][2]]
            gained = b[edits[0][3]:edits[-1][4]]
            if lost and gained:
                removed += lost
                added += gained
    if not removed:
        return set(), set()
    count_a, count_b = Counter(a), Counter(b)
    return ({w for w in removed if count_a[w] > count_b[w]}, {w for w in added if count_b[w] > count_a[w]})


@lru_cache(maxsize=1)
def _indel() -> Any:
    """rapidfuzz's Indel (imported on first use: the module is imported by the TUI at start-up)."""
    from rapidfuzz.distance import Indel

    return Indel


def words_swapped(a: Sequence[str], b: Sequence[str], similarity: float) -> bool:
    """Whether `verdict` finds a detail in two texts' words that pass the length guard and have
    the same detail words: only swapped words can then differ (see `_substitutions`)."""
    if similarity < SUBSTITUTION_FLOOR:
        return False
    only_a, only_b = _substitutions(a, b)
    return bool(only_a or only_b)


def comparable(a: TextKey, b: TextKey) -> bool:
    """The length guard: the shorter text has at least LENGTH_GUARD of the longer one's words."""
    return comparable_counts(a.distinct, b.distinct)


def comparable_counts(distinct_a: int, distinct_b: int) -> bool:
    """The length guard on two texts' numbers of distinct words."""
    large = max(distinct_a, distinct_b)
    return large == 0 or min(distinct_a, distinct_b) / large >= LENGTH_GUARD


def verdict(a: TextKey, b: TextKey, similarity: float) -> PairVerdict:
    """The verdict on two texts whose similarity is known (see `similarities`)."""
    only_a, only_b = set(a.details - b.details), set(b.details - a.details)
    guard = comparable(a, b)
    if guard and not (only_a or only_b) and similarity >= SUBSTITUTION_FLOOR:
        only_a, only_b = _substitutions(a.words, b.words)
    return PairVerdict(round(similarity, 4), guard, tuple(sorted(only_a)), tuple(sorted(only_b)))


def similarities(left: Sequence[str], right: Sequence[str], presorted: bool = False) -> list[float]:
    """Similarity 0..1 of each pair of joined word strings (see `similarity_array`)."""
    return [float(x) for x in similarity_array(left, right, presorted).tolist()]


def similarity_array(left: Sequence[str], right: Sequence[str], presorted: bool = False) -> np.ndarray:
    """Similarity 0..1 (float64) of each pair of joined word strings: the mean of rapidfuzz's
    token-set and token-sort ratios (the sort ratio keeps one shared word from making unlike
    texts alike).

    With `presorted`, every string's words are already in sorted order: the sort ratio is then
    rapidfuzz's plain ratio (the same number, without sorting again per pair)."""
    import numpy as np
    from rapidfuzz import fuzz, process

    if not left:
        return np.zeros(0, dtype=np.float64)
    # float64, as `compare` computes one pair: cpdist's default float32 would round differently.
    set_ratio = process.cpdist(left, right, scorer=fuzz.token_set_ratio, workers=1, dtype=np.float64)
    sort_ratio = process.cpdist(left, right, scorer=fuzz.ratio if presorted else fuzz.token_sort_ratio, workers=1,
                                dtype=np.float64)
    return np.asarray((set_ratio + sort_ratio) / 200.0)


def compare(a: TextKey, b: TextKey) -> PairVerdict:
    """Compare two texts' keys with rapidfuzz (one pair; `similarities` does many at once)."""
    from rapidfuzz import fuzz

    score = (fuzz.token_set_ratio(a.joined, b.joined) + fuzz.token_sort_ratio(a.joined, b.joined)) / 200.0
    return verdict(a, b, score)


def word_diff(text_a: str, text_b: str) -> list[tuple[str, str, str]]:
    """The two texts' words aligned: (operation, words of a, words of b) runs, for highlighting.

    Operations are rapidfuzz's opcodes over the raw whitespace-separated words:
    'equal', 'replace', 'delete' (only in a), 'insert' (only in b).
    """
    from rapidfuzz.distance import Levenshtein

    words_a, words_b = text_a.split(), text_b.split()
    key_a = [w.lower().strip(".,;:!?()'\"`") for w in words_a]
    key_b = [w.lower().strip(".,;:!?()'\"`") for w in words_b]
    return [(op.tag, " ".join(words_a[op.src_start:op.src_end]), " ".join(words_b[op.dest_start:op.dest_end]))
            for op in Levenshtein.opcodes(key_a, key_b)]
