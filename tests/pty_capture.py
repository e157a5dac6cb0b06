"""Run the real app in a pseudo-terminal and keep every byte the terminal receives.

Used by the hostile-data tests to prove that no control sequence from a brain's
data (OSC 8 hyperlinks, OSC 52 clipboard writes, NUL, BEL ...) ever reaches a
terminal: only the app's own styling and cursor control may appear.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time

# Sequences a Textual app legitimately writes: CSI (styles, cursor, modes), its own
# OSC queries/settings without data, charset and keypad selection.
_CSI = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]")
_APP_OSC = re.compile(rb"\x1b\][0-9]+;[?]?[^\x07\x1b]{0,40}(\x07|\x1b\\)")
_SIMPLE = re.compile(rb"\x1b[=>78()][0-9A-B]?")
_DATA_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]")


def run_in_pty(argv: list[str], steps: list[tuple[bytes, bytes]], cwd: str, size: tuple[int, int] = (120, 36),
               timeout: float = 30.0) -> bytes:
    """Start `argv` on a pty of `size` (cols, rows); for each (wait_for, send) step wait until
    `wait_for` has appeared in the output (b"" = no wait), then type `send`. Returns all output."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(size[0]), "LINES": str(size[1]),
           "TEXTUAL_ANIMATIONS": "none"}
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env,
                            start_new_session=True, close_fds=True)
    os.close(slave)
    output = bytearray()
    deadline = time.monotonic() + timeout
    try:
        for wait_for, send in steps:
            seen_at = len(output) if wait_for else None
            while wait_for and wait_for not in output[max(0, (seen_at or 0) - len(wait_for)):]:
                if not _read_some(master, output, deadline):
                    raise TimeoutError(f"never saw {wait_for!r}; last output {bytes(output[-400:])!r}")
            os.write(master, send)
        while proc.poll() is None or _readable(master, 0):
            if not _read_some(master, output, deadline):
                break
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        os.close(master)
    return bytes(output)


def _readable(fd: int, wait: float) -> bool:
    return bool(select.select([fd], [], [], wait)[0])


def _read_some(fd: int, output: bytearray, deadline: float) -> bool:
    """Read what is available (waiting up to the deadline); False at EOF or timeout."""
    remaining = deadline - time.monotonic()
    if remaining <= 0 or not _readable(fd, min(remaining, 1.0)):
        return remaining > 0 and time.monotonic() < deadline
    try:
        chunk = os.read(fd, 65536)
    except OSError:  # EIO: the child closed the terminal
        return False
    output += chunk
    return bool(chunk)


def foreign_controls(output: bytes) -> list[bytes]:
    """Control bytes and escape sequences in `output` that are not the app's own."""
    rest = _SIMPLE.sub(b"", _APP_OSC.sub(b"", _CSI.sub(b"", output)))
    found = [rest[max(0, m.start() - 20):m.end() + 20] for m in re.finditer(rb"\x1b", rest)]
    found += [m.group() for m in _DATA_CONTROL.finditer(rest)]
    return found


def python_argv(*args: str) -> list[str]:
    """`cleo-tui ARGS` as a subprocess of this interpreter."""
    return [sys.executable, "-m", "cleo_tui", *args]
