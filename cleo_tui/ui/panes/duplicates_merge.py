"""Merging duplicates in the Duplicates pane: one confirmation for the clusters, one more for each
protected member it would evict, then one undoable run through the session's write path.

`DuplicatesMerge` is the Duplicates pane's base (panes/duplicates.py): the scan, the clusters and
the reviewer's choices are the pane's.
"""

from __future__ import annotations

from cleo_tui.memory.cleo_effects import EVICTION_IN_CLEO
from cleo_tui.memory.dedup_merge import MergeRequest, MergeResult, merge_duplicates
from cleo_tui.memory.duplicates import Cluster
from cleo_tui.recall.impact import RecallImpact
from cleo_tui.safe_text import one_line, plural
from cleo_tui.ui.messages import Written
from cleo_tui.ui.widgets.chrome import PaneScreen


def cluster_key(ids: list[str]) -> tuple[str, ...]:
    """A cluster's identity across thresholds and rescans: its member ids."""
    return tuple(sorted(ids))



class DuplicatesMerge(PaneScreen):
    """The Duplicates pane's merge; the pane (DuplicatesScreen) provides the clusters and choices."""

    clusters: list[Cluster]
    checked: set[tuple[str, ...]]
    recall_problem: str | None
    scanning: bool

    # -- what the pane provides -------------------------------------------------------------
    def keeper(self, cluster: Cluster) -> str:
        raise NotImplementedError

    def evicted(self, cluster: Cluster) -> list[str]:
        raise NotImplementedError

    def current_cluster(self) -> Cluster | None:
        raise NotImplementedError

    def recall_impact(self, clusters: list[Cluster]) -> RecallImpact | None:
        raise NotImplementedError

    # -- merging -----------------------------------------------------------------------
    def request(self, cluster: Cluster) -> MergeRequest:
        return cluster.request(self.keeper(cluster), self.evicted(cluster))

    def action_merge(self) -> None:
        cluster = self.current_cluster()
        if cluster is None:
            self.notify("Highlight a cluster to merge (updates are never merged).", severity="warning")
            return
        self.ask_merge([cluster])

    def action_merge_checked(self) -> None:
        chosen = [c for c in self.clusters if cluster_key(c.ids) in self.checked]
        if not chosen:
            self.notify("No cluster is checked (space checks the highlighted one).", severity="warning")
            return
        self.ask_merge(chosen)

    def ask_merge(self, clusters: list[Cluster]) -> None:
        """The one confirm: what is evicted, the tokens saved, what eviction does in CLEO."""
        if self.scanning:
            self.notify("The scan is under way; merge when it is done.", severity="warning")
            return
        requests = [r for r in (self.request(c) for c in clusters) if r.others]
        if not requests:
            self.notify("Nothing to merge: every member but the keeper is left out.", severity="warning")
            return
        impact = self.recall_impact(clusters)
        if impact is None and self.recall_problem is None:
            self.notify("The recorded recalls are still being read; merge in a moment.", severity="warning")
            return
        count = sum(len(r.others) for r in requests)
        saved = sum(c.tokens_saved_for(self.evicted(c)) for c in clusters)
        lines = [f"keep {one_line(r.keep, 40)}, evict {', '.join(one_line(o, 40) for o in r.others)}"
                 for r in requests[:8]]
        if len(requests) > 8:
            lines.append(f"… and {plural(len(requests) - 8, 'more cluster')}")
        protected = [(o, why) for r in requests for o, why in r.protected.items()]
        body = (f"Soft-evict {plural(count, 'duplicate observation')} in {plural(len(requests), 'cluster')}, saving "
                f"{plural(saved, 'token')}?\n\n" + "\n".join(lines) +
                "\n\nEach keeper gets a supersedes edge to every row it absorbs. One run: u undoes it exactly."
                + (f"\n\n{_protected_sentence(len(protected))}" if protected else "")
                + f"\n\nRecall impact: {impact.confirmation() if impact else f'unavailable: {self.recall_problem}'}"
                + f"\n\n{EVICTION_IN_CLEO}")
        self.confirm("Merge duplicates", body, lambda: self._confirm_protected(requests, protected, set()),
                          danger=True)

    def _confirm_protected(self, requests: list[MergeRequest], pending: list[tuple[str, tuple[str, ...]]],
                           confirmed: set[str]) -> None:
        """Ask for each protected member on its own; the merge runs only when every one said yes."""
        if not pending:
            self._start_merge(requests, confirmed)
            return
        (member, reasons), rest = pending[0], pending[1:]
        body = (f"{one_line(member, 60)} is protected: {one_line('; '.join(reasons), 400)}.\n\n"
                "Evict it anyway as a duplicate? Cancel stops the whole merge and writes nothing; to merge "
                "the others without it, leave it out (x) and merge again.")
        self.confirm("Evict a protected observation", body,
                          lambda: self._confirm_protected(requests, rest, confirmed | {member}), danger=True)

    def _start_merge(self, requests: list[MergeRequest], confirmed: set[str]) -> None:
        if not requests:
            self.notify("Nothing to merge: every member was left out.", severity="warning")
            return
        by_keep = {c.keep: c for c in self.clusters}
        saved = 0
        for r in requests:
            cluster = next((c for c in self.clusters if r.keep in c.ids), by_keep.get(r.keep))
            saved += cluster.tokens_saved_for(r.others) if cluster is not None else 0
        self.session.write("duplicates merge", lambda brain: merge_duplicates(brain, requests, confirmed),
                           lambda result: self._merged(result, saved), source=self.PANE, group="dup-merge")

    def _merged(self, result: MergeResult, saved: int) -> Written:
        for key in list(self.checked):
            self.checked.discard(key)
        skipped = result.lines()
        left = f"; {'; '.join(skipped)}" if skipped else ""
        return Written(f"dedup run {result.run_id} merged {plural(len(result.evicted), 'duplicate')} "
                       f"(saves {plural(saved, 'token')}){left}", result.run_id)


def _protected_sentence(count: int) -> str:
    return ("1 of them is protected: it asks again on its own." if count == 1 else
            f"{count:,} of them are protected: each asks again on its own.")
