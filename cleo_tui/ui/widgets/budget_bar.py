"""A context-window style gauge of one prune preview: protected | kept | dropped, against the target."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.style import Style
from rich.text import Text
from textual.widget import Widget


@dataclass(frozen=True)
class BarFigures:
    """Token figures of one preview (all in tokens of the preview's tokenizer)."""

    budget: int
    target: int
    protected_tokens: int
    kept_tokens: int  # the unprotected rows that stay
    dropped_tokens: int

    @property
    def pool_tokens(self) -> int:
        return self.protected_tokens + self.kept_tokens + self.dropped_tokens


def bar_cells(figures: BarFigures, width: int) -> list[str]:
    """One kind per cell: 'protected', 'kept', 'dropped' or 'free' (room left under the budget).

    The scale is the larger of the pool and the budget, so the whole pool and the
    whole budget always fit on the line.
    """
    scale = max(figures.pool_tokens, figures.budget, 1)
    cells: list[str] = []
    edge = 0.0
    for kind, tokens in (("protected", figures.protected_tokens), ("kept", figures.kept_tokens),
                         ("dropped", figures.dropped_tokens)):
        edge += tokens
        cells += [kind] * (round(edge / scale * width) - len(cells))
    return cells + ["free"] * (width - len(cells))


def column_of(tokens: int, scale: int, width: int) -> int:
    """The cell where `tokens` falls on a bar of `width` cells."""
    return max(0, min(width - 1, round(tokens / max(scale, 1) * width) - 1))


class BudgetBar(Widget):
    """Two lines: the gauge with the target (┃) and budget (╎) marks, then a legend with the figures."""

    COMPONENT_CLASSES = {"budget-bar--protected", "budget-bar--kept", "budget-bar--dropped",
                         "budget-bar--free", "budget-bar--target"}
    DEFAULT_CSS = """
    BudgetBar { height: 2; padding: 0 1; }
    BudgetBar > .budget-bar--protected { color: $warning; }
    BudgetBar > .budget-bar--kept { color: $success; }
    BudgetBar > .budget-bar--dropped { color: $error 70%; }
    BudgetBar > .budget-bar--free { color: $panel; }
    BudgetBar > .budget-bar--target { color: $text; text-style: bold; }
    """
    GLYPHS = {"protected": "█", "kept": "█", "dropped": "░", "free": "·"}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.figures: BarFigures | None = None
        self.stale = False

    def show(self, figures: BarFigures | None, stale: bool = False) -> None:
        """Draw `figures`; `stale` says they are the last valid budget's, not the box's."""
        self.figures = figures
        self.stale = stale
        self.refresh()

    def _style(self, kind: str) -> Style:
        return self.get_component_rich_style(f"budget-bar--{kind}", partial=True)

    def render(self) -> Text:
        figures = self.figures
        if figures is None:
            return Text("no preview yet", style="italic")
        width = max(10, self.content_region.width)
        scale = max(figures.pool_tokens, figures.budget, 1)
        marks = {column_of(figures.budget, scale, width): "╎", column_of(figures.target, scale, width): "┃"}
        bar = Text()
        for column, kind in enumerate(bar_cells(figures, width)):
            mark = marks.get(column)
            if mark is not None:
                bar.append(mark, self._style("target"))
            else:
                bar.append(self.GLYPHS[kind], self._style(kind))
        legend = Text()
        if self.stale:  # first, so a narrow terminal cuts figures rather than this
            legend.append("last valid budget · ", style="bold red")
        for kind, label, tokens in (("protected", "protected", figures.protected_tokens),
                                    ("kept", "kept", figures.kept_tokens),
                                    ("dropped", "dropped", figures.dropped_tokens)):
            legend.append(self.GLYPHS[kind] + " ", self._style(kind))
            legend.append(f"{label} {tokens:,}   ")
        legend.append("┃ ", self._style("target"))
        legend.append(f"target {figures.target:,}   ")
        legend.append("╎ ", self._style("target"))
        legend.append(f"budget {figures.budget:,}")
        return Text("\n").join([bar, legend])
