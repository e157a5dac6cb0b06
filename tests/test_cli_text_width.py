"""The commands' text on a terminal: a line wider than the terminal is wrapped at spaces, not cut
mid-word by the terminal; in a pipe every record stays one line (for grep)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len

from cleo_tui.commands.text_width import fitted_lines
from cleo_tui.demo import generate_demo
from tests.pty_capture import python_argv, run_in_pty


def test_a_short_line_is_left_as_it_is():
    assert fitted_lines("  O-1  live  2026-05-30", 80) == ["  O-1  live  2026-05-30"]
    assert fitted_lines("", 80) == [""]


def test_a_long_line_breaks_at_spaces_and_goes_on_under_its_text():
    row = "  O-mjs5moxd-8k  reinforced (cited by 7 reflections); low relevance (quality 0.35 is below 0.4)"
    assert fitted_lines(row, 40) == ["  O-mjs5moxd-8k  reinforced (cited by 7",
                                     "                 reflections); low",
                                     "                 relevance (quality 0.35",
                                     "                 is below 0.4)"]  # under the row's second column
    # The columns' runs of spaces stay where no break falls; the words are the same, in order.
    assert " ".join(" ".join(fitted_lines(row, 40)).split()) == " ".join(row.split())
    prose = "  Soft-evict 1,386 observations (tokens 159,203 → 79,999); undo with `cleo-tui prune --undo 2`."
    assert fitted_lines(prose, 40) == ["  Soft-evict 1,386 observations (tokens",
                                       "      159,203 → 79,999); undo with",
                                       "      `cleo-tui prune --undo 2`."]  # no columns: four in
    field = "CLEO marks:    9 at risk (its next consolidation deletes them), 38 hidden from its search"
    assert fitted_lines(field, 60)[1] == "               them), 38 hidden from its search"  # under the value


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=300), st.integers(20, 140))
def test_any_text_is_fitted_without_losing_a_character(text: str, width: int):
    """Wide, combining and zero-width characters, odd spaces: only spaces change, never a character."""
    lines = fitted_lines(text, width)
    assert "".join("".join(lines).split()) == "".join(text.split())


def test_a_questions_last_space_stays_before_its_answer():
    assert fitted_lines("Soft-evict 1,386 observations. Proceed? [y/N] ", 30) == [
        "Soft-evict 1,386 observations.", "    Proceed? [y/N] "]


def test_widths_are_terminal_cells():
    line = " ".join(["記憶"] * 10)  # two cells a character
    assert fitted_lines(line, 14) == ["記憶 記憶 記憶", *["    記憶 記憶"] * 3, "    記憶"]
    assert all(cell_len(part) <= 14 for part in fitted_lines(line, 14))


def test_a_word_wider_than_the_line_stays_whole_on_its_own_line():
    """A path or a URL is kept in one piece to copy; the terminal shows its rest on the next row."""
    url = "http://127.0.0.1:8080/?token=" + "a" * 60
    assert fitted_lines(f"Open {url} in a browser", 40) == ["Open", f"    {url}", "    in a browser"]


def test_a_command_on_an_80_column_terminal_fits_it_and_a_pipe_keeps_one_line_a_record(tmp_path: Path):
    demo = generate_demo(tmp_path / "demo", observations=300, seed=3)
    argv = python_argv("traces", "--db", str(demo))
    piped = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=tmp_path).stdout.splitlines()
    assert max(map(cell_len, piped)) > 100  # (the list's records are wider than the terminal)
    shown = run_in_pty(argv, [], cwd=str(tmp_path), size=(80, 24)).decode().replace("\r\n", "\n").splitlines()
    assert shown and max(map(cell_len, shown)) <= 80
    assert " ".join(shown).split() == " ".join(piped).split()  # every word, in order: nothing cut or lost
    assert len(shown) > len(piped)


def test_a_question_fits_the_terminal_and_ctrl_d_is_a_no(tmp_path: Path):
    """`prune --apply` asked its question cut mid-word at 80 columns, and ctrl+d at it said
    "internal error: EOFError"."""
    demo = generate_demo(tmp_path / "demo", observations=300, seed=3)
    argv = python_argv("prune", "--db", str(demo), "--budget", "5k", "--apply")
    shown = run_in_pty(argv, [(b"Proceed? [y/N] ", b"\x04")], cwd=str(tmp_path), size=(80, 24)).decode()
    lines = shown.replace("\r\n", "\n").splitlines()
    assert max(map(cell_len, lines)) <= 80
    assert "`cleo-tui prune --undo RUN_ID`. Proceed? [y/N]" in " ".join(shown.split())  # broken at spaces only
    assert "Not confirmed; nothing was evicted." in shown and "internal error" not in shown


def test_a_mistake_is_said_within_the_terminal_too(tmp_path: Path):
    """Standard error's messages were cut mid-word as well ("cleo-tui: The budget must be …")."""
    demo = generate_demo(tmp_path / "demo", observations=100, seed=3)
    shown = run_in_pty(python_argv("prune", "--db", str(demo), "--budget", "0"), [], cwd=str(tmp_path),
                       size=(50, 24)).decode().replace("\r\n", "\n")
    lines = shown.splitlines()
    assert len(lines) > 1 and max(map(cell_len, lines)) <= 50
    assert " ".join(shown.split()) == ("cleo-tui: The budget must be a positive whole number of tokens such as "
                                       "8000 or 12k; got '0'.")
