"""Who cites an observation (`pool_scan.citations.cited_by`): the live reflections, each once, never a
note citing itself — for rows cited once as for rows cited by many."""

from __future__ import annotations

from cleo_tui.memory.pool_scan.citations import cited_by


def test_each_row_is_cited_by_its_live_reflections_once_and_never_by_itself():
    many = [f"pattern:p{k}" for k in range(20)]  # (past the few a tuple gathers before a set takes over)
    pairs = [("O-a", "pattern:p1"), ("O-a", "learning:l1"), ("O-a", "pattern:p1"),  # a repeated edge
             ("O-b", "pattern:dead"),  # an evicted pattern cites nothing
             ("O-n", "observation:O-n"), ("O-n", "observation:O-m"),  # a note citing itself does not count
             *(("O-many", source) for source in many + many[:5])]
    live = {"pattern:p1", "learning:l1", "observation:O-n", "observation:O-m", *many}
    cited = cited_by(pairs, live)
    assert {obs: sorted(sources) for obs, sources in cited.items()} == {
        "O-a": ["learning:l1", "pattern:p1"], "O-n": ["observation:O-m"], "O-many": sorted(many)}
    assert all(isinstance(sources, tuple) for sources in cited.values())
