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


def _dump(brain, restored=()):
    """Every row of the observations and the edges, every column, in order.

    `updated_at` of the `restored` observations is left out: undo stamps it with its own time.
    """
    dump = {table: [tuple(r) for r in brain.query(f"SELECT * FROM {table} ORDER BY rowid")]
            for table in ("brain_observations", "brain_page_edges")}
    columns = [r[1] for r in brain.query("PRAGMA table_info(brain_observations)")]
    key, stamp = columns.index("id"), columns.index("updated_at")
    dump["brain_observations"] = [
        tuple(None if c == stamp and row[key] in restored else v for c, v in enumerate(row))
        for row in dump["brain_observations"]]
    return dump


def test_merge_evicts_the_others_with_supersedes_edges_and_undo_restores_every_row_and_edge(brain):
    before = _dump(brain, restored={"O-1", "O-2"})
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
    curation.undo(brain, result.run_id)
    assert _dump(brain, restored={"O-1", "O-2"}) == before


def test_a_protected_member_is_refused_unless_confirmed_by_itself(brain):
    curation.pin_observation(brain, "O-1")  # manual/owner rows are only high relevance now (trust)
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
