"""Words and sentence templates for the demo brain: an agent building "harbor".

harbor is a fictional invoicing service (a Python API, a TypeScript web client
and a Node worker). Every observation the demo writes is one of the templates
below with its `{placeholders}` filled from the vocabularies, so titles and
narratives read like what a coding agent records over many sessions, and two
observations of the same template differ in wording, not only in numbers.

Routine templates draw identifiers from small shared pools (so they are not
"unique"); the protected kinds — user assertions, completions, errors, commit
SHAs — have templates of their own, so the demo holds a controlled share of them.
"""

from __future__ import annotations

import random
import string
from functools import cache

PROJECT = "harbor"

AREAS = ("auth", "billing", "invoices", "search", "export", "notifications", "storage", "webhooks",
         "reports", "cli", "sync", "payments")

FILES = (
    "src/harbor/auth/token.py", "src/harbor/auth/session.py", "src/harbor/auth/oauth.py",
    "src/harbor/billing/ledger.py", "src/harbor/billing/tax.py", "src/harbor/billing/rounding.py",
    "src/harbor/invoices/render.py", "src/harbor/invoices/models.py", "src/harbor/invoices/pdf.py",
    "src/harbor/search/index.py", "src/harbor/search/query.py", "src/harbor/export/csv_writer.py",
    "src/harbor/export/xlsx.py", "src/harbor/notifications/mailer.py", "src/harbor/storage/s3.py",
    "src/harbor/storage/cache.py", "src/harbor/webhooks/dispatch.py", "src/harbor/webhooks/retry.py",
    "src/harbor/reports/monthly.py", "src/harbor/cli/main.py", "src/harbor/sync/cursor.py",
    "src/harbor/payments/stripe_client.py", "src/harbor/db/migrations/0042_invoice_status.py",
    "src/harbor/db/session.py", "src/harbor/settings.py", "src/harbor/api/routes.py",
    "src/harbor/api/deps.py", "src/harbor/api/errors.py",
    "web/src/components/InvoiceTable.tsx", "web/src/components/LoginForm.tsx",
    "web/src/components/SearchBar.tsx", "web/src/hooks/useInvoices.ts", "web/src/api/client.ts",
    "web/src/pages/Dashboard.tsx", "web/src/pages/Settings.tsx", "web/src/store/session.ts",
    "web/vite.config.ts", "web/package.json", "worker/src/queue.ts", "worker/src/events.ts",
    "worker/src/mongo.ts", "tests/test_ledger.py", "tests/test_token.py", "tests/test_render.py",
    "tests/test_search.py", "tests/test_webhooks.py", "tests/conftest.py", "web/src/__tests__/InvoiceTable.test.tsx",
    "pyproject.toml", "docker-compose.yml", ".github/workflows/ci.yml", "Makefile", "README.md",
    "docs/architecture.md", "alembic.ini",
)

FUNCTIONS = (
    "refresh_token", "issue_token", "verify_signature", "post_entry", "compute_tax", "round_half_even",
    "render_invoice", "render_line_items", "build_query", "rank_results", "write_rows", "send_digest",
    "upload_blob", "dispatch_event", "schedule_retry", "monthly_totals", "resolve_cursor", "charge_card",
    "get_session", "load_settings", "paginate", "normalize_currency", "parseAmount", "useInvoices",
    "fetchInvoices", "handleSubmit", "enqueueJob", "ackMessage",
)

DOTTED = (
    "harbor.billing.ledger", "harbor.auth.token", "harbor.invoices.render", "harbor.search.index",
    "harbor.webhooks.dispatch", "harbor.db.session", "harbor.settings.Settings", "sqlalchemy.orm.Session",
    "pydantic.BaseModel", "fastapi.Depends", "decimal.Decimal", "datetime.timezone",
)

LIBRARIES = (
    "FastAPI", "SQLAlchemy", "pydantic", "alembic", "httpx", "pytest", "hypothesis", "React", "Vite",
    "TanStack Query", "zod", "Playwright", "BullMQ", "mongoose", "Redis", "Postgres", "WeasyPrint",
    "boto3", "structlog", "ruff", "mypy", "Vitest",
)

FEATURES = (
    "invoice PDF export", "multi-currency totals", "token refresh", "webhook retries with backoff",
    "full-text invoice search", "monthly revenue report", "CSV export of line items", "dark mode",
    "rate limiting on the public API", "email digests", "soft-delete for customers", "audit log",
    "idempotency keys on payments", "keyboard shortcuts in the invoice table", "tax rules per region",
)

CONCEPTS = ("auth", "billing", "testing", "performance", "database", "frontend", "api", "ci", "caching",
            "migrations", "typing", "security", "ux", "observability")

TESTS = ("test_rounding_half_even", "test_refresh_rotates_token", "test_render_totals", "test_search_ranking",
         "test_webhook_retry_backoff", "test_monthly_totals_empty", "test_csv_quotes", "test_login_redirect",
         "test_pagination_cursor", "test_tax_by_region")

ADJECTIVES = ("slow", "flaky", "brittle", "noisy", "surprising", "subtle", "easy", "obvious", "tricky")

TASK_TITLES = (
    "Add invoice PDF export", "Fix rounding in ledger totals", "Rotate refresh tokens", "Retry failed webhooks",
    "Speed up invoice search", "Monthly revenue report", "Migrate sessions to Redis", "CSV export of line items",
    "Tax rules per region", "Idempotent payment capture", "Audit log for admin actions", "Dark mode for the dashboard",
)

PY_FILES = tuple(f for f in FILES if f.startswith("src/") and f.endswith(".py"))
TS_FILES = tuple(f for f in FILES if f.endswith((".ts", ".tsx")) and "__tests__" not in f)

FILE_PLACEHOLDERS = ("file", "py", "ts")

# Placeholder name -> how to fill it. Names ending in 2 draw a second, independent value.
_POOLS: dict[str, tuple[str, ...]] = {
    "file": FILES, "py": PY_FILES, "ts": TS_FILES, "func": FUNCTIONS, "dotted": DOTTED, "lib": LIBRARIES,
    "feature": FEATURES,
    "test": TESTS, "adj": ADJECTIVES, "area": AREAS,
}


def _number(rng: random.Random, name: str) -> str:
    if name == "ms":
        return str(rng.choice((12, 18, 25, 40, 65, 80, 120, 240, 450, 900, 1800)))
    if name == "n":
        return str(rng.randint(2, 40))
    if name == "pct":
        return str(rng.choice((5, 10, 15, 20, 30, 40, 60)))
    if name == "line":
        return str(rng.randint(12, 480))
    if name == "ver":
        return f"{rng.randint(0, 5)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}"
    if name == "issue":
        return str(rng.randint(100, 260))  # a small pool: issues come up again and again
    if name == "sha":
        return "".join(rng.choice("0123456789abcdef") for _ in range(7)) + rng.choice("abcdef")
    raise KeyError(name)


def draw(rng: random.Random, context: dict[str, str], *templates: str) -> dict[str, str]:
    """Values for every placeholder of `templates`: from `context` first, else the vocabularies.

    Draw once, then `.format(**values)` each template, so a title and its
    narrative name the same file, function or library.
    """
    values: dict[str, str] = {}
    for name in sorted({f for t in templates for f in _fields(t)}):
        if name in context:
            values[name] = context[name]
            continue
        base = name.rstrip("23")
        for _ in range(4):  # `{py2}` names a different file than `{py}` (almost always)
            values[name] = rng.choice(_POOLS[base]) if base in _POOLS else _number(rng, base)
            if name == base or values[name] != values.get(base):
                break
    return values


@cache
def _fields(template: str) -> tuple[str, ...]:
    return tuple(sorted({f for _, f, _, _ in string.Formatter().parse(template) if f}))


# (type, title template, narrative template). The title is the agent's summary; the
# narrative says what happened. `{task}` and `{area}` come from the session.
ROUTINE: tuple[tuple[str, str, str], ...] = (
    ("discovery", "{func} in {py} re-reads settings on every call",
     "While tracing {task} I noticed {func} in {py} calls load_settings on every request. "
     "Caching the settings object would save roughly {ms} ms per call under load."),
    ("discovery", "The {area} tests share one database fixture",
     "All {area} tests go through the same fixture in tests/conftest.py, so a {ms} ms migration "
     "there slows every one of the {n} tests in the module. Worth splitting before the suite grows further."),
    ("discovery", "{lib} already handles what {func} reimplements",
     "Reading {py} for {task}: {func} hand-rolls what {lib} gives us for free. Not changing it "
     "now, but it explains why the two code paths disagree on edge cases."),
    ("discovery", "Invoice totals are computed twice per request",
     "Profiling the invoice page showed totals computed once in {py} and again in {py2}. "
     "Together they take about {pct}% of the request time."),
    ("discovery", "{dotted} is imported lazily to dodge a cycle",
     "Found out why {dotted} is imported inside the function in {py}: importing it at the top "
     "creates a cycle with the {area} package. Left a comment there."),
    ("discovery", "Search ranking ignores customer name",
     "The {area} query builder only weights invoice number and memo, so searching by customer name "
     "ranks exact matches below partial ones. Relevant to issue #{issue}."),
    ("change", "Moved {func} into {py}",
     "Moved {func} into {py} so the {area} module owns it; callers in {py2} now import it from "
     "there. No behaviour change, {n} call sites updated."),
    ("change", "Bumped {lib} to {ver}",
     "Bumped {lib} to {ver} for {task}. The changelog mentions nothing that affects us; the test "
     "suite passes locally in {ms} s."),
    ("change", "Tightened types in {py}",
     "Added type hints to the public functions of {py} and fixed the {n} places mypy complained "
     "about. {func} now returns Decimal instead of float."),
    ("change", "Stricter props in {ts}",
     "Made the props of {ts} required where the component cannot render without them; tsc found "
     "{n} call sites that passed undefined."),
    ("discovery", "{ts} re-renders on every keystroke",
     "The React profiler shows {ts} re-rendering on every keystroke because the filter object is "
     "rebuilt each render. Memoising it should fix the lag users see with {n}00 invoices."),
    ("change", "Config for {area} now read from env",
     "The {n} {area} settings are now read from environment variables in src/harbor/settings.py "
     "instead of a hard-coded dict, which the docker-compose.yml setup needed."),
    ("feature", "Started on {feature}",
     "Started {feature} for {task}: skeleton in {py}, wired into src/harbor/api/routes.py behind "
     "a feature flag. Tests next."),
    ("feature", "{feature}: first working version",
     "{feature} works end to end for the happy path: {py} builds the payload, {ts} renders it. "
     "Edge cases around empty invoices are still open."),
    ("feature", "Added pagination to the {area} endpoint",
     "The {area} endpoint now pages with a cursor instead of offset, using {func} from {py}. "
     "Page size defaults to 50; the web client reads the next cursor from the response."),
    ("bugfix", "Fixed rounding of {area} totals",
     "Totals were rounded per line instead of per invoice, so a 3-line invoice could be off by a "
     "cent. {func} in {py} now rounds once at the end; added {test}."),
    ("bugfix", "Fixed {adj} test {test}",
     "{test} depended on dict ordering in {py}. Sorted the rows before comparing; it passed "
     "{n} runs in a row afterwards."),
    ("bugfix", "Login redirect loop on expired session",
     "An expired session sent the web client into a redirect loop because web/src/store/session.ts "
     "kept the stale token. It is now cleared before redirecting; {test2} would have caught it "
     "if it ran against {ts}. Related to #{issue}."),
    ("bugfix", "Timezone off-by-one in {area} report",
     "The {area} report grouped by local date instead of UTC, shifting late-evening invoices into "
     "the next day. {func} now uses datetime.timezone.utc explicitly."),
    ("refactor", "Split {py} into smaller modules",
     "{py} had grown past {n}00 lines; split the {area} helpers out. Kept the public names so "
     "nothing else had to change."),
    ("refactor", "Replaced hand-written retry loop with {lib}",
     "The retry loop in {py} is gone; {lib} does the backoff now. {n} lines removed and the "
     "behaviour is easier to test."),
    ("refactor", "Renamed {func} for clarity",
     "Renamed the old helper to {func} in {py}; the previous name suggested it wrote to the "
     "database, which it never did."),
    ("decision", "Use {lib} for {area}",
     "Decision: use {lib} for {area} rather than rolling our own. It is already a dependency, it "
     "is well tested, and the alternative would take a week we do not have."),
    ("decision", "Keep money as integer cents",
     "Decision: amounts stay integer cents in the database and become Decimal only at the edges. "
     "Floats caused the rounding bugs in {area}, most recently in {py}."),
    ("diary", "Slow session on {area}",
     "Slow session: most of it went into reading {file} and {file2} to understand how {area} "
     "works before touching {task}. Nothing changed yet."),
    ("diary", "Paired on {task}",
     "Spent the session pairing on {task}. Good progress on the design, little code; notes are in "
     "docs/architecture.md."),
    ("diary", "Waiting on CI",
     "CI was {adj} today; waited on .github/workflows/ci.yml runs most of the afternoon. Used the "
     "time to read the {lib} docs."),
)

# Afterthoughts an agent appends to about half of its routine notes; they also keep two
# notes of the same template from being identical text (CLEO would merge those).
TAILS = (
    "Took about {n} minutes.", "Left a TODO in {py}.", "Noted for {task}.",
    "Ran {test} afterwards to be sure.", "Will revisit after {task}.",
    "Cross-checked against docs/architecture.md.", "Timing: {ms} ms before, {ms2} ms after.",
    "Touches the same code as #{issue}.", "{lib} docs were no help here.",
    "Worth a note in the {area} README section.", "Second time this came up in {area}.",
    "Found while reading {func}.",
)

SESSION_SUMMARY = (
    "Session summary: {task}",
    "Worked on {task} ({area}). Touched {file} and {file2}; {n} tests added or changed. "
    "Open questions: how {func} should behave for empty input. Next session: finish the {area} part.",
)

# Protected kinds. Each is (type, title, narrative, source_confidence or None).
USER_ASSERTIONS: tuple[tuple[str, str, str, str | None], ...] = (
    ("decision", "User prefers small PRs", "User prefers small pull requests: one concern per PR, "
     "under 400 lines, with the test in the same PR.", "owner"),
    ("discovery", "The user said never to force-push to main", "The user said never to force-push "
     "to main, even to fix a typo in the last commit. Use a revert instead.", "owner"),
    ("decision", "User wants Decimal everywhere in billing", "User wants Decimal everywhere money "
     "is handled in {area}; floats are not allowed even in tests.", "owner"),
    ("discovery", "Owner asked for British spelling in the UI", "The owner asked for British "
     "spelling in every user-facing string (colour, cancelled, organisation).", "owner"),
    ("change", "User corrected the tax rule for {area}", "User corrected me: the reduced VAT rate "
     "applies to the whole invoice, not per line item. Updated {py} accordingly.", None),
    ("decision", "User insists on no new dependencies without asking", "User insists that no new "
     "runtime dependency is added without asking first; dev dependencies are fine.", "owner"),
)

# How the agent introduces a user assertion it records (the same rule comes up again).
ASSERTION_FRAMES = ("", "", "Reminder: ", "Noted during {task}: ", "Came up again in {area}: ",
                    "From the review of {task}: ")

COMPLETIONS: tuple[tuple[str, str], ...] = (
    ("Task complete: {task}", "Task complete: {task} - {task_title}. All tests pass; {file} and "
     "{file2} changed."),
    ("Merged the {area} branch", "Merged the {area} branch after review; {task} is done and closed. "
     "{n} commits, squashed."),
    ("Deployed {ver} to staging", "Deployed {ver} to staging with the {feature} flag on. Smoke tests "
     "green."),
)

ERRORS: tuple[tuple[str, str], ...] = (
    ("TypeError in {func}", "Traceback (most recent call last):\n  File \"{py}\", line {line}, in {func}\n"
     "    total = sum(item.amount for item in items)\nTypeError: unsupported operand type(s) for +: "
     "'int' and 'NoneType'"),
    ("error TS2345 in {ts}", "{ts}({line},14): error TS2345: Argument of type 'string | undefined' "
     "is not assignable to parameter of type 'string'."),
    ("E11000 duplicate key on events", "MongoServerError: E11000 duplicate key error collection: "
     "harbor.events index: idempotency_key_1 dup key: {{ idempotency_key: \"{sha}\" }}"),
    ("pytest exit code 1 on {test}", "pytest exited with code 1: {test} failed with AssertionError: "
     "assert Decimal('10.01') == Decimal('10.00')"),
    ("Migration failed: relation already exists", "alembic upgrade head failed on {py}: "
     "sqlalchemy.exc.ProgrammingError: relation \"invoice_status\" already exists (error: 42P07)"),
    ("ECONNREFUSED from worker", "worker/src/queue.ts could not reach Redis while running {test}: "
     "Error: connect ECONNREFUSED 127.0.0.1:6379. The docker-compose service was not started ({n} retries)."),
)

IDENTIFIER_NOTES: tuple[tuple[str, str, str], ...] = (
    ("change", "Pinned {lib} in commit {sha}", "Pinned {lib} to {ver} in commit {sha} after the "
     "upgrade broke {test}."),
    ("bugfix", "Reverted {sha}", "Reverted {sha}: it changed {func} in a way that broke the {area} "
     "export for invoices with zero lines."),
    ("discovery", "Regression bisected to {sha}", "git bisect points at {sha} as the commit that "
     "made {test} slow ({ms} ms to {ms2} ms)."),
)

OBSERVER_NOTES = (
    "Agent worked through {task} in {area}, mostly in {file}",
    "Decided {lib} is the way to handle {area}; rationale recorded",
    "Recurring failures of {test}; root cause was ordering in {py}",
    "Routine refactoring and renames across the {area} package",
    "Session spent reading code, few changes",
)

PATTERNS: tuple[tuple[str, str, str], ...] = (
    ("workflow", "Run the {area} tests before touching {file}", "Changes in {area} break distant tests"),
    ("blocker", "CI waits on the docker-compose services to start", "Slow CI on every push"),
    ("success", "Small PRs with the test in the same change get merged fast", "Review turnaround"),
    ("failure", "Floats for money keep reintroducing rounding bugs", "Billing and invoices"),
    ("optimization", "Cache settings instead of re-reading them per request", "Hot paths in {area}"),
    ("workflow", "Reproduce a flaky test with a fixed seed before fixing it", "Flaky {area} tests"),
    ("workflow", "Read {file} before changing anything in {area}", "Onboarding into {area}"),
    ("failure", "Skipping {test} locally hides {area} regressions until CI", "{area} regressions"),
    ("optimization", "Batch {area} writes instead of one query per row", "Slow {area} endpoints"),
    ("blocker", "{lib} upgrades stall on the {area} test fixtures", "Dependency upgrades"),
    ("success", "Feature flags let {feature} land in small steps", "Shipping {area} features"),
)

LEARNINGS: tuple[str, ...] = (
    "{lib} pagination is cursor-based; offset paging in {area} is a mistake at scale",
    "Timezones: always group reports by UTC date, convert only for display",
    "The {area} module has hidden coupling to {dotted}; change them together",
    "Integer cents in storage, Decimal at the edges, never float",
    "Flaky tests in this repo are almost always ordering assumptions",
    "{lib} upgrades need the full suite, not just the {area} tests",
    "{func} is the single place where {area} amounts are rounded; keep it that way",
    "The {area} endpoint is read-heavy: cache {dotted} results for a minute",
    "{test} catches most regressions in {area}; run it first",
)

DECISIONS: tuple[tuple[str, str], ...] = (
    ("Use {lib} for {area}", "Already a dependency and well tested; building our own would take a week."),
    ("Keep money as integer cents", "Floats caused rounding bugs; Decimal only at the API edges."),
    ("Cursor pagination for every list endpoint", "Offset paging is slow past page 100 and skips rows."),
    ("Feature flags for unfinished work", "Lets small PRs land on main without exposing half a feature."),
)

SOURCE_TYPES = (("agent", 56), ("claude-mem", 14), ("sleep-consolidation", 4), ("auto", 4),
                ("transcript", 3), ("session-debrief", 2))
TIERS = (("short", 60), ("medium", 28), ("long", 12))
MEMORY_TYPES = {"discovery": "semantic", "decision": "semantic", "diary": "episodic",
                "session-summary": "episodic", "refactor": "procedural"}
AGENTS = ("claude-code", "claude-code", "opencode", "codex", None)


# The Duplicates pane's material: each group restates one fact in other words (live rows, one
# session each); the last group's "User:" member is protected (a user assertion). No number,
# path or identifier in them: such a difference would make a pair an update, not a duplicate.
DUPLICATE_GROUPS = (
    ("Use uv instead of pip to install dependencies in this repo.",
     "To install dependencies in this repo, use uv instead of pip.",
     "In this repo, dependencies are installed with uv rather than pip."),
    ("Run the formatter before committing; the CI rejects unformatted code.",
     "The CI rejects unformatted code, so run the formatter before committing."),
    ("The staging database is reset every night, so do not keep test data there.",
     "Do not keep test data in the staging database: it is reset every night.",
     "Test data must not be kept in the staging database; it is reset every night."),
    ("Snapshot tests must be regenerated after any change to the theme colours.",
     "Regenerate the snapshot tests whenever the theme colours change."),
    ("The API client retries failed requests with exponential backoff.",
     "Failed requests get retried by the API client, with exponential backoff between tries."),
    ("Logging goes through structlog; do not use print for diagnostics.",
     "Do not use print for diagnostics: logging goes through structlog."),
    ("Feature flags are read once at startup and cached for the whole process.",
     "Feature flags are read once at startup, then cached for the whole process.",
     "User: feature flags are read once at startup and cached for the whole process."),
)
PROTECTED_GROUP = len(DUPLICATE_GROUPS) - 1
# An update, not a duplicate: the two differ in a number, so they are never merged.
CAPPED_PAIR = ("The HTTP client timeout is capped at 30 s for the sync job.",
               "The HTTP client timeout is capped at 60 s for the sync job.")
