"""The help screen's text: panes, keys, and the rules behind every tag."""

from __future__ import annotations

from cleo_tui.memory.mapping import MAPPING_TABLE

PANES_MARKDOWN = """\
## Panes

| key | pane | what it is for |
|-----|------|----------------|
| 1 | **Observations** | every observation, live and evicted: filter, search, sort, read the detail, pin, evict, restore, undo |
| 2 | **Prune** | preview a pruning at a token budget, then commit it (undoable) |
| 3 | **Review** | run the observer or reflector by hand and approve what they propose |
| 4 | **Traces** | recall traces: ranked results, rerank steps, outcomes |

Click a pane's name to switch too. `ctrl+p` opens the command palette: every action by name.
"""

OBSERVATION_KEYS_MARKDOWN = """\
## Keys in the Observations pane

| key | action |
|-----|--------|
| ↑ ↓ j k, page up/down, home/end (g/G) | move; the detail below follows the cursor |
| enter | focus the detail panel (then enter on a reflection opens it) |
| / | search (FTS5 where the brain has it, else a plain text match) |
| s | cycle the sort: date ↓, date ↑, quality ↓, coverage ↓ |
| x | clear every filter |
| v | read the whole narrative |
| t | patterns, learnings and decisions |
| p | pin / unpin (a relevance override to critical, which protects) |
| e / r | evict (soft: invalid_at is set) / restore |
| u | undo the last curation step made in this session |
| F1 or ? | this help · q quits |

On a read-only brain the writing keys are disabled and the status line says why.
Text from the brain is always shown literally: markup, escape sequences and control
characters appear as visible characters (ESC as ␛), never as formatting.
"""


def help_markdown() -> str:
    """All help text, including the tag rules when the pruner module provides them."""
    try:
        from cleo_tui.memory.rules import RULES_MARKDOWN
    except ImportError:  # rules arrive with the pruner; the mapping is always here
        RULES_MARKDOWN = "## How the seeds map onto a brain\n\n" + MAPPING_TABLE
    return "\n\n".join([PANES_MARKDOWN, OBSERVATION_KEYS_MARKDOWN, RULES_MARKDOWN])
