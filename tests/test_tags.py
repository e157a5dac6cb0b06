"""Coverage, relevance and protection tags: seed records, whole brains, and the rules text."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from cleo_tui.memory import curation, detectors
from cleo_tui.memory.mapping import MAPPING_MARKDOWN
from cleo_tui.memory.rules import RULES_MARKDOWN
from cleo_tui.memory.seed_types import ObservationRecord, ReflectionRecord
from cleo_tui.memory.tags import compute_coverage_tags, tag_brain, tag_protected_observations
from tests.pruner_fixtures import add_observation, add_pattern, new_brain


def rec(id, content="plain note about the work", relevance="medium"):
    return ObservationRecord(id, content, "2026-01-01 10:00", relevance)


def test_coverage_counts_distinct_reflections_citing_ids_in_the_pool():
    pool = [rec("a"), rec("b"), rec("c")]
    reflections = [ReflectionRecord(f"r{i}", "x", ("a", "a", "b" if i == 0 else "zzz")) for i in range(4)]
    reflections.append("legacy reflection citing a")  # legacy strings cite nothing
    assert compute_coverage_tags(pool, reflections) == {"a": "reinforced", "b": "cited", "c": "uncited"}
    assert compute_coverage_tags(pool, reflections[:3])["a"] == "cited"


def test_each_protection_kind_is_detected_with_a_readable_reason():
    pool = [
        rec("crit", relevance="critical"),
        rec("user", "The user prefers tabs over spaces."),
        rec("done", "Task complete: shipped the login form"),
        rec("err", "Build broke with TypeError: undefined is not a function"),
        rec("uniq", "Refactored src/auth/token.py to refresh early"),
        rec("shared1", "Touched lib/shared.py today"),
        rec("shared2", "lib/shared.py needs tests"),
        rec("plain", "Looked around the codebase for a while"),
    ]
    tags = tag_protected_observations(pool)
    assert tags["crit"].reasons[0].startswith("critical relevance")
    assert tags["user"].reasons == ('user assertion: "user prefers"',)
    assert tags["done"].reasons[0].startswith("completion: ")
    assert 'error: "TypeError"' in tags["err"].reasons
    assert tags["uniq"].reasons == ("unique identifier: src/auth/token.py appears in no other observation",)
    assert tags["uniq"].reason == tags["uniq"].reasons[0]
    for plain in ("shared1", "shared2", "plain"):
        assert tags[plain].protected is False and tags[plain].reason is None


def test_an_identifier_named_in_a_reflection_is_not_unique():
    pool = [rec("a", "Fixed T4521 at last")]
    assert tag_protected_observations(pool)["a"].protected
    assert not tag_protected_observations(pool, ["T4521 keeps coming back"])["a"].protected
    assert not tag_protected_observations(pool, [ReflectionRecord("r", "see T4521", ())])["a"].protected


def test_identifier_kinds():
    text = ("see src/auth/token.py, ./run.sh and package.json; T123 issue #42 GH-17 commit 3f9a1c2 "
            "ENOENT TS2345 cleo_tui.memory.pruner refresh_token() e.g. and/or 2026-01-01 deadbeef "
            "12/03/2026 /etc/hosts docs/api/v2")
    assert detectors.identifiers_in(text) == {
        "src/auth/token.py", "./run.sh", "package.json", "T123", "issue #42", "GH-17", "3f9a1c2", "ENOENT",
        "TS2345", "cleo_tui.memory.pruner", "refresh_token()", "/etc/hosts", "docs/api/v2"}


def test_an_issue_number_takes_the_word_before_it_when_another_hint_ends_its_token_too():
    # '/x' and '#12/x' both end the token: the '#' hint must still reach back to "issue".
    assert detectors.identifiers_in("issue #12/x ") == {"issue #12"}
    assert detectors.identifiers_of(["see PR #7/a", "T1 issue #3."]) == [{"PR #7"}, {"T1", "issue #3"}]


_WORDS = ["the", "user", "said", "12/03/2026", "/etc/x", "a/b/c", "./x", "../y/z.md", "and/or", "prefers", "Task",
          "complete:", "merged", "TypeError:", "error:", "exit",
          "code", "2", "src/a.py", "a/b", "T12", "#7", "GH-3", "abc1234", "deadbeef", "ENOENT", "E0425",
          "os.path.join", "f()", "x.", "(", ")", "/", ".", "#", "E", "İstanbul", "ß", "😀", "\n", "User:",
          "owner", "-", "1", "T", "a1b2c3d4e5", "Exception", "traceback", "issue", "PR", "cleo#4", "[/link]",
          "[link=x]", "snake_case", "camelCase", "a/b#2", "\t", "step", "UPPER_CASE", "_x", "ownerrno", "UserError",
          "#12/x", "x#3", "3f9a1c2/y", "\u3000", "\xa0", "deadBEEF1", "aB", "9Z", "AB-12", "\uff21B1",
          "T\u0663", "\u0663abcdef", "AB-\u0663", "x\u0663Y", "\u00b2", "9f8e7d6"]
_SEPARATORS = st.sampled_from([" ", "\n", "\t", ", ", "", " "])


@st.composite
def texts(draw):
    parts = draw(st.lists(st.tuples(st.sampled_from(_WORDS), _SEPARATORS), max_size=25))
    return "".join(word + sep for word, sep in parts)


@settings(max_examples=150, deadline=None)
@given(st.lists(texts(), min_size=1, max_size=6))
def test_the_fast_batch_search_equals_plain_regex_search_of_each_text(batch):
    """The corpus-and-hints speed-up must not change what is found."""
    ids = detectors.identifiers_of(batch)
    reasons = detectors.text_reasons_of(batch)
    full = re.compile("|".join(f"(?:{p})" for _, _, p in detectors.IDENTIFIER_KINDS))
    for text, found, why in zip(batch, ids, reasons, strict=False):
        assert found == set(full.findall(text))
        expected = []
        for name, _, _, pattern in detectors.TEXT_DETECTORS:
            match = re.compile(pattern, re.MULTILINE).search(text)
            if match:
                expected.append(f"{name}: {detectors._quote(match.group())}")
        assert why == expected


def test_findings_not_remembered_are_found_afresh_and_leave_the_memo_as_it_was(monkeypatch):
    texts = ["TypeError: boom in src/a.py", "nothing here", "the user said: keep T12"]
    expected = [(tuple(sorted(detectors.identifiers_in(t))), tuple(detectors.text_reasons(t))) for t in texts]
    stale = ((), ("stale",))
    monkeypatch.setattr(detectors, "_memo", {(hash(texts[0]), len(texts[0])): stale})
    with detectors.findings_not_remembered():
        assert detectors.analyse_texts(texts) == expected  # (the stale entry is not looked up)
    assert detectors._memo == {(hash(texts[0]), len(texts[0])): stale}
    assert detectors.analyse_texts(texts) == [stale, *expected[1:]]  # remembered again outside the block
    assert len(detectors._memo) == 3


def test_a_text_detector_match_far_before_its_hint_is_found_as_a_plain_search_finds_it():
    """The search starts where word characters, then white space, before the first hint start: however
    long that stretch is (an error class named by 400 characters, 400 blank lines before `user:`)."""
    batch = ["see A" + "b" * 400 + "Error: boom", "x." + "\n" * 400 + "  user: hi", "ok " * 200 + "TypeError x"]
    for text, why in zip(batch, detectors.text_reasons_of(batch), strict=True):
        expected = [f"{name}: {detectors._quote(match.group())}" for name, _, _, pattern in detectors.TEXT_DETECTORS
                    if (match := re.compile(pattern, re.MULTILINE).search(text))]
        assert why == expected and expected


def test_hints_over_the_folded_copy_find_what_the_plain_hints_find():
    """Digits and capitals are folded for speed only when no other decimal digit (\\d) is in the batch."""
    text = "T12 deadbee1 parseConfig AB-12 x9Y 12 abc 1a2b3c4 ENOENT T\u0663 \u0663abcdef"
    full = re.compile("|".join(f"(?:{p})" for _, _, p in detectors.IDENTIFIER_KINDS))
    ascii_part = text.rsplit(" T", 1)[0]
    assert detectors._folded(detectors._codes(ascii_part)) is not None
    assert detectors._folded(detectors._codes(text)) is None
    assert detectors.identifiers_of([ascii_part])[0] == set(full.findall(ascii_part))
    assert detectors.identifiers_of([ascii_part, text]) == [set(full.findall(ascii_part)), set(full.findall(text))]
    assert "T\u0663" in detectors.identifiers_in(text) and "deadbee1" in detectors.identifiers_in(ascii_part)


def test_the_hints_left_out_of_the_folded_pattern_are_the_issue_number_and_the_errno_names():
    """Over the folded copy the other hints are one pattern; the '#' hint keeps its own pass (the second,
    as over the plain text), which says which tokens take the one before them."""
    number, errno = detectors._NOT_FOLDED
    assert detectors._IDENTIFIER_HINTS[number] is detectors._NUMBER_HINT and number == detectors._NUMBER_RANK == 1
    assert detectors._IDENTIFIER_HINTS[errno].pattern.startswith("E(?:NO|")
    text = "see issue #12/x and ENOENT in src/a.py, parseConfig() at deadbee1"
    assert detectors._folded(detectors._codes(text)) is not None
    assert detectors.identifiers_of([text])[0] == {"issue #12", "ENOENT", "src/a.py", "parseConfig()", "deadbee1"}


def test_tag_brain_reads_coverage_relevance_and_protection_from_the_brain(tmp_path):
    brain = new_brain(tmp_path)
    add_observation(brain, "O-a", "Chose SQLite for storage", type="decision")
    add_observation(brain, "O-b", "Routine status update", quality_score=0.2)
    add_observation(brain, "O-c", "Edited src/only/here.py")
    add_observation(brain, "O-d", "Note written by hand", source_type="manual")
    add_observation(brain, "O-e", "Old note about lib/x.py")
    add_observation(brain, "O-f", "Another note about lib/x.py")
    for i in range(4):
        add_pattern(brain, f"P-{i}", f"pattern {i}", cites=["O-a"] + (["O-b"] if i == 0 else []))
    curation.evict_observation(brain, "O-c")
    curation.evict_observation(brain, "O-f")
    curation.pin_observation(brain, "O-b")
    tags = tag_brain(brain)
    assert set(tags) == {"O-a", "O-b", "O-c", "O-d", "O-e", "O-f"}
    a, b, c, d, e = (tags[k] for k in ("O-a", "O-b", "O-c", "O-d", "O-e"))
    assert (a.coverage, a.citation_count, a.citing) == ("reinforced", 4, [f"pattern:P-{i}" for i in range(4)])
    assert (a.relevance, a.protected) == ("high", False)
    assert (b.coverage, b.relevance, b.relevance_reason) == ("cited", "critical", "set by you in cleo-tui")
    assert b.protected and b.reasons[0].startswith("critical relevance")
    assert (d.protected, d.relevance) == (False, "high")  # manual: `cleo memory observe`, not "by hand"
    # evicted: reasons as if live, but not protected
    assert (c.live, c.protected) == (False, False)
    assert c.reasons == ["unique identifier: src/only/here.py appears in no other observation"]
    # lib/x.py is now only in a live row: the evicted copy no longer counts
    assert e.protected and e.reasons == ["unique identifier: lib/x.py appears in no other observation"]
    brain.close()


def test_rules_text_documents_every_rule():
    assert MAPPING_MARKDOWN.strip().splitlines()[2] in RULES_MARKDOWN
    for name, _, _, _ in detectors.TEXT_DETECTORS:
        assert f"| {name} |" in RULES_MARKDOWN
    for kind, _, _ in detectors.IDENTIFIER_KINDS:
        assert f"| {kind} |" in RULES_MARKDOWN
    for phrase in ("reinforced", "Target = 80%", "oldest first", "Fell back", "critical relevance", "Undo"):
        assert phrase in RULES_MARKDOWN


def test_findings_are_cached_across_processes_under_the_rules_hash(monkeypatch):
    from cleo_tui.memory.token_cache import TokenCache, line_key
    texts = ["Fixed src/cached/here.py after TypeError: boom", "nothing special"]
    monkeypatch.setattr(detectors, "_memo", {})  # as in a new process
    first = detectors.analyse_texts(texts)
    assert first[0] == (("src/cached/here.py",), ('error: "TypeError"',))
    cache = TokenCache()
    stored = cache.lookup_findings(detectors.RULES_KEY, [line_key(t) for t in texts])
    assert len(stored) == 2
    # a finding planted in the cache is what a new process reads back (no re-analysis)
    cache.store_findings("other-rules", [(line_key(texts[1]), "X\x1e")])
    cache._connect().execute("UPDATE text_findings SET findings = 'T999\x1e' WHERE rules = ? AND text_hash = ?",
                             (detectors.RULES_KEY, line_key(texts[1])))
    cache.close()
    monkeypatch.setattr(detectors, "_memo", {})
    again = detectors.analyse_texts(texts)
    assert again[0] == first[0] and again[1] == (("T999",), ())


def _cleo_cli_brain(tmp_path):
    """A brain shaped like one written through CLEO's CLI: 85 live rows, 78 of them manual/owner."""
    brain = new_brain(tmp_path)
    for i in range(85):
        manual = i >= 7
        add_observation(brain, f"O-{i:03d}", f"Worked on the session notes, step {i} of the plan. " * 6,
                        created_at=f"2026-01-{1 + i // 24:02d} {i % 24:02d}:00:00",
                        source_type="manual" if manual else "agent",
                        source_confidence="owner" if manual else "agent")
    return brain


def test_manual_owner_rows_are_high_relevance_and_not_protected(tmp_path):
    """`cleo memory observe` writes manual/owner for any caller: kept longer, never protected by it."""
    from cleo_tui.memory.pruner import prepare_pool
    brain = _cleo_cli_brain(tmp_path)
    tags = tag_brain(brain)
    manual = tags["O-050"]
    assert (manual.relevance, manual.protected) == ("high", False)
    assert "cleo memory observe" in manual.relevance_reason
    preview = prepare_pool(brain, "chars4").preview(4000)
    assert preview.tokens_before > 6_000 and preview.drop_count > 40  # was 7: manual rows were protected
    # manual/owner rows drop after the other rows of the same coverage
    relevances = [e.relevance for e in preview.dropped]
    assert relevances.index("high") >= relevances.count("medium")
    brain.close()


def test_relevance_rules_text_names_cleo_memory_observe():
    assert "manual" in RULES_MARKDOWN and "`cleo memory observe`" in RULES_MARKDOWN
    assert "owner → critical" not in RULES_MARKDOWN.replace("`", "")


def test_markup_and_bare_numbers_are_not_identifiers():
    for text in ("see [link=https://x]here[/link] and [bold]x[/bold]", "step #2 of 5", "[/]", "item #1",
                 "a/b", "[/red]", "ratio 3/4"):
        assert detectors.identifiers_in(text) == set(), text


def test_identifiers_that_look_like_identifiers_still_count():
    text = ("fixed cleo#42 and issue #17, PR #9, repo/name#3; see src/a/b.py, /etc/hosts, parse_config, "
            "parseConfig, os.path.join, PROJ-12, 3f9a1c2, ENOENT, T123")
    assert detectors.identifiers_in(text) >= {
        "cleo#42", "issue #17", "PR #9", "repo/name#3", "src/a/b.py", "/etc/hosts", "parse_config",
        "parseConfig", "os.path.join", "PROJ-12", "3f9a1c2", "ENOENT", "T123"}


def test_relevance_computed_in_sql_agrees_with_derive_relevance(tmp_path):
    """The scan computes relevance in SQL; every rule must give what mapping.derive_relevance says."""
    from cleo_tui.memory.mapping import derive_relevance
    brain = new_brain(tmp_path)
    rows = {
        "O-p1": {"title": "[Observer p1] urgent", "source_type": "observer-compressed"},
        "O-p4": {"title": "[Observer p4] minor", "source_type": "observer-compressed"},
        "O-px": {"title": "[Observer] no priority", "source_type": "observer-compressed", "quality_score": 0.1},
        "O-man": {"source_type": "manual"}, "O-own": {"source_confidence": "owner"},
        "O-both": {"source_type": "manual", "source_confidence": "owner"},
        "O-dec": {"type": "decision"}, "O-low": {"quality_score": 0.25}, "O-int": {"quality_score": 0},
        "O-mid": {"quality_score": 0.4}, "O-txt": {"quality_score": "0.1"}, "O-none": {},
    }
    for obs_id, columns in rows.items():
        add_observation(brain, obs_id, f"note {obs_id}", **columns)
    curation.pin_observation(brain, "O-low")
    tags = tag_brain(brain)
    for obs_id, _ in rows.items():
        stored = brain.query_one("SELECT * FROM brain_observations WHERE id = ?", (obs_id,))
        row = {k: stored[k] for k in stored.keys()}
        expected = derive_relevance(row, "critical" if obs_id == "O-low" else None)
        assert (tags[obs_id].relevance, tags[obs_id].relevance_reason) == expected, obs_id
    # the reason names only the condition that holds (issue 29 item 8)
    assert tags["O-man"].relevance_reason.endswith("(source_type manual)")
    assert tags["O-own"].relevance_reason.endswith("(source_confidence owner)")
    assert tags["O-both"].relevance_reason.endswith("(source_type manual and source_confidence owner)")
    brain.close()
