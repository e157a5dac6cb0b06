"""Command-palette provider: every action of the app, by name."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider


def palette_actions(app) -> list[tuple[str, str, str]]:
    """(name, help, action string run on the app) — the list the palette searches."""
    actions = [
        ("Go to Observations", "Browse, filter and curate observations", "pane('observations')"),
        ("Go to Prune", "Preview a pruning at a token budget", "pane('prune')"),
        ("Go to Review", "Run the observer or reflector and review proposals", "pane('review')"),
        ("Go to Traces", "Browse recall traces", "pane('traces')"),
        ("Help", "Panes, keys and tag rules", "help"),
        ("Undo last change", "Undo the last curation step made in this session", "undo_last"),
        ("Reload brain", "Re-read counts and tags (after CLEO wrote)", "reload_brain"),
        ("Quit", "Leave cleo-tui", "quit"),
    ]
    screen_actions = [
        ("Search observations", "Focus the search box", "focus_search"),
        ("Cycle sort", "Sort by date, quality or coverage", "cycle_sort"),
        ("Clear filters", "Show every observation again", "clear_filters"),
        ("Pin or unpin observation", "Relevance override that protects the row", "pin"),
        ("Evict observation", "Soft-evict the selected observation", "evict"),
        ("Restore observation", "Make the selected evicted observation live again", "restore"),
        ("Read whole narrative", "Open the full text of the selected observation", "view_text"),
        ("Browse patterns, learnings, decisions", "The brain's reflections", "records"),
        ("Prune: type a budget", "Focus the budget box", "focus_budget"),
        ("Prune: next tokenizer", "chars4, o200k_base, cl100k_base", "cycle_tokenizer"),
        ("Prune: choose scope", "All live observations or one session", "focus_scope"),
        ("Prune: commit", "Soft-evict the dropped rows (undoable)", "commit"),
        ("Prune: undo a run", "Undo the selected (or latest) prune run", "undo_run"),
        ("Prune: export preview as JSON", "The CLI's prune --json document", "export"),
        ("Prune: recompute the pool", "Read the brain again", "recompute"),
        ("Review: run", "Ask the observer or reflector for a proposal", "run_llm"),
        ("Review: cancel the run", "Cancel the LLM call under way", "cancel_run"),
        ("Review: observer or reflector", "Switch which one r runs", "toggle_kind"),
        ("Review: accept or reject item", "Toggle the selected item", "toggle_item"),
        ("Review: approve all", "Accept every item, evictions included (asks first)", "approve_all"),
        ("Review: store or apply", "Write the accepted items (asks first)", "apply_proposal"),
        ("Review: discard proposal", "Set the pending proposal aside", "discard_proposal"),
        ("Review: undo proposal", "Undo the selected applied proposal", "undo_proposal"),
        ("Review: raw answer", "The model's answer as it came", "raw_answer"),
        ("Review: open observation", "The observation(s) behind the item", "open_source"),
        ("Traces: recall a query", "Type a query; the new trace opens with its rerank steps", "focus_recall"),
        ("Traces: record a good outcome", "Positive outcome for the selected result (undoable)", "record_good"),
        ("Traces: record a bad outcome", "Negative outcome for the selected result (undoable)", "record_bad"),
        ("Traces: open the memory", "The selected result's observation, pattern, learning or hippo memory", "open_memory"),
        ("Traces: export as JSONL", "The listed traces: query hash, results shown, outcomes", "export_traces"),
        ("Traces: clear filters", "Show every trace again", "clear_trace_filters"),
    ]
    screen = app.screen
    for name, help_text, action in screen_actions:
        if hasattr(screen, f"action_{action}"):
            actions.append((name, help_text, f"screen.{action}"))
    return actions


class CleoCommands(Provider):
    """Lists every action; fuzzy-matches what the user types."""

    async def discover(self) -> Hits:
        for name, help_text, action in palette_actions(self.app):
            yield DiscoveryHit(name, partial(self.app.run_action, action), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, action in palette_actions(self.app):
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), partial(self.app.run_action, action), help=help_text)
