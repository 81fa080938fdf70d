"""``tuiloss serve``: the viewer in a browser, through textual-serve (``pip install 'tuiloss[serve]'``).

Each browser tab that opens the page gets its own ``tuiloss watch`` process, started with the
arguments ``serve`` was given (:func:`watch_command`), its screen sent over a websocket to
xterm.js. The server listens on loopback unless ``--host`` names another address, and then
says that anyone who can reach that address gets the viewer: there is no authentication.
From another machine, forward the port over ssh instead (README: "In a browser").

Requests another site's page sends (a websocket opened from it, DNS rebinding) are refused:
see :func:`refusal`. This module never imports the viewer: the viewer runs in the processes it
starts.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import shlex
import signal
import sys
from typing import Sequence
from urllib.parse import urlsplit

#: Where ``serve`` listens unless ``--host`` says otherwise.
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
INSTALL = "pip install 'tuiloss[serve]'"
#: Seconds the open pages' viewers get to quit once the server is stopped.
SHUTDOWN_SECONDS = 3.0


class ServeUnavailable(RuntimeError):
    """textual-serve is not installed."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine only: ``localhost`` or a loopback address."""
    if host.lower() in ("localhost", "localhost.localdomain", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to any interface


def url(host: str, port: int) -> str:
    """The address a browser opens (an IPv6 address in brackets)."""
    host = host.strip("[]")
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def exposure_warning(host: str, port: int) -> str | None:
    """What to say when the server can be reached from other machines, else None."""
    if is_loopback(host):
        return None
    return (f"tuiloss: serving on {host}:{port} to every machine that can reach it, with no authentication: "
            f"anyone there can see these logs. To view them from elsewhere, keep the default host and forward "
            f"the port: ssh -L {port}:127.0.0.1:{port} THIS-HOST")


def refusal(host: str, origin: str | None, *, loopback_only: bool) -> str | None:
    """Why a request is refused (with its ``Host`` and ``Origin`` headers), or None.

    A browser runs every site's scripts, and a local server without authentication is theirs to
    reach unless it checks: bound to loopback, the ``Host`` must name this machine (a site that
    has its own name resolve to 127.0.0.1, DNS rebinding, is refused), and a request a page
    sends must come from a page of this server (its ``Origin`` is the ``Host``): another site's
    page cannot open a viewer's websocket from the user's browser.
    """
    try:
        name = urlsplit(f"//{host}").hostname or ""
        sender = urlsplit(origin).netloc.lower() if origin is not None else None
    except ValueError:  # a malformed header ("[::1")
        return "a malformed Host or Origin header"
    if loopback_only and not is_loopback(name):
        return f"this server answers to this machine's own names only, not {host!r}"
    if sender is not None and sender != host.lower():
        return "a page of another site may not use this server"
    return None


def watch_command(watch_args: Sequence[str], python: str | None = None) -> str:
    """The shell command each page runs: ``tuiloss watch`` with ``watch_args``, every word quoted.

    textual-serve starts the command through the shell, so paths with spaces, quotes, ``$``
    or ``;`` must reach ``watch`` as the words they are: :func:`shlex.join` quotes each. The
    interpreter is the one running ``serve``, so the viewer is the same installed tuiloss.
    """
    return shlex.join([python or sys.executable, "-m", "tuiloss", "watch", *watch_args])


def make_server(command: str, host: str, port: int, *, title: str = "tuiloss"):
    """A textual-serve server for ``command``; raises :class:`ServeUnavailable` without the package."""
    try:
        from textual_serve.server import Server
    except ImportError:
        raise ServeUnavailable(f"tuiloss serve needs textual-serve: {INSTALL}") from None

    class TuilossServer(Server):
        """textual-serve's server, with tuiloss' one line on start, quiet logging and a clean stop.

        Stopping (Ctrl+C, SIGTERM) closes the open pages' websockets, which tells their viewers
        to quit, and waits for those processes (killed after :data:`SHUTDOWN_SECONDS`) before
        the event loop closes: nothing is left running and no traceback is printed.
        """

        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.pages: dict = {}  # open websocket -> its viewer (textual-serve's AppService)

        def initialize_logging(self) -> None:
            logger = logging.getLogger("textual-serve")
            logger.setLevel(logging.WARNING)
            if not logger.handlers:
                handler = logging.StreamHandler(sys.stderr)
                handler.setFormatter(logging.Formatter("tuiloss serve: %(message)s"))
                logger.addHandler(handler)
            logger.propagate = False

        async def on_startup(self, app) -> None:
            """Said once the port is listened on (see :meth:`_run`), not before."""

        async def _make_app(self):
            from aiohttp import web

            loopback_only = is_loopback(self.host)

            @web.middleware
            async def same_origin(request, handler):
                why = refusal(request.host, request.headers.get("Origin"), loopback_only=loopback_only)
                if why is not None:
                    raise web.HTTPForbidden(text=f"tuiloss serve: {why}\n")
                return await handler(request)

            app = await super()._make_app()
            app.middlewares.append(same_origin)
            return app

        async def handle_index(self, request):
            # The page's own address (as the browser reached it: through ssh -L from another
            # port, by the machine's name) is where its websocket connects back to.
            self.public_url = f"{request.scheme}://{request.host}"
            return await super().handle_index(request)

        async def _process_messages(self, websocket, app_service) -> None:
            self.pages[websocket] = app_service
            try:
                await super()._process_messages(websocket, app_service)
            finally:
                self.pages.pop(websocket, None)
                await app_service.stop()  # asks the viewer to quit (again later: a no-op)
                await _ended(app_service)

        def serve(self, debug: bool = False) -> None:
            self.debug = debug
            self.initialize_logging()
            loop = asyncio.new_event_loop()
            try:
                loop.run_until_complete(self._run())
            finally:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        async def _run(self) -> None:
            from aiohttp import web

            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for number in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(number, stop.set)
            runner = web.AppRunner(await self._make_app(), handle_signals=False, shutdown_timeout=SHUTDOWN_SECONDS)
            await runner.setup()
            try:
                await web.TCPSite(runner, self.host.strip("[]"), self.port).start()
                print(f"tuiloss serve: open {url(self.host, self.port)} (Ctrl+C stops)", flush=True)
                await stop.wait()
                services = list(self.pages.values())
                for websocket in list(self.pages):
                    await websocket.close()
            finally:
                await runner.cleanup()
            for service in services:
                await _ended(service)

    return TuilossServer(command, host=host, port=port, title=title, public_url=url(host, port))


async def _ended(service) -> None:
    """Wait for a page's viewer process to exit; kill it after :data:`SHUTDOWN_SECONDS`.

    textual-serve asks the process to quit but does not wait for it: a process still running
    when the event loop closes leaves its pipes to be closed by a dead loop (a traceback).
    """
    process = getattr(service, "_process", None)  # textual-serve 1.1 keeps it there
    if process is None or process.returncode is not None:
        return
    try:
        await asyncio.wait_for(process.wait(), SHUTDOWN_SECONDS)
    except asyncio.TimeoutError:
        process.kill()
        await process.wait()


def serve(watch_args: Sequence[str], host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> int:
    """Serve ``tuiloss watch watch_args`` until Ctrl+C or SIGTERM; the exit code.

    Returns 2, with a one-line message, when textual-serve is missing or the address cannot
    be listened on.
    """
    try:
        server = make_server(watch_command(watch_args), host, port)
    except ServeUnavailable as exc:
        print(f"tuiloss: {exc}", file=sys.stderr)
        return 2
    warning = exposure_warning(host, port)
    if warning:
        print(warning, file=sys.stderr)
    try:
        server.serve()
    except OSError as exc:  # the port taken, an address not of this machine
        print(f"tuiloss: cannot listen on {url(host, port)}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print("tuiloss serve: stopped", flush=True)
    return 0
