"""The help screen's text: panes, keys, and the rules behind every tag.

The key tables are generated from the live bindings (ui/keys.py): each pane
class carries a `PaneHelp` (its intro, fixed navigation rows, the help's wording
per binding id, notes) and the keys come from its BINDINGS with the user's
keymap applied — a remapped key reads the same here as in the footer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from textual.app import App
from textual.binding import BindingType

from cleo_tui.memory.mapping import MAPPING_MARKDOWN
from cleo_tui.recall.rerank import RERANK_MARKDOWN
from cleo_tui.ui.keys import declared_bindings, key_label, keyed_actions, keys_table, md_key


@dataclass(frozen=True)
class PaneHelp:
    """A pane's section of the help. `texts`: binding id → the help's wording (else its tooltip)."""

    title: str
    intro: str = ""
    rows: tuple[tuple[str, str], ...] = ()
    texts: dict[str, str] = field(default_factory=dict)
    notes: str = ""

    def markdown(self, app: App[Any], bindings: Iterable[BindingType], keymap: dict[str, str]) -> str:
        """The section with its key table built from `bindings` as they are bound now."""
        parts = [f"## {self.title}"]
        if self.intro:
            parts.append(self.intro.strip())
        parts.append(keys_table(keyed_actions(app, bindings, keymap, self.texts), self.rows))
        if self.notes:
            parts.append(self.notes.strip())
        return "\n\n".join(parts)


PANES_MARKDOWN = """\
## Panes

| key | pane | what it is for |
|-----|------|----------------|
| {observations} | **Observations** | every observation: filter, search, sort, detail, pin, evict, restore, undo |
| {prune} | **Prune** | preview a pruning at a token budget, then commit it (undoable) |
| {review} | **Review** | run the observer or reflector by hand and approve what they propose |
| {traces} | **Traces** | recall traces: ranked results, rerank steps, outcomes |
| {duplicates} | **Duplicates** | reworded duplicates in clusters: choose the keeper, merge (undoable) |
| {history} | **History** | the brain's days: live tokens, evictions by cause; whether its agents still run |
| {sweeps} | **Sweeps** | CLEO's staged noise sweeps row by row, with recall impact; approve or roll back via CLEO |

Click a pane's name to switch too. `ctrl+p` opens the command palette: every action by name.
"""


OBSERVATIONS_HELP = PaneHelp(
    "Keys in the Observations pane",
    rows=(("↑ ↓ j k, page up/down, home/end (g/G)", "move; the detail below follows the cursor"),
          ("enter", "into the detail's citing reflections; enter again opens the highlighted reflection "
                    "(↑ ↓ choose); with none, into the detail to scroll it"),
          ("tab, then enter / space / ↓ (or a click)", "open a filter's choices: ↑ ↓ or typed letters find one, "
                                                      "enter chooses it, esc leaves the filter as it was")),
    texts={
        "obs.search": "search (FTS5 where the brain has it, else a plain text match); Enter or Esc goes "
                      "back to the list",
        "obs.sort": "cycle the sort: date ↓, date ↑, quality ↓, coverage ↓",
        "obs.clear": "clear every filter",
        "obs.view": "read the whole narrative",
        "obs.records": "patterns, learnings and decisions",
        "obs.pin": "pin / unpin (a relevance override to critical, which protects)",
        "obs.evict": "evict (soft: invalid_at is set)",
        "obs.restore": "restore an evicted observation",
        "obs.undo": "undo the last curation step made in this session",
        "obs.cleo_marks": "CLEO marks filter: at risk (its next consolidation deletes them), hidden from its "
                           "search, all",
        "obs.keep_cleo": "keep in CLEO: raise quality_score to 0.5 so CLEO's consolidation and search keep it "
                         "(only when that lasts; undoable)",
    },
    notes="""\
The state column also shows CLEO's own rules: ⚠live / ⚠evicted — CLEO's next consolidation hard-deletes it
(runConsolidation: correlateOutcomes flags uncited rows older than 30 days, then runPruneSweep deletes flagged
rows with quality < 0.2, no citations, older than 30 days, evicted ones too); hidden — live, but quality below 0.3,
so CLEO's search (searchBrain, QUALITY_SCORE_THRESHOLD) never returns it. The "CLEO marks" filter picks either;
the detail gives the reason and the rule. A pin protects a row in cleo-tui only; K raises its quality_score to 0.5
(CLEO's own keep value) so CLEO keeps it — offered only when no CLEO step lowers it again each consolidation
(detectContradictions, correlateOutcomes); undo puts the old quality back.
On a read-only brain the writing keys are disabled and the status line says why.
Text from the brain is always shown literally: markup, escape sequences and control
characters appear as visible characters (ESC as ␛), never as formatting.
""")

PRUNE_HELP = PaneHelp(
    "Keys in the Prune pane",
    intro="""\
The pool (the live observations, or one session's) is prepared once per tokenizer and
scope; every budget change then re-previews at once from its drop order.
""",
    rows=(("enter", "open the selected observation's detail; on a run, undo it"),),
    texts={
        "prune.budget": "type a budget: `8000`, `12k`, `1.5M` (the target is 80% of it); in the box ↑/↓ step, "
                        "page up/down step more, enter or esc go back to the list",
        "prune.up": "raise the budget by about 1% of the pool",
        "prune.down": "lower the budget by about 1% of the pool",
        "prune.up_coarse": "raise the budget by about 10% of the pool",
        "prune.down_coarse": "lower the budget by about 10% of the pool",
        "prune.tokenizer": "next tokenizer: chars4, o200k_base, cl100k_base",
        "prune.scope": "choose the scope: all live observations or one session",
        "prune.lists": "next list: **Dropped** (in drop order), **Protected** (largest first, with reasons), "
                       "**Kept** (the next to drop first), **Runs**",
        "prune.commit": "commit: soft-evict the dropped rows (asks first; undoable)",
        "prune.undo": "undo a prune run (the one selected in Runs, else the latest)",
        "prune.export": "export this preview as JSON, the same document as `cleo-tui prune --json`",
        "prune.recompute": "read the brain again and prepare the pool anew",
    },
    notes="""\
**FELL BACK** means the target cannot be met: every unprotected row is dropped and the
protected rows alone are over the target; the rows named beside it are the largest of them.
While CLEO writes, the status line says how many new observations joined the drop order
and how many rows of this preview CLEO evicted or deleted since; a commit evicts only the
previewed rows still as shown and lists the others. On a read-only brain commit and undo are
disabled.
**Recall** says how many recorded recalls (CLEO's retrieval log, recall traces) would lose a
result at this budget, and how many of them lost an entry a task used; the dropped and kept
lists say how often each row was recalled and when last (the rules: Recall impact).
""")

REVIEW_HELP = PaneHelp(
    "Keys in the Review pane",
    intro="""\
Asking the model only makes a **pending proposal** (kept in the brain, listed on the left,
still there after a restart). Nothing else is written until you store or apply it, and then
only the items marked accepted. Superseded observations start as *keep*: nothing is
soft-evicted unless you approve it.
""",
    rows=(("↑ ↓, tab", "move in the proposals (left) and the items (right)"),
          ("enter, double click", "accept / reject the selected item (the buttons do it too)")),
    texts={
        "review.run": "run the chosen one (observer or reflector) on the chosen session or the recent window, "
                      "with the provider and model shown above (both changeable; the observer's threshold too)",
        "review.cancel": "cancel the call under way",
        "review.kind": "switch between observer and reflector",
        "review.toggle": "accept / reject the selected item",
        "review.approve_all": "approve all: every item, superseded observations included (asks first)",
        "review.apply": "store the accepted notes / apply the accepted reflection (asks first; undoable)",
        "review.discard": "discard the pending proposal (nothing in the brain changes)",
        "review.undo": "undo the selected applied proposal",
        "review.open": "open the observations behind the item: a note's sources, a superseded row",
        "review.raw": "the model's raw answer (of the proposal, or of an unusable answer)",
    },
    notes="""\
Each superseded observation is shown in full beside the model's claim and the reflections
that would still cite it after the apply. When a run does nothing the status line says why:
no API key, disabled in CLEO's config, under the threshold (with the count and the threshold),
too few rows, a provider error (with its HTTP status), or an unusable answer.
On a read-only brain running, storing, applying, discarding and undoing are disabled.
""")

TRACES_HELP = PaneHelp(
    "Keys in the Traces pane",
    intro="""\
Every recall (CLI, API, context, MCP; here too) leaves a trace: the ids it returned, ranked,
with their scores and, with explain on, each rerank step. The raw query is never stored:
only its hash and length. A hippo store opens here for its traces, resolved against its
memories.
""",
    rows=(("↑ ↓ j k, page up/down, home/end", "move in the traces; the trace below follows the cursor"),
          ("enter", "into the trace's results; enter on a result opens its memory"),
          ("tab", "next box: recall, filters, traces, results")),
    texts={
        "traces.recall": "type a query and press enter: recall runs with explain on, the new trace opens; "
                         "the box beside it is how many results (10, as the CLI; tab to change it)",
        "traces.good": "record a good (positive) outcome for the selected result (asks first)",
        "traces.bad": "record a bad (negative) outcome for the selected result (asks first)",
        "traces.undo": "undo the last change made in this session (an outcome too)",
        "traces.open": "open the selected result's memory: an observation's detail, or the text of a pattern, "
                       "learning or hippo memory",
        "traces.export": "export the listed traces and CLEO retrievals as JSONL (one line each: query hash, "
                         "results shown, outcomes; CLEO's query text only if you tick the box); "
                         "asks before replacing a file, never writes over a brain or a SQLite file",
        "traces.clear": "clear the filters (whose, pipeline, session, tenant, outcome, since/until dates in UTC)",
        "traces.back": "back to the trace list",
        "traces.replay": "replay CLEO's logged `memory find` queries with CLEO's own semantics: the agreement with "
                         "the ids CLEO logged, and what each query loses after the prune preview at a budget "
                         "(as CLEO behaves today, and as eviction intends); reads only",
    },
    notes="""\
Each result shows its rank, its score, the outcomes of this trace that credit it (+/−), and
what its id is now: live, `evicted` (soft-evicted; superseded in hippo) or `forgotten` (no row
with that id any more). The box on the right draws its rerank chain step by step, every bar on
the trace's common scale. On a read-only brain (a hippo store is always one) recall, outcomes
and undo are disabled.

On a CLEO brain, CLEO's own retrievals (its `brain_retrieval_log`: every `memory find`,
`fetch`, hybrid search and timeline) are listed beside the traces, by time; the *whose*
column and filter tell them apart (CLEO by source, the traces by pipeline). CLEO keeps the
raw query, shown as data. Its results show what each id is now as CLEO sees it — live,
`evicted` (CLEO's find still returns it), `hidden` (live, quality below the 0.3 CLEO's search
requires) or `deleted` — with the tasks that used it (CLEO's `brain_usage_log`). They take no
outcome. The export leaves CLEO's query text out (hash and length only) unless its box is ticked.
""")

DUPLICATES_HELP = PaneHelp(
    "Keys in the Duplicates pane",
    intro="""\
The live pool is scanned once (a progress bar; esc cancels) for observations that restate the
same fact in other words. A new threshold re-clusters at once without rescanning. Clusters are
listed by the tokens a merge saves; pairs that differ in a number, an identifier, a path or a
version are **updates**, listed after the clusters and never merged.
""",
    rows=(("↑ ↓, tab", "move in the clusters, then the members of the highlighted cluster"),
          ("enter", "on a cluster: into its members; on a member: open its detail")),
    texts={
        "dup.threshold": "type the similarity threshold, 0.70 to 1.00 (or 70 to 100)",
        "dup.check": "check / uncheck the highlighted cluster (for M)",
        "dup.keep": "make the highlighted member the keeper",
        "dup.leave_out": "leave the highlighted member out of the merge, or take it in (a protected one too)",
        "dup.merge": "merge the highlighted cluster: the others are soft-evicted with a supersedes edge from "
                     "the keeper (asks first; undoable)",
        "dup.merge_checked": "merge every checked cluster in one run (asks first; undoable)",
        "dup.undo": "undo the last change made in this session (a merge too)",
        "dup.rescan": "scan the live pool again",
        "dup.cancel": "cancel the scan under way",
    },
    notes="""\
The suggested keeper is the protected member, else the most cited, else the highest quality,
else the newest; the reason is shown. A protected member is evicted only after its own
confirmation naming why it is protected. On a read-only brain merge and undo are disabled.
""",
)


HISTORY_HELP = PaneHelp(
    "Keys in the History pane",
    intro="""\
Each day: rows added (by source), evicted (by cause: a cleo-tui run, CLEO's reflector, CLEO's
consolidation, unknown), live rows and live tokens at the day's end, observer notes, reflections
and recalls. The chart above draws the live tokens and, beneath, the evictions in the cause's
colour. The line under the chart says when the observer, reflector and consolidation last ran,
CLEO's dream state, and warns when one has gone quiet while observations kept arriving.
""",
    rows=(("↑ ↓ j k, page up/down, home/end", "move in the days (newest first)"),),
    texts={
        "hist.open_day": "the observations created that day, in the Observations pane (x there clears it)",
        "hist.reload": "read the days and the agents' liveness again",
    },
    notes="""\
Live tokens are chars/4 of each row's content, for the chart only (the Prune pane counts with
the tokenizer you choose). `cleo-tui history` prints the same days; `cleo-tui history ID` and
the detail view show why one memory is gone.
""")

SWEEPS_HELP = PaneHelp(
    "Keys in the Sweeps pane",
    intro="""\
`cleo memory sweep` stages a noise sweep (CLEO's `detectNoiseCandidates`: live, unverified rows with quality
NULL or below 0.3) as a run in `brain_backfill_runs` and its candidates in `brain_observations_staging`, and
waits for `--approve`. Each run is listed with its rows: the action, the target's values now beside the staged
ones, what CLEO's approve will write (`executeSweep`: a purge sets invalid_at to the approval time and
provenance_class noise-purged; other actions only set provenance_class swept-clean — the staged quality is not
written), the recall impact (recorded retrievals that returned the row, tasks that used it), the row's tags
and its whole text. Approve and roll back run CLEO's own command in the brain's project directory, after a
confirmation, and show its answer; without `cleo` on PATH the command is shown and nothing is written.
""",
    rows=(("↑ ↓ j k, enter", "move in the runs; enter goes to the run's rows"),),
    texts={
        "sweeps.switch": "move between the runs and the rows",
        "sweeps.approve": "approve the staged run: `cleo memory sweep --approve RUN` (CLEO writes)",
        "sweeps.rollback": "roll the staged run back: `cleo memory sweep --rollback RUN` (its pending rows "
                           "become skipped; nothing was applied, so nothing is reverted)",
        "sweeps.veto": "veto a pending row: it becomes skipped, and CLEO's approve (which loads only pending rows) "
                       "leaves it out; journalled, u undoes it",
        "sweeps.undo": "undo the last step made in this session",
        "sweeps.reload": "read the runs again",
    },
    notes="""\
A purge by an approved sweep is named in History as "CLEO's noise sweep" with its run (the row's
provenance_class is noise-purged and the run's approved_at equals its invalid_at). CLEO's rollback works only on a
staged run: an approved sweep cannot be rolled back through CLEO (restore rows one by one in Observations).
""")

APP_HELP = PaneHelp("Keys everywhere",
                    texts={"app.help": "this help",
                           "app.quit": "quit (once the writes and exports you chose are done)"},
                    rows=(("ctrl+p", "the command palette: every action of the pane by name, with its key"),))


def help_markdown(app: App[Any], panes: Iterable[tuple[PaneHelp, Iterable[BindingType]]],
                  keymap: dict[str, str]) -> str:
    """All help text: the panes, every pane's keys as bound now, the rerank and tag rules."""
    try:
        from cleo_tui.memory.rules import RULES_MARKDOWN
    except ImportError:  # rules arrive with the pruner; the mapping is always here
        RULES_MARKDOWN = "## What cleo-tui's words mean in a CLEO brain\n\n" + MAPPING_MARKDOWN
    pane_keys = {b.id.removeprefix("pane."): md_key(key_label(app, b, keymap, every=True))
                 for b in declared_bindings(type(app).BINDINGS) if b.id and b.id.startswith("pane.")}
    sections = [PANES_MARKDOWN.format_map(pane_keys), APP_HELP.markdown(app, type(app).BINDINGS, keymap)]
    sections += [pane_help.markdown(app, bindings, keymap) for pane_help, bindings in panes]
    return "\n\n".join([*sections, RERANK_MARKDOWN, RULES_MARKDOWN])
