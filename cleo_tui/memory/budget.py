"""Budget arithmetic: reading a budget a user typed, choosing one by hand, writing a preview out.

Pure: the CLI and the Prune pane read budgets with `parse_budget`, the pane steps
its budget with these, and exports the preview as the CLI's `prune --json` document.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

from cleo_tui.brain.errors import BrainError
from cleo_tui.files import write_export_atomically
from cleo_tui.safe_text import one_line

if TYPE_CHECKING:
    from cleo_tui.memory.pruner_plan import PrunePreview

_BUDGET_SUFFIX = {"k": 1_000, "m": 1_000_000}
MAX_BUDGET = 10**12


class ExportFailed(BrainError):
    """The preview could not be written to the chosen file."""


class BadBudget(BrainError):
    """A budget that is not a positive number of tokens."""


def parse_budget(text: str | int) -> int:
    """A token budget from what a user typed: `8000`, `12k`, `1.5k`, `2M`, `12_000`, `12,000`."""
    raw = str(text).strip().lower().replace("_", "").replace(",", "")
    scale = _BUDGET_SUFFIX.get(raw[-1:], 1)
    number = raw[:-1] if scale > 1 else raw
    try:
        value = float(number) * scale
    except ValueError:
        value = float("nan")
    if value > MAX_BUDGET and value != float("inf"):
        raise BadBudget(f"The budget {one_line(str(text), 40)!r} is too large: the largest allowed budget is "
                        f"{MAX_BUDGET:,} tokens.")
    if not (1 <= value <= MAX_BUDGET) or value != int(value):
        raise BadBudget(f"The budget must be a positive whole number of tokens such as 8000 or 12k; "
                        f"got {one_line(str(text), 40)!r}.")
    return int(value)


def nice_step(tokens: int, share: float) -> int:
    """A round step (1, 2 or 5 × 10^k) near `share` of `tokens`, at least 1."""
    raw = max(1.0, tokens * share)
    power = 10 ** math.floor(math.log10(raw))
    return int(max(m * power for m in (1, 2, 5) if m * power <= raw))


def default_budget(tokens_before: int) -> int:
    """The pool's size rounded to two significant digits: a budget whose target drops something."""
    if tokens_before < 100:
        return max(1, tokens_before)
    power = 10 ** (len(str(tokens_before)) - 2)
    return int(round(tokens_before / power) * power)


def stepped(budget: int, step: int, direction: int) -> int:
    """The next multiple of `step` above (direction 1) or below (-1) `budget`, at least 1."""
    if direction > 0:
        return (budget // step + 1) * step
    return max(1, ((budget - 1) // step) * step)


def budget_text(budget: int) -> str:
    """The budget as the budget box shows it: `35M`, `12k`, `12345` (what `parse_budget` reads back)."""
    if budget >= 1_000_000 and budget % 1_000_000 == 0:
        return f"{budget // 1_000_000}M"
    return f"{budget // 1000}k" if budget >= 1000 and budget % 1000 == 0 else str(budget)


def default_export_name(preview: PrunePreview) -> str:
    return f"cleo-prune-{preview.budget}-{preview.tokenizer}.json"


def write_export(path: Path, preview: PrunePreview, brain_path: Path | None = None) -> None:
    """Write the preview as the CLI's `prune --json` document (ASCII, so no control byte survives)."""
    try:
        text = json.dumps(preview.to_json(), indent=2, ensure_ascii=True, default=str) + "\n"
        # Guarded (never a brain, a SQLite file or a device); the pane asked before replacing.
        write_export_atomically(path, lambda handle: handle.write(text), brain_path=brain_path, force=True)
    except OSError as exc:
        raise ExportFailed(f"The preview could not be written to {one_line(str(path), 200)} "
                           f"({exc.strerror or exc}). Choose another path.") from None


