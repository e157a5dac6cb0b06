"""The help screen's text: panes, keys, and the rules behind every tag."""

from __future__ import annotations

from cleo_tui.memory.mapping import MAPPING_TABLE
from cleo_tui.recall.rerank import RERANK_MARKDOWN

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


PRUNE_KEYS_MARKDOWN = """\
## Keys in the Prune pane

The pool (the live observations, or one session's) is prepared once per tokenizer and
scope; every budget change then re-previews at once from its drop order.

| key | action |
|-----|--------|
| b | type a budget: `8000`, `12k`, `1.5M` (the target is 80% of it); in the box ↑/↓ step, page up/down step more |
| + / - | raise / lower the budget by about 1% of the pool |
| ] / [ | raise / lower the budget by about 10% of the pool |
| t | next tokenizer: chars4, o200k_base, cl100k_base |
| s | choose the scope: all live observations or one session |
| l | next list: **Dropped** (in drop order), **Protected** (largest first, with reasons), **Kept** (the next to drop first), **Runs** |
| enter | open the selected observation's detail; on a run, undo it |
| c | commit: soft-evict the dropped rows (asks first; undoable) |
| u | undo a prune run (the one selected in Runs, else the latest) |
| x | export this preview as JSON, the same document as `cleo-tui prune --json` |
| r | read the brain again and prepare the pool anew |

**FELL BACK** means the target cannot be met: every unprotected row is dropped and the
protected rows alone are over the target; the rows named beside it are the largest of them.
A commit is refused when the pool changed since the preview (CLEO wrote, or a pin); recompute
and look again. On a read-only brain commit and undo are disabled.
"""

REVIEW_KEYS_MARKDOWN = """\
## Keys in the Review pane

Asking the model only makes a **pending proposal** (kept in the brain, listed on the left,
still there after a restart). Nothing else is written until you store or apply it, and then
only the items marked accepted. Superseded observations start as *keep*: nothing is
soft-evicted unless you approve it.

| key | action |
|-----|--------|
| r | run the chosen one (observer or reflector) on the chosen session or the recent window, with the provider and model shown above (both changeable; the observer's threshold too) |
| esc | cancel the call under way |
| t | switch between observer and reflector |
| ↑ ↓, tab | move in the proposals (left) and the items (right) |
| space, enter, double click | accept / reject the selected item (the buttons do it too) |
| a | approve all: every item, superseded observations included (asks first) |
| s | store the accepted notes / apply the accepted reflection (asks first; undoable) |
| d | discard the pending proposal (nothing in the brain changes) |
| u | undo the selected applied proposal |
| o | open the observation(s) behind the item: a note's sources, a superseded row |
| v | the model's raw answer (of the proposal, or of an unusable answer) |

Each superseded observation is shown in full beside the model's claim and the reflections
that would still cite it after the apply. When a run does nothing the status line says why:
no API key, disabled in CLEO's config, under the threshold (with the count and the threshold),
too few rows, a provider error (with its HTTP status), or an unusable answer.
On a read-only brain running, storing, applying, discarding and undoing are disabled.
"""
TRACES_KEYS_MARKDOWN = """\
## Keys in the Traces pane

Every recall (CLI, API, context, MCP; here too) leaves a trace: the ids it returned, ranked,
with their scores and, with explain on, each rerank step. The raw query is never stored:
only its hash and length. A hippo store opens here for its traces, resolved against its
memories.

| key | action |
|-----|--------|
| ↑ ↓ j k, page up/down, home/end | move in the traces; the trace below follows the cursor |
| enter | into the trace's results; enter on a result opens its memory |
| tab | next box: recall, filters, traces, results |
| r | type a query and press enter: recall runs with explain on, the new trace opens |
| + / - | record a good (positive) / bad (negative) outcome for the selected result (asks first) |
| u | undo the last change made in this session (an outcome too) |
| o | open the selected result's memory: an observation's detail, or the text of a pattern, learning or hippo memory |
| x | export the listed traces as JSONL (one line each: query hash, results shown, outcomes) |
| c | clear the filters (pipeline, session, tenant, outcome, since/until dates in UTC) |
| esc | back to the trace list |

Each result shows its rank, its score, the outcomes of this trace that credit it (+/−), and
what its id is now: live, `evicted` (soft-evicted; superseded in hippo) or `forgotten` (no row
with that id any more). The box on the right draws its rerank chain step by step, every bar on
the trace's common scale. On a read-only brain (a hippo store is always one) recall, outcomes
and undo are disabled.
"""


def help_markdown() -> str:
    """All help text, including the tag rules when the pruner module provides them."""
    try:
        from cleo_tui.memory.rules import RULES_MARKDOWN
    except ImportError:  # rules arrive with the pruner; the mapping is always here
        RULES_MARKDOWN = "## How the seeds map onto a brain\n\n" + MAPPING_TABLE
    return "\n\n".join([PANES_MARKDOWN, OBSERVATION_KEYS_MARKDOWN, PRUNE_KEYS_MARKDOWN, REVIEW_KEYS_MARKDOWN,
                        TRACES_KEYS_MARKDOWN, RERANK_MARKDOWN, RULES_MARKDOWN])
