"""The demo brain: a realistic, deterministic CLEO brain of an agent building a project.

`generate_demo(DIR)` writes `DIR/.cleo/cleo.db` in CLEO's layout: sessions of
observations of every type and source, observer notes with `supersedes` edges
to what they compressed, patterns and learnings citing observations (a few
cited four times or more, most not at all), decisions, rows of every protected
kind, evicted rows, dangling edges and a handful of hostile texts.

Everything comes from one `random.Random(seed)` and a fixed base date (no wall
clock, no uuid4), so a seed always gives the same rows. Observations stream
into SQLite in batches, one transaction each, with CLEO's FTS triggers on, so
a million rows need no more memory than a few thousand.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.create import create_brain, remove_database
from cleo_tui.brain.errors import BrainError
from cleo_tui.brain.store import Brain
from cleo_tui.demo import text
from cleo_tui.demo.hostile import HOSTILE
from cleo_tui.demo.retrievals import add_demo_cleo_retrievals
from cleo_tui.demo.rows import (
    EDGE_COLUMNS,
    LEARNING_COLUMNS,
    PATTERN_COLUMNS,
    content_hash,
    insert_rows,
    stamp,
)
from cleo_tui.demo.stream import BASE_DATE, ObservationStream, Progress, Session
from cleo_tui.demo.traces import add_demo_traces

DEFAULT_OBSERVATIONS = 2000
MIN_OBSERVATIONS = 100       # room for one row of every kind the demo promises
MAX_OBSERVATIONS = 5_000_000
DEFAULT_SEED = 7
BATCH_ROWS = 2000          # rows per transaction: small enough to keep memory flat
SPAN = timedelta(days=180)                                    # how far back the history goes
HOT_CITED = 5             # observations that several reflections in a row cite (reinforced)
LAST_SESSION = timedelta(hours=14)  # longer than any session: 90 min offset + 42 rows x 15 min


@dataclass
class _Reflection:
    """A pattern or learning kept in memory until the end: repeats raise its frequency."""

    id: str
    text: str
    first: datetime
    last: datetime
    count: int = 1
    confidence: float = 0.7
    kind: str = "workflow"
    context: str = ""


class DemoWriter(ObservationStream):
    """Generates and writes the demo, row by row, batch by batch."""

    def __init__(self, brain: Brain, total: int, seed: int, progress: Progress | None) -> None:
        super().__init__(brain, total, seed, progress)
        self.hot: list[tuple[str, str]] = []
        self.reflections_since_hot = 0
        self.patterns: dict[str, _Reflection] = {}
        self.learnings: dict[str, _Reflection] = {}
        self.decisions = 0
        self.max_decisions = max(4, min(300, total // 150))
        self.specials = self._schedule_specials()

    def write_batch(self) -> None:
        """Generate whole sessions until a batch is full, then write it: one transaction.

        The duplicate-text checks read inside the same transaction, which is cheap.
        """
        with self.brain.write() as conn:
            while self.remaining() > 0 and len(self.batch.observations) < BATCH_ROWS:
                self.run_session()
            self.batch.flush(conn)
        if self.progress:  # the kept-back rewordings are only a session: done counts them at the end
            self.progress(self.written if self.remaining() > 0 else self.total, self.total)

    # ---- what an agent records -----------------------------------------------------------
    def routine(self, session: Session) -> None:
        """One ordinary observation (retries the draw when the text came out identical)."""
        for attempt in range(8):
            type_, title_t, narrative_t = self.rng.choice(text.ROUTINE)
            if self.rng.random() < 0.5:
                narrative_t += " " + self.rng.choice(text.TAILS)
            values = text.draw(self.rng, session.context(), title_t, narrative_t)
            title, narrative = title_t.format(**values), narrative_t.format(**values)
            if attempt == 7:
                narrative += f" (noted again in session {self.sessions})"
            files = _files(values)
            source = self._weighted(text.SOURCE_TYPES)
            if self.add_observation(session, type_, title, narrative, source_type=source,
                                    confidence=self.rng.choice(("agent", "agent", "agent", "speculative", None)),
                                    files=files) is not None:
                if type_ == "decision" and self.decisions < self.max_decisions and self.rng.random() < 0.5:
                    self.decision(session)
                return

    def protected(self, session: Session, kind: str) -> None:
        """One observation of a protected kind: user assertion, completion, error, identifier, manual."""
        for _ in range(8):
            type_, title_t, narr_t, conf, source, quality = self._protected_template(kind)
            if kind != "completion" and self.rng.random() < 0.6:
                narr_t += " " + self.rng.choice(text.TAILS)
            values = text.draw(self.rng, session.context(), title_t, narr_t)
            title, narrative = title_t.format(**values), narr_t.format(**values)
            if kind == "manual":
                title, narrative = "Note: " + title, "Note from the owner: " + narrative
            if self.add_observation(session, type_, title, narrative, source_type=source,
                                    confidence=conf, quality=quality, files=_files(values)) is not None:
                return

    def _protected_template(self, kind: str) -> tuple[str, str, str, str | None, str, float]:
        """(type, title template, narrative template, source_confidence, source_type, quality)."""
        rng = self.rng
        if kind == "user":
            type_, title_t, narr_t, conf = rng.choice(text.USER_ASSERTIONS)
            source = "manual" if rng.random() < 0.3 else "agent"
            return (type_, title_t, rng.choice(text.ASSERTION_FRAMES) + narr_t, conf, source,
                    round(rng.uniform(0.8, 0.95), 2))
        if kind == "completion":
            title_t, narr_t = rng.choice(text.COMPLETIONS)
            return "change", title_t, narr_t, "task-outcome", "agent", round(rng.uniform(0.7, 0.9), 2)
        if kind == "error":
            title_t, narr_t = rng.choice(text.ERRORS)
            source = rng.choice(("agent", "agent", "transcript", "claude-mem"))
            return "bugfix", title_t, narr_t, "agent", source, self._quality()
        if kind == "identifier":
            type_, title_t, narr_t = rng.choice(text.IDENTIFIER_NOTES)
            return type_, title_t, narr_t, "agent", "agent", self._quality()
        type_, title_t, narr_t = rng.choice(text.ROUTINE)  # "manual": a note the owner wrote by hand
        return type_, title_t, narr_t, "owner", "manual", round(rng.uniform(0.75, 0.95), 2)

    def session_summary(self, session: Session) -> None:
        title_t, narr_t = text.SESSION_SUMMARY
        values = text.draw(self.rng, session.context(), title_t, narr_t)
        self.add_observation(session, "session-summary", title_t.format(**values), narr_t.format(**values),
                             source_type="session-debrief", confidence="agent",
                             quality=round(self.rng.uniform(0.5, 0.85), 2))

    def decision(self, session: Session) -> None:
        """A row in brain_decisions (D001 …) citing the decision observation just written."""
        self.decisions += 1
        decision_t, rationale = self.rng.choice(text.DECISIONS)
        did = f"D{self.decisions:03d}"
        obs_id, _ = session.rows[-1]
        created = stamp(session.clock)
        owner = self.rng.random() < 0.25
        self.batch.decisions.append((
            did, self.rng.choice(("architecture", "technical", "process")),
            decision_t.format(**text.draw(self.rng, session.context(), decision_t)), rationale,
            self.rng.choice(("high", "medium", "low")), self.rng.choice((None, "success", "pending")),
            session.task, created, created, self._quality(), "medium",
            self.rng.choice(("proposed", "accepted")), "owner" if owner else "agent",
            self.rng.choice(("architectural", "technical")), "owner" if owner else "agent",
        ))
        self.batch.edges.append((f"decision:{did}", f"observation:{obs_id}", "derived_from", 1.0,
                                 "agent", created))
        self.batch.nodes.append((f"decision:{did}", "decision", f"Decision {did}", created, 0.7, created))

    def observer_notes(self, session: Session) -> None:
        """CLEO's observer: 1-2 notes compressing a session, `supersedes` edges to the sources."""
        sources = [r for r in session.rows if not r[1].startswith("[Observer")]
        for _ in range(self.rng.randint(1, 2)):
            if len(sources) < 3 or self.remaining() <= 0:
                return
            picked = self.rng.sample(sources, min(len(sources), self.rng.randint(3, 8)))
            ids = [i for i, _ in picked]
            if self.rng.random() < 0.08:  # models invent ids; CLEO stores the edge anyway
                ids.append(f"O-{self.rng.getrandbits(32):08x}")
            priority = self.rng.choices((1, 2, 3, 4, 5), weights=(1, 3, 4, 3, 1))[0]
            summary = text.OBSERVER_NOTES[min(priority, len(text.OBSERVER_NOTES)) - 1]
            observation = summary.format(**text.draw(self.rng, session.context(), summary))
            narrative = f"{observation} ({len(ids)} observations) (compressed from: {', '.join(ids)})"
            moment = session.clock + timedelta(minutes=1)
            note_id = self._hex_id("O-")
            written = self.add_observation(
                session, "change", f"[Observer p{priority}] {observation[:80]}", narrative,
                source_type="observer-compressed", confidence="agent",
                quality=round(max(0.6, 1.0 - (priority - 1) * 0.1), 2), obs_id=note_id, moment=moment,
                tier="short", track=False)
            if written is None:
                continue
            created = stamp(moment)
            with_nodes = self.rng.random() < 0.7   # the rest dangle: edges without node rows
            if with_nodes:
                self.batch.nodes.append((f"observation:{note_id}", "observation", observation[:80],
                                         created, 0.8, created))
            titles = dict(picked)
            for source in ids:
                self.batch.edges.append((f"observation:{note_id}", f"observation:{source}", "supersedes",
                                         0.9, "observer-reflector", created))
                if with_nodes and source in titles:
                    self.batch.nodes.append((f"observation:{source}", "observation", titles[source][:80],
                                             created, 0.5, created))

    def reflect(self, session: Session) -> None:
        """CLEO's reflector: patterns and learnings citing recent and 'hot' observations."""
        if len(self.window) < 8:
            return
        if not self.hot or self.reflections_since_hot >= 6:
            self.hot = self.rng.sample(list(self.window), HOT_CITED)
            self.reflections_since_hot = 0
        self.reflections_since_hot += 1
        moment = session.clock + timedelta(minutes=2)
        for _ in range(self.rng.randint(1, 2)):
            if self.rng.random() < 0.5:
                (node, label), edge = self._pattern(session, moment), "derived_from"
            else:
                (node, label), edge = self._learning(session, moment), "informed_by"
            cited = self.rng.sample(self.hot, self.rng.randint(2, 4))
            cited += self.rng.sample(list(self.window), self.rng.randint(1, 4))
            self._cite(node, label, cited, edge, moment)
            if self.rng.random() < 0.25:
                self._supersede(node, moment)

    def _pattern(self, session: Session, moment: datetime) -> tuple[str, str]:
        """(node id, text) of a new or repeated pattern."""
        kind, pattern_t, context_t = self.rng.choice(text.PATTERNS)
        values = text.draw(self.rng, session.context(), pattern_t, context_t)
        pattern = pattern_t.format(**values)
        known = self.patterns.get(pattern.lower())
        if known:  # CLEO raises the frequency of an identical pattern instead of adding a row
            known.count += 1
            known.last = moment
            return f"pattern:{known.id}", pattern
        pid = self._hex_id("P-")
        self.patterns[pattern.lower()] = _Reflection(pid, pattern, moment, moment, kind=kind,
                                                     context=context_t.format(**values))
        return f"pattern:{pid}", pattern

    def _learning(self, session: Session, moment: datetime) -> tuple[str, str]:
        """(node id, text) of a new or repeated learning."""
        insight_t = self.rng.choice(text.LEARNINGS)
        insight = insight_t.format(**text.draw(self.rng, session.context(), insight_t))
        confidence = round(self.rng.uniform(0.3, 0.95), 2)
        known = self.learnings.get(insight.lower())
        if known:  # an identical insight only raises the confidence
            known.confidence = max(known.confidence, confidence)
            known.last = moment
            return f"learning:{known.id}", insight
        lid = self._hex_id("L-")
        self.learnings[insight.lower()] = _Reflection(lid, insight, moment, moment, confidence=confidence)
        return f"learning:{lid}", insight

    def _cite(self, node: str, label: str, cited: list[tuple[str, str]], edge: str, moment: datetime) -> None:
        created = stamp(moment)
        self.batch.nodes.append((node, node.split(":")[0], label[:80], created, 0.7, created))
        for obs_id, title in dict(cited).items():
            self.batch.edges.append((node, f"observation:{obs_id}", edge, 1.0, "reflector", created))
            self.batch.nodes.append((f"observation:{obs_id}", "observation", title[:80], created, 0.5, created))

    def _supersede(self, node: str, moment: datetime) -> None:
        """The reflector marks a recent observation redundant: an edge, and the row evicted."""
        hot_ids = {i for i, _ in self.hot}
        candidates = [r for r in self.window if r[0] not in hot_ids]
        if not candidates:
            return
        obs_id, title = self.rng.choice(candidates)
        created = stamp(moment)
        self.batch.edges.append((node, f"observation:{obs_id}", "supersedes", 1.0, "observer-reflector", created))
        self.batch.evictions.append((created, created, obs_id))
        self.window.remove((obs_id, title))

    # ---- sessions ---------------------------------------------------------------------------
    def new_session(self) -> Session:
        rng = self.rng
        self.sessions += 1
        # Sessions follow each other over SPAN; the last one still ends before BASE_DATE.
        start = BASE_DATE - SPAN - LAST_SESSION + SPAN * (self.written / self.total) \
            + timedelta(minutes=rng.randint(0, 90))
        cli = rng.random() < 0.2  # CLEO's CLI writes observations without a session id
        session_id = None if cli else f"ses_{start:%Y%m%d%H%M%S}_{rng.getrandbits(24):06x}"
        task_no = 1000 + self.sessions // 3 + rng.randint(0, 2)
        return Session(session_id, f"T{task_no}", rng.choice(text.TASK_TITLES), rng.choice(text.AREAS),
                        rng.choice(text.AGENTS), start)

    def run_session(self) -> None:
        session = self.new_session()
        length = min(self.rng.randint(8, 40), self.remaining())
        for _ in range(length):
            if self.remaining() <= 0:
                break
            if self.specials and self.specials[0][0] <= self.written:
                self.specials.pop(0)[1](session)
                continue
            roll = self.rng.random()
            kind = ("user" if roll < 0.02 else "error" if roll < 0.07 else "identifier" if roll < 0.10
                    else "manual" if roll < 0.115 else "completion" if roll < 0.13 else None)
            if kind:
                self.protected(session, kind)
            else:
                self.routine(session)
        if self.remaining() > 0 and self.rng.random() < 0.5:
            self.session_summary(session)
        if self.remaining() > 0 and session.id and len(session.rows) >= 6 and self.rng.random() < 0.6:
            self.observer_notes(session)
        if self.rng.random() < 0.4:
            self.reflect(session)

    def _schedule_specials(self) -> list[tuple[int, Callable[[Session], None]]]:
        """One row of every promised kind, spread evenly, so even a small demo shows them all."""
        makers: list[Callable[[Session], None]] = [
            lambda s: self.protected(s, "user"), lambda s: self.protected(s, "completion"),
            lambda s: self.protected(s, "error"), lambda s: self.protected(s, "identifier"),
            lambda s: self.protected(s, "manual"),
        ]
        makers += [functools.partial(self.hostile, index=h) for h in range(len(HOSTILE))]
        step = self.total / (len(makers) + 1)
        if int(step * len(makers)) >= self.session_total:  # a small demo: all before the rewordings
            step = self.session_total / (len(makers) + 1)
        return [(int(step * (k + 1)), maker) for k, maker in enumerate(makers)]

    def hostile(self, session: Session, index: int) -> None:
        """One of the hostile texts: terminal control and markup that must show literally."""
        title, narrative, raw, facts = HOSTILE[index]
        self.add_observation(session, "discovery", title, narrative, source_type="transcript",
                             confidence="speculative", quality=0.45, raw=raw, facts=facts)

    def rewordings(self) -> None:
        """The groups of live rewordings of one fact, and the "capped at 30 s / 60 s" update pair.

        One last session, drawn from its own random stream (see __init__)."""
        main, self.rng = self.rng, self.rewording_rng
        try:
            session = self.new_session()
            for texts in (*text.DUPLICATE_GROUPS, text.CAPPED_PAIR):
                for narrative in texts:
                    self.add_observation(session, "discovery", narrative[:80], narrative, quality=0.6,
                                         live=True, track=False)
        finally:
            self.rng = main

    # ---- the end --------------------------------------------------------------------------
    def finish(self) -> None:
        """Write the rewordings, patterns, learnings and what is left in the batch."""
        self.rewordings()
        rows = []
        for ref in self.patterns.values():
            first, last = stamp(ref.first), stamp(ref.last)
            rows.append((ref.id, ref.kind, ref.text, ref.context, ref.count,
                         self.rng.choice(("low", "medium", "high")), first, last, self._quality(),
                         self._weighted(text.TIERS), first, content_hash(ref.text), ref.count, last, None))
        learnings = []
        for ref in self.learnings.values():
            first, last = stamp(ref.first), stamp(ref.last)
            learnings.append((ref.id, ref.text, "reflector-synthesized", ref.confidence,
                              int(ref.confidence >= 0.7), first, last, self._quality(),
                              self._weighted(text.TIERS), first, content_hash(ref.text)))
        with self.brain.write() as conn:
            self.batch.flush(conn)
            insert_rows(conn, cs.PATTERNS, PATTERN_COLUMNS, rows)
            insert_rows(conn, cs.LEARNINGS, LEARNING_COLUMNS, learnings)
            # A few edges to ids that never existed, as CLEO stores model-invented ids.
            insert_rows(conn, cs.EDGES, EDGE_COLUMNS, [
                (f"pattern:{r[0]}", f"observation:O-{self.rng.getrandbits(32):08x}", "supersedes", 1.0,
                 "observer-reflector", r[6]) for r in rows[:3]], ignore=True)


def _files(values: dict[str, str]) -> tuple[str, ...]:
    """The file paths a filled template names, in order, once each."""
    return tuple(dict.fromkeys(v for k, v in values.items() if k.rstrip("23") in text.FILE_PLACEHOLDERS))


def demo_path(directory: str | Path) -> Path:
    return Path(directory).expanduser() / ".cleo" / "cleo.db"


def demo_directory_problem(directory: str | Path) -> str | None:
    """Why `directory` must not take a demo brain, or None when it may (it is new or empty).

    A demo lives in a directory of its own: one that already holds files may be a project,
    and a demo written into a project's `.cleo/` is a brain CLEO would re-migrate or adopt.
    """
    folder = Path(directory).expanduser()
    if not folder.exists():
        return None
    if not folder.is_dir():
        return f"{folder} is a file; a demo brain needs a directory of its own."
    try:
        holds_files = any(folder.iterdir())
    except OSError as exc:
        return f"Cannot read {folder}: {exc.strerror or exc}."
    if holds_files:
        return (f"{folder} already holds files (it may be a project): a demo brain goes to a new or empty "
                "directory of its own, never into a project's .cleo/.")
    return None


def generate_demo(directory: str | Path, observations: int = DEFAULT_OBSERVATIONS, seed: int = DEFAULT_SEED,
                  progress: Progress | None = None) -> Path:
    """Write a deterministic demo brain to DIR/.cleo/cleo.db and return its path.

    `observations` counts every row of brain_observations (observer notes too).
    `progress(done, total)` is called after each batch.
    """
    if not MIN_OBSERVATIONS <= observations <= MAX_OBSERVATIONS:
        raise BrainError(f"A demo brain holds {MIN_OBSERVATIONS:,} to {MAX_OBSERVATIONS:,} observations; "
                         f"{observations:,} is out of range.")
    folder = Path(directory).expanduser()
    if folder.exists() and not folder.is_dir():
        raise BrainError(f"{folder} is a file; a demo brain needs a directory of its own. Nothing was written.")
    path = demo_path(directory)
    if path.exists():
        raise BrainError(f"{path} already exists; nothing was changed. Choose an empty directory, "
                         "or delete the old demo first.")
    # Built under another name and renamed when complete: an interrupted run leaves no half brain.
    partial = path.with_name(path.name + ".partial")
    remove_database(partial)
    try:
        brain = create_brain(partial)
    except OSError as exc:
        raise BrainError(f"Cannot create {path}: {exc.strerror or exc}. Choose a directory you can write to.") from None
    try:
        _fill(brain, observations, seed, progress)
        brain.close()
        partial.replace(path)
    except BaseException:
        brain.close()
        remove_database(partial)
        raise
    return path


def _fill(brain: Brain, observations: int, seed: int, progress: Progress | None) -> None:
    """Generate every row into a freshly created brain, then hand it back in WAL mode."""
    # While nobody else can have the file open, an in-memory rollback journal halves the
    # CPU cost of the inserts (WAL copies every page twice); transactions still roll back.
    brain.conn.execute("PRAGMA journal_mode = MEMORY")
    brain.conn.execute("PRAGMA synchronous = OFF")
    brain.conn.execute("PRAGMA cache_size = -32768")  # 32 MB: enough for the index-heavy inserts
    writer = DemoWriter(brain, observations, seed, progress)
    while writer.remaining() > 0:
        writer.write_batch()
    writer.finish()
    add_demo_traces(brain, writer.rng)
    add_demo_cleo_retrievals(brain, seed)  # its own random stream: no other row changed
    brain.conn.execute("PRAGMA optimize")
    brain.conn.execute("PRAGMA journal_mode = WAL")  # as CLEO keeps its brains
