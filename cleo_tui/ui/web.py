"""`cleo-tui serve`: the same app in a browser, through textual-serve, for this machine only.

Each browser tab gets its own app process on the same brain (the live watcher, CLEO's write lock
and the journal already make several writers safe). The server binds the loopback address unless
told otherwise, and every request must carry a secret token: the URL printed at start holds it,
and the first visit leaves it in a cookie (HttpOnly, SameSite=Strict) so the page's own requests
and its websocket carry it too. A request without it gets 403 before any app process starts.
The page is our own template: it loads textual-serve's script, styles and bundled fonts from this
server, and nothing from the network.
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
import shlex
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web
from textual_serve.server import Server

COOKIE = "cleo_tui_token"
TEMPLATES = Path(__file__).with_name("web_templates")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def app_command(project: str | None, db: str | None, read_only: bool) -> str:
    """The shell command that starts one app process (textual-serve runs it through a shell)."""
    words = [sys.executable, "-m", "cleo_tui"]
    if db:
        words += ["--db", db]
    elif project:
        words.append(project)
    if read_only:
        words.append("--read-only")
    return " ".join(shlex.quote(w) for w in words)


def new_token() -> str:
    return secrets.token_urlsafe(24)


class CannotListen(Exception):
    """The server could not listen on its address (`cause`: the OSError of the bind)."""

    def __init__(self, cause: OSError) -> None:
        super().__init__(str(cause))
        self.cause = cause


class BrainServer(Server):
    """textual-serve's server, behind a token."""

    def __init__(self, command: str, host: str, port: int, token: str) -> None:
        super().__init__(command, host=host, port=port, title="cleo-tui", templates_path=TEMPLATES)
        self.token = token

    @property
    def url(self) -> str:
        """Where to point the browser: the address with the token."""
        return f"{self.public_url}/?token={self.token}"

    async def _make_app(self) -> web.Application:  # textual-serve's one place that builds the web app
        app = await super()._make_app()
        app.middlewares.append(self._require_token)
        return app

    @web.middleware
    async def _require_token(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        given = request.query.get("token") or request.cookies.get(COOKIE) or ""
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return web.Response(status=403, text="cleo-tui: this address needs the token that `cleo-tui serve` "
                                                 "printed with it.\n")
        response = await handler(request)
        if "token" in request.query and not isinstance(response, web.WebSocketResponse):
            response.set_cookie(COOKIE, self.token, httponly=True, samesite="Strict", path="/")
        return response

    async def on_startup(self, app: web.Application) -> None:
        """Quiet: the address is printed once the server listens (`serve`)."""

    def serve(self, debug: bool = False) -> None:
        """Listen, say where, and run until ctrl+c (or SIGTERM); then close every tab's app."""
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        runner = web.AppRunner(await self._make_app(), handle_signals=False)
        await runner.setup()
        try:
            try:
                await web.TCPSite(runner, self.host, self.port).start()
            except OSError as exc:  # (only the bind: an error while serving is not the address's fault)
                raise CannotListen(exc) from exc
            print(f"cleo-tui in the browser: {self.url}\n(only this machine can reach it; ctrl+c stops the "
                  "server and every app it started)", flush=True)
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, stop.set)
            await stop.wait()
        finally:
            await runner.cleanup()  # closes each websocket: its app is told to quit and waited for
