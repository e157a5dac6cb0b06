"""Rendering for the Duplicates pane: two members' words with their differences highlighted.

Every piece of brain text enters a `Text` through `append` (after `safe_text`), so
markup or escape sequences in an observation are shown literally, never obeyed.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from cleo_tui.memory.dedup_text import word_diff
from cleo_tui.memory.duplicates import Cluster, Member, Pair
from cleo_tui.safe_text import one_line

ONLY_HERE = "bold black on #D7AF5F"   # words only the left text has (or has instead)
ONLY_THERE = "bold black on #87D787"  # words only the right text has
SIDE_BY_SIDE_MIN = 100                # narrower than this, the two texts are stacked
TEXT_LIMIT = 1_200                    # characters of each text shown


def diff_texts(text_a: str, text_b: str) -> tuple[Text, Text]:
    """The two texts with the words only one of them has highlighted (word_diff's runs)."""
    left, right = Text(), Text()
    a, b = one_line(text_a, TEXT_LIMIT), one_line(text_b, TEXT_LIMIT)
    for op, words_a, words_b in word_diff(a, b):
        style_a = "" if op == "equal" else ONLY_HERE
        style_b = "" if op == "equal" else ONLY_THERE
        for side, words, style in ((left, words_a, style_a), (right, words_b, style_b)):
            if words:
                if side.plain:
                    side.append(" ")
                side.append(words, style=style)
    return left, right


def pair_similarity(cluster: Cluster, a: str, b: str) -> Pair | None:
    """The cluster's computed pair of `a` and `b` (a large cluster has keeper-to-member pairs only)."""
    return next((p for p in (*cluster.pairs, *cluster.details) if {p.a, p.b} == {a, b}), None)


def member_heading(member: Member, role: str) -> Text:
    text = Text()
    text.append(f"{role} ", style="bold")
    text.append(one_line(member.id, 40), style="bold")
    quality = "–" if member.quality is None else f"{member.quality:.2f}"
    tokens = f" · {member.tokens:,} tok" if member.tokens else ""
    text.append(f"  {member.created_at[:10]} · q {quality} · cited {member.citations}{tokens}", style="dim")
    if member.protected:
        text.append(f"\nprotected: {one_line('; '.join(member.protected), 200)}", style="bold #D7875F")
    return text


def compare_view(left: Member, left_role: str, right: Member, right_role: str, similarity: Pair | None,
                 width: int) -> RenderableType:
    """`left` and `right` with their differing words highlighted: side by side when wide, else stacked."""
    text_a, text_b = diff_texts(left.content, right.content)
    head = Text()
    head.append("Similarity ", style="bold")
    if similarity is None:
        head.append("not computed for this pair (large cluster: keeper-to-member only)", style="italic")
    else:
        head.append(f"{similarity.similarity:.2f}")
        kind = {"duplicate": "duplicates", "detail": "differs in a detail: an update, never merged by default",
                "apart": "below the threshold"}.get(similarity.kind, similarity.kind)
        head.append(f"  {kind}", style="italic")
    head.append("   ")
    head.append(" only left ", style=ONLY_HERE)
    head.append(" ")
    head.append(" only right ", style=ONLY_THERE)
    blocks_a = Group(member_heading(left, left_role), text_a)
    blocks_b = Group(member_heading(right, right_role), text_b)
    if width >= SIDE_BY_SIDE_MIN:
        grid = Table.grid(expand=True, padding=(0, 2))
        grid.add_column(ratio=1)
        grid.add_column(ratio=1)
        grid.add_row(blocks_a, blocks_b)
        return Group(head, grid)
    return Group(head, blocks_a, Text(""), blocks_b)


def updates_text(pairs: Iterable[Pair], limit: int = 4) -> Text:
    """Pairs that differ in a detail, one line each: never merged by default."""
    text = Text()
    shown = list(pairs)
    if not shown:
        return text
    text.append("Updates (differ in a detail; never merged): ", style="bold")
    for pair in shown[:limit]:
        text.append(f"\n  {one_line(pair.a, 30)} ↔ {one_line(pair.b, 30)} {pair.similarity:.2f}: ")
        text.append(one_line(", ".join(pair.only_a) or "–", 60), style=ONLY_HERE)
        text.append(" / ")
        text.append(one_line(", ".join(pair.only_b) or "–", 60), style=ONLY_THERE)
    if len(shown) > limit:
        text.append(f"\n  … and {len(shown) - limit} more", style="italic")
    return text
