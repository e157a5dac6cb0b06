"""Plain-data results of the observer and reflector, and the reasons they did nothing.

Everything here converts to JSON-ready dicts with `to_dict()`, so the CLI prints
it and the TUI shows it without knowing how it was produced. No API key ever
reaches these objects: provider messages are redacted before they get here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# Why an automatic path did nothing. The TUI may switch on these.
DISABLED = "disabled"                # brain.observer/reflector.enabled is false
NO_CREDENTIAL = "no_credential"      # no API key for the resolved provider
UNDER_THRESHOLD = "under_threshold"  # fewer uncompressed observations than the threshold
TOO_FEW_ROWS = "too_few_rows"        # not enough input rows to compress or reflect on
READ_ONLY = "read_only"              # the brain cannot be written, so nothing would be kept
PROVIDER_ERROR = "provider_error"    # HTTP status, timeout or connection failure
UNPARSABLE = "unparsable"            # the model answered, but not with usable JSON
CANCELLED = "cancelled"              # the user cancelled while the call was under way
NOTHING_PROPOSED = "nothing_proposed"  # valid JSON, but no usable item in it
ERROR = "error"                      # anything else (a locked brain ...): the automatic path still returns

PROBLEM_KINDS = (DISABLED, NO_CREDENTIAL, UNDER_THRESHOLD, TOO_FEW_ROWS, READ_ONLY,
                 PROVIDER_ERROR, UNPARSABLE, CANCELLED, NOTHING_PROPOSED, ERROR)


@dataclass(frozen=True)
class Problem:
    """Why nothing (or nothing more) happened, as data.

    `details` carries the kind's own fields: `count`/`threshold` for
    under_threshold, `status` (HTTP status or None) for provider_error,
    `raw_text`/`truncated` for unparsable, `env_vars` for no_credential.
    """

    kind: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, **self.details}


@dataclass(frozen=True)
class Usage:
    """Tokens the provider reported for one call."""

    input_tokens: int = 0
    output_tokens: int = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass
class ObserverResult:
    """The seed's ObserverResult (ran, stored, compressed_ids, notes) plus what cleo-tui adds."""

    ran: bool = False
    stored: int = 0
    compressed_ids: list[str] = field(default_factory=list)
    notes: list[dict[str, Any]] = field(default_factory=list)
    note_ids: list[str] = field(default_factory=list)
    problem: Problem | None = None
    proposal_id: int | None = None
    run_id: int | None = None
    provider: dict[str, Any] | None = None
    usage: Usage | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "ran": self.ran, "stored": self.stored, "compressed_ids": list(self.compressed_ids),
            "notes": list(self.notes), "note_ids": list(self.note_ids),
            "problem": None if self.problem is None else self.problem.to_dict(),
            "proposal_id": self.proposal_id, "run_id": self.run_id, "provider": self.provider,
            "usage": None if self.usage is None else self.usage.to_dict(),
        }


@dataclass
class ReflectorResult:
    """The seed's ReflectorResult (ran, patterns_stored, learnings_stored, superseded_ids) plus more.

    `superseded_ids` are the ids this apply really evicted; `rejected_ids` the
    proposed ones the reviewer did not approve; `already_evicted_ids` approved
    ones that were no longer live. `patterns_stored` / `learnings_stored` count
    new rows only; an accepted entry identical to a live stored one is merged
    into it (CLEO's dedup) and counted in `*_merged`, its id in `merged_*_ids`.
    `pattern_ids` / `learning_ids` list every accepted entry's id, new or merged.
    """

    ran: bool = False
    patterns_stored: int = 0
    learnings_stored: int = 0
    superseded_ids: list[str] = field(default_factory=list)
    rejected_ids: list[str] = field(default_factory=list)
    already_evicted_ids: list[str] = field(default_factory=list)
    pattern_ids: list[str] = field(default_factory=list)
    learning_ids: list[str] = field(default_factory=list)
    patterns_merged: int = 0
    learnings_merged: int = 0
    merged_pattern_ids: list[str] = field(default_factory=list)
    merged_learning_ids: list[str] = field(default_factory=list)
    problem: Problem | None = None
    proposal_id: int | None = None
    run_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["problem"] = None if self.problem is None else self.problem.to_dict()
        return out


@dataclass
class ProposeOutcome:
    """What asking the model produced: a stored pending proposal, or the problem."""

    ran: bool
    proposal: Any = None  # cleo_tui.llm.proposals.Proposal when the model's answer was usable
    problem: Problem | None = None
    provider: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "ran": self.ran,
            "proposal": None if self.proposal is None else self.proposal.to_dict(),
            "problem": None if self.problem is None else self.problem.to_dict(),
            "provider": self.provider,
        }
