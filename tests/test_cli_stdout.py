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


def test_a_closed_standard_output_is_said_not_an_internal_error(tmp_path):
    db = copy_demo(tmp_path)
    result = subprocess.run([sys.executable, "-m", "cleo_tui", "export", "--db", str(db), "--format", "json",
                             "--out", "-"], stderr=subprocess.PIPE, cwd=tmp_path, timeout=120,
                            preexec_fn=lambda: os.close(1))
    assert result.returncode == 2, result.stderr
    assert b"standard output is closed" in result.stderr and b"internal error" not in result.stderr


def test_json_to_a_closed_standard_output_is_dropped_as_print_drops_text(tmp_path):
    """`prune --json >&-` was "internal error: AttributeError", while the text form printed nothing: both
    now end as Python's print does with no standard output (the exit status says the command ran)."""
    db = copy_demo(tmp_path)
    for args in (["info", "--json"], ["prune", "--budget", "30k", "--json"], ["dedup", "--json"]):
        result = subprocess.run([sys.executable, "-m", "cleo_tui", *args, "--db", str(db)], stderr=subprocess.PIPE,
                                cwd=tmp_path, timeout=120, preexec_fn=lambda: os.close(1))
        assert result.returncode == 0 and result.stderr == b"", (args, result.stderr)


def test_a_question_with_standard_input_closed_is_refused_in_words(tmp_path):
    """`prune --apply <&-` was "internal error: AttributeError" where it should ask for --yes."""
    db = copy_demo(tmp_path)
    for args in (["prune", "--budget", "30k", "--apply"], ["dedup", "--apply"]):
        result = subprocess.run([sys.executable, "-m", "cleo_tui", *args, "--db", str(db)], capture_output=True,
                                cwd=tmp_path, timeout=120, preexec_fn=lambda: os.close(0))
        assert result.returncode == 2 and b"--yes" in result.stderr, (args, result.stderr)
        assert b"internal error" not in result.stderr
