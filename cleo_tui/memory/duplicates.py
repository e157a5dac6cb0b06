"""Near-duplicate live observations: a scan, and clusters at any similarity threshold.

`scan_duplicates(brain)` reads the live pool once, finds candidate pairs by
MinHash LSH (`dedup_lsh`), and verifies each with rapidfuzz (`dedup_verify`,
`dedup_text`); the verified pairs do not depend on the threshold, so
`scan.clusters(t)` answers any threshold at once (a pane's slider). Signatures,
words and pair verdicts come from the brain's scan cache (`dedup_lsh.ScanCache`)
where it has them, so a rescan works only on new texts and new pairs. A cluster
is a connected group of *silent duplicates* (union-find); pairs that differ in a
detail (a number, an identifier, a path, a version, a negation) are updates,
shown with the cluster they touch (or in `scan.updates`) and never merged by
default. What a cluster holds, and how its keeper is suggested, is `dedup_model`
(its names are importable from here too).

By default a merge evicts the members that are duplicates of the keeper itself
and not protected (`Cluster.merge_ids`); `tokens_saved` is what evicting them
takes off the pool (see `tokenizers`).

Progress is reported through `progress(done, total, stage)`; `cancel` (a
`threading.Event` or any callable returning True) is checked between batches
and stops the scan with `ScanCancelled`.
"""

from __future__ import annotations

import itertools
import operator
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from cleo_tui.brain.store import Brain
from cleo_tui.memory import dedup_lsh, dedup_verify, detectors, mapping, tags
from cleo_tui.memory.dedup_model import (
    DEFAULT_THRESHOLD,
    MIN_THRESHOLD,
    BadThreshold,
    Cancel,
    Cluster,
    Member,
    Pair,
    ScanCancelled,
    ScanProgress,
    ScanStats,
    parse_threshold,
    suggest_keeper,
)
from cleo_tui.memory.dedup_text import TextKey, comparable_counts, compare, forms_written, verdict
from cleo_tui.memory.pool_scan import positions_of
from cleo_tui.memory.pool_scan.reading import ChunkColumns
from cleo_tui.memory.pool_scan.scan_pass import RowsRead
from cleo_tui.memory.seed_types import render_line
from cleo_tui.memory.token_cache import Progress
from cleo_tui.memory.tokenizers import Tokenizer, get_tokenizer

if TYPE_CHECKING:
    from cleo_tui.memory.pool_scan import BrainScan

__all__ = ["DEFAULT_THRESHOLD", "MIN_THRESHOLD", "BadThreshold", "Cluster", "DuplicateScan", "Member", "Pair",
           "ScanCancelled", "ScanStats", "parse_threshold", "scan_duplicates", "suggest_keeper"]

FULL_MATRIX_LIMIT = 12   # larger clusters get keeper-to-member similarities only
DETAILS_PER_CLUSTER = 20  # the most similar "differs in a detail" pairs shown with a cluster
_CREATED = operator.attrgetter("created_at")  # (a row's date, the sort key of the rows)


@dataclass(slots=True)
class _Row:
    id: str
    title: str
    content: str
    created_at: str
    quality: float | None


@dataclass
class DuplicateScan:
    """The live pool's verified similar pairs; `clusters(threshold)` groups them.

    Pairs are kept compactly (numpy arrays: rows, similarity, the length guard,
    whether a detail differs); the differing words are worked out again only
    for the pairs a cluster shows.
    """

    rows: list[_Row]
    encoded: list[str]                 # each row's words (`TextKey.encode`)
    left: Any                          # numpy int64 arrays of row indexes, left < right
    right: Any
    score: Any                         # numpy float64 similarity 0..1 (rounded as PairVerdict rounds)
    raw: Any                           # the same unrounded (a pair's verdict rounds it itself)
    differs: Any                       # numpy bool: a detail differs
    distinct: Any                      # numpy int32 per row: its number of distinct words
    tokenizer: Tokenizer
    stats: ScanStats
    tags: _Tags = field(repr=False)
    _keys: dict[int, TextKey] = field(default_factory=dict, repr=False)
    _memo: dict[float, tuple[list[list[int]], Any]] = field(default_factory=dict, repr=False)
    _units: dict[int, int] = field(default_factory=dict, repr=False)
    _detail_sets: dict[int, frozenset[str]] = field(default_factory=dict, repr=False)
    _forms: dict[int, dict[str, str]] = field(default_factory=dict, repr=False)  # while clusters are built
    _codes: Any = field(default=None, repr=False)   # sorted left * rows + right, to find a verified pair
    _order: Any = field(default=None, repr=False)   # the pair at each code

    @cached_property
    def _raw_list(self) -> list[float]:
        """`raw` as Python floats (a cluster reads pairs one at a time: a list is quicker to index)."""
        return self.raw.tolist()  # type: ignore[no-any-return]

    @cached_property
    def _differs_list(self) -> list[bool]:
        return self.differs.tolist()  # type: ignore[no-any-return]

    @cached_property
    def _distinct_list(self) -> list[int]:
        return self.distinct.tolist()  # type: ignore[no-any-return]

    def _key(self, index: int) -> TextKey:
        key = self._keys.get(index)
        if key is None:
            key = self._keys[index] = TextKey.decode(self.encoded[index])
        return key

    def _details(self, index: int) -> frozenset[str]:
        found = self._detail_sets.get(index)
        if found is None:
            details = self.encoded[index].partition("\x00")[2]
            found = self._detail_sets[index] = frozenset(details.split(" ")) if details else frozenset()
        return found

    def _written(self, index: int, words: Sequence[str]) -> tuple[str, ...]:
        """`as_written` of row `index`'s content, the row's written forms remembered while clusters are
        built (`clusters` forgets them after): at 100,000 demo rows they show the words of 22,600 texts,
        of which `written_forms`' bounded cache had made 30,000 (0.07 s of CPU more)."""
        if not words:
            return ()
        forms = self._forms.get(index)
        if forms is None:
            forms = self._forms[index] = forms_written(self.rows[index].content)
        return tuple(forms.get(w) or w for w in words)

    def _member(self, index: int) -> Member:
        row = self.rows[index]
        protection, citing, relevance = self.tags.of(row.id)
        units = self._units.get(index)
        if units is None:  # a row beside many clusters is measured once
            line = render_line(row.id, mapping.minute_timestamp(row.created_at), relevance, row.content)
            units = self._units[index] = self.tokenizer.line_units(line)
        return Member(row.id, row.title, row.content, row.created_at, row.quality, len(citing), citing, relevance,
                      self.tokenizer.finish(units), protection, units + 1)

    def _verified(self, index_pairs: Sequence[tuple[int, int]]) -> list[int]:
        """The index of each pair of rows among the verified pairs, or -1."""
        if self._codes is None:
            codes = self.left * len(self.rows) + self.right
            self._order = np.argsort(codes)  # (codes are distinct: any sort gives this order)
            self._codes = codes[self._order]
        if not index_pairs or not len(self._codes):
            return [-1] * len(index_pairs)
        ends = np.asarray(index_pairs, dtype=np.int64)
        wanted = ends.min(axis=1) * len(self.rows) + ends.max(axis=1)
        at = np.searchsorted(self._codes, wanted).clip(0, len(self._codes) - 1)
        return np.where(self._codes[at] == wanted, self._order[at], -1).tolist()  # type: ignore[no-any-return]

    def _pairs(self, index_pairs: Sequence[tuple[int, int]], threshold: float,
               known: dict[tuple[int, int], int]) -> list[Pair]:
        """Pairs of rows compared; `known` has the verified pair of some (keyed low, high)."""
        ordered = [(min(i, j), max(i, j)) for i, j in index_pairs]
        missing = [p for p in ordered if p not in known]
        if missing:
            known = {**known, **dict(zip(missing, self._verified(missing), strict=True))}
        return [self._pair(i, j, known[key], threshold) for (i, j), key in zip(index_pairs, ordered, strict=True)]

    def _groups(self, threshold: float) -> tuple[list[list[int]], Any]:
        """(duplicate groups, cluster number of each row or -1) at `threshold`, memoised."""

        if threshold not in self._memo:
            silent = (self.score >= threshold) & ~self.differs
            groups = _components(zip(self.left[silent].tolist(), self.right[silent].tolist(), strict=False))
            group_of = np.full(len(self.rows), -1, dtype=np.int64)
            for number, group in enumerate(groups):
                group_of[group] = number
            self._memo[threshold] = (groups, group_of)
        return self._memo[threshold]

    def clusters(self, threshold: float = DEFAULT_THRESHOLD) -> list[Cluster]:
        """Clusters at `threshold`, most tokens saved first."""
        with tags.gc_paused():  # 10,000s of members and pairs, no cycle: a collection would walk the whole scan
            try:
                return self._clusters(threshold)
            finally:
                self._forms.clear()

    def _clusters(self, threshold: float) -> list[Cluster]:
        groups, group_of = self._groups(threshold)
        updates = np.nonzero((self.score >= threshold) & self.differs)[0]
        touching: dict[int, list[tuple[int, int, int]]] = {}
        near = updates[(group_of[self.left[updates]] >= 0) | (group_of[self.right[updates]] >= 0)]
        near = near[np.argsort(-self.score[near], kind="stable")]
        ends_i, ends_j = self.left[near], self.right[near]
        owner = np.where(group_of[ends_i] >= 0, group_of[ends_i], group_of[ends_j])  # the cluster each touches
        for g, i, j, pair in zip(owner.tolist(), ends_i.tolist(), ends_j.tolist(), near.tolist(), strict=True):
            shown = touching.setdefault(g, [])
            if len(shown) < DETAILS_PER_CLUSTER:
                shown.append((i, j, pair))
        # Every row shown found in the tag scan at once, and every pair inside the small groups
        # looked up at once (one numpy call each, not one per member or cluster).
        self.tags.prepare([self.rows[i].id for i in itertools.chain(
            itertools.chain.from_iterable(groups),
            (end for shown in touching.values() for i, j, _ in shown for end in (i, j)))])
        inside = [(a, b) for group in groups if len(group) <= FULL_MATRIX_LIMIT
                  for n, a in enumerate(group) for b in group[n + 1:]]
        known = dict(zip(inside, self._verified(inside), strict=True))
        built = [self._cluster(group, touching.get(g, []), threshold, known) for g, group in enumerate(groups)]
        return sorted(built, key=lambda c: (-c.tokens_saved, -len(c.members), c.keep))

    def updates(self, threshold: float = DEFAULT_THRESHOLD, limit: int | None = None) -> list[Pair]:
        """Pairs that differ in a detail and touch no cluster ("capped at 30 s" / "at 60 s"), most similar first."""

        _, group_of = self._groups(threshold)
        chosen = np.nonzero((self.score >= threshold) & self.differs & (group_of[self.left] < 0)
                            & (group_of[self.right] < 0))[0]
        chosen = chosen[np.argsort(-self.score[chosen], kind="stable")][:limit]
        return [self._pair(int(self.left[k]), int(self.right[k]), k, threshold) for k in chosen.tolist()]

    def update_count(self, threshold: float = DEFAULT_THRESHOLD) -> int:
        _, group_of = self._groups(threshold)
        return int(((self.score >= threshold) & self.differs & (group_of[self.left] < 0)
                    & (group_of[self.right] < 0)).sum())

    def _pair(self, i: int, j: int, known: int, threshold: float) -> Pair:
        """Rows i and j compared: from verified pair `known` when it is one (>= 0), else afresh.

        A verified pair needs no rapidfuzz: its similarity is known, and unless its detail words
        are the same (then swapped words may differ) so are the words that differ."""
        ids = self.rows[i].id, self.rows[j].id
        if known < 0:
            found = compare(self._key(i), self._key(j))
        else:
            similarity = round(self._raw_list[known], 4)
            distinct = self._distinct_list
            alike = similarity >= threshold and comparable_counts(distinct[i], distinct[j])
            if not self._differs_list[known]:
                return Pair(*ids, similarity, "duplicate" if alike else "apart")
            details_i, details_j = self._details(i), self._details(j)
            if details_i != details_j:  # `verdict` without the words: no swapped words to look for
                return Pair(*ids, similarity, "detail" if alike else "apart",
                            self._written(i, sorted(details_i - details_j)),
                            self._written(j, sorted(details_j - details_i)))
            found = verdict(self._key(i), self._key(j), self._raw_list[known])
        kind = "duplicate" if found.is_duplicate(threshold) else "detail" if found.is_update(threshold) else "apart"
        return Pair(*ids, found.similarity, kind, self._written(i, found.only_a), self._written(j, found.only_b))

    def _cluster(self, group: list[int], detail_pairs: list[tuple[int, int, int]], threshold: float,
                 known: dict[tuple[int, int], int]) -> Cluster:
        members = {i: self._member(i) for i in group}
        keeper, reason = suggest_keeper(list(members.values()))
        keep_index = next(i for i, m in members.items() if m.id == keeper.id)
        ordered = [keep_index, *[i for i in group if i != keep_index]]
        if len(group) <= FULL_MATRIX_LIMIT:
            index_pairs = [(a, b) for n, a in enumerate(ordered) for b in ordered[n + 1:]]
        else:
            index_pairs = [(keep_index, b) for b in ordered[1:]]
        pairs = self._pairs(index_pairs, threshold, known)
        with_keeper = {p.b: p for p in pairs if p.a == keeper.id}
        merge = [self.rows[b].id for b in ordered[1:]
                 if with_keeper[self.rows[b].id].kind == "duplicate" and not members[b].protected]
        outside = sorted({end for i, j, _ in detail_pairs for end in (i, j) if end not in members})
        details = [self._pair(i, j, k, threshold) for i, j, k in sorted(detail_pairs)]
        related = {self.rows[i].id: i for i in outside}
        cluster = Cluster([members[i] for i in ordered], keeper.id, reason, pairs, details,
                          {row_id: self.rows[i].title for row_id, i in related.items()}, merge, 0, self.tokenizer,
                          (lambda ids: [self._member(related[i]) for i in ids]) if related else None)
        # `tokens_saved_for(merge)`, without looking each member up by id in the member list
        units: dict[str, int] = {}
        for b in ordered:
            units.setdefault(self.rows[b].id, members[b].units)
        cluster.tokens_saved = self.tokenizer.finish(sum(units[i] for i in set(merge)))
        return cluster


def _components(edges: Iterable[tuple[int, int]]) -> list[list[int]]:
    """Connected groups (two or more rows) of the edges, by union-find with path halving."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        root_a, root_b = find(a), find(b)
        if root_a != root_b:
            parent[max(root_a, root_b)] = min(root_a, root_b)
    groups: dict[int, list[int]] = {}
    for x in parent:
        groups.setdefault(find(x), []).append(x)
    return [sorted(g) for g in groups.values() if len(g) > 1]


def _checker(cancel: Cancel | None) -> Callable[[], None]:
    def check() -> None:
        if cancel is not None and (cancel.is_set() if isinstance(cancel, threading.Event) else cancel()):
            raise ScanCancelled("The duplicate scan was cancelled; nothing was changed.")
    return check


def _read_live(brain: Brain, check: Callable[[], None], report: ScanProgress) -> tuple[list[_Row], _Tags]:
    """Live observations, oldest first (ties by rowid), with the columns the scan needs, and the
    tag scan of them: one reading of the pool serves both (`scan_brain`'s `rows_read`).

    The tag scan is needed anyway (an identifier is unique against the whole pool) and reads the
    same rows; reading them a second time for the finder cost the cold `dedup --json` about
    0.2 s of CPU at 100,000 demo rows. Titles and narratives come as bytes and are decoded
    leniently here (one C call each); rows come in rowid order, which is usually date order
    already, and are sorted only when they are not (cheaper than SQLite's sort). A row without an
    id (NULL or empty) is left out: a merge is a supersedes edge between two ids, so such a row can
    be neither kept nor merged.
    """
    rows: list[_Row] = []

    def reading() -> Callable[[ChunkColumns], None]:
        rows.clear()  # (a second reading, when a short text was not UTF-8, starts again)
        return take

    def take(c: ChunkColumns) -> None:
        check()
        assert c.scores is not None and c.title_texts is not None and c.narrative_texts is not None
        for obs_id, title, narrative, created_at, value in zip(c.ids, c.title_texts, c.narrative_texts, c.created,
                                                               c.scores, strict=True):
            if obs_id:
                rows.append(_Row(obs_id, title, narrative if narrative.strip() else title, created_at,
                                 float(value) if isinstance(value, (int, float)) else None))

    pool = _Tags.of_brain(brain, reading, lambda done, total: report(done, total, "reading"))
    rows.sort(key=_CREATED)  # stable: ties stay in rowid order (in C, and quick when already in order)
    return rows, pool


def scan_duplicates(brain: Brain, tokenizer: str | Tokenizer = "chars4", progress: ScanProgress | None = None,
                    cancel: Cancel | None = None, cache: dedup_lsh.ScanCache | None = None) -> DuplicateScan:
    """Find similar pairs among the live observations (safe in a worker thread on a reader brain).

    `cache` is the brain's scan cache by default (`dedup_lsh.cache_path`); pass
    `dedup_lsh.ScanCache()` to compute everything and save nothing."""
    tokenizer = get_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer
    check = _checker(cancel)
    report = progress or (lambda done, total, stage: None)
    stats, clock = ScanStats(), time.perf_counter()
    with tags.gc_paused():
        rows, pool = _read_live(brain, check, report)
        stats.rows = len(rows)
        report(0, 0, "hashing words")  # (no count to show: the bar runs on its own)
        stats.seconds["read and tags"] = time.perf_counter() - clock
        check()
        cache = cache if cache is not None else dedup_lsh.ScanCache.load(dedup_lsh.cache_path(brain.path))
        texts = dedup_lsh.text_table([r.content for r in rows], cache)
        stats.signatures_computed = texts.computed
        stats.seconds["signatures"] = time.perf_counter() - clock
        check()
        report(0, 0, "candidates")
        left, right, _ = dedup_lsh.candidate_pairs(texts.sig, texts.has_words)
        stats.candidates = len(left)
        stats.seconds["candidates"] = time.perf_counter() - clock
        verified = dedup_verify.verify(texts, left, right, cache, check, report)
        texts.forget_sorted()
        if texts.computed or verified.computed:
            cache.save(texts, verified.judged)
        left, right, raw, differs = verified.kept
        stats.verified, stats.pairs_computed = len(left), verified.computed
        stats.seconds["verify"] = time.perf_counter() - clock
    report(len(rows), len(rows), "done")
    return DuplicateScan(rows, texts.encoded, left, right, np.round(raw, 4), raw, differs, texts.distinct, tokenizer,
                         stats, pool)


@dataclass
class _Tags:
    """Protection, citing reflections and relevance of observations, worked out when a member
    is shown (the whole pool's scan is needed: an identifier is unique against all of it)."""

    scan: BrainScan = field(repr=False)
    _memo: dict[str, tuple[tuple[str, ...], list[str], str]] = field(default_factory=dict, repr=False)
    _places: dict[str, int] = field(default_factory=dict, repr=False)  # row in the scan by id (-1: not there)

    @classmethod
    def of_brain(cls, brain: Brain, rows_read: RowsRead | None = None,
                 progress: Progress | None = None) -> _Tags:
        """The live pool scanned with the tagger, and the indexes reasons need built now (in the scan's thread);
        `rows_read` is handed the rows as they are read, `progress` told how many (see `scan_brain`).

        New findings go to the brain's findings file only (which the TUI's tagging reads), not
        to the cache database as well: a second copy of them that a first scan would pay for;
        nor to the detectors' memo of this process (held through the rest of the scan, and no
        row of this scan is analysed again: a later scan reads the findings file). No row's
        session is read: nothing the finder shows depends on it."""
        with detectors.findings_not_stored(), detectors.findings_not_remembered():
            scan = tags.scan_brain(brain, live_only=True, sessions=False, rows_read=rows_read, progress=progress)
        _ = scan.index, scan.counts
        return cls(scan)

    def prepare(self, obs_ids: Sequence[str]) -> None:
        """Find these observations in the scan at once, before `of` asks for each: one binary
        search for all of them (at 100,000 rows, clusters show 60,000 members and related rows;
        a search each cost 0.1-0.2 s of CPU)."""
        wanted = [i for i in dict.fromkeys(obs_ids) if i not in self._places]
        self._places.update(zip(wanted, positions_of(self.scan.index, wanted).tolist(), strict=True))

    def of(self, obs_id: str) -> tuple[tuple[str, ...], list[str], str]:
        """(protection reasons, citing reflections, relevance) of one observation."""
        found = self._memo.get(obs_id)
        if found is None:
            i = self._places.get(obs_id)
            if i is None:
                i = self.scan.index.get(obs_id)
            if i is None or i < 0:
                found = ((), [], "medium")
            else:
                found = (tuple(self.scan.reasons_of(i)), sorted(self.scan.citations.get(obs_id) or ()),
                         self.scan.relevance_of(i))
            self._memo[obs_id] = found
        return found
