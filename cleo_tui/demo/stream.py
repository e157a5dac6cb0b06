"""The demo's stream of observations: one random stream, ids and times as CLEO makes them, rows buffered.

`ObservationStream` holds what every row the generator (`demo.generator.DemoWriter`) writes needs:
the random stream, CLEO's observation ids, each session's clock, the batch rows wait in, and the
recent rows a reflection may cite; `add_observation` buffers one row as CLEO stores it.
"""

from __future__ import annotations

import json
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.store import Brain
from cleo_tui.demo import text
from cleo_tui.demo.rows import Batch, base36, content_hash, stamp

REWORDING_ROWS = sum(len(g) for g in text.DUPLICATE_GROUPS) + len(text.CAPPED_PAIR)
BASE_DATE = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)  # the demo's "now"
WINDOW = 150              # recent observations a reflection may cite
Progress = Callable[[int, int], None]


@dataclass
class Session:
    id: str | None
    task: str
    task_title: str
    area: str
    agent: str | None
    clock: datetime
    rows: list[tuple[str, str]] = field(default_factory=list)  # (id, title) written in it

    def context(self) -> dict[str, str]:
        return {"task": self.task, "task_title": self.task_title, "area": self.area}


class ObservationStream:
    """The rows' random stream, ids and clock, and the batch they wait in (see the module's docstring)."""

    def __init__(self, brain: Brain, total: int, seed: int, progress: Progress | None) -> None:
        self.brain = brain
        self.total = total
        self.rng = random.Random(seed)
        # The rewordings (Duplicates pane) are written last with their own random stream, so the
        # rest of the demo is drawn exactly as without them.
        self.rewording_rng = random.Random(f"rewordings-{seed}")
        self.session_total = total - REWORDING_ROWS
        self.progress = progress
        self.batch = Batch()
        self.written = 0          # observations generated so far (flushed or buffered)
        self.seq = 0              # CLEO's per-process sequence in observation ids
        self.sessions = 0
        self.used_ids: set[str] = set()          # short hex ids (observer notes, P-, L-)
        self.window: deque[tuple[str, str]] = deque(maxlen=WINDOW)

    # ---- ids, times, values -------------------------------------------------------------
    def _hex_id(self, prefix: str) -> str:
        while True:
            candidate = f"{prefix}{self.rng.getrandbits(32):08x}"
            if candidate not in self.used_ids:
                self.used_ids.add(candidate)
                return candidate

    def _observed_id(self, moment: datetime) -> str:
        self.seq += 1
        millis = int(moment.timestamp() * 1000) + self.rng.randrange(1000)
        return f"O-{base36(millis)}-{base36(self.seq)}"

    def _weighted(self, options: tuple[tuple[str, int], ...]) -> str:
        return self.rng.choices([o for o, _ in options], weights=[w for _, w in options])[0]

    def _quality(self) -> float:
        # Mostly decent, a tail below 0.4 (CLEO's search ignores < 0.3).
        return round(min(0.98, max(0.05, self.rng.gauss(0.62, 0.17))), 2)

    def _tick(self, session: Session) -> datetime:
        session.clock += timedelta(minutes=self.rng.randint(1, 14), seconds=self.rng.randrange(60))
        return session.clock

    # ---- observations --------------------------------------------------------------------
    def add_observation(self, session: Session, type_: str, title: str, narrative: str, *,
                        source_type: str = "agent", confidence: str | None = "agent",
                        quality: float | None = None, files: tuple[str, ...] = (),
                        obs_id: str | None = None, moment: datetime | None = None,
                        raw: bytes | None = None, facts: str | None = None,
                        tier: str | None = None, track: bool = True, live: bool = False) -> str | None:
        """Buffer one observation; returns its id, or None when its text is a duplicate.

        Some rows are evicted at random, except observer notes and `live` ones."""
        digest = content_hash(narrative or title)
        if self._is_duplicate(digest):
            return None
        moment = moment or self._tick(session)
        obs_id = obs_id or self._observed_id(moment)
        rng = self.rng
        created = stamp(moment)
        invalid_at = None
        if source_type != "observer-compressed" and not live and rng.random() < 0.035:
            invalid_at = stamp(min(BASE_DATE - timedelta(hours=1), moment + timedelta(days=rng.randint(1, 40))))
        modified = [f for f in files[:1]] if type_ in ("change", "bugfix", "refactor", "feature") else []
        row = (
            obs_id, type_, title[:120], None if rng.random() < 0.8 else session.area,
            narrative, facts if facts is not None else self._facts(files),
            json.dumps(rng.sample(text.CONCEPTS, rng.randint(1, 3))) if rng.random() < 0.7 else None,
            text.PROJECT if rng.random() < 0.9 else None,
            json.dumps(list(files)) if files else None,
            json.dumps(modified) if modified else None,
            session.id, source_type, digest,
            rng.randint(40, 3000) if rng.random() < 0.6 else None,
            created, invalid_at or (created if rng.random() < 0.3 else None), session.agent,
            quality if quality is not None else self._quality(),
            tier or self._weighted(text.TIERS), text.MEMORY_TYPES.get(type_, "episodic"),
            1 if rng.random() < 0.15 else 0, created, invalid_at, confidence,
            0,
        )
        self.batch.observations.append(row)
        self.batch.hashes.add(digest)
        if raw is not None:
            self.batch.raw_narratives.append((raw, obs_id))
        session.rows.append((obs_id, title))
        if track and invalid_at is None:
            self.window.append((obs_id, title))
        self._count_one()
        return obs_id

    def _facts(self, files: tuple[str, ...]) -> str | None:
        if not files or self.rng.random() < 0.5:
            return None
        return json.dumps([f"touches {f}" for f in files])

    def _is_duplicate(self, digest: str) -> bool:
        """CLEO keeps one row per text; the demo never writes the same text twice."""
        if digest in self.batch.hashes:
            return True
        return self.brain.conn.execute(
            f"SELECT 1 FROM {cs.OBSERVATIONS} WHERE content_hash = ? LIMIT 1", (digest,)).fetchone() is not None

    def _count_one(self) -> None:
        self.written += 1

    def remaining(self) -> int:
        """Rows the sessions still write (the rewordings' rows are kept back for `finish`)."""
        return self.session_total - self.written
