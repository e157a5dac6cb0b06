"""The History pane's chart: live tokens per day as an area, evictions beneath colored by cause.

`chart_rows` is a pure function from the days to rows of cells (a character and a
style key), so what the chart shows is unit-tested without a terminal. One column
per day (several when the days are few), or one per bucket of days when there are
more days than columns (spread so every column is used): a bucket shows the live tokens at its last day's end and
the evictions of all its days. The area is scaled from zero, so growth and pruning
read true to size; any day with an eviction shows at least ▁. The rows added per
column are drawn by Textual's Sparkline under the area (same columns).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Sparkline, Static

from cleo_tui.memory.history import CLEO_CONSOLIDATION, CLEO_REFLECTOR, CLEO_SWEEP, CLEO_TUI_PREFIX, Day

LEVELS = " ▁▂▃▄▅▆▇█"
LABEL = 8  # width of the row labels on the left
MAX_DAY_WIDTH = 6  # columns one day may take when the days are few
TICK_GAP = 2  # at least this many blanks between two date labels

# style keys of the cells; the widget maps them to its component classes
TOKENS, LABEL_STYLE, AXIS, TUI, REFLECTOR, CONSOLIDATION, UNKNOWN_STYLE = (
    "tokens", "label", "axis", "tui", "reflector", "consolidation", "unknown")
SWEEP = "sweep"
CAUSE_ORDER = (TUI, REFLECTOR, CONSOLIDATION, SWEEP, UNKNOWN_STYLE)
LEGEND = {TUI: "cleo-tui", REFLECTOR: "CLEO reflector", CONSOLIDATION: "CLEO consolidation",
          UNKNOWN_STYLE: "unknown", SWEEP: "CLEO sweep"}


def cause_style(cause: str) -> str:
    """The style key of an eviction cause id."""
    if cause.startswith(CLEO_TUI_PREFIX):
        return TUI
    return {CLEO_REFLECTOR: REFLECTOR, CLEO_CONSOLIDATION: CONSOLIDATION, CLEO_SWEEP: SWEEP}.get(cause, UNKNOWN_STYLE)


@dataclass(frozen=True)
class Cell:
    char: str
    style: str = ""


Row = list[Cell]


@dataclass
class Bucket:
    """One chart column's days: the first and last day, tokens at the end, rows added, evictions by style."""

    first: str
    last: str
    live_tokens: int = 0
    added: int = 0
    evicted: dict[str, int] = field(default_factory=dict)

    @property
    def evicted_total(self) -> int:
        return sum(self.evicted.values())

    @property
    def dominant(self) -> str:
        """The style of the cause with the most evictions (ties: cleo-tui, reflector, consolidation, unknown)."""
        return max(CAUSE_ORDER, key=lambda s: (self.evicted.get(s, 0), -CAUSE_ORDER.index(s)))


def bucket_days(days: Sequence[Day], columns: int) -> tuple[list[Bucket], int]:
    """The columns of the chart, oldest first, and how many screen columns each takes."""
    columns = max(1, columns)
    if not days:
        return [], 1
    if len(days) <= columns:
        groups = [[d] for d in days]
        width = max(1, min(MAX_DAY_WIDTH, columns // len(days)))
    else:  # every column used: column i holds days [i·n/c, (i+1)·n/c), one or two days more or less
        n = len(days)
        groups = [list(days[i * n // columns:(i + 1) * n // columns]) for i in range(columns)]
        width = 1
    buckets = []
    for group in groups:
        b = Bucket(group[0].day, group[-1].day, group[-1].live_tokens, sum(d.added for d in group))
        for d in group:
            for cause, n in d.evicted.items():
                b.evicted[cause_style(cause)] = b.evicted.get(cause_style(cause), 0) + n
        buckets.append(b)
    return buckets, width


def short_number(value: int) -> str:
    """12,345 → 12k, 1,234,567 → 1.2M (axis labels)."""
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f}M"
    if value >= 10_000:
        return f"{value // 1000}k"
    return f"{value:,}"


def _eighths(value: int, peak: int, rows: int) -> int:
    """How many eighths of `rows` cells a value fills (a value above zero fills at least one)."""
    if value <= 0 or peak <= 0:
        return 0
    return max(1, min(rows * 8, round(value / peak * rows * 8)))


def bar_rows(values: Sequence[int], styles: Sequence[str], rows: int, width: int) -> list[Row]:
    """Vertical bars of block characters, top row first; each value `width` columns wide."""
    peak = max(values, default=0)
    out: list[Row] = []
    for r in reversed(range(rows)):
        line: Row = []
        for value, style in zip(values, styles, strict=True):
            fill = _eighths(value, peak, rows) - r * 8
            char = LEVELS[8] if fill >= 8 else LEVELS[max(0, fill)]
            line += [Cell(char, style if char != " " else "")] * width
        out.append(line)
    return out


def _label(text: str) -> Row:
    return [Cell(ch, LABEL_STYLE) for ch in text[:LABEL - 1].ljust(LABEL)]


def axis_row(buckets: Sequence[Bucket], width: int, span: int) -> Row:
    """Dates under the columns: the first, the last, and as many between as fit."""
    cells: Row = [Cell(" ")] * span
    if not buckets:
        return cells
    first, last = buckets[0].first, buckets[-1].last
    positions = {0: first}
    # The last date ends under the last column; on a short history it moves right so the two never
    # run into each other, and is left out when there is no room for it (or it is the first date).
    last_at = max(len(buckets) * width - len(last), len(first) + TICK_GAP)
    if last != first and last_at + len(last) <= span:
        positions[last_at] = last
    else:
        last_at = len(first)
    step = 10 + TICK_GAP
    for i, b in enumerate(buckets):
        at = i * width
        if step <= at <= last_at - step and all(abs(at - p) >= step for p in positions):
            positions[at] = b.first
    for at, text in sorted(positions.items()):
        for k, ch in enumerate(text):
            if at + k < span:
                cells[at + k] = Cell(ch, AXIS)
    return cells


@dataclass(frozen=True)
class ChartRows:
    """The chart's rows (label included), the buckets and the columns each takes (for the Sparkline)."""

    title: Row
    tokens: list[Row]
    evictions: list[Row]
    axis: Row
    buckets: list[Bucket]
    width: int

    @property
    def added(self) -> list[int]:
        """Rows added per screen column, for the Sparkline between the area and the bars."""
        return [b.added for b in self.buckets for _ in range(self.width)]


def chart_rows(days: Sequence[Day], width: int, token_rows: int = 4, eviction_rows: int = 1) -> ChartRows:
    """The chart for `days` (oldest first) in `width` screen columns, labels included."""
    span = max(4, width - LABEL)
    buckets, w = bucket_days(days, span)
    peak = max((b.live_tokens for b in buckets), default=0)
    area = bar_rows([b.live_tokens for b in buckets], [TOKENS] * len(buckets), token_rows, w)
    tokens = []
    for i, line in enumerate(area):
        label = short_number(peak) if i == 0 else "tokens" if i == 1 and token_rows > 2 else \
            "0" if i == token_rows - 1 else ""
        tokens.append(_label(label) + line)
    evicted_peak = max((b.evicted_total for b in buckets), default=0)
    bars = bar_rows([b.evicted_total for b in buckets], [b.dominant for b in buckets], eviction_rows, w)
    # One row has room for the word only: its scale (the peak) goes into the title instead.
    names = ["evicted"] if eviction_rows == 1 else \
        [short_number(evicted_peak)] + [""] * (eviction_rows - 2) + ["evicted"]
    evictions = [_label(name) + line for name, line in zip(names, bars, strict=True)]
    seen = [s for s in CAUSE_ORDER if any(b.evicted.get(s) for b in buckets)]
    evicted_label = f"evicted (peak {short_number(evicted_peak)}):" if eviction_rows == 1 else "evicted:"
    title: Row = _label("") + [Cell(ch, LABEL_STYLE) for ch in f"live tokens · {evicted_label}"]
    for style in seen:
        title += [Cell(" "), Cell("■", style)] + [Cell(ch, LABEL_STYLE) for ch in " " + LEGEND[style]]
    if not seen:
        title += [Cell(ch, LABEL_STYLE) for ch in " none"]
    return ChartRows(title, tokens, evictions, _label("") + axis_row(buckets, w, span), buckets, w)


def row_text(row: Row, styles: dict[str, Style]) -> Text:
    """One row of cells as Rich Text (the cells are ours: no markup is parsed)."""
    text = Text(no_wrap=True, overflow="crop")
    for cell in row:
        text.append(cell.char, styles.get(cell.style) or Style())
    return text


class HistoryChart(Vertical):
    """Live tokens (area), rows added (Sparkline), evictions by cause (bars), dates."""

    COMPONENT_CLASSES = {f"history-chart--{s}" for s in (TOKENS, LABEL_STYLE, AXIS, *CAUSE_ORDER)}
    DEFAULT_CSS = """
    HistoryChart { height: auto; padding: 0 1 0 0; }
    HistoryChart > Static { height: auto; text-wrap: nowrap; text-overflow: clip; }
    HistoryChart > Horizontal { height: 1; }
    HistoryChart .history-added-label { width: 8; color: $text-muted; }
    HistoryChart Sparkline { width: 1; }
    HistoryChart Sparkline > .sparkline--max-color { color: $success; }
    HistoryChart Sparkline > .sparkline--min-color { color: $success 30%; }
    HistoryChart > .history-chart--tokens { color: $primary; }
    HistoryChart > .history-chart--label { color: $text-muted; }
    HistoryChart > .history-chart--axis { color: $text-muted; }
    HistoryChart > .history-chart--tui { color: $accent; }
    HistoryChart > .history-chart--reflector { color: $warning; }
    HistoryChart > .history-chart--consolidation { color: $secondary; }
    HistoryChart > .history-chart--unknown { color: $error; }
    HistoryChart > .history-chart--sweep { color: $success; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.days: list[Day] = []
        self.token_rows = 4
        self.eviction_rows = 1
        self.rows: ChartRows | None = None

    def compose(self) -> ComposeResult:
        yield Static(classes="history-chart-top")
        with Horizontal():
            yield Static("added", classes="history-added-label")
            yield Sparkline([], id="history-added")
        yield Static(classes="history-chart-bottom")

    def set_days(self, days: Sequence[Day], token_rows: int, eviction_rows: int) -> None:
        """Draw `days` (oldest first) with this many rows for the area and for the bars."""
        self.days, self.token_rows, self.eviction_rows = list(days), token_rows, eviction_rows
        self.redraw()

    def on_resize(self) -> None:
        self.redraw()

    def redraw(self) -> None:
        if not self.is_mounted or not self.size.width:
            return
        rows = chart_rows(self.days, self.size.width - 1, self.token_rows, self.eviction_rows)
        self.rows = rows
        styles = {s: self.get_component_rich_style(f"history-chart--{s}", partial=True)
                  for s in (TOKENS, LABEL_STYLE, AXIS, *CAUSE_ORDER)}
        top = Text("\n").join(row_text(r, styles) for r in [rows.title, *rows.tokens])
        bottom = Text("\n").join(row_text(r, styles) for r in [*rows.evictions, rows.axis])
        if not self.days:
            top = Text("No dated activity in this brain yet.", style="italic")
        top.no_wrap = bottom.no_wrap = True
        top.overflow = bottom.overflow = "crop"
        self.query_one(".history-chart-top", Static).update(top)
        self.query_one(".history-chart-bottom", Static).update(bottom)
        spark = self.query_one(Sparkline)
        spark.styles.width = max(1, len(rows.added))
        spark.data = rows.added
