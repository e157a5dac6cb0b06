"""The duplicate finder on planted groups in a real brain: found, kept apart, never merged by detail."""

from __future__ import annotations

import itertools
import sqlite3
import threading

import numpy as np
import pytest

from cleo_tui.memory import dedup_lsh
from cleo_tui.memory.dedup_text import as_written, compare, text_key, word_diff, words_swapped
from cleo_tui.memory.duplicates import ScanCancelled, parse_threshold, scan_duplicates
from cleo_tui.memory.pool_scan import SCAN_CHUNK
from tests.pruner_fixtures import add_observation, add_pattern, new_brain

# The same fact in different words (three groups), facts that share vocabulary, and updates.
SAME_UV = ("Use uv instead of pip to install dependencies in this repo.",
           "In this repo, dependencies are installed with uv rather than pip.",
           "Dependencies in this repo: install them with uv, not... uv rather than pip.")
SAME_FIXTURES = ("Tests must run with pytest -p no:randomly because the fixtures share state.",
                 "The fixtures share state, so tests have to be run with pytest -p no:randomly.")
SAME_DEPLOY = ("The deploy script must be run from the repository root.",
               "Run the deploy script from the root of the repository.")
SHARED_VOCABULARY = ("The test script must be run from the docs folder of the repository.",
                     "Config for billing now read from env",
                     "Config for notifications now read from env")
UPDATE = ("Retries against the payments API are capped at 30 s.",
          "Retries against the payments API are capped at 60 s.")
FILLER = ("Waited on CI most of the afternoon.", "The web client uses Vite for builds.",
          "Postgres runs in docker compose locally.")


@pytest.fixture
def brain(tmp_path):
    brain = new_brain(tmp_path)
    texts = [*SAME_UV[:2], *SAME_FIXTURES, *SAME_DEPLOY, *SHARED_VOCABULARY, *UPDATE, *FILLER]
    for n, text in enumerate(texts):
        add_observation(brain, f"O-{n:02d}", text, created_at=f"2026-01-{n + 1:02d} 10:00:00", quality_score=0.5)
    yield brain
    brain.close()


def _ids(brain, texts):
    marks = ",".join("?" * len(texts))
    return {r[0] for r in brain.query(f"SELECT id FROM brain_observations WHERE narrative IN ({marks})", list(texts))}


def test_planted_rewordings_are_found_and_nothing_else_is_pulled_in(brain):
    clusters = scan_duplicates(brain).clusters(0.85)
    found = sorted(sorted(c.ids) for c in clusters)
    expected = sorted(sorted(_ids(brain, group)) for group in (SAME_UV[:2], SAME_FIXTURES, SAME_DEPLOY))
    assert found == expected
    for cluster in clusters:
        assert sorted(cluster.merge_ids) == sorted(set(cluster.ids) - {cluster.keep})
        assert cluster.tokens_saved > 0 and 0.85 <= cluster.similarity <= 1


def test_pairs_differing_in_a_number_are_updates_never_merged(brain):
    scan = scan_duplicates(brain)
    update_ids = _ids(brain, UPDATE)
    assert not any(update_ids & set(c.ids) for c in scan.clusters(0.7))
    updates = scan.updates(0.85)
    assert [{u.a, u.b} for u in updates] == [update_ids]
    assert {*updates[0].only_a, *updates[0].only_b} == {"30", "60"}


def test_a_swapped_name_or_a_negation_is_a_detail_and_a_short_text_inside_a_long_one_is_not_a_duplicate():
    swapped = compare(text_key("Decision: use Playwright for storage rather than rolling our own."),
                      text_key("Decision: use ruff for notifications rather than rolling our own."))
    assert swapped.differs_in_detail and not swapped.is_duplicate(0.7)
    negated = compare(text_key("Lint runs before tests in CI."), text_key("Lint does not run before tests in CI."))
    assert negated.only_b == ("not",) and not negated.is_duplicate(0.7)
    contained = compare(text_key("Postgres connection pool"),
                        text_key("The Postgres connection pool is sized per worker and drained before migrations"))
    assert not contained.comparable and not contained.is_duplicate(0.7)
    same = compare(text_key("The payments API retry loop is capped at 30 seconds."),
                   text_key("Retries against the payments API are capped at 30 s."))
    assert same.is_duplicate(0.85)


def test_keeper_is_protected_then_most_cited_then_best_quality_then_newest(tmp_path):
    brain = new_brain(tmp_path)
    try:
        texts = (*SAME_DEPLOY, "Always run the deploy script from the repository root.")
        add_observation(brain, "O-old", texts[0], created_at="2026-01-01 10:00:00", quality_score=0.9)
        add_observation(brain, "O-new", texts[1], created_at="2026-02-01 10:00:00", quality_score=0.9)
        add_observation(brain, "O-low", texts[2], created_at="2026-03-01 10:00:00", quality_score=0.2)
        cluster = scan_duplicates(brain).clusters(0.8)[0]
        # O-low is newest but of lower quality; O-new beats O-old (same quality) by being newer.
        assert (cluster.keep, cluster.reason.split(":")[0]) == ("O-new", "newest")
        add_pattern(brain, "P-1", "deploys", cites=["O-old"])
        cluster = scan_duplicates(brain).clusters(0.8)[0]
        assert cluster.keep == "O-old" and cluster.reason.startswith("most cited")
        with brain.write() as conn:
            conn.execute("UPDATE brain_observations SET source_type = 'observer-compressed', "
                     "title = '[Observer p1] ' || title WHERE id = 'O-low'")
        cluster = scan_duplicates(brain).clusters(0.8)[0]
        assert cluster.keep == "O-low" and cluster.reason.startswith("protected")
        assert cluster.member("O-low").protected
    finally:
        brain.close()


def test_a_date_that_is_no_date_is_never_the_newest(tmp_path):
    """"9999-99-99 99:99:99" sorted after every real date: the keeper was the row with the impossible date."""
    brain = new_brain(tmp_path)
    try:
        add_observation(brain, "O-bogus", SAME_DEPLOY[0], created_at="9999-99-99 99:99:99", quality_score=0.9)
        add_observation(brain, "O-real", SAME_DEPLOY[1], created_at="2026-02-01 10:00:00", quality_score=0.9)
        add_observation(brain, "O-zulu", SAME_DEPLOY[0] + " Always.", created_at="2026-01-01T10:00:00.000Z",
                        quality_score=0.9)
        cluster = scan_duplicates(brain).clusters(0.8)[0]
        assert {"O-bogus", "O-real", "O-zulu"} <= set(cluster.ids)
        assert cluster.keep == "O-real"
        assert cluster.reason == "newest: created 2026-02-01 10:00:00 (next: 2026-01-01T10:00:00.000Z)"
    finally:
        brain.close()


def test_a_protected_member_is_not_in_the_default_merge(brain):
    uv_ids = sorted(_ids(brain, SAME_UV[:2]))
    add_observation(brain, "O-own", SAME_UV[2], created_at="2025-01-01 10:00:00", quality_score=0.1)
    with brain.write() as conn:
        conn.execute("UPDATE brain_observations SET source_type = 'observer-compressed', "
                     "title = '[Observer p1] ' || title WHERE id = ?", (uv_ids[0],))
        conn.execute("UPDATE brain_observations SET source_type = 'observer-compressed', "
                     "title = '[Observer p1] ' || title WHERE id = ?", (uv_ids[1],))
    cluster = next(c for c in scan_duplicates(brain).clusters(0.8) if uv_ids[0] in c.ids)
    assert cluster.keep in uv_ids and cluster.reason.startswith("protected like another member")
    other = next(i for i in uv_ids if i != cluster.keep)
    assert other not in cluster.merge_ids and other in cluster.protected_ids
    assert cluster.request().protected == {}
    assert cluster.request(others=[other]).protected[other]


def test_progress_is_reported_and_a_cancelled_scan_stops(brain):
    seen = []
    scan = scan_duplicates(brain, progress=lambda done, total, stage: seen.append((stage, done, total)))
    stages = [stage for stage, _done, _total in seen]
    assert stages[0] == "reading" and stages[-1] == "done" and "verifying" in stages
    # the reading is followed row by row (it was told only once over: a long silence on a large brain)
    assert ("reading", scan.stats.rows, scan.stats.rows) in seen
    stop = threading.Event()
    stop.set()
    with pytest.raises(ScanCancelled):
        scan_duplicates(brain, cancel=stop)
    with pytest.raises(ScanCancelled):
        scan_duplicates(brain, cancel=lambda: True)


def test_the_rows_read_with_the_tag_scan_are_every_live_row_once_oldest_first_as_stored(tmp_path):
    """The finder's rows come from the tag scan's reading of the pool: each live row once (also when an
    id that is not UTF-8 makes the scan read the rows a second time, leniently), oldest first, ties in
    rowid order, the narrative (or the title when it is blank) as content, the quality as stored."""
    brain = new_brain(tmp_path)
    with brain.write() as conn:  # wordless rows (never candidates) filling the first chunks read
        conn.executemany("INSERT INTO brain_observations (id, type, title, narrative, created_at) "
                         "VALUES (?, 'discovery', '', '', '2025-12-01 10:00:00')",
                         [(f"O-blank{n}",) for n in range(SCAN_CHUNK + 10)])
    qualities = [0.5, None, 0, "0.1", b"0.1", 0.9, 1e308]
    for n, quality in enumerate(qualities):
        add_observation(brain, f"O-{n}", f"{SAME_UV[n % 2]} ({n})" if n != 3 else "  ", title=f"Title {n}",
                        created_at=f"2026-01-0{1 + (n * 3) % 5} 10:00:00", quality_score=quality,
                        invalid_at="2026-02-01 00:00:00" if n == 5 else None)
    brain.conn.execute("UPDATE brain_observations SET id = CAST(X'4f2dff36' AS TEXT) WHERE id = 'O-6'")
    brain.conn.commit()
    rows = [(r.id, r.title, r.content, r.created_at, r.quality) for r in scan_duplicates(brain).rows]
    assert len(rows) == SCAN_CHUNK + 16 and rows[SCAN_CHUNK + 9][0] == f"O-blank{SCAN_CHUNK + 9}"
    del rows[:SCAN_CHUNK + 10]
    brain.close()
    conn = sqlite3.connect(tmp_path / ".cleo" / "cleo.db")
    conn.text_factory = lambda raw: raw.decode("utf-8", "replace")
    expected = [(obs_id, title, narrative if narrative.strip() else title, created,
                 float(quality) if isinstance(quality, (int, float)) else None)
                for obs_id, title, narrative, created, quality in conn.execute(
                    "SELECT id, title, narrative, created_at, quality_score FROM brain_observations "
                    "WHERE invalid_at IS NULL AND narrative != '' ORDER BY created_at, rowid")]
    conn.close()
    assert rows == expected
    assert [r[0] for r in rows] == ["O-0", "O-2", "O-4", "O-1", "O-\ufffd6", "O-3"]  # (sorted: not rowid order)
    assert [r[4] for r in rows] == [0.5, 0.0, None, None, 1e308, 0.1] and rows[-1][1:3] == ("Title 3", "Title 3")


def test_a_rescan_after_new_rows_computes_only_the_new_signatures_and_pairs(brain):
    first = scan_duplicates(brain)
    assert first.stats.signatures_computed == first.stats.rows
    assert 0 < first.stats.pairs_computed <= first.stats.candidates
    assert dedup_lsh.cache_path(brain.path).is_file()
    add_observation(brain, "O-late", SAME_UV[2], created_at="2026-06-01 10:00:00")
    second = scan_duplicates(brain)
    assert second.stats.signatures_computed == 1 and second.stats.rows == first.stats.rows + 1
    assert 0 < second.stats.pairs_computed < second.stats.candidates
    again = scan_duplicates(brain)
    assert (again.stats.signatures_computed, again.stats.pairs_computed) == (0, 0)
    assert [c.to_json() for c in again.clusters(0.8)] == [c.to_json() for c in second.clusters(0.8)]
    uncached = scan_duplicates(brain, cache=dedup_lsh.ScanCache())
    assert [c.to_json() for c in uncached.clusters(0.8)] == [c.to_json() for c in second.clusters(0.8)]


def test_a_damaged_scan_cache_is_ignored(brain):
    expected = [c.to_json() for c in scan_duplicates(brain).clusters(0.85)]
    path = dedup_lsh.cache_path(brain.path)
    whole = path.read_bytes()
    for damaged in (b"not a cache", whole[:len(whole) // 2]):  # garbage, and a file cut short
        path.write_bytes(damaged)
        scan = scan_duplicates(brain)
        assert scan.stats.signatures_computed == scan.stats.rows
        assert [c.to_json() for c in scan.clusters(0.85)] == expected


def test_the_scan_keeps_the_pools_findings_in_the_brains_findings_file_only(brain, monkeypatch):
    """A first scan does not store the findings twice; the TUI's tagging then reads them from the file."""
    from cleo_tui.memory import detectors, tags
    from cleo_tui.memory.token_cache import TokenCache, line_key

    monkeypatch.setattr(detectors, "_memo", {})  # as in a new process
    scan_duplicates(brain)
    texts = [r[0] for r in brain.query("SELECT narrative FROM brain_observations")]
    cache = TokenCache()
    assert cache.lookup_findings(detectors.RULES_KEY, [line_key(t) for t in texts]) == {}
    cache.close()

    def analysed_again(texts, cache=None):
        raise AssertionError(f"analysed again: {texts}")

    monkeypatch.setattr(detectors, "analyse_texts", analysed_again)
    assert len(tags.tag_brain(brain)) == len(texts)  # every row from the findings file
    assert detectors._store_findings.get()  # stored again outside the scan
    assert detectors._memo == {} and detectors._remember_findings.get()  # nor held in this process


def test_threshold_parsing_and_word_diff_for_highlighting():
    assert parse_threshold("0.9") == 0.9 and parse_threshold("90") == 0.9 and parse_threshold("90%") == 0.9
    for bad in ("0.2", "abc", "101", ""):
        with pytest.raises(Exception, match="threshold must be"):
            parse_threshold(bad)
    assert ("replace", "30", "60") in word_diff(*UPDATE)


def test_lsh_finds_a_copy_among_many_template_rows():
    texts = [f"Bumped library{n} to {n}.{n % 7}.0 for T{1000 + n}; the suite passes in {n * 3} s." for n in range(300)]
    texts.append(texts[17].replace("the suite passes", "the whole suite passes"))
    sig = dedup_lsh.signatures([text_key(t).words for t in texts])
    left, right, _ = dedup_lsh.candidate_pairs(sig)
    assert (17, 300) in set(zip(left.tolist(), right.tolist(), strict=False))
    assert len(left) <= dedup_lsh.PER_ROW * len(texts)


def test_the_band_layout_is_the_one_datasketch_chooses():
    assert dedup_lsh.band_layout() == dedup_lsh.datasketch_layout()


def test_a_name_swapped_behind_an_added_prefix_is_still_a_detail():
    verdict = compare(text_key("Note from the owner: The cli report grouped by local date instead of UTC."),
                      text_key("The invoices report grouped by local date instead of UTC."))
    assert verdict.differs_in_detail and "invoic" in verdict.only_b


def test_the_scans_swapped_words_check_agrees_with_the_verdict():
    # The scan judges pairs with equal details by `words_swapped` alone; it must say what `verdict` says.
    pairs = [("Decision: use Playwright for storage rather than rolling our own.",
              "Decision: use ruff for notifications rather than rolling our own."),
             SAME_DEPLOY, SAME_FIXTURES, SAME_UV[:2],
             ("The cli report grouped by local date instead of UTC.",
              "The invoices report grouped by local date instead of UTC."),
             ("The invoices report grouped by local date, shifting late invoices.",
              "The reports report grouped by local date, shifting late invoices.")]
    seen = set()
    for text_a, text_b in pairs:
        a, b = text_key(text_a), text_key(text_b)
        assert a.details == b.details
        expected = compare(a, b)
        assert words_swapped(a.words, b.words, expected.similarity) == expected.differs_in_detail
        seen.add(expected.differs_in_detail)
    assert seen == {True, False}
    assert not words_swapped(text_key(pairs[0][0]).words, text_key(pairs[0][1]).words, 0.4)  # below the floor


def test_a_negation_said_in_other_words_on_both_sides_is_no_detail():
    """Issue 29.8: "not" was a detail even when both texts negate ("never X" / "do not X"), so
    one fact said twice was taken for an update. A negation on one side only still differs."""
    negated_twice = compare(text_key("Never commit secrets to the repository."),
                            text_key("Do not commit secrets to the repository."))
    assert not negated_twice.differs_in_detail and negated_twice.is_duplicate(0.85)
    negated = compare(text_key("Lint runs before tests in CI."), text_key("Lint does not run before tests in CI."))
    assert negated.only_b == ("not",) and not negated.is_duplicate(0.7)


def test_the_differing_words_are_shown_as_written_not_as_stems(tmp_path):
    """Issue 29.8: a swapped word was shown as its stem ("profil", "invoic")."""
    brain = new_brain(tmp_path)
    try:
        add_observation(brain, "O-a", "The cli report grouped by local date instead of UTC.")
        add_observation(brain, "O-b", "The invoices report grouped by local date instead of UTC.")
        [pair] = scan_duplicates(brain, cache=dedup_lsh.ScanCache()).updates(0.7)
        assert {*pair.only_a, *pair.only_b} == {"cli", "invoices"}
    finally:
        brain.close()


def test_a_clusters_detail_pairs_show_their_words_as_written_each_time_the_clusters_are_built(tmp_path):
    """The scan remembers each row's written forms while it builds clusters (a speed trick, issue 33),
    and forgets them after: the words shown stay those of the texts, build after build."""
    brain = new_brain(tmp_path)
    try:
        add_observation(brain, "O-a", "Deploy Billing v2.1 to staging from the CI runner.")
        add_observation(brain, "O-b", "From the CI runner, deploy Billing v2.1 to staging.")
        add_observation(brain, "O-c", "Deploy Billing v2.2 to staging from the CI runner.")
        scan = scan_duplicates(brain, cache=dedup_lsh.ScanCache())
        first = [c.to_json() for c in scan.clusters(0.85)]
        assert not scan._forms
        assert [c.to_json() for c in scan.clusters(0.85)] == first
    finally:
        brain.close()
    [cluster] = first
    assert sorted(cluster["members"]) == ["O-a", "O-b"] and cluster["details"]
    assert {(*p["only_a"], *p["only_b"]) for p in cluster["details"]} <= {("v2.1", "v2.2"), ("v2.2", "v2.1")}


def test_words_are_shown_as_the_text_first_writes_them_however_often_asked():
    """The written forms are remembered per text and per stretch (a speed trick, issue 33): the
    answers stay those of reading the text afresh, for every text and every call."""
    first = "Invoices, then an invoice: the INVOICES total at v2.1 (never cached)."
    second = "Invoices, sent; don't retry."
    for _ in range(2):
        assert as_written(first, ["invoic", "2.1", "zzz", "not"]) == ("Invoices", "v2.1", "zzz", "never")
        assert as_written(second, ["sent", "invoic", "not"]) == ("sent", "Invoices", "not")
        assert as_written(first, []) == ()


def test_a_scan_cache_of_another_layout_is_ignored(brain):
    """A file at the cache's place holding a zip (as caches were once written), too many arrays, or
    arrays of other shapes is not read: everything is computed again, the same."""
    import io
    import zipfile

    expected = [c.to_json() for c in scan_duplicates(brain).clusters(0.85)]
    path = dedup_lsh.cache_path(brain.path)
    whole = path.read_bytes()
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("hashes.npy", whole)
    extra = io.BytesIO()
    np.save(extra, np.arange(3))
    for damaged in (zipped.getvalue(), whole + extra.getvalue(), extra.getvalue() * 10):
        path.write_bytes(damaged)
        scan = scan_duplicates(brain)
        assert scan.stats.signatures_computed == scan.stats.rows
        assert [c.to_json() for c in scan.clusters(0.85)] == expected
    again = scan_duplicates(brain)  # the file written by the last scan is read
    assert again.stats.signatures_computed == 0


# One of CLEO's progress notes restated about three features, one with a remark added (the
# real-layout brain's first cluster was these three: merging it evicted two features' notes).
_HAPPY_PATH = (" works end to end for the happy path: src/harbor/api/deps.py builds the payload, "
               "web/src/pages/Settings.tsx renders it. Edge cases around empty invoices are still open.")
SUBJECTS = ("idempotency keys on payments" + _HAPPY_PATH + " Left a TODO in src/harbor/api/deps.py.",
            "invoice PDF export" + _HAPPY_PATH,
            "rate limiting on the public API" + _HAPPY_PATH)


def test_a_note_restated_about_another_subject_differs_in_a_detail():
    """A template that lines up word for word except its subject (three or four words swapped for
    three) says the same of another thing: an update, never a duplicate, however similar."""
    for text_a, text_b in itertools.combinations(SUBJECTS, 2):
        a, b = text_key(text_a), text_key(text_b)
        found = compare(a, b)
        assert found.similarity >= 0.85, (text_a, text_b)
        assert found.differs_in_detail and not found.is_duplicate(0.7), (text_a, text_b)
        assert a.details == b.details and words_swapped(a.words, b.words, found.similarity)  # as the scan judges
    first = compare(text_key(SUBJECTS[0]), text_key(SUBJECTS[1]))
    assert {"idempotency", "payment"} <= set(first.only_a) and {"pdf", "export"} <= set(first.only_b)


def test_a_word_swapped_for_one_the_text_uses_elsewhere_is_a_detail():
    """"The invoices report … late-evening invoices" / "The reports report … invoices": each word is
    in both texts, but not as often; the swap is still a detail (words are counted, not just seen)."""
    found = compare(
        text_key("The invoices report grouped by local date instead of UTC, shifting late-evening invoices "
                 "into the next day."),
        text_key("The reports report grouped by local date instead of UTC, shifting late-evening invoices "
                 "into the next day."))
    assert found.differs_in_detail and not found.is_duplicate(0.7)
    assert found.only_a == ("invoic",) and found.only_b == ("report",)


def test_words_that_only_move_and_a_remark_only_added_are_no_detail():
    """What stays a duplicate: the same words in another order, and the same note with a remark added
    (the length guard decides whether the longer one says too much more)."""
    moved = compare(text_key("Run the deploy script from the repository root."),
                    text_key("Run the deploy script from the root of the repository."))
    assert not moved.differs_in_detail and moved.is_duplicate(0.85)
    added = compare(text_key(SUBJECTS[1]), text_key(SUBJECTS[1] + " Worth a note in the README."))
    assert not added.differs_in_detail and added.is_duplicate(0.85)


def test_the_scan_merges_no_note_about_another_subject(tmp_path):
    brain = new_brain(tmp_path)
    try:
        for n, text in enumerate(SUBJECTS):
            add_observation(brain, f"O-s{n}", text, created_at=f"2026-01-0{n + 1} 10:00:00")
        scan = scan_duplicates(brain, cache=dedup_lsh.ScanCache())
        assert scan.clusters(0.7) == []
        assert len(scan.updates(0.85)) == 3
    finally:
        brain.close()
