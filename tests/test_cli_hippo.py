"""Commands on a hippo store: those it supports answer; the others say why not, and touch nothing."""

from __future__ import annotations

import json

import pytest

from cleo_tui.cli import main
from cleo_tui.commands.common import EXIT_USER_ERROR
from tests.brain_fixtures import file_digest
from tests.recall_fixtures import make_hippo_store

OBSERVATION_COMMANDS = [
    ["prune", "--budget", "10"],
    ["prune", "--budget", "10", "--json"],
    ["prune", "--runs"],
    ["dedup", "--json"],
    ["dedup", "--undo", "1"],
    ["evict", "--type", "discovery"],
    ["restore", "--search", "wal"],
    ["pin", "--type", "discovery", "--yes"],
    ["export", "--format", "md", "--out", "{tmp}/out.md"],
    ["bridge"],
    ["observe"],
    ["reflect"],
    ["sweeps"],
    ["replay"],
]


@pytest.mark.parametrize("argv", OBSERVATION_COMMANDS, ids=" ".join)
def test_a_command_on_observations_names_the_hippo_store_and_touches_nothing(argv, tmp_path, capsys):
    db = make_hippo_store(tmp_path / ".hippo" / "hippo.db")
    before = file_digest(db)
    code = main([part.format(tmp=tmp_path) for part in argv] + ["--db", str(db)])
    out, err = capsys.readouterr()
    assert code == EXIT_USER_ERROR, (out, err)
    assert "internal error" not in err
    assert f"`cleo-tui {argv[0]}` needs a brain with observations" in err
    assert "hippo store" in err and "cleo-tui traces" in err
    assert out == ""
    assert file_digest(db) == before
    assert not (tmp_path / "out.md").exists()


@pytest.mark.parametrize("argv", [["info"], ["traces"], ["history"], ["secrets"], ["recall", "wal", "--read-only"]],
                         ids=" ".join)
def test_what_a_hippo_store_supports_still_answers(argv, tmp_path, capsys):
    db = make_hippo_store(tmp_path / ".hippo" / "hippo.db")
    code = main([*argv, "--db", str(db)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out and "needs a brain with" not in err


def test_info_counts_a_superseded_memory_as_history_and_traces_do(tmp_path, capsys):
    """hippo's superseded memory is out of the pool in History and Traces; `info` and the header say so too."""
    db = make_hippo_store(tmp_path / ".hippo" / "hippo.db")  # mem-1, and mem-2 superseded by it
    assert main(["info", "--json", "--db", str(db)]) == 0
    counts = json.loads(capsys.readouterr().out)["observations"]
    assert main(["history", "--json", "--db", str(db)]) == 0
    days = json.loads(capsys.readouterr().out)["days"]
    assert counts == {"live": 1, "evicted": 1}
    assert days[-1]["live"] == counts["live"]


def test_a_project_with_only_a_hippo_store_is_told_how_to_open_it(tmp_path, capsys):
    db = make_hippo_store(tmp_path / ".hippo" / "hippo.db")
    (tmp_path / "src").mkdir()
    assert main(["info", "--project", str(tmp_path / "src")]) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert "No brain found" in err and f"hippo store is at {db}: open it with --db {db}" in err


def test_a_recall_on_a_hippo_store_answers_and_says_plainly_why_it_is_not_recorded(tmp_path, capsys):
    db = make_hippo_store(tmp_path / ".hippo" / "hippo.db")
    before = file_digest(db)
    assert main(["recall", "wal", "--db", str(db)]) == 0
    out, err = capsys.readouterr()
    assert "mem-1" in out
    assert err.strip() == ("cleo-tui: recall trace not written: This brain is read-only (hippo stores are opened for "
                           "reading); nothing was written.")
    assert file_digest(db) == before


def test_hippos_global_store_is_named_when_no_brain_is_found(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HIPPO_HOME", str(tmp_path / "hippo-home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    db = make_hippo_store(tmp_path / "hippo-home" / "hippo.db")
    (tmp_path / "p").mkdir()
    assert main(["info", "--project", str(tmp_path / "p")]) == EXIT_USER_ERROR
    assert f"hippo's global store is at {db}: open it with --db {db}" in capsys.readouterr().err


def test_info_on_a_hippo_store_speaks_of_its_memories_not_cleos_agents(tmp_path, capsys):
    db = make_hippo_store(tmp_path / ".hippo" / "hippo.db")
    assert main(["info", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "kind:          hippo store" in out
    assert "memories:      1 live, 1 superseded" in out and "traces:        1" in out
    assert "CLEO" not in out and "observer" not in out and "patterns" not in out
