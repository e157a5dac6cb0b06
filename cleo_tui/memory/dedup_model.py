"""What the duplicate finder finds: clusters of members, the pairs compared, and the suggested keeper.

`duplicates.scan_duplicates` builds these; the TUI's Duplicates pane, `cleo-tui dedup`
and `dedup_merge` read them. A threshold is a similarity from `MIN_THRESHOLD` to 1
(`parse_threshold` reads what a user typed). The suggested keeper of a cluster is
its protected member first, then the most cited, then the highest quality, then the
newest (`suggest_keeper`); the reason says which rule decided.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any

from cleo_tui.brain.errors import BrainError
from cleo_tui.memory.tokenizers import Tokenizer, get_tokenizer
from cleo_tui.safe_text import plural

if TYPE_CHECKING:
    from cleo_tui.memory.dedup_merge import MergeRequest

DEFAULT_THRESHOLD = 0.85
MIN_THRESHOLD = 0.7      # verified pairs below this are not kept (no slider goes lower)

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
    related_titles: dict[str, str]   # id → title of each member of `details` not in `members` (see `related`)
    merge_ids: list[str]             # evicted by default: duplicates of the keeper, not protected
    tokens_saved: int
    tokenizer: Tokenizer = field(repr=False, default_factory=lambda: get_tokenizer("chars4"))
    # Makes the `related` members of these ids (None: there are none).
    related_of: Callable[[list[str]], list[Member]] | None = field(default=None, repr=False, compare=False)

    @cached_property
    def related(self) -> list[Member]:
        """The members of `details` that are not in `members`, in `related_titles`' order; made when first
        asked for (each with its tags and tokens): `dedup --json` needs only their titles, and a pane
        only the highlighted cluster's (0.1 s of CPU less for the whole pool's clusters at 100,000 demo rows)."""
        return self.related_of(list(self.related_titles)) if self.related_of and self.related_titles else []

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
        for m in self.members:
            if m.id == observation_id:
                return m
        if observation_id in self.related_titles:  # (`related` is made only when one of them is asked for)
            for m in self.related:
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
        seen = {i: (self.member(i).title, self.member(i).content) for i in (keep, *chosen)}
        return MergeRequest(keep, tuple(i for i in chosen if i != keep), protected, seen)

    def to_json(self) -> dict[str, Any]:
        """The CLI's JSON shape (DESIGN §3), with more keys for scripts."""
        return {
            "keep": self.keep, "members": self.ids, "similarity": self.similarity,
            "tokens_saved": self.tokens_saved, "reason": self.reason, "merge": self.merge_ids,
            "protected": {m.id: list(m.protected) for m in self.members if m.protected},
            "pairs": [p.to_json() for p in self.pairs],
            "details": [p.to_json() for p in self.details],
            "titles": {**{m.id: m.title for m in self.members}, **self.related_titles},
        }


@dataclass
class ScanStats:
    rows: int = 0
    signatures_computed: int = 0
    candidates: int = 0
    verified: int = 0
    pairs_computed: int = 0     # candidate pairs judged afresh (not in the scan cache)
    seconds: dict[str, float] = field(default_factory=dict)


def _keeper_rank(m: Member) -> tuple[bool, int, float, str, str]:
    return (m.is_protected, m.citations, -1.0 if m.quality is None else m.quality, _moment(m.created_at), m.id)


def _moment(created_at: object) -> str:
    """`created_at` as a UTC time that sorts (ISO, without a zone), or "" when it is no real time
    ("9999-99-99 99:99:99" must not be the newest; "…Z" and "… 10:00:00" compare as the same clock)."""
    try:
        moment = datetime.fromisoformat(str(created_at))
    except ValueError:
        return ""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.isoformat()


def suggest_keeper(members: Sequence[Member]) -> tuple[Member, str]:
    """The member to keep and why: protected, then most cited, then highest quality, then newest."""
    ranked = sorted(members, key=_keeper_rank, reverse=True)
    best, rest = ranked[0], ranked[1:]
    if not rest:
        return best, "the only member"
    runner = rest[0]
    if best.is_protected and not runner.is_protected:
        return best, f"protected ({best.protected[0]})" + ("" if len(best.protected) == 1 else
                                                            f" and {plural(len(best.protected) - 1, 'more reason')}")
    prefix = "protected like another member; " if best.is_protected else ""
    if best.citations != runner.citations:
        return best, (f"{prefix}most cited: by {best.citations} reflection{'s' if best.citations != 1 else ''} "
                      f"(next: {runner.citations})")
    if best.quality != runner.quality and best.quality is not None:
        next_quality = "none" if runner.quality is None else f"{runner.quality:.2f}"
        return best, f"{prefix}highest quality: {best.quality:.2f} (next: {next_quality})"
    if _moment(best.created_at) != _moment(runner.created_at):
        shown = runner.created_at if _moment(runner.created_at) else f"{runner.created_at or '–'}, not a date"
        return best, f"{prefix}newest: created {best.created_at} (next: {shown})"
    return best, f"{prefix}all else equal; the last id"
