"""A small chart of a prepared pool across budgets: tokens kept and rows dropped, the budget marked.

Drawn with block characters, one column per budget from near zero to a little past
the budget at which nothing drops. The curve is computed once per pool and width
(each point is a binary search in the pool's prefix sums); moving the budget only
moves the ▲ mark.
"""

from __future__ import annotations

import math
from typing import Any

from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from cleo_tui.memory.pruner import TARGET_SHARE, CurvePoint, PreparedPool

LEVELS = " ▁▂▃▄▅▆▇█"
LABEL = 9  # width of the row labels ("kept    ")
HEADROOM = 1.25  # the chart runs this far past the budget at which nothing drops


def chart_budgets(tokens_before: int, columns: int) -> list[int]:
    """`columns` evenly spaced budgets, the last one past the point where nothing drops."""
    top = max(columns, math.ceil(tokens_before / TARGET_SHARE * HEADROOM))
    return [max(1, round(top * (i + 1) / columns)) for i in range(columns)]


def spark(values: list[int]) -> str:
    """One line of block characters scaled to the largest value (a non-zero value shows at least ▁)."""
    peak = max(values, default=0)
    if peak <= 0:
        return LEVELS[0] * len(values)
    return "".join(LEVELS[max(1, round(v / peak * 8))] if v > 0 else LEVELS[0] for v in values)


def short_number(value: int) -> str:
    """12,345 → 12k, 1,234,567 → 1.2M: axis labels."""
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f}M"
    if value >= 10_000:
        return f"{value // 1000}k"
    return f"{value:,}"


class PruneChart(Widget):
    """Tokens kept and rows dropped against the budget; red where the prune falls back."""

    COMPONENT_CLASSES = {"prune-chart--kept", "prune-chart--dropped", "prune-chart--fell-back",
                         "prune-chart--label", "prune-chart--mark"}
    DEFAULT_CSS = """
    PruneChart { height: 4; }
    PruneChart > .prune-chart--kept { color: $success; }
    PruneChart > .prune-chart--dropped { color: $accent; }
    PruneChart > .prune-chart--fell-back { color: $error; }
    PruneChart > .prune-chart--label { color: $text-muted; }
    PruneChart > .prune-chart--mark { color: $text; text-style: bold; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.pool: PreparedPool | None = None
        self.budget = 0
        self.points: list[CurvePoint] = []

    def set_pool(self, pool: PreparedPool | None) -> None:
        self.pool = pool
        self.points = []
        self.refresh()

    def mark(self, budget: int) -> None:
        self.budget = budget
        self.refresh()

    def _curve(self, columns: int) -> list[CurvePoint]:
        if self.pool is not None and len(self.points) != columns:
            self.points = self.pool.curve(chart_budgets(self.pool.tokens_before, columns))
        return self.points

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"prune-chart--{name}", partial=True)

    def _row(self, label: str, line: str, points: list[CurvePoint], style: str) -> Text:
        text = Text(label.ljust(LABEL)[:LABEL], self._style("label"))
        for char, point in zip(line, points, strict=False):
            text.append(char, self._style("fell-back" if point.fell_back else style))
        return text

    def render(self) -> Text:
        columns = max(4, self.content_region.width - LABEL)
        points = self._curve(columns)
        if self.pool is None or not points:
            return Text("tokens kept and rows dropped across budgets appear here", style="italic")
        kept = self._row("kept", spark([p.tokens_after for p in points]), points, "kept")
        dropped = self._row("dropped", spark([p.dropped for p in points]), points, "dropped")
        top = points[-1].budget
        where = min(columns - 1, max(0, round(self.budget / top * columns) - 1))
        axis = Text("budget".ljust(LABEL), self._style("label"))
        axis.append(" " * where)
        axis.append("▲" if self.budget <= top else "▶", self._style("mark"))
        right = f"{short_number(top)}"
        axis.append(" " * max(1, columns - where - 1 - len(right)) + right, self._style("label"))
        title = Text(" " * LABEL)
        title.append("across budgets (red: fell back)", self._style("label"))
        return Text("\n").join([title, kept, dropped, axis])
