"""The Review pane's texts: why a run did nothing, the provider, a proposal's head, one item in full.

Everything here returns `rich.text.Text` built from `safe_text.printable/one_line`:
proposals and brain rows are untrusted text and are never parsed as markup.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from cleo_tui.llm import results as r
from cleo_tui.llm.proposals import PENDING, Proposal
from cleo_tui.llm.review_reads import (
    LEARNING,
    NOTE,
    PATTERN,
    PRIORITY_MEANING,
    SUPERSEDED,
    ReviewContext,
    ReviewItem,
    decision_text,
    still_covering,
)
from cleo_tui.memory.mapping import as_text
from cleo_tui.safe_text import one_line, plural, printable

NARRATIVE_INLINE = 20_000  # longer narratives show their start here; `o` opens all of it
MARK_TEXT = {NOTE: ("✓ store", "✗ skip"), PATTERN: ("✓ accept", "✗ reject"),
             LEARNING: ("✓ accept", "✗ reject"), SUPERSEDED: ("✓ EVICT", "· keep")}
NOT_RUN = (r.DISABLED, r.NO_CREDENTIAL, r.UNDER_THRESHOLD, r.TOO_FEW_ROWS, r.READ_ONLY)

Openable = list[tuple[str, str]]  # (observation id, label) the reviewer can open


# The llm layer's advice names the CLI's flags; in the TUI the same choice is a control of the Review pane.
CLI_TO_TUI = (
    ("(or choose another provider with --provider)", "(or choose another provider in the provider list above)"),
    ("Lower it with --threshold to run anyway.", "Lower the threshold field above to run anyway."),
    ("set OPENAI_BASE_URL, pass --base-url, or put", "set OPENAI_BASE_URL (then start cleo-tui again) or put"),
    ("llm.allow_hosts in cleo-tui's config file, or --base-url.", "or llm.allow_hosts in cleo-tui's config file."),
)


def tui_wording(message: str) -> str:
    """`message` with the CLI's flags replaced by what to do in the TUI."""
    for cli, tui in CLI_TO_TUI:
        message = message.replace(cli, tui)
    return message


def problem_text(problem: r.Problem) -> Text:
    """Why the observer or reflector did nothing, with the figures the kind carries."""
    text = Text("Did not run: " if problem.kind in NOT_RUN else "No proposal: ", style="bold")
    text.append(one_line(tui_wording(problem.message), 400))
    details = problem.details
    if problem.kind == r.UNDER_THRESHOLD:
        text.append(f"  [count {details.get('count')} < threshold {details.get('threshold')}]", style="bold")
    elif problem.kind == r.PROVIDER_ERROR and details.get("status"):
        text.append(f"  [HTTP {details['status']}]", style="bold")
    usage = details.get("usage")
    if isinstance(usage, dict):
        text.append(f"  tokens in/out {usage.get('input_tokens', 0)}/{usage.get('output_tokens', 0)}.")
    if details.get("raw_text"):
        text.append("  v shows the model's raw answer.", style="italic")
    return text


def provider_text(described: dict[str, Any]) -> Text:
    """Provider and model, whether a key is set (never the key), and where each choice came from."""
    text = Text("model: ", style="bold")
    text.append(one_line(described.get("provider")) + " · " + one_line(described.get("model")))
    if described.get("base_url"):
        text.append(" @ " + one_line(described["base_url"], 60))
    if described.get("provider") == "openai-compatible":
        ok = bool(described.get("has_credential"))
        text.append(" · base URL " + ("set ✓" if ok else "missing ✗"), style="green" if ok else "red")
    else:
        ok = bool(described.get("key_set"))
        text.append(f" · {described.get('key_env')} " + ("set ✓" if ok else "not set ✗"),
                    style="green" if ok else "red")
    text.append(f" · provider from {one_line(described.get('provider_source'))}, "
                f"model from {one_line(described.get('model_source'))}", style="italic")
    return text


def head_text(p: Proposal | None, read_only: bool = False) -> Text:
    """Three lines on the selected proposal: what and when, model and usage, the decision (`read_only`:
    with none, that none can be made here)."""
    if p is None and read_only:
        return Text("No proposal in this brain. It is open read-only: the observer and the reflector cannot "
                    "run here.", style="italic")
    if p is None:
        return Text("No proposal yet: choose observer or reflector and a scope above, then r runs it. "
                    "Pending proposals stay in the brain until you decide.", style="italic")
    usage = p.usage or {}
    text = Text(f"Proposal {p.id} · {p.kind} · ", style="bold")
    text.append(p.status.upper(), style="bold reverse" if p.status == PENDING else "bold")
    scope = p.session_id or p.items.get("scope") or ""
    text.append(f" · {one_line(scope, 28)} · {one_line(p.created_at)[5:16]}")
    text.append(f"\n{one_line(p.provider)} · {one_line(p.model, 30)} · tokens in/out "
                f"{usage.get('input_tokens', 0)}/{usage.get('output_tokens', 0)} · {len(p.input)} input rows")
    dropped = p.items.get("dropped_ids") or []
    if dropped:
        text.append(f" · {plural(len(dropped), 'unknown id')} dropped", style="italic")
    text.append("\nDecision: ", style="bold")
    if p.status == PENDING:
        text.append("pending — nothing is written until you store or apply it")
    else:
        text.append(f"{decision_text(p)} · decided {one_line(p.decided_at)[5:16]}"
                    + (f" · run {p.run_id}" if p.run_id else ""))
    return text


def describe_item(item: ReviewItem, items: list[ReviewItem], marks: dict[str, bool],
                  context: ReviewContext | None) -> tuple[Text, Text, Openable]:
    """The item in full (left), what goes beside it (right), and the observations it names."""
    d, titles = item.data, (context.titles if context else {})
    decision = Text("\nYour decision: ", style="bold")
    decision.append(MARK_TEXT[item.kind][0 if marks.get(item.key) else 1], style="bold")
    if item.kind == SUPERSEDED:
        return _describe_superseded(item, items, marks, context, decision)
    if item.kind == NOTE:
        priority = d.get("priority")
        meaning = PRIORITY_MEANING.get(priority, "?") if isinstance(priority, int) else "?"
        body = Text(f"Observer note {item.index} · priority {one_line(priority)} "
                    f"({meaning}) · {one_line(d.get('date'))}\n\n", style="bold")
        body.append(printable(as_text(d.get("observation"))))
        body.append_text(decision)
        sources = [(as_text(s), titles.get(as_text(s), "")) for s in d.get("source_ids", [])]
        aside = Text(f"Compresses {plural(len(sources), 'observation')} — enter or click opens one:", style="bold")
        return body, aside, sources
    if item.kind == PATTERN:
        body = Text(f"Pattern {item.index} (stored as a workflow pattern)\n\n", style="bold")
        body.append(printable(as_text(d.get("pattern"))))
        body.append("\n\ncontext: ", style="bold")
        body.append(printable(as_text(d.get("context"))) or "—")
        body.append_text(decision)
        return body, Text("An identical pattern already stored only raises its frequency.", style="italic"), []
    body = Text(f"Learning {item.index}\n\n", style="bold")
    body.append(printable(as_text(d.get("insight"))))
    confidence = d.get("confidence")
    actionable = isinstance(confidence, (int, float)) and confidence >= 0.7
    body.append(f"\n\nconfidence {one_line(confidence)}" + (" · actionable" if actionable else ""))
    body.append_text(decision)
    return body, Text("An identical insight already stored only raises its confidence.", style="italic"), []


def _describe_superseded(item: ReviewItem, items: list[ReviewItem], marks: dict[str, bool],
                         context: ReviewContext | None, decision: Text) -> tuple[Text, Text, Openable]:
    """The observation in full, beside the model's claim and the reflections that would still cite it."""
    oid = as_text(item.data.get("id"))
    found = context.superseded.get(oid) if context else None
    if context is None or found is None:
        return Text(f"Observation {oid}: loading…", style="italic"), Text(""), [(oid, "")]
    row = found.get("row") or {}
    state = "MISSING" if not found["exists"] else "live" if found["live"] else "already evicted"
    body = Text(f"Observation {oid} · {one_line(row.get('type'))} · {one_line(row.get('created_at'))} · "
                f"{one_line(row.get('source_type') or 'raw')} · {state}\n", style="bold")
    body.append(printable(row.get("title") or "") + "\n", style="bold")
    narrative = row.get("narrative") or ""
    body.append(printable(narrative[:NARRATIVE_INLINE]))
    if len(narrative) > NARRATIVE_INLINE:
        body.append(f"\n… {len(narrative) - NARRATIVE_INLINE:,} more characters: o opens it all", style="italic")
    aside = Text()
    if found.get("protected"):
        aside.append("PROTECTED", style="bold reverse red")
        aside.append(f" {printable('; '.join(found.get('reasons') or []))} — evicting it asks a second time\n\n",
                     style="bold")
    aside.append("The model's claim\n", style="bold")
    aside.append(printable(as_text(item.data.get("reason"))) or "(no reason given)")
    covering = still_covering(oid, items, marks, context)
    aside.append("\n\nStill covered after apply by\n", style="bold")
    aside.append("\n".join(f"• {printable(line)}" for line in covering) if covering else
                 "nothing — no reflection would cite it", style="" if covering else "bold red")
    aside.append_text(decision)
    aside.append("\n\nOpen (enter or click):", style="italic")
    openable = [(oid, one_line(row.get("title"), 60))]
    openable += [(node.split(":", 1)[1], "citing observer note") for node, _ in context.citing.get(oid, [])
                 if node.startswith("observation:")]
    return body, aside, openable
