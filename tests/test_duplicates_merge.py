"""Merging duplicates: evictions and supersedes edges in one run, undone exactly; protected members ask first."""

from __future__ import annotations

import pytest

from cleo_tui.memory import curation
from cleo_tui.memory.dedup_merge import MergeRequest, ProtectedMembers, merge_duplicates
from cleo_tui.memory.duplicates import scan_duplicates
from tests.pruner_fixtures import add_observation, add_pattern, new_brain

TEXTS = ("Use uv instead of pip to install dependencies in this repo.",
         "In this repo, dependencies are installed with uv rather than pip.",
         "The deploy script must be run from the repository root.",
         "Run the deploy script from the root of the repository.")


@pytest.fixture
def brain(tmp_path):
    brain = new_brain(tmp_path)
    for n, text in enumerate(TEXTS):
        add_observation(brain, f"O-{n}", text, created_at=f"2026-01-0{n + 1} 10:00:00",
                        updated_at="2026-01-09 10:00:00")
    add_pattern(brain, "P-1", "tooling", cites=["O-0"])
    yield brain
    brain.close()


def _dump(brain):
    """Every row of the observations and the edges, every column but updated_at (an undo sets
    it to now, as CLEO's reads do: see brain/journal.py), in order."""
    return {table: [tuple(v for k, v in dict(r).items() if k != "updated_at")
                    for r in brain.query(f"SELECT * FROM {table} ORDER BY rowid")]
            for table in ("brain_observations", "brain_page_edges")}


def test_merge_evicts_the_others_with_supersedes_edges_and_undo_restores_every_row_and_edge(brain):
    before = _dump(brain)
    requests = [c.request() for c in scan_duplicates(brain).clusters(0.85)]
    assert sorted((r.keep, r.others) for r in requests) == [("O-0", ("O-1",)), ("O-3", ("O-2",))]
    result = merge_duplicates(brain, requests)
    live = {r[0] for r in brain.query("SELECT id FROM brain_observations WHERE invalid_at IS NULL")}
    assert live == {"O-0", "O-3"} and sorted(result.evicted) == ["O-1", "O-2"] and result.edges == 2
    rows = brain.query("SELECT invalid_at, updated_at FROM brain_observations WHERE id = 'O-1'")[0]
    assert rows[0] is not None and rows[1] == rows[0]
    edges = brain.query("SELECT from_id, to_id, edge_type, weight, provenance FROM brain_page_edges "
                        "WHERE edge_type = 'supersedes' ORDER BY from_id")
    assert [tuple(e) for e in edges] == [
        ("observation:O-0", "observation:O-1", "supersedes", 1.0, f"cleo-tui-dedup:{result.run_id}"),
        ("observation:O-3", "observation:O-2", "supersedes", 1.0, f"cleo-tui-dedup:{result.run_id}")]
    runs = curation.list_curation_runs(brain, ("dedup",))
    assert [r.id for r in runs] == [result.run_id]
    outcome = curation.undo_detailed(brain, result.run_id)
    assert _dump(brain) == before
    # The walk's defect: "4 rows restored" for 2 evictions, since the 2 edges counted as rows too.
    assert outcome.lines("u")[0] == f"Undid run {result.run_id}: 2 observations and 2 edges restored " \
                                    f"(recorded as run {outcome.undo_id})."


def test_a_protected_member_is_refused_unless_confirmed_by_itself(brain):
    with brain.write() as conn:
        conn.execute("UPDATE brain_observations SET source_type = 'observer-compressed', "
                     "title = '[Observer p1] ' || title WHERE id = 'O-1'")
    cluster = next(c for c in scan_duplicates(brain).clusters(0.85) if "O-1" in c.ids)
    keep = next(i for i in cluster.ids if i != "O-1") if cluster.keep == "O-1" else cluster.keep
    before = _dump(brain)
    request = cluster.request(keep=keep, others=["O-1"])
    with pytest.raises(ProtectedMembers, match="O-1"):
        merge_duplicates(brain, [request])
    with pytest.raises(ProtectedMembers):
        merge_duplicates(brain, [request], confirm_protected={"O-2"})
    assert _dump(brain) == before
    result = merge_duplicates(brain, [request], confirm_protected={"O-1"})
    assert result.evicted == ["O-1"]


def test_a_merge_refuses_an_evicted_keeper_and_a_keeper_that_is_also_evicted(brain):
    curation.evict_observation(brain, "O-0")
    before = _dump(brain)
    with pytest.raises(curation.CurationError, match="no longer a live"):
        merge_duplicates(brain, [MergeRequest("O-0", ("O-1",))])
    with pytest.raises(curation.CurationError, match="both kept and evicted"):
        merge_duplicates(brain, [MergeRequest("O-2", ("O-3",)), MergeRequest("O-3", ("O-1",))])
    with pytest.raises(curation.CurationError, match="Nothing to merge"):
        merge_duplicates(brain, [MergeRequest("O-2", ())])
    assert _dump(brain) == before


def test_a_member_cleo_edited_after_the_scan_is_left_alone_and_named(brain):
    """Issue 29.14: the merge checked only that members were live, so a member CLEO rewrote after
    the scan was evicted anyway. As the prune commit, it evicts exactly what the user saw."""
    requests = sorted((c.request() for c in scan_duplicates(brain).clusters(0.85)), key=lambda r: r.keep)
    assert [(r.keep, r.others) for r in requests] == [("O-0", ("O-1",)), ("O-3", ("O-2",))]
    with brain.write() as conn:  # CLEO updates O-1 after the scan (its own connection in life)
        conn.execute("UPDATE brain_observations SET narrative = 'Dependencies: uv only, pip is banned since "
                     "March.' WHERE id = 'O-1'")
    result = merge_duplicates(brain, requests)
    assert result.evicted == ["O-2"]
    assert [(s.id, s.why) for s in result.skipped] == [("O-1", "its text changed since the scan")]
    live = {r[0] for r in brain.query("SELECT id FROM brain_observations WHERE invalid_at IS NULL")}
    assert "O-1" in live and "O-2" not in live
    assert brain.scalar("SELECT count(*) FROM brain_page_edges WHERE to_id = 'observation:O-1'") == 0
    assert any("O-1" in line and "changed since the scan" in line for line in result.lines())


def test_a_keeper_cleo_edited_after_the_scan_keeps_its_cluster_unmerged(brain):
    requests = sorted((c.request() for c in scan_duplicates(brain).clusters(0.85)), key=lambda r: r.keep)
    with brain.write() as conn:
        conn.execute("UPDATE brain_observations SET title = 'Deploy: from the root, never from scripts/' "
                     "WHERE id = 'O-3'")
    result = merge_duplicates(brain, requests)
    assert result.evicted == ["O-1"]
    assert [(s.id, s.why) for s in result.skipped] == [("O-2", "its keeper O-3 changed since the scan")]
