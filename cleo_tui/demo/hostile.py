"""The demo's hostile texts: terminal control, markup, huge and undecodable text that must show literally."""

from __future__ import annotations

from cleo_tui.demo import text


def _long_log() -> str:
    """A ~200 KB narrative: a pasted test-run log."""
    lines = []
    for i in range(2600):
        area = text.AREAS[i % len(text.AREAS)]
        test = text.TESTS[i % len(text.TESTS)]
        lines.append(f"tests/test_{area}.py::{test}[case{i:04d}] PASSED{' ' * 12}[{i * 100 // 2600:3d}%]")
    return "Full pytest output pasted by the agent:\n" + "\n".join(lines)


# (title, narrative, raw narrative bytes or None, facts_json or None). CLEO strips ESC and BEL
# from titles but keeps them in narratives, so the titles here carry only markup.
HOSTILE: tuple[tuple[str, str, bytes | None, str | None], ...] = (
    ("CLI prints [bold red]x[/] on failure",
     "The CLI output contains Rich markup like [bold red]x[/] and [link=http://example.com]click[/link]; "
     "it must be shown literally, not styled.", None, None),
    ("Coloured test output captured",
     "Captured output: \x1b[31mFAILED\x1b[0m test_render_totals \x1b[1;32mPASSED\x1b[0m others", None, None),
    ("Terminal hyperlink in a log line",
     "See \x1b]8;;http://example.com/evil\x1b\\the docs\x1b]8;;\x1b\\ and \x1b]52;c;cm0gLXJmIH4=\x07 "
     "(an OSC 52 clipboard write).", None, None),
    ("Control characters in a pasted log",
     "NUL\x00here, bell\x07, backspace\x08, carriage\rreturn, DEL\x7f, C1 \x9b31m, "
     "bidi \u202eevil\u202c and a tab\tend.", None, None),
    ("Huge pasted test log", _long_log(), None, None),
    ("Latin-1 bytes in a narrative", "Log tail from a latin-1 file (bytes shown as stored).",
     b"Log tail from a latin-1 file: caf\xe9 cr\xe8me \xff\xfe not UTF-8", None),
    ("Malformed facts JSON", "facts_json of this row is not valid JSON; it must degrade visibly.",
     None, '{"facts": [unterminated'),
)
