"""The Duplicates pane: clusters of reworded duplicate observations, reviewed and merged undoably.

The live pool is scanned once in a worker (a progress bar; Esc cancels); the
scan's verified pairs do not depend on the threshold, so a new threshold only
re-clusters (`DuplicateScan.clusters`). For the highlighted cluster the members
are listed with their role (keep, merge, stay) and the highlighted member is
compared with the keeper word by word. A merge asks once for the clusters,
then once more for each protected member it would evict, runs in a worker, and
is recorded with the session (u undoes it; every pane reloads).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from rich.console import Group, RenderableType
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import Input, Label, ProgressBar, Static

from cleo_tui.brain.errors import BrainError
from cleo_tui.brain.rows import Row
from cleo_tui.memory.duplicates import (
    DEFAULT_THRESHOLD,
    MIN_THRESHOLD,
    BadThreshold,
    Cluster,
    DuplicateScan,
    Member,
    Pair,
    ScanCancelled,
    parse_threshold,
    scan_duplicates,
)
from cleo_tui.recall.impact import RecallImpact, RecallIndex
from cleo_tui.safe_text import one_line, plural
from cleo_tui.ui.help import DUPLICATES_HELP
from cleo_tui.ui.messages import EXTERNAL, BrainChanged
from cleo_tui.ui.panes.duplicates_merge import DuplicatesMerge, cluster_key
from cleo_tui.ui.widgets.dup_render import compare_view, pair_similarity, updates_text
from cleo_tui.ui.widgets.inputs import SafeInput
from cleo_tui.ui.widgets.list_listing import ListListing
from cleo_tui.ui.widgets.table import Column, LineTable

UPDATES_LISTED = 200  # "differs in a detail" pairs touching no cluster, listed after the clusters

CLUSTER_COLUMNS = [
    Column("check", "✓", 3),
    Column("saved", "saves", 7, right=True),
    Column("size", "rows", 4, right=True),
    Column("similarity", "sim.", 5, right=True),
    Column("keep", "keeper", 18, middle=True),
    Column("title", "what it says", None),
]
MEMBER_COLUMNS = [
    Column("role", "role", 10),
    Column("id", "id", 18, middle=True),
    Column("similarity", "sim.", 5, right=True),
    Column("tokens", "tok", 5, right=True),
    Column("cited", "cited", 5, right=True),
    Column("title", "title (protected: why)", None),
]


@dataclass
class Choice:
    """What the reviewer changed in one cluster: another keeper, members toggled in or out."""

    keep: str | None = None
    toggled: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class UpdateRow:
    """A pair that differs in a detail and touches no cluster: shown, never merged."""

    pair: Pair


class DuplicatesScreen(DuplicatesMerge):
    PANE = "duplicates"
    PANE_HELP = DUPLICATES_HELP
    ITEM_ACTIONS = frozenset({"check", "keep", "toggle_member", "merge", "merge_checked"})  # on what is listed
    BINDINGS = [
        Binding("t", "focus_threshold", "Threshold", id="dup.threshold",
                tooltip="Type a similarity threshold from 0.70 to 1.00 (re-clusters without rescanning)"),
        Binding("space", "check", "Check", id="dup.check", tooltip="Check / uncheck the cluster for a merge of all"),
        Binding("s", "keep", "Keeper", id="dup.keep", tooltip="Make the highlighted member the keeper"),
        Binding("x", "toggle_member", "Leave out", id="dup.leave_out",
                tooltip="Leave the highlighted member out of the merge (or take it in)"),
        Binding("m", "merge", "Merge", id="dup.merge",
                tooltip="Merge the highlighted cluster (asks first; undoable)"),
        Binding("M", "merge_checked", "Merge checked", id="dup.merge_checked", key_display="M",
                tooltip="Merge every checked cluster in one run (asks first; undoable)"),
        Binding("u", "undo", "Undo", id="dup.undo", tooltip="Undo the last change made in this session"),
        Binding("r", "rescan", "Rescan", id="dup.rescan", tooltip="Scan the live pool again"),
        Binding("escape", "cancel_scan", "Cancel scan", id="dup.cancel", show=False,
                tooltip="Stop the scan under way"),
    ]
    WRITE_ACTIONS = {"merge", "merge_checked", "undo"}
    FOOTER_FIRST = ("merge", "check", "merge_checked", "keep", "toggle_member", "undo")

    DEFAULT_CSS = """
    #dup-controls { height: 1; }
    #dup-controls Label { padding: 0 1; }
    #dup-threshold { width: 10; }
    #dup-threshold.bad-threshold { color: $error; text-style: bold; }
    #dup-status { height: auto; max-height: 3; color: $text-muted; background: $surface; padding: 0 1; }
    #dup-progress { height: 1; padding: 0 1; }
    #dup-clusters { height: 1fr; min-height: 4; }
    #dup-members { height: 6; border-top: solid $primary; }
    #dup-compare-box { height: 2fr; border-top: solid $primary; padding: 0 1; background: $surface; }
    """

    # -- messages from workers ---------------------------------------------------
    @dataclass(eq=False)
    class ScanProgress(Message):
        generation: int
        done: int
        total: int
        stage: str

    @dataclass(eq=False)
    class ScanReady(Message):
        generation: int
        scan: DuplicateScan

    @dataclass(eq=False)
    class RecallsLoaded(Message):
        """Every recorded retrieval, read for the recall impact of a merge."""

        generation: int
        index: RecallIndex | None
        problem: str | None = None

    @dataclass(eq=False)
    class ScanStopped(Message):
        generation: int
        error: str
        cancelled: bool

    def __init__(self) -> None:
        super().__init__(id="pane-duplicates")
        self.scan: DuplicateScan | None = None
        self.clusters: list[Cluster] = []
        self.update_pairs: list[Pair] = []
        self.threshold = DEFAULT_THRESHOLD
        self.cleo_rescan = False  # the scan under way follows a write of CLEO's (see show_clusters)
        self.generation = 0
        self.scanning = False
        self.message = ""
        self.checked: set[tuple[str, ...]] = set()
        self.choices: dict[tuple[str, ...], Choice] = {}
        self._cancel = threading.Event()
        self.recall_index: RecallIndex | None = None
        self.recall_problem: str | None = None  # the recorded recalls could not be read

    # -- layout -------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield from self.compose_chrome_top()
        with Horizontal(id="dup-controls"):
            yield Label("Similarity ≥")
            yield SafeInput(f"{self.threshold:.2f}", id="dup-threshold", compact=True,
                            tooltip="0.70 to 1.00 (or 70 to 100); re-clusters at once")
            yield Label("0.70–1.00, re-clusters at once · esc cancels a scan", id="dup-hint")
        yield Static(id="dup-status")
        yield ProgressBar(id="dup-progress", show_eta=False)
        yield LineTable(CLUSTER_COLUMNS, self.format_cluster, id="dup-clusters")
        yield LineTable(MEMBER_COLUMNS, self.format_member, id="dup-members")
        with VerticalScroll(id="dup-compare-box"):
            yield Static(id="dup-compare")
        yield from self.compose_footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.table("clusters").focus()
        self.rescan()

    def on_unmount(self) -> None:
        super().on_unmount()
        self._cancel.set()  # gone for good (the app ends): a scan under way stops at its next check

    def table(self, name: str) -> LineTable:
        return self.query_one(f"#dup-{name}", LineTable)

    # -- the scan -----------------------------------------------------------------
    def rescan(self) -> None:
        """Scan the live pool again in a worker (cancelling a scan under way)."""
        self._cancel.set()
        self._cancel = threading.Event()
        self.generation += 1
        self.scanning = True
        bar = self.query_one("#dup-progress", ProgressBar)
        bar.update(total=None, progress=0)
        bar.display = True
        self.update_status()
        self._scan(self.generation, self._cancel)

    @work(thread=True, exclusive=True, group="dup-scan", exit_on_error=False)
    def _scan(self, generation: int, cancel: threading.Event) -> None:
        def progress(done: int, total: int, stage: str) -> None:
            self.post_message(self.ScanProgress(generation, done, total, stage))

        reader = self.session.brain.reader()  # its own connection: the pane's reads never wait on it
        try:
            scan = scan_duplicates(reader, progress=progress, cancel=cancel)
        except ScanCancelled as exc:
            self.post_message(self.ScanStopped(generation, str(exc), True))
            return
        except BrainError as exc:
            self.post_message(self.ScanStopped(generation, str(exc), False))
            return
        else:
            self.post_message(self.ScanReady(generation, scan))
            self.post_message(self.RecallsLoaded(generation, *RecallIndex.load_or_problem(reader)))
        finally:
            reader.close()

    def on_duplicates_screen_scan_progress(self, message: ScanProgress) -> None:
        if message.generation == self.generation and self.scanning:
            bar = self.query_one("#dup-progress", ProgressBar)
            bar.update(total=message.total or None, progress=message.done)
            self.message = f"{message.stage}…"
            self.update_status()

    def on_duplicates_screen_scan_ready(self, message: ScanReady) -> None:
        if message.generation != self.generation:
            return
        self.scanning = False
        self.message = ""
        self.query_one("#dup-progress", ProgressBar).display = False
        self.scan = message.scan
        self.show_clusters()

    def on_duplicates_screen_recalls_loaded(self, message: RecallsLoaded) -> None:
        if message.generation == self.generation:
            self.recall_index, self.recall_problem = message.index, message.problem
            self.table("members").redraw()  # members say how often they were recalled
            self.show_compare()
            self.update_status()

    def recall_impact(self, clusters: list[Cluster]) -> RecallImpact | None:
        """The recall impact of merging these clusters as chosen (None until the retrievals are read)."""
        if self.recall_index is None:
            return None
        return self.recall_index.impact(i for c in clusters for i in self.evicted(c))

    def checked_clusters(self) -> list[Cluster]:
        return [c for c in self.clusters if cluster_key(c.ids) in self.checked]

    def on_duplicates_screen_scan_stopped(self, message: ScanStopped) -> None:
        if message.generation != self.generation:
            return
        self.scanning = False
        self.query_one("#dup-progress", ProgressBar).display = False
        self.message = ("scan cancelled; r scans again" if message.cancelled else one_line(message.error, 300))
        self.update_status()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_scan" and self.host.waiting is not None:
            return False  # Esc stops the merge's wait for CLEO's lock first (the app's binding)
        return super().check_action(action, parameters)

    def action_cancel_scan(self) -> None:
        if self.scanning:
            self._cancel.set()
        elif self.focused is self.query_one("#dup-threshold", SafeInput):
            self.table("clusters").focus()

    def action_rescan(self) -> None:
        self.rescan()

    def on_brain_changed(self, message: BrainChanged) -> None:
        """A write (a merge here, an undo, another pane's) changed the pool: scan again."""
        self.cleo_rescan = message.kind == EXTERNAL  # a cluster CLEO's write took away is said gone
        self.rescan()

    # -- clusters at a threshold ------------------------------------------------------
    def show_clusters(self) -> None:
        """Cluster the scan at the current threshold (cheap) and list them, updates after."""
        if self.scan is None:
            return
        self.clusters = self.scan.clusters(self.threshold)
        self.update_pairs = self.scan.updates(self.threshold, UPDATES_LISTED)
        keys = {cluster_key(c.ids) for c in self.clusters}
        self.checked &= keys
        items: list[Cluster | UpdateRow] = [*self.clusters, *(UpdateRow(p) for p in self.update_pairs)]
        self.table("clusters").set_listing(ListListing(items, self._cluster_row), keep_cursor=True,
                                           quiet=not self.cleo_rescan)
        self.cleo_rescan = False
        self.show_cluster()
        self.update_status()

    def _cluster_row(self, index: int, item: Cluster | UpdateRow) -> Row:
        if isinstance(item, UpdateRow):
            return {"id": f"update:{item.pair.a}:{item.pair.b}", "update": item.pair}
        return {"id": ":".join(cluster_key(item.ids)), "cluster": item}

    def choice(self, cluster: Cluster) -> Choice:
        return self.choices.setdefault(cluster_key(cluster.ids), Choice())

    def keeper(self, cluster: Cluster) -> str:
        chosen = self.choice(cluster).keep
        return chosen if chosen in cluster.ids else cluster.keep

    def evicted(self, cluster: Cluster) -> list[str]:
        """The members a merge of `cluster` evicts, as chosen: the default set, toggles applied."""
        keep = self.keeper(cluster)
        base = (list(cluster.merge_ids) if keep == cluster.keep else
                [m.id for m in cluster.members if m.id != keep and not m.is_protected])
        toggled = self.choice(cluster).toggled
        return [i for i in cluster.ids if i != keep and ((i in base) != (i in toggled))]

    def saved(self, cluster: Cluster) -> int:
        return cluster.tokens_saved_for(self.evicted(cluster))

    def format_cluster(self, row: Row) -> dict[str, tuple[str, str]]:
        pair: Pair | None = row.get("update")
        if pair is not None:
            return {"check": ("", ""), "saved": ("—", "table--muted"), "size": ("2", "table--muted"),
                    "similarity": (f"{pair.similarity:.2f}", "table--muted"), "keep": ("update", "table--high"),
                    "title": (f"differs in a detail: {', '.join(pair.only_a) or '–'} / "
                              f"{', '.join(pair.only_b) or '–'} (never merged)", "table--muted")}
        cluster: Cluster = row["cluster"]
        keep = cluster.member(self.keeper(cluster))
        checked = cluster_key(cluster.ids) in self.checked
        return {
            "check": ("[x]" if checked else "[ ]", "table--reinforced" if checked else "table--muted"),
            "saved": (f"{self.saved(cluster):,}", ""),
            "size": (str(len(cluster.members)), ""),
            "similarity": (f"{cluster.similarity:.2f}", ""),
            "keep": (keep.id, "table--protected" if keep.is_protected else ""),
            "title": (keep.title or keep.content, ""),
        }

    def current(self) -> Cluster | UpdateRow | None:
        row = self.table("clusters").current_row()
        if row is None:
            return None
        return UpdateRow(row["update"]) if "update" in row else row["cluster"]

    def current_cluster(self) -> Cluster | None:
        item = self.current()
        return item if isinstance(item, Cluster) else None

    def on_line_table_highlighted(self, event: LineTable.Highlighted) -> None:
        """The cluster cursor moved: list its members; the member cursor moved: compare."""
        event.stop()
        if event.table.id == "dup-clusters":
            self.show_cluster()
        else:
            self.show_compare()

    def show_cluster(self) -> None:
        """List the highlighted cluster's members (or an update's two rows) and compare."""
        item = self.current()
        members: list[Row] = []
        if isinstance(item, Cluster):
            members = [{"id": m.id, "member": m, "cluster": item} for m in (*item.members, *item.related)]
        elif isinstance(item, UpdateRow) and self.scan is not None:
            members = [{"id": i, "pair": item.pair} for i in (item.pair.a, item.pair.b)]
        self.table("members").set_listing(ListListing(members, lambda _, row: row), keep_cursor=True, quiet=True)
        self.show_item_parts(item is not None)
        self.table("members").display = item is not None or self.scan is None or self.scanning  # (none found)
        self.show_compare()

    def role(self, cluster: Cluster, member: Member) -> tuple[str, str]:
        keep = self.keeper(cluster)
        if member.id == keep:
            return "keep", "table--reinforced"
        if member.id not in cluster.ids:
            return "update", "table--high"
        if member.id in self.evicted(cluster):
            return ("merge!" if member.is_protected else "merge"), ("table--critical" if member.is_protected else "")
        return ("stay" if not member.is_protected else "stay prot."), "table--muted"

    def format_member(self, row: Row) -> dict[str, tuple[str, str]]:
        pair: Pair | None = row.get("pair")
        if pair is not None:
            return {"role": ("update", "table--high"), "id": (row["id"], ""),
                    "similarity": (f"{pair.similarity:.2f}", ""), "tokens": ("", ""), "cited": ("", ""),
                    "title": ("differs in a detail; never merged", "table--muted")}
        cluster: Cluster = row["cluster"]
        member: Member = row["member"]
        keep = self.keeper(cluster)
        similarity = pair_similarity(cluster, keep, member.id) if member.id != keep else None
        title = member.title or member.content
        if member.protected:
            title = f"{title} (protected: {'; '.join(member.protected)})"
        recalled = self.recall_index.recalls_of(member.id) if self.recall_index is not None else None
        if recalled is not None and recalled.recalls:
            title = f"{recalled.text(compact=True)} · {title}"
        return {
            "role": self.role(cluster, member),
            "id": (member.id, "table--protected" if member.is_protected else ""),
            "similarity": ("" if similarity is None else f"{similarity.similarity:.2f}", ""),
            "tokens": (f"{member.tokens:,}", ""),
            "cited": (str(member.citations), ""),
            "title": (title, "table--protected" if member.is_protected else ""),
        }

    def show_compare(self) -> None:
        """The keeper beside the highlighted member (or the next one), differences highlighted."""
        view = self.query_one("#dup-compare", Static)
        width = max(20, self.size.width - 4)
        item = self.current()
        if isinstance(item, UpdateRow):
            view.update(self._update_view(item.pair, width))
            return
        if item is None:
            view.update(Text(self._nothing_found(), style="italic"))
            return
        cluster = item
        keep = cluster.member(self.keeper(cluster))
        row = self.table("members").current_row()
        # The members list may still show the previous cluster (keys typed faster than it is rebuilt):
        # compare within the cluster shown here.
        other_id = row["id"] if row is not None and row["id"] != keep.id and row["id"] in cluster.ids else next(
            i for i in cluster.ids if i != keep.id)
        other = cluster.member(other_id)
        role, _ = self.role(cluster, other)
        head = Text()
        head.append("Suggested keeper ", style="bold")
        head.append(cluster.keep)
        head.append(f": {one_line(cluster.reason, 200)}")
        if keep.id != cluster.keep:
            head.append(f"   chosen instead: {keep.id}", style="bold")
        evicted = self.evicted(cluster)
        head.append(f"\nMerging evicts {len(evicted)} of {len(cluster.members)} "
                    f"(saves {plural(self.saved(cluster), 'token')})", style="italic")
        impact = self.recall_impact([cluster])
        head.append("\nRecall: ", style="bold")
        if impact is not None:  # the whole sentence where it fits on one line, else the figures in fewer words
            head.append(impact.sentence() if len(impact.sentence()) + 8 <= width else impact.short())
        else:
            head.append(f"unavailable: {self.recall_problem}" if self.recall_problem
                        else "weighing the recorded recalls…")
        parts = [head, compare_view(keep, "keep", other, role, pair_similarity(cluster, keep.id, other.id), width)]
        if cluster.details:
            parts.append(updates_text(cluster.details))
        view.update(Group(*parts))

    def _nothing_found(self) -> str:
        """What the compare view says when nothing is listed: why, and what to try."""
        if self.scan is None or self.scanning:
            return ""
        if self.scan.stats.rows < 2:
            return "No live observations to compare: there are fewer than two."
        if self.threshold <= MIN_THRESHOLD:
            return (f"No duplicates at ≥ {self.threshold:.2f}, the lowest threshold: no two live observations say "
                    "one thing in other words.")
        return (f"No duplicates at ≥ {self.threshold:.2f}: t lowers the threshold (down to {MIN_THRESHOLD:.2f}) "
                "to show looser ones.")

    def _update_view(self, pair: Pair, width: int) -> RenderableType:
        assert self.scan is not None
        rows = {r.id: r for r in self.scan.rows if r.id in (pair.a, pair.b)}
        a, b = rows.get(pair.a), rows.get(pair.b)
        if a is None or b is None:
            return Text("")
        member_a = Member(a.id, a.title, a.content, a.created_at, a.quality, 0, [], "", 0)
        member_b = Member(b.id, b.title, b.content, b.created_at, b.quality, 0, [], "", 0)
        return compare_view(member_a, "update", member_b, "update", pair, width)

    def on_resize(self) -> None:
        self.show_compare()

    def update_status(self) -> None:
        parts = [self.message] if self.message else []
        if self.scanning:
            parts.append("scanning the live pool for reworded duplicates… (esc cancels)")
        elif self.scan is not None:
            saved = sum(self.saved(c) for c in self.clusters)
            clusters, updates = len(self.clusters), self.scan.update_count(self.threshold)
            parts.append(f"{clusters:,} cluster{'s' if clusters != 1 else ''} at ≥ {self.threshold:.2f} · saves "
                         f"{plural(saved, 'token')} ({self.scan.tokenizer.name}) · "
                         f"{updates:,} update{'s' if updates != 1 else ''} (never merged) · "
                         f"{self.scan.stats.rows:,} live scanned · {len(self.checked)} checked")
            impact = self.recall_impact(self.checked_clusters()) if self.checked else None
            if impact is not None:
                parts.append(f"merging the checked: {impact.short()}")
        brain = self.session.brain
        if brain.read_only:
            parts.append(f"read-only ({brain.read_only_reason}): merge and undo are disabled")
        self.query_one("#dup-status", Static).update(Text(" · ".join(parts)))

    def refresh_rows(self) -> None:
        """Redraw the lists after a change of keeper, toggle or check (same rows, new roles)."""
        self.table("clusters").redraw()
        self.table("members").redraw()
        self.show_compare()
        self.update_status()

    # -- the threshold ----------------------------------------------------------------
    def action_focus_threshold(self) -> None:
        self.query_one("#dup-threshold", SafeInput).focus()

    @on(Input.Changed, "#dup-threshold")
    def threshold_typed(self, event: Input.Changed) -> None:
        try:
            threshold = parse_threshold(event.value)
        except BadThreshold as exc:
            event.input.set_class(bool(event.value.strip()), "bad-threshold")
            self.message = str(exc) if event.value.strip() else ""
            self.update_status()
            return
        event.input.set_class(False, "bad-threshold")
        self.message = ""
        if threshold != self.threshold:
            self.threshold = threshold
            self.show_clusters()
        self.update_status()

    @on(Input.Submitted, "#dup-threshold")
    def threshold_submitted(self, event: Input.Submitted) -> None:
        self.table("clusters").focus()

    # -- choosing -----------------------------------------------------------------------
    def _member_here(self) -> tuple[Cluster, Member] | None:
        cluster = self.current_cluster()
        row = self.table("members").current_row()
        if cluster is None or row is None or "member" not in row or row["id"] not in cluster.ids:
            self.notify("Highlight a member of a cluster first (tab to the members list).", severity="warning")
            return None
        return cluster, row["member"]

    def action_check(self) -> None:
        cluster = self.current_cluster()
        if cluster is None:
            self.notify("Only a cluster can be checked; updates are never merged.", severity="warning")
            return
        self.checked ^= {cluster_key(cluster.ids)}
        self.refresh_rows()

    def action_keep(self) -> None:
        found = self._member_here()
        if found is not None:
            cluster, member = found
            choice = self.choice(cluster)
            choice.keep = member.id
            choice.toggled.discard(member.id)
            self.refresh_rows()

    def action_toggle_member(self) -> None:
        found = self._member_here()
        if found is None:
            return
        cluster, member = found
        if member.id == self.keeper(cluster):
            self.notify("The keeper always stays; make another member the keeper (s) first.", severity="warning")
            return
        self.choice(cluster).toggled ^= {member.id}
        self.refresh_rows()

    def on_line_table_selected(self, event: LineTable.Selected) -> None:
        """Enter on a cluster goes into its members; on a member opens its detail."""
        event.stop()
        if event.table.id == "dup-clusters":
            self.table("members").focus()
        else:
            self.open_observation(event.row["id"])

    def action_undo(self) -> None:
        self.session.undo()
