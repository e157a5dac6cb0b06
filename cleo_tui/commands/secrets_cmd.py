"""`cleo-tui secrets`: find secrets in every text column of the brain; `--redact --yes` removes them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cleo_tui.commands.common import (
    AddCommand,
    UsageError,
    add_brain_options,
    brain_from_args,
    confirmed,
    emit_json,
    is_terminal,
)
from cleo_tui.commands.progress import TerminalProgress
from cleo_tui.memory.redaction import redact, redaction_question, scan_summary, scanned
from cleo_tui.memory.secrets import SecretScan, scan_brain
from cleo_tui.safe_text import one_line, plural


def register(add: AddCommand) -> None:
    secrets = add("secrets", help="find API keys, tokens and passwords stored in the brain (masked)",
                  description="Scan every text column of the brain's tables (observations, patterns, learnings, "
                              "decisions, CLEO's retrieval log, cleo-tui's own tables) for secrets: cloud and "
                              "service keys, tokens, JWTs, private keys, passwords and credentials in "
                              "connection strings, and long random tokens. Findings are masked. --redact --yes "
                              "replaces each secret with a marker everywhere in the file (rows, full-text index, "
                              "WAL, free pages, cleo-tui's caches); a redaction cannot be undone.")
    add_brain_options(secrets, read_only_flag=False)
    secrets.add_argument("--json", action="store_true", help="print JSON")
    secrets.add_argument("--redact", action="store_true", help="replace every secret found with a marker")
    secrets.add_argument("--yes", action="store_true", help="do not ask before --redact")
    secrets.set_defaults(func=cmd_secrets)


def cmd_secrets(args: argparse.Namespace) -> int:
    if args.yes and not args.redact:
        raise UsageError("--yes only makes sense with --redact; nothing was written.")
    brain = brain_from_args(args, read_only=True)  # nothing is written before the user says yes
    try:
        with TerminalProgress("secrets") as progress:
            scan = scan_brain(brain, lambda done, total: progress(done, total, "reading every text column"))
    finally:
        brain.close()
    if not args.redact or not scan.findings:
        _report(scan, args.json)
        return 0
    _confirm(scan, brain.path, args.yes)
    brain = brain_from_args(args, read_only=False)
    try:
        scan = scan_brain(brain)  # as it is now: CLEO may have written since
        result = redact(brain, scan.findings)
    finally:
        brain.close()
    if args.json:
        emit_json(scan.to_json() | {"redaction": result.to_json()})
        return 0
    print("\n".join(result.lines()))
    return 0


def _report(scan: SecretScan, as_json: bool) -> None:
    if as_json:
        emit_json(scan.to_json())
        return
    if not scan.findings:
        print(f"No secrets found in {scanned(scan)}.")
        return
    print(f"{plural(len(scan.findings), 'possible secret')} in {plural(scan.scanned_rows, 'row')} scanned: "
          + scan_summary(scan))
    for f in scan.findings[:200]:
        print(f"  {one_line(f.table, 30)}  {one_line(f.row_id, 40)}  {one_line(f.column, 24)}  {f.kind}  "
              f"{one_line(f.preview, 60)}")
    if len(scan.findings) > 200:
        print(f"  … and {len(scan.findings) - 200:,} more (--json lists them all)")
    print("Nothing was written. Remove them with `cleo-tui secrets --redact --yes`.")


def _confirm(scan: SecretScan, path: Path, yes: bool) -> None:
    if yes:
        return
    if not is_terminal(sys.stdin):
        raise UsageError("--redact needs --yes when not run from a terminal; nothing was written.")
    if not confirmed(redaction_question(scan, path) + " Proceed? [y/N] "):
        raise UsageError("Not confirmed; nothing was written.")
