"""Secrets in the brain: found by kind in every table and column, masked, and redacted from every byte."""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.store import open_brain
from cleo_tui.cli import main
from cleo_tui.config import cache_dir
from cleo_tui.memory.secrets import find_secrets, mask, scan_brain
from tests.brain_fixtures import add_cleo_recall_logs, insert_observations, make_cleo_consolidated, observation

# One planted secret of each kind; the values are made up but shaped as the real ones.
PLANTED = {
    "aws-access-key": ("export AWS_ACCESS_KEY_ID=", "AKIAQ3EGRQWKXN7VTSJM", ""),
    "aws-secret-key": ("aws_secret_access_key = ", "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", ""),
    "github-token": ("git clone https://", "ghp_R7kd93JfL2mQp8XzT4vNc6BwY1sHe5GaU0iO", "@github.com/x/y"),
    "gitlab-token": ("GITLAB_TOKEN ", "glpat-Zq8vT3mK9pLx2Rf7Wn4B", " used in CI"),
    "slack-token": ("SLACK_BOT ", "xoxb-2847561930-4829175630-QmT7vLp2Zk9RxW4nB8cJ", ""),
    "stripe-key": ("stripe key ", "sk_live_51Hq8ZkL2mTp9XvR4nWc7Yb3", " in the webhook test"),
    "anthropic-key": ("ANTHROPIC_API_KEY=", "sk-ant-api03-Qm8vT2kL9pXz4Rf7Wn3Bc6Yh1Jd5Gs0U-aE8iO2uK", ""),
    "openai-key": ("OPENAI_API_KEY=", "sk-proj-T4mQ9vL2kZp8Xr7Wn3Bc6Yh1Jd5", ""),
    "jwt": ("session ", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyMTIzIn0.Qm8vT2kL9pXz4Rf7Wn3Bc6Yh1Jd5Gs0UaE", ""),
    "private-key": ("id_rsa:\n", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAz8vT2kL9pXz4Rf7Wn3\n"
                                "-----END RSA PRIVATE KEY-----", "\n"),
    "password-assignment": ("DB_PASSWORD=", "Tr0ub4dor-horse9", " from .env"),
    "authorization-header": ("curl -H 'Authorization: Bearer ", "a9F3kQ7mZ2xL8pRv", "' https://api"),
    "connection-string": ("DATABASE_URL=postgres://app:", "Hunter2Pw9x", "@db.internal:5432/app"),
    "high-entropy-token": ("the webhook secret is ", "Zk9Qm2vL8xT4pR7nW3bC6yH1jD5gS0uAeK", " (rotate it)"),
}
# What is not a secret: hashes, SHAs, UUIDs, ids, paths, placeholders.
NOT_SECRETS = (
    "commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39, content hash e3b0c44298fc1c14, uuid "
    "123e4567-e89b-12d3-a456-426614174000, sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855, "
    "id O-mx3b2eu0-0, src/cleo_tui/memory/pool_scan_snapshot_format.py, password: <your password>, "
    "token=${GITHUB_TOKEN}, password=None, test_own_writes_are_not_reported_as_cleos"
)


def _text(kind: str) -> str:
    before, secret, after = PLANTED[kind]
    return f"{before}{secret}{after}"


@pytest.mark.parametrize("kind", list(PLANTED))
def test_each_kind_is_found_with_its_exact_span_and_a_masked_preview(kind):
    text = _text(kind)
    found = find_secrets(text)
    assert [(m.kind, text[m.start:m.end]) for m in found] == [(kind, PLANTED[kind][1])]
    preview = mask(kind, PLANTED[kind][1])
    assert PLANTED[kind][1] not in preview
    assert preview.endswith(f"({len(PLANTED[kind][1])} chars)")


def test_hashes_uuids_shas_ids_and_placeholders_are_not_secrets():
    assert find_secrets(NOT_SECRETS) == []


def test_the_demo_brain_has_no_false_positive(brain):
    assert scan_brain(brain).findings == []


def _planted_brain(tmp_path: Path) -> Path:
    """A CLEO-layout brain (WAL, CLEO's FTS triggers) with a secret of every kind somewhere:
    observations' title, narrative and facts_json, a pattern, a learning, a decision, CLEO's raw queries;
    and old versions of rows left in the file's free space by CLEO's own updates."""
    db = make_cleo_consolidated(tmp_path / ".cleo" / "cleo.db")
    kinds = list(PLANTED)
    rows = [observation(i) for i in range(40)]
    for i, kind in enumerate(kinds):
        text = f"Observed {i}: {_text(kind)} while debugging the deploy"
        rows[i] |= {"narrative": text, "title": text[:120],
                    "content_hash": hashlib.sha256(text.strip().lower().encode()).hexdigest()[:16]}
    rows[20]["facts_json"] = json.dumps([_text("github-token"), "deploys go through staging"])
    rows[21]["narrative"] = NOT_SECRETS
    insert_observations(db, rows)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute(f"INSERT INTO {cs.PATTERNS}(id, type, pattern, context, extracted_at) VALUES "
                 "('P-1', 'workflow', ?, 'ci', '2026-05-01')", (f"Always export {_text('openai-key')} first",))
    conn.execute(f"INSERT INTO {cs.LEARNINGS}(id, insight, source, confidence, created_at) VALUES "
                 "('L-1', ?, 'session', 0.8, '2026-05-01')", (f"The key {_text('stripe-key')} is test-only",))
    conn.execute(f"INSERT INTO {cs.DECISIONS}(id, type, decision, rationale, confidence, created_at) VALUES "
                 "('D-1', 'technical', 'Use the vault', ?, 'high', '2026-05-01')", (_text("password-assignment"),))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    # CLEO rewrites a row (citation bump): the old version stays in the page's free space.
    conn.execute(f"UPDATE {cs.OBSERVATIONS} SET narrative = narrative || ' (seen again)' WHERE rowid = 1")
    conn.close()
    add_cleo_recall_logs(db, retrievals=[
        {"query": f"where is {PLANTED['aws-access-key'][1]} used", "entry_ids": ["O-test00000-0"]},
        {"query": "stripe webhook", "entry_ids": ["L-1"]},
    ])
    return db


def _all_bytes(db: Path) -> bytes:
    files = [db, Path(f"{db}-wal"), Path(f"{db}-shm"), *(p for p in cache_dir().rglob("*") if p.is_file())]
    return b"".join(p.read_bytes() for p in files if p.exists())


def _encodings(secret: str) -> list[bytes]:
    raw = secret.encode()
    return [raw, secret.encode("utf-16-le"), secret.encode("utf-16-be"), base64.b64encode(raw)]


def test_every_planted_secret_is_found_where_it_was_planted(tmp_path):
    db = _planted_brain(tmp_path)
    brain = open_brain(db, read_only=True)
    try:
        scan = scan_brain(brain)
    finally:
        brain.close()
    places = {(f.table, f.row_id, f.column, f.kind) for f in scan.findings}
    for i, kind in enumerate(PLANTED):
        row_id = observation(i)["id"]
        assert (cs.OBSERVATIONS, row_id, "narrative", kind) in places
    assert (cs.OBSERVATIONS, observation(20)["id"], "facts_json", "github-token") in places
    assert (cs.PATTERNS, "P-1", "pattern", "openai-key") in places
    assert (cs.LEARNINGS, "L-1", "insight", "stripe-key") in places
    assert (cs.DECISIONS, "D-1", "rationale", "password-assignment") in places
    assert (cs.RETRIEVAL_LOG, "1", "query", "aws-access-key") in places
    assert not any(f.row_id == observation(21)["id"] for f in scan.findings)  # the look-alikes
    dumped = json.dumps(scan.to_json())
    for _before, secret, _after in PLANTED.values():
        assert secret not in dumped  # masked: never the secret itself


def test_redaction_leaves_no_byte_of_any_secret_and_cleo_still_reads_the_brain(tmp_path, capsys):
    db = _planted_brain(tmp_path)
    assert main(["secrets", "--db", str(db), "--json"]) == 0  # a scan writes nothing and caches nothing secret
    assert main(["prune", "--db", str(db), "--budget", "500", "--json"]) == 0  # fills cleo-tui's caches
    assert any(cache_dir().rglob("*.npz"))
    before = _all_bytes(db)
    assert PLANTED["aws-access-key"][1].encode() in before  # the test plants what it then looks for
    capsys.readouterr()
    assert main(["secrets", "--db", str(db), "--redact", "--yes", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["redaction"]["secrets"] >= len(PLANTED) + 4
    assert out["redaction"]["fts_merged"] == [cs.OBSERVATIONS_FTS]
    assert out["redaction"]["wal_truncated"] is True
    after = _all_bytes(db)
    for _before, secret, _after in PLANTED.values():
        for encoded in _encodings(secret):
            assert encoded not in after, f"{secret[:8]}… left in the brain, its WAL/SHM or the cache"
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.execute(f"INSERT INTO {cs.OBSERVATIONS_FTS}({cs.OBSERVATIONS_FTS}, rank) VALUES ('integrity-check', 1)")
        hits = conn.execute(f"SELECT id FROM {cs.OBSERVATIONS_FTS} WHERE {cs.OBSERVATIONS_FTS} MATCH 'debugging'")
        assert len(hits.fetchall()) == len(PLANTED)  # CLEO's full-text search still finds the redacted rows
        narrative, content_hash = conn.execute(f"SELECT narrative, content_hash FROM {cs.OBSERVATIONS} "
                                               "WHERE id = ?", (observation(0)["id"],)).fetchone()
        assert "[redacted:aws-access-key]" in narrative
        # CLEO's hash of the text as it now is, so its dedup matches what is stored
        assert content_hash == hashlib.sha256(narrative.strip().lower().encode()).hexdigest()[:16]
        assert conn.execute(f"SELECT narrative FROM {cs.OBSERVATIONS} WHERE id = ?",
                            (observation(21)["id"],)).fetchone()[0] == NOT_SECRETS
        kind, summary = conn.execute("SELECT kind, summary FROM cleo_tui_runs ORDER BY id DESC").fetchone()
        assert kind == "redact" and "cannot be undone" in summary
    finally:
        conn.close()
    assert main(["secrets", "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["findings"] == []
    assert main(["prune", "--db", str(db), "--undo", str(out["redaction"]["run_id"])]) == 2  # never undone
    assert "cannot be undone" in capsys.readouterr().err


def test_redact_without_yes_off_a_terminal_writes_nothing(tmp_path, capsys):
    db = _planted_brain(tmp_path)
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    assert main(["secrets", "--db", str(db), "--redact"]) == 2
    assert "nothing was written" in capsys.readouterr().err
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest
    assert main(["secrets", "--db", str(db), "--yes"]) == 2


def test_one_row_of_one_table_is_said_in_the_singular(capsys):
    """"No secrets found in 1 rows of 1 tables." (the CLI and the Secrets pane say it alike)."""
    from cleo_tui.commands.secrets_cmd import _report
    from cleo_tui.memory.secrets import SecretScan

    _report(SecretScan([], 1, ["brain_observations"]), as_json=False)
    assert capsys.readouterr().out == "No secrets found in 1 row of 1 table.\n"
    _report(SecretScan([], 2_000, ["brain_observations", "brain_decisions"]), as_json=False)
    assert capsys.readouterr().out == "No secrets found in 2,000 rows of 2 tables.\n"


@pytest.mark.parametrize("name", ["password", "passwd", "pwd", "secret", "api_key", "apikey", "access-token",
                                  "auth_token", "client_secret", "private_key", "PRIVATE-KEY", "privatekey"])
def test_every_name_an_assignment_may_use_is_found_in_a_row_as_in_a_text(name):
    """A row is ruled out by a quick search for what every secret starts with before its text is
    scanned; `private_key = …` was missing from it, so the brain's scan never found such a secret."""
    from cleo_tui.memory.secrets import scan_values

    text = f"config: {name} = hunter2hunter2"
    assert [m.kind for m in find_secrets(text)] == ["password-assignment"]
    assert [f.kind for f in scan_values("brain_observations", "O-1", ["narrative"], [text])] == ["password-assignment"]


_PIECES = [secret for _before, secret, _after in PLANTED.values()] + [
    before for before, _secret, _after in PLANTED.values()] + [
    "sk-", "sk-ant-", "AKIA", "eyJ", "://", "token", "TOKEN=", "password: ", "passwd=", "Secret ", "api-key ",
    "Authorization: Basic ", "-----BEGIN ", "PRIVATE KEY-----", "ghp_", "xoxb-", "hooks.slack.com/services/",
    "postgres://u:", "@host", "[redacted:jwt]", " ", "\n", "=", "'", '"', "é",
    "\u017fecret", "\u212a", "pa\u017f\u017fword=", "\u0131", "\u0130", "author\u0131zation: Bearer ",
    "AUTHOR\u0130ZATION: token "]  # a long s, the Kelvin sign, a dotless i, a dotted capital I


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES) | st.text(max_size=12), max_size=14))
def test_each_shape_searched_on_its_own_finds_what_one_alternation_of_all_finds(parts):
    """`_shape_matches` searches only the shapes whose hint a text holds, each on its own (35 s → a few
    over real-layout narratives); it must find exactly what the single alternation found."""
    from cleo_tui.memory.secrets import _SCAN, _shape_matches

    text = "".join(parts)
    one_pass = [(int((m.lastgroup or "k0")[1:]), m.span(), m.group()) for m in _SCAN.finditer(text)]
    assert [(k, m.span(), m.group()) for k, m in _shape_matches(text)] == one_pass
