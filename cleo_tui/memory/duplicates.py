"""Near-duplicate live observations: a scan, and clusters at any similarity threshold.

`scan_duplicates(brain)` reads the live pool once, finds candidate pairs by
MinHash LSH (`dedup_lsh`), and verifies each with rapidfuzz (`dedup_text`);
the verified pairs do not depend on the threshold, so `scan.clusters(t)`
answers any threshold at once (a pane's slider). A cluster is a connected group
of *silent duplicates* (union-find); pairs that differ in a detail (a number,
an identifier, a path, a version, a negation) are updates, shown with the
cluster they touch (or in `scan.updates`) and never merged by default.

The suggested keeper of a cluster is its protected member first, then the most
cited, then the highest quality, then the newest; the reason says which rule
decided. By default a merge evicts the members that are duplicates of the
keeper itself and not protected (`Cluster.merge_ids`); `tokens_saved` is what
evicting them takes off the pool (see `tokenizers`).

Progress is reported through `progress(done, total, stage)`; `cancel` (a
`threading.Event` or any callable returning True) is checked between batches
and stops the scan with `ScanCancelled`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.errors import BrainError
from cleo_tui.brain.store import Brain
from cleo_tui.memory import dedup_lsh, mapping, tags
from cleo_tui.memory.dedup_text import (
    LENGTH_GUARD,
    TextKey,
    compare,
    similarities,
    text_key,
    verdict,
)
from cleo_tui.memory.seed_types import render_line
from cleo_tui.memory.tokenizers import Tokenizer, get_tokenizer

if TYPE_CHECKING:
    from cleo_tui.memory.dedup_merge import MergeRequest

DEFAULT_THRESHOLD = 0.85
MIN_THRESHOLD = 0.7      # verified pairs below this are not kept (no slider goes lower)
FULL_MATRIX_LIMIT = 12   # larger clusters get keeper-to-member similarities only
DETAILS_PER_CLUSTER = 20  # the most similar "differs in a detail" pairs shown with a cluster
_VERIFY_BATCH = 5_000
_READ_CHUNK = 4_000

ScanProgress = Callable[[int, int, str], None]
Cancel = threading.Event | Callable[[], bool]


class ScanCancelled(BrainError):
    """The scan was cancelled before it finished; nothing was changed."""


class BadThreshold(BrainError):
    """A similarity threshold outside 0.5..1."""


def parse_threshold(text: str | float) -> float:
    """A threshold from what a user typed: `0.9`, `.85`, or a percentage `90`."""
    try:
        value = float(str(text).strip().rstrip("%"))
    except ValueError:
        value = float("nan")
    if 1 < value <= 100:
        value /= 100
    if not (MIN_THRESHOLD <= value <= 1):
        raise BadThreshold(f"The similarity threshold must be a number from {MIN_THRESHOLD} to 1 (or 70 to 100 "
                           f"as a percentage), such as 0.85; got {str(text)[:40]!r}.")
    return value


@dataclass(slots=True)
class Member:
    """One observation of a cluster, with everything a reviewer needs to choose."""

    id: str
    title: str
    content: str
    created_at: str
    quality: float | None
    citations: int
    citing: list[str]
    relevance: str
    tokens: int                       # of its pool line, in the scan's tokenizer
    protected: tuple[str, ...] = ()   # protection reasons; empty: not protected
    units: int = 0                    # its pool line's units plus the newline (see tokenizers)

    @property
    def is_protected(self) -> bool:
        return bool(self.protected)


@dataclass(frozen=True, slots=True)
class Pair:
    """Two members compared: similarity 0..1, and the details only one of them has."""

    a: str
    b: str
    similarity: float
    kind: str                  # 'duplicate', 'detail' (differs in a detail) or 'apart' (below the threshold)
    only_a: tuple[str, ...] = ()
    only_b: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "similarity": self.similarity, "kind": self.kind,
                "only_a": list(self.only_a), "only_b": list(self.only_b)}


@dataclass
class Cluster:
    """A group of silent duplicates, the updates touching it, and the suggested merge."""

    members: list[Member]            # the duplicates, keeper first
    keep: str
    reason: str
    pairs: list[Pair]                # similarities among members (keeper-to-member for large clusters)
    details: list[Pair]              # pairs that differ in a detail, with a member on one side (the most similar)
    related: list[Member]            # members of `details` that are not in `members`
    merge_ids: list[str]             # evicted by default: duplicates of the keeper, not protected
    tokens_saved: int
    tokenizer: Tokenizer = field(repr=False, default_factory=lambda: get_tokenizer("chars4"))

    @property
    def ids(self) -> list[str]:
        return [m.id for m in self.members]

    @property
    def similarity(self) -> float:
        """The lowest similarity between the keeper and a member it would absorb (1.0 alone)."""
        values = [p.similarity for p in self.pairs if self.keep in (p.a, p.b) and p.kind == "duplicate"]
        return min(values, default=1.0)

    @property
    def protected_ids(self) -> list[str]:
        return [m.id for m in self.members if m.is_protected and m.id != self.keep]

    def member(self, observation_id: str) -> Member:
        for m in (*self.members, *self.related):
            if m.id == observation_id:
                return m
        raise KeyError(observation_id)

    def tokens_saved_for(self, ids: Iterable[str]) -> int:
        """Tokens a merge evicting `ids` takes off the pool (each pool line and its newline)."""
        return self.tokenizer.finish(sum(self.member(i).units for i in set(ids)))

    def request(self, keep: str | None = None, others: Iterable[str] | None = None) -> MergeRequest:
        """What to merge: `keep` absorbs `others` (default: the suggestion), protection reasons attached."""
        from cleo_tui.memory.dedup_merge import MergeRequest

        keep = keep or self.keep
        chosen = tuple(dict.fromkeys(self.merge_ids if others is None and keep == self.keep else
                                     (others if others is not None else [i for i in self.ids if i != keep])))
        protected = {i: self.member(i).protected for i in chosen if self.member(i).protected}
        return MergeRequest(keep, tuple(i for i in chosen if i != keep), protected)

    def to_json(self) -> dict[str, Any]:
        """The CLI's JSON shape (DESIGN §3), with more keys for scripts."""
        return {
            "keep": self.keep, "members": self.ids, "similarity": self.similarity,
            "tokens_saved": self.tokens_saved, "reason": self.reason, "merge": self.merge_ids,
            "protected": {m.id: list(m.protected) for m in self.members if m.protected},
            "pairs": [p.to_json() for p in self.pairs],
            "details": [p.to_json() for p in self.details],
            "titles": {m.id: m.title for m in (*self.members, *self.related)},
        }


@dataclass
class ScanStats:
    rows: int = 0
    signatures_computed: int = 0
    candidates: int = 0
    verified: int = 0
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass
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
    differs: Any                       # numpy bool: a detail differs
    tokenizer: Tokenizer
    stats: ScanStats
    protection: dict[str, tuple[str, ...]]
    citing: dict[str, list[str]]
    relevance: dict[str, str]
    _keys: dict[int, TextKey] = field(default_factory=dict, repr=False)
    _memo: dict[float, tuple[list[list[int]], Any]] = field(default_factory=dict, repr=False)

    def _key(self, index: int) -> TextKey:
        key = self._keys.get(index)
        if key is None:
            key = self._keys[index] = TextKey.decode(self.encoded[index])
        return key

    def _member(self, index: int) -> Member:
        row = self.rows[index]
        relevance = self.relevance.get(row.id, "medium")
        line = render_line(row.id, mapping.minute_timestamp(row.created_at), relevance, row.content)
        citing = self.citing.get(row.id, [])
        units = self.tokenizer.line_units(line)
        return Member(row.id, row.title, row.content, row.created_at, row.quality, len(citing), citing, relevance,
                      self.tokenizer.finish(units), self.protection.get(row.id, ()), units + 1)

    def _groups(self, threshold: float) -> tuple[list[list[int]], Any]:
        """(duplicate groups, cluster number of each row or -1) at `threshold`, memoised."""
        import numpy as np

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
        import numpy as np

        groups, group_of = self._groups(threshold)
        updates = np.nonzero((self.score >= threshold) & self.differs)[0]
        touching: dict[int, list[tuple[int, int]]] = {}
        near = updates[(group_of[self.left[updates]] >= 0) | (group_of[self.right[updates]] >= 0)]
        for pair in near[np.argsort(-self.score[near], kind="stable")].tolist():
            i, j = int(self.left[pair]), int(self.right[pair])
            shown = touching.setdefault(int(group_of[i] if group_of[i] >= 0 else group_of[j]), [])
            if len(shown) < DETAILS_PER_CLUSTER:
                shown.append((i, j))
        built = [self._cluster(group, touching.get(g, []), threshold) for g, group in enumerate(groups)]
        return sorted(built, key=lambda c: (-c.tokens_saved, -len(c.members), c.keep))

    def updates(self, threshold: float = DEFAULT_THRESHOLD, limit: int | None = None) -> list[Pair]:
        """Pairs that differ in a detail and touch no cluster ("capped at 30 s" / "at 60 s"), most similar first."""
        import numpy as np

        _, group_of = self._groups(threshold)
        chosen = np.nonzero((self.score >= threshold) & self.differs & (group_of[self.left] < 0)
                            & (group_of[self.right] < 0))[0]
        chosen = chosen[np.argsort(-self.score[chosen], kind="stable")][:limit]
        return [self._pair(int(self.left[k]), int(self.right[k]), threshold) for k in chosen.tolist()]

    def update_count(self, threshold: float = DEFAULT_THRESHOLD) -> int:
        _, group_of = self._groups(threshold)
        return int(((self.score >= threshold) & self.differs & (group_of[self.left] < 0)
                    & (group_of[self.right] < 0)).sum())

    def _pair(self, i: int, j: int, threshold: float) -> Pair:
        verdict = compare(self._key(i), self._key(j))
        kind = "duplicate" if verdict.is_duplicate(threshold) else "detail" if verdict.is_update(threshold) else "apart"
        return Pair(self.rows[i].id, self.rows[j].id, verdict.similarity, kind, verdict.only_a, verdict.only_b)

    def _cluster(self, group: list[int], detail_pairs: list[tuple[int, int]], threshold: float) -> Cluster:
        members = {i: self._member(i) for i in group}
        keeper, reason = suggest_keeper(list(members.values()))
        keep_index = next(i for i, m in members.items() if m.id == keeper.id)
        ordered = [keep_index, *[i for i in group if i != keep_index]]
        if len(group) <= FULL_MATRIX_LIMIT:
            index_pairs = [(a, b) for n, a in enumerate(ordered) for b in ordered[n + 1:]]
        else:
            index_pairs = [(keep_index, b) for b in ordered[1:]]
        pairs = [self._pair(a, b, threshold) for a, b in index_pairs]
        with_keeper = {p.b: p for p in pairs if p.a == keeper.id}
        merge = [self.rows[b].id for b in ordered[1:]
                 if with_keeper[self.rows[b].id].kind == "duplicate" and not members[b].protected]
        outside = sorted({end for pair in detail_pairs for end in pair if end not in members})
        details = [self._pair(i, j, threshold) for i, j in sorted(detail_pairs)]
        cluster = Cluster([members[i] for i in ordered], keeper.id, reason, pairs, details,
                          [self._member(i) for i in outside], merge, 0, self.tokenizer)
        cluster.tokens_saved = cluster.tokens_saved_for(merge)
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


def _keeper_rank(m: Member) -> tuple:
    return (m.is_protected, m.citations, -1.0 if m.quality is None else m.quality, m.created_at, m.id)


def suggest_keeper(members: Sequence[Member]) -> tuple[Member, str]:
    """The member to keep and why: protected, then most cited, then highest quality, then newest."""
    ranked = sorted(members, key=_keeper_rank, reverse=True)
    best, rest = ranked[0], ranked[1:]
    if not rest:
        return best, "the only member"
    runner = rest[0]
    if best.is_protected and not runner.is_protected:
        return best, f"protected ({best.protected[0]})" + ("" if len(best.protected) == 1 else
                                                            f" and {len(best.protected) - 1} more reason(s)")
    prefix = "protected like another member; " if best.is_protected else ""
    if best.citations != runner.citations:
        return best, (f"{prefix}most cited: by {best.citations} reflection{'s' if best.citations != 1 else ''} "
                      f"(next: {runner.citations})")
    if best.quality != runner.quality and best.quality is not None:
        next_quality = "none" if runner.quality is None else f"{runner.quality:.2f}"
        return best, f"{prefix}highest quality: {best.quality:.2f} (next: {next_quality})"
    if best.created_at != runner.created_at:
        return best, f"{prefix}newest: created {best.created_at} (next: {runner.created_at})"
    return best, f"{prefix}all else equal; the last id"


def _checker(cancel: Cancel | None) -> Callable[[], None]:
    def check() -> None:
        if cancel is not None and (cancel.is_set() if isinstance(cancel, threading.Event) else cancel()):
            raise ScanCancelled("The duplicate scan was cancelled; nothing was changed.")
    return check


def _read_live(brain: Brain, check: Callable[[], None]) -> list[_Row]:
    """Live observations, oldest first, with the columns the scan needs (absent ones as NULL)."""
    have = brain.features.columns(cs.OBSERVATIONS)
    wanted = ("id", "title", "narrative", "created_at", "quality_score")
    select = ", ".join(f'"{c}"' if c in have else f'NULL AS "{c}"' for c in wanted)
    where = " WHERE invalid_at IS NULL" if "invalid_at" in have else ""
    order = "created_at, rowid" if "created_at" in have else "rowid"
    rows: list[_Row] = []
    with brain.lock:
        cursor = brain.conn.execute(f"SELECT {select} FROM {cs.OBSERVATIONS}{where} ORDER BY {order}")
        try:
            while chunk := cursor.fetchmany(_READ_CHUNK):
                check()
                for obs_id, title, narrative, created_at, quality in chunk:
                    content = mapping.content_of({"narrative": narrative, "title": title})
                    rows.append(_Row(mapping.as_text(obs_id), mapping.as_text(title), content,
                                     mapping.as_text(created_at),
                                     float(quality) if isinstance(quality, (int, float)) else None))
        finally:
            cursor.close()
    return rows


def scan_duplicates(brain: Brain, tokenizer: str | Tokenizer = "chars4", progress: ScanProgress | None = None,
                    cancel: Cancel | None = None, cache: dedup_lsh.SignatureCache | None = None) -> DuplicateScan:
    """Find similar pairs among the live observations (safe in a worker thread on a reader brain)."""
    tokenizer = get_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer
    check = _checker(cancel)
    report = progress or (lambda done, total, stage: None)
    stats, clock = ScanStats(), time.perf_counter()
    with tags.gc_paused():
        rows = _read_live(brain, check)
        stats.rows = len(rows)
        report(0, len(rows), "reading")
        stats.seconds["read"] = time.perf_counter() - clock
        hashes = [dedup_lsh.text_hash(r.content) for r in rows]
        check()
        sig, encoded, stats.signatures_computed = dedup_lsh.cached_signatures(
            hashes, lambda index: text_key(rows[index].content).encode(), cache)
        stats.seconds["signatures"] = time.perf_counter() - clock
        check()
        report(0, len(rows), "candidates")
        left, right, _ = dedup_lsh.candidate_pairs(sig, (sig != 0xFFFFFFFF).any(axis=1))
        stats.candidates = len(left)
        stats.seconds["candidates"] = time.perf_counter() - clock
        keys: dict[int, TextKey] = {}
        left, right, score, differs = _verify(encoded, left, right, keys, check, report)
        stats.verified = len(left)
        stats.seconds["verify"] = time.perf_counter() - clock
        paired = set(left.tolist()) | set(right.tolist())
        protection, citing, relevance = _tags_of(brain, paired, rows)
        stats.seconds["tags"] = time.perf_counter() - clock
    report(len(rows), len(rows), "done")
    return DuplicateScan(rows, encoded, left, right, score, differs, tokenizer, stats, protection, citing,
                         relevance, keys)


def _verify(encoded: list[str], left: Any, right: Any, keys: dict[int, TextKey], check: Callable[[], None],
            report: ScanProgress) -> tuple[Any, Any, Any, Any]:
    """Verify candidate pairs with rapidfuzz; keep those comparable and at or above MIN_THRESHOLD.

    Returns (left, right, similarity, differs in a detail) as numpy arrays.
    """
    import numpy as np

    def key(index: int) -> TextKey:
        found = keys.get(index)
        if found is None:
            found = keys[index] = TextKey.decode(encoded[index])
        return found

    kept_left: list[int] = []
    kept_right: list[int] = []
    scores: list[float] = []
    differs: list[bool] = []
    distinct = np.zeros(len(encoded), dtype=np.int64)
    for index in np.unique(np.concatenate((left, right))).tolist():
        distinct[index] = key(index).distinct
    small, large = np.minimum(distinct[left], distinct[right]), np.maximum(distinct[left], distinct[right])
    guard = (large == 0) | (small >= LENGTH_GUARD * large)   # the length guard of `comparable`, at once
    left, right = left[guard].tolist(), right[guard].tolist()
    total = len(left)
    for start in range(0, total, _VERIFY_BATCH):
        check()
        report(start, total, "verifying")
        batch_left, batch_right = left[start:start + _VERIFY_BATCH], right[start:start + _VERIFY_BATCH]
        scored = similarities([keys[i].joined for i in batch_left], [keys[j].joined for j in batch_right])
        for i, j, score in zip(batch_left, batch_right, scored, strict=False):
            if score >= MIN_THRESHOLD:
                key_i, key_j = keys[i], keys[j]
                kept_left.append(i)
                kept_right.append(j)
                scores.append(score)
                differs.append(key_i.details != key_j.details or verdict(key_i, key_j, score).differs_in_detail)
    return (np.asarray(kept_left, dtype=np.int64), np.asarray(kept_right, dtype=np.int64),
            np.round(np.asarray(scores, dtype=np.float64), 4), np.asarray(differs, dtype=bool))


def _tags_of(brain: Brain, indexes: set[int], rows: list[_Row]
             ) -> tuple[dict[str, tuple[str, ...]], dict[str, list[str]], dict[str, str]]:
    """Protection reasons, citing reflections and relevance of the rows in verified pairs.

    Protection needs the whole live pool (an identifier is unique against all of
    it), so the pool is scanned with the tagger only when some pair was found.
    """
    if not indexes:
        return {}, {}, {}
    wanted = {rows[i].id for i in indexes}
    scan = tags.scan_brain(brain, live_only=True)
    protection, citing, relevance = {}, {}, {}
    for obs_id in wanted:
        i = scan.index.get(obs_id)
        if i is None:
            continue
        reasons = scan.reasons_of(i)
        if reasons:
            protection[obs_id] = tuple(reasons)
        citing[obs_id] = sorted(scan.citations.get(obs_id) or ())
        relevance[obs_id] = scan.relevance_of(i)
    return protection, citing, relevance
