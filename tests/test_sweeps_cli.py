"""`cleo-tui sweeps`, `info --json`'s CLEO marks and `history ID` naming the sweep; approve and roll back
through a stand-in `cleo` on PATH that records its arguments and runs CLEO's approve SQL."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from cleo_tui.cli import main
from tests.brain_fixtures import add_cleo_recall_logs, insert_observations, make_cleo_consolidated
from tests.cleo_sweep import logged_calls, stage_sweep, write_stand_in_cleo

RUN = "bfr-mq1abc-x1y2z3"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    db = make_cleo_consolidated(tmp_path / "proj" / ".cleo" / "cleo.db")
    insert_observations(db, [
        {"id": f"O-{n}", "type": "discovery", "title": f"row {n} \x1b[31m[bold]", "narrative": f"narrative {n}",
         "created_at": "2026-03-01 10:00:00", "source_type": "agent", "quality_score": q, "citation_count": 0}
        for n, q in ((1, 0.1), (2, 0.25), (3, 0.9))])
    stage_sweep(db, RUN, [("brain_observations", "O-1"), ("brain_observations", "O-2")])
    add_cleo_recall_logs(db, retrievals=[{"query": "row", "entry_ids": ["O-1", "O-3"],
                                          "created_at": "2026-05-01 10:00:00"}])
    return tmp_path / "proj"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_sweeps_json_has_the_contract_keys_and_the_impact(project, capsys):
    code, out, err = run(capsys, "sweeps", "--project", str(project), "--json")
    assert code == 0, err
    (first,) = json.loads(out)["runs"]
    assert {"id", "kind", "status", "created_at", "approved_at", "rows"} <= set(first)
    assert (first["id"], first["status"]) == (RUN, "staged")
    assert [r["source_id"] for r in first["rows"]] == ["O-1", "O-2"]
    assert set(first["rows"][0]) == {"id", "source_table", "source_id", "action", "new_quality_score",
                                     "new_invalid_at", "validation_status"}
    assert first["impact"]["affected_retrievals"] == 1 and first["impact"]["lost"][0]["id"] == "O-1"
    code, out, _ = run(capsys, "sweeps", "--project", str(project), "--run", "bfr-nope")
    assert code == 2 and "no sweep run" in out + _


def test_sweeps_text_fits_80_columns_and_shows_text_literally(project, capsys):
    code, out, err = run(capsys, "sweeps", "--project", str(project))
    assert code == 0, err
    assert all(len(line) <= 80 for line in out.splitlines())
    assert "\x1b" not in out and "cleo memory sweep --approve " + RUN in out


def test_without_cleo_the_command_is_shown_and_nothing_is_written(project, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    before = (project / ".cleo" / "cleo.db").read_bytes()
    code, out, err = run(capsys, "sweeps", "--project", str(project), "--approve", RUN, "--yes")
    assert code == 0, err
    assert "not on PATH" in out and f"cleo memory sweep --approve {RUN}" in out
    assert (project / ".cleo" / "cleo.db").read_bytes() == before


def test_approve_runs_cleos_command_and_reads_the_brain_again(project, capsys, monkeypatch, tmp_path):
    log = write_stand_in_cleo(tmp_path / "bin")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    code, out, err = run(capsys, "sweeps", "--project", str(project), "--approve", RUN)
    assert code == 2 and "needs --yes" in out + err and logged_calls(log) == []  # no terminal: refused
    code, out, err = run(capsys, "sweeps", "--project", str(project), "--approve", RUN, "--yes")
    assert code == 0, err
    assert logged_calls(log) == [["memory", "sweep", "--approve", RUN]]
    assert '"purged": 2' in out and "is now approved" in out
    code, out, err = run(capsys, "history", "O-1", "--project", str(project), "--json")
    life = json.loads(out)
    assert life["cause"]["cause"] == "cleo-sweep" and life["cause"]["sweep_run"]["id"] == RUN
    code, out, err = run(capsys, "history", "O-1", "--project", str(project))
    assert "CLEO's noise sweep purged it" in out and RUN in out
    code, out, err = run(capsys, "sweeps", "--project", str(project), "--rollback", RUN, "--yes")
    assert code == 2 and "only a staged run" in out + err


def test_rollback_runs_cleos_command(project, capsys, monkeypatch, tmp_path):
    log = write_stand_in_cleo(tmp_path / "bin")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    code, _out, err = run(capsys, "sweeps", "--project", str(project), "--rollback", RUN, "--yes")
    assert code == 0, err
    assert logged_calls(log) == [["memory", "sweep", "--rollback", RUN]]
    conn = sqlite3.connect(project / ".cleo" / "cleo.db")
    assert conn.execute("SELECT status FROM brain_backfill_runs").fetchone() == ("rolled-back",)
    assert conn.execute("SELECT count(*) FROM brain_observations WHERE invalid_at IS NOT NULL").fetchone() == (0,)
    conn.close()


def test_a_veto_is_left_out_by_the_approve(project, capsys, monkeypatch, tmp_path):
    write_stand_in_cleo(tmp_path / "bin")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    data = json.loads(run(capsys, "sweeps", "--project", str(project), "--json")[1])
    first = data["runs"][0]["rows"][0]["id"]
    code, out, err = run(capsys, "sweeps", "--project", str(project), "--veto", first)
    assert code == 0, err and "prune --undo" in out
    run(capsys, "sweeps", "--project", str(project), "--approve", RUN, "--yes")
    conn = sqlite3.connect(project / ".cleo" / "cleo.db")
    live = {r[0] for r in conn.execute("SELECT id FROM brain_observations WHERE invalid_at IS NULL")}
    conn.close()
    assert live == {"O-1", "O-3"}


def test_info_json_counts_cleos_marks_and_history_names_them(project, capsys):
    conn = sqlite3.connect(project / ".cleo" / "cleo.db")
    conn.execute("ALTER TABLE brain_observations ADD COLUMN prune_candidate INTEGER DEFAULT 0")
    conn.execute("UPDATE brain_observations SET prune_candidate = 1 WHERE id = 'O-1'")
    conn.commit()
    conn.close()
    code, out, err = run(capsys, "info", "--project", str(project), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert (data["at_risk"], data["hidden_from_cleo_search"]) == (1, 2)
    code, out, err = run(capsys, "history", "O-1", "--project", str(project))
    assert "CLEO: its next consolidation will delete it" in out and "runPruneSweep" in out
    assert "invisible to its search" in out
