"""`cleo-tui serve`: the app in a browser (loopback only unless --host is given, a token in the URL)."""

from __future__ import annotations

import argparse
import errno
import socket
import sys
from pathlib import Path

from cleo_tui.commands.common import AddCommand, UsageError, int_option
from cleo_tui.safe_text import one_line

LOOPBACK = "127.0.0.1"


def register(add: AddCommand) -> None:
    serve = add("serve", help="open the app in a browser on this machine",
                description="Serve the app to a browser on this machine: each tab runs its own cleo-tui on the "
                            "brain. It listens on 127.0.0.1 only and prints an address holding a secret token; "
                            "a request without the token is refused. ctrl+c stops it.")
    serve.add_argument("project", nargs="?", default=".", metavar="PROJECT_DIR",
                       help="project directory to look for a brain in (default: .)")
    serve.add_argument("--db", metavar="FILE", help="open this brain file directly")
    serve.add_argument("--read-only", action="store_true", help="open the brain read-only in every tab")
    serve.add_argument("--port", default="8000", help="port to listen on (default: 8000; 0 picks a free one)")
    serve.add_argument("--host", default=LOOPBACK,
                       help="address to listen on; anything but 127.0.0.1 lets other machines reach the app "
                            "(the token still guards it): only with care")
    serve.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from cleo_tui.brain import locate_brain
    from cleo_tui.ui.web import BrainServer, CannotListen, app_command, new_token

    port = int_option(args.port, "--port", 0, 65535)
    if args.db is not None and not args.db.strip():
        raise UsageError("--db needs a file name; an empty one names no brain.")
    db = str(Path(args.db).resolve()) if args.db else str(locate_brain(args.project).resolve())
    if not Path(db).is_file():
        raise UsageError(f"There is no brain at {db}.")
    if port == 0:
        try:
            port = _free_port(args.host)
        except OSError as exc:
            raise _cannot_listen(exc, args.host, port) from None
    if args.host != LOOPBACK:
        print(f"cleo-tui: warning: listening on {args.host}: other machines that can reach it may open the "
              "app (with the token).", file=sys.stderr)
    try:
        BrainServer(app_command(None, db, args.read_only), args.host, port, new_token()).serve()
    except CannotListen as exc:  # (only the bind: an error while serving is not the address's fault)
        raise _cannot_listen(exc.cause, args.host, port) from None
    return 0


def _cannot_listen(exc: OSError, host: str, port: int) -> Exception:
    """The user's mistake in --host or --port, said; any other OSError as it is."""
    if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
        return UsageError(f"--host {one_line(host, 80)} is not an address of this machine; nothing was started. "
                          f"Leave --host out ({LOOPBACK}: this machine only), or give one of its own addresses.")
    why = {errno.EADDRINUSE: "is in use (another program, or another `cleo-tui serve`)",
           errno.EACCES: "needs privileges this user does not have"}.get(exc.errno or 0)
    if why is None:
        return exc
    return UsageError(f"port {port} on {one_line(host, 80)} {why}; nothing was started. Choose another with "
                      "--port, or --port 0 for a free one.")


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
