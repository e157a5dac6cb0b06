"""A long command's progress on a terminal (`commands.progress`): `dedup` on a brain never scanned
took 45 s at 100,000 real-layout rows, and `prune` on a brain never opened 19 s at 1,000,000 demo
rows, with nothing on the screen. On a terminal standard error now says what is done and how far
it is, on one line redrawn in place and wiped before the output; in a pipe nothing is written."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

from cleo_tui.commands.progress import TerminalProgress
from cleo_tui.demo.generator import generate_demo
from tests.pty_capture import python_argv, run_in_pty

ERASE = "\r\x1b[K"


class Terminal(io.StringIO):
    """A text stream that says it is a terminal (what the reporter writes is kept)."""

    def isatty(self) -> bool:
        return True


def test_progress_is_one_line_redrawn_in_place_and_wiped_at_the_end():
    screen = Terminal()
    clock = iter([0.0, 0.01, 0.02, 0.5, 0.6])
    with TerminalProgress("dedup", screen, clock=lambda: next(clock)) as progress:
        progress(0, 200, "reading")       # the first report is drawn at once
        progress(50, 200, "reading")      # 10 ms later: not redrawn
        progress(0, 90, "verifying")      # a new stage is drawn at once
        progress(45, 90, "verifying")     # half a second later: redrawn
        progress(0, 0, "clustering")      # no total: no percentage
    assert screen.getvalue().split(ERASE) == ["", "dedup: reading 0%", "dedup: verifying 0%", "dedup: verifying 50%",
                                              "dedup: clustering…", ""]


def test_nothing_is_written_where_standard_error_is_no_terminal():
    screen = io.StringIO()
    with TerminalProgress("prune", screen) as progress:
        progress(10, 100, None)
    assert screen.getvalue() == ""


def test_dedup_on_a_terminal_shows_its_progress_and_wipes_it_and_a_pipe_gets_none(tmp_path: Path):
    demo = generate_demo(tmp_path / "demo", observations=300, seed=3)
    argv = python_argv("dedup", "--db", str(demo))
    shown = run_in_pty(argv, [], cwd=str(tmp_path), size=(80, 24)).decode()
    assert "dedup: reading" in shown and "dedup: verifying" in shown
    after = shown[shown.rindex(ERASE):]  # the line wiped last, then the output alone
    assert "dedup: " not in after and "Preview only: nothing was written." in after
    piped = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=tmp_path)
    assert piped.stderr == "" and "cluster" in piped.stdout


def test_prune_on_a_terminal_shows_its_progress(tmp_path: Path):
    demo = generate_demo(tmp_path / "demo", observations=300, seed=3)
    shown = run_in_pty(python_argv("prune", "--db", str(demo), "--budget", "5k"), [], cwd=str(tmp_path),
                       size=(80, 24)).decode()
    assert "prune: reading the pool" in shown
    after = shown[shown.rindex(ERASE):]
    assert "prune: " not in after and "Pruning the whole live pool" in after


def test_secrets_on_a_terminal_shows_how_much_of_the_brain_it_has_read(tmp_path: Path):
    """`secrets` read real-layout 100,000 for 24 s with nothing on the screen."""
    from cleo_tui.brain.store import open_brain
    from cleo_tui.memory.secrets import scan_brain

    demo = generate_demo(tmp_path / "demo", observations=3_000, seed=3)
    brain = open_brain(demo, read_only=True)
    try:
        reports: list[tuple[int, int]] = []
        scan = scan_brain(brain, lambda done, total: reports.append((done, total)))
    finally:
        brain.close()
    assert len(reports) >= 2 and all(total == scan.scanned_rows for _done, total in reports)
    assert [done for done, _total in reports] == sorted(done for done, _total in reports)
    shown = run_in_pty(python_argv("secrets", "--db", str(demo)), [], cwd=str(tmp_path), size=(80, 24)).decode()
    assert "secrets: reading every text column" in shown
    after = shown[shown.rindex(ERASE):]
    assert "secrets: " not in after and "No secrets found" in after
