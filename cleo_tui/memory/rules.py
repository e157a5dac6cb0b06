"""Every tag, protection and drop-order rule in one Markdown text, for the help screen.

The detector tables are generated from `detectors`, so the help can never
disagree with what the code does.
"""

from __future__ import annotations

from cleo_tui.memory.detectors import IDENTIFIER_KINDS, MAX_LISTED_IDENTIFIERS, TEXT_DETECTORS
from cleo_tui.memory.mapping import MAPPING_MARKDOWN, REINFORCED_AT
from cleo_tui.memory.pruner import TARGET_SHARE


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _text_detector_rows() -> str:
    return "\n".join(f"| {name} | {_cell(what)} | {_cell(examples)} |" for name, what, examples, _ in TEXT_DETECTORS)


def _identifier_rows() -> str:
    return "\n".join(f"| {kind} | {_cell(examples)} |" for kind, examples, _ in IDENTIFIER_KINDS)


RULES_MARKDOWN = f"""## What cleo-tui's words mean in a CLEO brain

{MAPPING_MARKDOWN.strip()}

## Coverage

How many distinct live reflections (patterns, learnings, observer notes with an
edge to the observation) cite an observation:

| coverage | citing reflections |
|---|---|
| uncited | 0 |
| cited | 1 to {REINFORCED_AT - 1} |
| reinforced | {REINFORCED_AT} or more |

A reinforced observation is the safest to drop: what it says lives on in the reflections.

## Relevance

The first rule that applies wins: a pin or override you set in cleo-tui; an observer
note's priority (1 critical, 2 high, 3 medium, 4–5 low); `source_type` manual or
`source_confidence` owner → high, because CLEO's `cleo memory observe` writes both for
whoever calls it, agents included (such rows are kept longer, not protected); type
decision → high; quality score below 0.4 → low; otherwise medium. Protection comes
only from the detectors below and from pins (critical relevance).

## Protection (never dropped)

A live observation is protected, with every reason shown, when any of these holds:

- **critical relevance** — including every pinned observation;
- a text detector matches its title or narrative:

| reason | what it looks for | examples |
|---|---|---|
{_text_detector_rows()}

- **unique identifier** — its text holds an identifier that appears in no other live
  observation and in no live pattern or learning (up to {MAX_LISTED_IDENTIFIERS} are
  named). Identifiers are:

| kind | examples |
|---|---|
{_identifier_rows()}

Uniqueness is judged against the whole live pool (also when pruning one session),
once, before the prune: an identifier shared by two rows protects neither, even if
both would drop. Evicted observations show the reasons that would protect them if
restored, but are not marked protected.

### Recall-aware protection (opt-in)

Off unless cleo-tui's config file (`config.json` in its config directory) asks for it:

    {{"protect": {{"recalled_within_days": 30, "used_by_task": true}}}}

- **recalled DAY (query '…')** — with `recalled_within_days = N`: a recorded retrieval
  returned the observation in the last N days (CLEO's `brain_retrieval_log`, whose raw query
  is shown on one line, cut short; or a recall trace, shown as "trace N"). The newest is named.
- **used by task T…** — with `used_by_task = true`: CLEO's `brain_usage_log` records a task
  that used it (`used = 1`); the newest task is named, and how many more.

Both are read from the brain at every scan (never from a cached scan), so a change of the
config or of CLEO's logs shows the next time the pool is prepared.

## Recall impact

Before a prune, a duplicate merge, an approved supersede or an evict, cleo-tui counts the
recorded retrievals (CLEO's log, cleo-tui's and hippo's traces) that returned at least one
row the step would evict: "K of N recorded recalls would lose a result; M of them used by a
task", where M counts the affected retrievals among whose lost results is an entry a task
used (`brain_usage_log`). The dropped list shows how often each row was recalled and when
last. `prune --json` and `dedup --json` carry the same figures under `impact`.

## Drop order

1. Target = {int(TARGET_SHARE * 100)}% of the budget (at least 1 token). Nothing drops while the pool
   is at or under the target.
2. Unprotected observations drop in this order: coverage (reinforced, then cited, then
   uncited), then relevance (low, then medium, then high), then oldest first; ties keep
   the pool's order (oldest created first).
3. Dropping stops as soon as the pool is at or under the target.
4. **Fell back**: everything droppable was dropped and the pool is still over the
   target; only protected observations remain.

## Counting tokens

The pool is rendered one line per observation, `[id] YYYY-MM-DD HH:MM [relevance]
content`, lines joined by newlines. `chars4` counts ceil(UTF-16 length / 4) of that
text, as the pruner's home project does (it under-counts JSON and CJK text);
`o200k_base` and `cl100k_base` count each line with tiktoken and add one token per
newline. Counts are cached outside the brain, in cleo-tui's cache directory.

## Commit and undo

Committing a preview soft-evicts its dropped rows (`invalid_at` and `updated_at` set)
in short chunks under one recorded run, so CLEO is never held up. It evicts only the
previewed rows still live and as previewed: rows that arrived since are not part of it,
and rows CLEO or another step changed meanwhile are left alone and listed in the result,
with where the pool now stands against the target. Undo makes live again exactly the rows
that run evicted and that are still as it left them, setting their `updated_at` to the time of the undo
(so CLEO sees them change), and is recorded as a run too.
"""
