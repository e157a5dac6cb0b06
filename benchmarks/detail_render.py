"""The detail panel's cost per row by narrative length: what `python -m benchmarks.detail_render
[--sizes 80,140] [--shows N]` prints.

Moving the cursor shows the new row in the Observations pane's detail panel, which wraps and
draws everything it holds. Here the real `DetailView` runs in a Textual app under Pilot at each
terminal width; the cursor's move from a row with a short narrative onto one with a narrative of
a given length (as the brain holds it, before the panel's cut at `NARRATIVE_INLINE`) is timed in
CPU until its frame is drawn (the panel's height changes, so a layout is part of it). The floor is
the move onto another short row (300 characters), measured in the same run; the ratio is against it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from textual.app import App, ComposeResult

from cleo_tui.memory.detail import ObservationDetail
from cleo_tui.ui.widgets.detail import NARRATIVE_INLINE, DetailView

FLOOR_CHARS = 300
LENGTHS = (2_000, 5_000, 20_000, 100_000)
WORDS = ("retry", "the", "connection", "src/cleo/store.ts", "TypeError:", "of", "lock", "session", "wal")


def narrative(length: int, seed: int) -> str:
    """`length` characters of words, different for each `seed` (no two shows draw the same text)."""
    words = [WORDS[(seed + k * 7) % len(WORDS)] + str(k % 97) for k in range(length // 4 + 1)]
    return " ".join(words)[:length]


class _Panel(App[None]):
    CSS = "DetailView { height: 1fr; }"

    def compose(self) -> ComposeResult:
        yield DetailView()


async def _cpu_per_show(width: int, lengths: list[int], shows: int) -> dict[int, list[float]]:
    """CPU ms of each show, by narrative length, in one app of `width` columns and 40 rows."""
    app = _Panel()
    times: dict[int, list[float]] = {n: [] for n in lengths}
    async with app.run_test(size=(width, 40)) as pilot:
        view = app.query_one(DetailView)
        await pilot.pause()
        for k in range(shows):
            for length in lengths:  # (interleaved: a slow moment of the machine falls on every length)
                view.show(_detail(f"O-{k}-{length}-before", narrative(FLOOR_CHARS, k + 1)), None)
                await pilot.pause()
                start = time.process_time()
                view.show(_detail(f"O-{k}-{length}", narrative(length, k)), None)
                await pilot.pause()
                times[length].append((time.process_time() - start) * 1000)
    return times


def _detail(observation_id: str, text: str) -> ObservationDetail:
    row = {"id": observation_id, "title": "A row", "narrative": text, "type": "discovery",
           "created_at": "2026-01-01 10:00:00", "quality_score": 0.5}
    return ObservationDetail(row=row, override=None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="80,140", help="terminal widths, comma-separated")
    parser.add_argument("--shows", type=int, default=30, help="shows of each length")
    args = parser.parse_args()
    lengths = [FLOOR_CHARS, *LENGTHS]
    print(f"Detail panel, CPU of a move onto the row until drawn (median, p90), {args.shows} shows each; "
          f"narratives cut at {NARRATIVE_INLINE:,} characters")
    print("| width | narrative | floor (onto 300 chars) | ours | ratio |")
    print("|---|---|---|---|---|")
    for width in (int(w) for w in args.sizes.split(",")):
        times = asyncio.run(_cpu_per_show(width, lengths, args.shows))
        floor = statistics.median(times[FLOOR_CHARS])
        for length in LENGTHS:
            ours = statistics.median(times[length])
            p90 = statistics.quantiles(times[length], n=10)[-1]
            print(f"| {width} | {length:,} | {floor:.1f} ms | {ours:.1f} ms (p90 {p90:.1f}) | {ours / floor:.2f}× |")


if __name__ == "__main__":
    main()
