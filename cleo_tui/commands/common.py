"""What every command module shares: brain flags, opening the brain, JSON output, errors.

Command modules import this module, never `cleo_tui.cli`; `cli.py` imports the
command modules (through the registry in `cleo_tui.commands`), never the reverse.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, NoReturn, Protocol, TypeVar

import orjson

from cleo_tui.brain import Brain, BrainError, locate_brain, open_brain
from cleo_tui.brain.journal import UndoOutcome
from cleo_tui.brain.kinds import Capability
from cleo_tui.brain.store import brains_left_behind
from cleo_tui.commands.argtypes import nonempty_path
from cleo_tui.config import config_path, load_config
from cleo_tui.files import write_export_atomically
from cleo_tui.memory.settings import configured_tokenizer, ignored_settings
from cleo_tui.safe_text import one_line, titled_lines

T = TypeVar("T")
EXIT_USER_ERROR = 2
EXIT_INTERNAL = 70


class UsageError(BrainError):
    """A bad flag value or combination."""


class AddCommand(Protocol):
    """What a command module's `register(add)` is given: makes one subcommand's parser."""

    def __call__(self, name: str, **kwargs: Any) -> argparse.ArgumentParser: ...


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser whose mistakes are a UsageError: one paragraph, exit 2, like every other."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("cleo-tui").strip()  # (every message already starts "cleo-tui: ")
        raise UsageError(f"{command + ': ' if command else ''}{message}. Run `{self.prog} --help` for the options.")


def add_brain_options(parser: argparse.ArgumentParser, read_only_flag: bool = True) -> None:
    """`--db FILE` and `--project DIR` (default: the current directory)."""
    parser.add_argument("--db", metavar="FILE", type=nonempty_path("--db", "a brain file"),
                        help="open this brain file directly")
    parser.add_argument("--project", metavar="DIR", default=".", type=nonempty_path("--project", "a directory"),
                        help="look for .cleo/cleo.db, .cleo/brain.db or .cleo-tui/brain.db here and above "
                             "(default: .)")
    if read_only_flag:
        parser.add_argument("--read-only", action="store_true", help="open the brain read-only")


def brain_from_args(args: argparse.Namespace, read_only: bool | None = None) -> Brain:
    """Open the brain the flags name; `read_only` overrides the --read-only flag.

    A command that only reads (`info`, a preview) still rolls back a run a crash left
    half-done, as every command does: when the read-only open finds one, the brain is
    opened for writing once to roll it back (or to say plainly why it cannot), then
    read-only again. Only the user's --read-only leaves it as it is.
    """
    path = Path(args.db) if args.db else locate_brain(args.project)
    if not args.db:
        for other in brains_left_behind(path):
            print(f"cleo-tui: note: {one_line(str(other))} is {left_behind_words(path)}", file=sys.stderr)
    chosen = bool(getattr(args, "read_only", False))
    brain = open_brain(path, read_only=chosen if read_only is None else read_only, on_wait=_say_wait)
    _check_supports(brain, args)
    if brain.read_only and not chosen and brain.recovered:
        brain.close()
        writer = open_brain(path, read_only=False, on_wait=_say_wait)
        notes = list(writer.recovered)
        if writer.read_only or read_only is False:
            return writer
        writer.close()
        brain = open_brain(path, read_only=True, on_wait=_say_wait)
        brain.recovered = notes + brain.recovered
    return brain


def say_setting_problems() -> None:
    """Say on stderr what the config file gets wrong, before a command runs: a setting ignored
    changes what the command does (`memory.settings`), and a script would not know otherwise."""
    loaded, problem = load_config()
    ignored = ignored_settings(loaded)
    if problem or ignored:
        said = problem or f"{config_path()}: {' '.join(ignored)}"
        print(f"cleo-tui: warning: {one_line(said, 600)}", file=sys.stderr)


def tokenizer_of(args: argparse.Namespace) -> str:
    """The tokenizer a command counts with: its --tokenizer, else the config file's, else chars4."""
    return str(args.tokenizer) if args.tokenizer else configured_tokenizer(load_config()[0])


def _check_supports(brain: Brain, args: argparse.Namespace) -> None:
    """UsageError (the brain closed, nothing read or written) when the file cannot do what the
    command needs: a command that needs a capability says so with `needs` among its parser's defaults."""
    needs: Capability | None = getattr(args, "needs", None)
    if needs is None or brain.supports(needs):
        return
    brain.close()
    hint = (" A hippo store opens for its recall traces and memories: `cleo-tui traces`, `recall`, `outcome`, "
            "`history`, `secrets` and `info`, and the app's Traces pane." if brain.kind == "hippo" else "")
    raise UsageError(f"`cleo-tui {args.command}` needs a brain with {needs.replace('_', ' ')}, and "
                     f"{one_line(str(brain.path))} is a {brain.kind.label}, which has none; nothing was read or "
                     f"written.{hint}")


def is_terminal(stream: IO[str] | None) -> bool:
    """Whether `stream` (sys.stdin, sys.stdout) is a terminal; None, a stream closed before the start, is not."""
    return stream is not None and stream.isatty()


def confirmed(question: str) -> bool:
    """Ask `question` (it ends "[y/N] ") and read the answer: True for y or yes. The question goes out
    as the command's other text does (on a terminal, fitted to its width: `text_width`); ctrl+d is a no."""
    sys.stdout.write(question)
    try:
        answer = input()
    except EOFError:
        sys.stdout.write("\n")  # (the terminal left the cursor after the question)
        return False
    return answer.strip().lower() in ("y", "yes")


STANDARD_OUTPUT = "-"  # an --out or --export of "-": the rows go to standard output (for a pipe)


def write_output(flag: str, path: str, write: Callable[[IO[str]], T], brain_path: Path, force: bool) -> T:
    """`write` into the file `path`, guarded and atomic (`files.write_export_atomically`), or to standard
    output when `path` is "-" and standard output is no terminal: the rows' text is data (a narrative's
    escape sequences too), which a terminal would obey. (`./-` names a file called "-".)"""
    if path != STANDARD_OUTPUT:
        return write_export_atomically(path, write, brain_path=brain_path, force=force)
    if sys.stdout is None:  # (started with its standard output closed)
        raise UsageError(f"{flag} - writes the rows to standard output, and standard output is closed: give "
                         f"{flag} a file name. Nothing was written.")
    if is_terminal(sys.stdout):
        raise UsageError(f"{flag} - writes the rows to standard output, and standard output is a terminal here: "
                         f"pipe it (`| jq`, `| less`) or give {flag} a file name. Nothing was written.")
    result = write(sys.stdout)
    sys.stdout.flush()
    return result


def left_behind_words(found: Path) -> str:
    """Why a brain beside `found` is not the one opened (after the word "is")."""
    return (f"another brain of this project, not opened: cleo-tui opens {one_line(str(found))} "
            "first (CLEO's, once CLEO sets the project up). Its rows stay there; open it with --db.")


def _say_wait(message: str) -> None:
    print(f"cleo-tui: {message}", file=sys.stderr, flush=True)


_NON_ASCII = re.compile(r"[^\x00-\x7e]")  # as json.dumps(ensure_ascii=True): DEL and beyond


def _ascii_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def emit_json(value: Any) -> None:
    """Print `value` as indented JSON, non-ASCII escaped so no control byte reaches a terminal.

    Through orjson: a prune preview of 100,000 dropped rows is 25 MB of JSON.
    """
    try:
        data = _json_bytes(value)
    except TypeError:  # a lone surrogate (a file name that is not UTF-8): escaped as \udcff by json
        data = json.dumps(value, indent=2, ensure_ascii=True, default=str).encode("ascii")
    _write([data, b"\n"])


def emit_compact_json(value: Any) -> None:
    """Print `value` as JSON on one line, non-ASCII escaped: the text `json.dumps(value,
    ensure_ascii=True, separators=(",", ":"))` writes, for a value whose floats are 0 or at
    least 1e-4 and below 1e16 in size (json writes the others with an exponent, orjson not always).

    Made by orjson: `dedup --json`'s 7.6 MB report of the 100,000-row demo brain took 0.14 s of
    CPU with json's C encoder, 0.02 s so. What orjson refuses (a lone surrogate) is written by json."""
    try:
        data = _escaped(orjson.dumps(value))
    except TypeError:
        data = json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("ascii")
    _write([data, b"\n"])


def _json_bytes(value: Any) -> bytes:
    """`value` as indented JSON (orjson), non-ASCII escaped; TypeError for a lone surrogate."""
    return _escaped(orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=str))


def _escaped(data: bytes) -> bytes:
    """orjson's UTF-8 with DEL and every non-ASCII character escaped, as `json.dumps(ensure_ascii=True)` writes them."""
    if data.isascii() and b"\x7f" not in data:
        return data
    return _NON_ASCII.sub(_ascii_escape, data.decode("utf-8")).encode("ascii")


def _write(pieces: Iterable[bytes | memoryview]) -> None:
    """Write ASCII bytes to standard output, a piece at a time (nothing when it was closed before the
    start, as `print` writes nothing then)."""
    if sys.stdout is None:
        return
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text stream (tests, embedding): the data is ASCII
        for piece in pieces:
            sys.stdout.write(bytes(piece).decode("ascii"))
        return
    sys.stdout.flush()
    for piece in pieces:
        buffer.write(piece)
    buffer.flush()


def emit_json_with_rows(head: dict[str, Any], rows: Callable[[], Mapping[str, Iterable[list[Any]]]]) -> None:
    """`emit_json` of `head` with the lists `rows()` makes (the rows of `head[key]`, which is [] in
    `head`, a list at a time) in their places: the same bytes, made a part at a time.

    What it buys (`prune --json` of 100,000 demo rows): 86,000 dicts never live at once, and no
    copy of the whole 25 MB is made: the process touches ~60 MB less memory. A part's rows are
    printed as a list inside a dict, which indents them as they are inside the head. The parts
    are written once all are made, so that should one hold a lone surrogate, the whole is printed
    by `emit_json` instead, as before."""
    try:
        pieces = list(_pieces_with_rows(head, rows()))
    except TypeError:
        for key, parts in rows().items():
            head[key] = [row for part in parts for row in part]
        emit_json(head)
        return
    _write(pieces)


_NESTED_START, _NESTED_END = b'{\n  "": [\n', b"\n  ]\n}"  # around a part's rows (see _pieces_with_rows)


def _pieces_with_rows(head: dict[str, Any], rows: Mapping[str, Iterable[list[Any]]]) -> Iterator[bytes | memoryview]:
    data = _json_bytes(head)
    for key, parts in rows.items():
        if head.get(key) != []:
            raise ValueError(f"{key} is not an empty list of the head")
        placeholder = b'\n  ' + orjson.dumps(key) + b': []'  # (a raw newline is only ever JSON's own)
        before, found, data = data.partition(placeholder)
        if not found:
            raise ValueError(f"{key} is not a key of the head")
        yield before
        yield placeholder[:-1]
        first = True
        for part in parts:
            if part:  # as the list of a key of a dict, its rows are indented as in the head
                yield b"\n" if first else b",\n"
                yield memoryview(_json_bytes({"": part}))[len(_NESTED_START):-len(_NESTED_END)]  # (not copied)
                first = False
        yield b"]" if first else b"\n  ]"
    yield data
    yield b"\n"


def int_option(value: str, flag: str, low: int, high: int) -> int:
    """A whole number within [low, high], or a UsageError naming the flag."""
    try:
        number = int(value.replace("_", ""))
    except ValueError:
        raise UsageError(f"{flag} wants a whole number, not {one_line(value, 40)!r}.") from None
    if not low <= number <= high:
        raise UsageError(f"{flag} must be between {low:,} and {high:,}; got {number:,}.")
    return number


def print_rows(title: str, lines: list[str]) -> None:
    """A titled list of at most SHOWN_NAMES lines, each cut to one safe line."""
    for line in titled_lines(title, lines):
        print(line)


def print_undo(outcome: UndoOutcome, again: str) -> None:
    """What an undo restored, and by name what it skipped or found deleted; `again` retries the rest."""
    print("\n".join(outcome.lines(f"`{again}`")))
