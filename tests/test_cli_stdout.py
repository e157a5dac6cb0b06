"""`--out -` and `--export -`: the rows go to standard output for a pipe, never as control text to a terminal."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.ui_helpers import copy_demo


def _cleo_tui(*args: str, cwd, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cleo_tui", *args], stdout=stdout, stderr=subprocess.PIPE,
                          cwd=cwd, timeout=120)


def test_export_to_a_pipe_writes_the_rows_there_and_no_file_named_dash(tmp_path):
    db = copy_demo(tmp_path)
    result = _cleo_tui("export", "--db", str(db), "--type", "diary", "--format", "jsonl", "--out", "-", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert records and {r["type"] for r in records} == {"diary"}
    assert f"Wrote {len(records)} observations" in result.stderr.decode()
    assert "standard output" in result.stderr.decode()
    assert not (tmp_path / "-").exists()


def test_traces_export_to_a_pipe(tmp_path):
    db = copy_demo(tmp_path)
    result = _cleo_tui("traces", "--db", str(db), "--export", "-", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.decode().splitlines()
    assert lines and all(json.loads(line)["kind"] for line in lines)
    assert f"Exported {len(lines)} traces to standard output" in result.stderr.decode()
    assert not (tmp_path / "-").exists()


def test_a_terminal_is_refused_for_the_rows(tmp_path):
    db = copy_demo(tmp_path)
    leader, follower = os.openpty()
    try:
        result = _cleo_tui("export", "--db", str(db), "--format", "md", "--out", "-", cwd=tmp_path, stdout=follower)
    finally:
        os.close(follower)
        os.close(leader)
    assert result.returncode == 2
    assert "standard output is a terminal" in result.stderr.decode()
    assert not (tmp_path / "-").exists()
