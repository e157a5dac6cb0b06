"""`cleo-tui dedup`: JSON report, --apply --yes, --undo, and one-paragraph errors."""

from __future__ import annotations

import json

import pytest

from cleo_tui.cli import main
from tests.pruner_fixtures import add_observation, new_brain

TEXTS = ("Use uv instead of pip to install dependencies in this repo.",
         "In this repo, dependencies are installed with uv rather than pip.",
         "Retries against the payments API are capped at 30 s.",
         "Retries against the payments API are capped at 60 s.")


@pytest.fixture
def db(tmp_path):
    brain = new_brain(tmp_path)
    for n, text in enumerate(TEXTS):
        add_observation(brain, f"O-{n}", text, created_at=f"2026-01-0{n + 1} 10:00:00")
    brain.close()
    return str(tmp_path / ".cleo" / "cleo.db")


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_json_lists_clusters_with_keeper_members_and_updates_apart(db, capsys):
    code, out, _ = _run(capsys, "dedup", "--db", db, "--json")
    report = json.loads(out)
    assert code == 0 and report["threshold"] == 0.85 and report["run_id"] is None
    [cluster] = report["clusters"]
    assert cluster["keep"] == "O-1" and sorted(cluster["members"]) == ["O-0", "O-1"]
    assert cluster["tokens_saved"] > 0 and cluster["reason"].startswith("newest") and cluster["similarity"] >= 0.85
    assert [{u["a"], u["b"]} for u in report["updates"]] == [{"O-2", "O-3"}]


def test_apply_yes_merges_and_undo_reverses(db, capsys):
    code, out, _ = _run(capsys, "dedup", "--db", db, "--apply", "--yes", "--json")
    run_id = json.loads(out)["run_id"]
    assert code == 0 and isinstance(run_id, int)
    code, out, _ = _run(capsys, "dedup", "--db", db, "--json")
    assert json.loads(out)["clusters"] == []
    code, out, _ = _run(capsys, "dedup", "--db", db, "--undo", str(run_id), "--json")
    assert code == 0 and json.loads(out)["undone"] == run_id
    code, out, _ = _run(capsys, "dedup", "--db", db, "--json")
    assert len(json.loads(out)["clusters"]) == 1


@pytest.mark.parametrize("argv, message", [
    (("--threshold", "2"), "threshold must be"),
    (("--apply",), "needs --yes"),
    (("--yes",), "only make sense with --apply"),
    (("--undo", "x"), "wants a run id"),
    (("--undo", "99"), "not a dedup merge"),
])
def test_mistakes_are_one_paragraph_and_exit_2(db, capsys, argv, message):
    code, _out, err = _run(capsys, "dedup", "--db", db, *argv)
    assert code == 2 and message in err and "Traceback" not in err and err.count("\n") == 1


def test_text_output_names_the_keeper_and_the_update(db, capsys):
    code, out, _ = _run(capsys, "dedup", "--db", db)
    assert code == 0 and "keep O-1" in out and "1 more pair differs only in a detail" in out
    assert out.startswith("1 cluster of duplicates at similarity 0.85")


def test_apply_text_says_cleo_still_returns_the_evicted_rows(db, capsys):
    """Issue 29.8: `dedup --apply` did not say that CLEO's own search still returns evicted rows."""
    from cleo_tui.memory.cleo_effects import EVICTION_IN_CLEO
    code, out, _ = _run(capsys, "dedup", "--db", db, "--apply", "--yes")
    assert code == 0 and "Merged as run" in out and EVICTION_IN_CLEO in out


def test_json_is_what_json_dumps_writes_for_hostile_text(tmp_path, capsys):
    """The report is written with orjson: byte for byte what `json.dumps(ensure_ascii=True)` writes,
    non-ASCII, DEL and control characters escaped (and every similarity written alike)."""
    brain = new_brain(tmp_path)
    hostile = ("Café naïve 🎉 [bold]markup[/bold] \x1b[31mred\x1b[0m tab\there del\x7f end\x01 \u2028 Σίσυφος "
               "uses the staging database, which is reset every night.")
    texts = (hostile, hostile.replace("uses the staging database, which", "— the staging database"),
             *TEXTS)
    for n, text in enumerate(texts):
        add_observation(brain, f"O-{n}-é", text, created_at=f"2026-01-0{n + 1} 10:00:00")
    brain.close()
    code, out, _ = _run(capsys, "dedup", "--db", str(tmp_path / ".cleo" / "cleo.db"), "--json", "--threshold", "0.7")
    report = json.loads(out)
    assert code == 0 and len(report["clusters"]) == 2 and out.isascii()
    assert all(escaped in out for escaped in ("\\u007f", "\\u001b", "\\ud83c\\udf89", "\\u00e9"))
    assert out == json.dumps(report, ensure_ascii=True, separators=(",", ":")) + "\n"


def test_a_process_that_ends_at_once_after_the_command_still_prints_all_of_it(db, tmp_path, capsys):
    """`python -m cleo_tui dedup` ends its process at once after the command (`cli.run`): its output is
    flushed first, whole, and the exit status is the command's (its text through a pipe, as a script reads it)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for argv in (("--json",), ()):
        done = subprocess.run([sys.executable, "-m", "cleo_tui", "dedup", "--db", db, *argv], capture_output=True,
                              env=env, timeout=120)
        _, out, _ = _run(capsys, "dedup", "--db", db, *argv)
        assert done.returncode == 0 and done.stdout.decode() == out and out.count("\n") >= 1
    done = subprocess.run([sys.executable, "-m", "cleo_tui", "dedup", "--db", db, "--threshold", "2"],
                          capture_output=True, env=env, timeout=120)
    assert done.returncode == 2 and b"threshold must be" in done.stderr
