"""`checkrein ui`: the audit in a browser (read-only), on 127.0.0.1:8766 by default.

Exit codes: 0 stopped (Ctrl-C), 2 usage or config error (no audit directory, a token variable
unset, a non-loopback address without a configured token).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from checkrein.errors import ConfigError

if TYPE_CHECKING:  # the frontend (and the MCP server it builds on) loads only when serving
    from checkrein.frontend.auth import Authenticator

__all__ = ["register"]


def _fail(message: str) -> typer.Exit:
    print(f"checkrein: {message}", file=sys.stderr)
    return typer.Exit(2)


def ui(
    audit: Annotated[Path | None, typer.Option("--audit", "-a", help="Audit directory to show (default: the config's).",
                                               show_default=False)] = None,
    config: Annotated[Path | None, typer.Option("--config", "-c", help="checkrein.toml: its audit directory, tokens "
                                                "and allowed origins.", show_default=False)] = None,
    host: Annotated[str, typer.Option("--host", help="Bind address (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port (0 picks a free one).")] = 8766,
    no_token: Annotated[bool, typer.Option("--no-token", help="With no token configured, serve without one "
                                           "(loopback only: any local user can then read the audit).")] = False,
) -> None:
    """Show the audit in a browser: live calls, filters, each denial's reason and rule, full
    records, traces, the log's verify status, and charts. Read-only.

    Tokens are the gateway's ([gateway] token, [[identities]], env CHECKREIN_TOKEN); with none
    configured a one-time token is made and printed in the address.
    """
    from checkrein.audit.trail import resolve_audit_dir
    from checkrein.config import load_config
    from checkrein.frontend.auth import LOOPBACK_HOSTS, Authenticator

    cfg = None
    if config is not None:
        try:
            cfg = load_config(config)
        except ConfigError as exc:
            raise _fail(exc.message) from None
    if audit is None:
        if cfg is None:
            raise _fail("give --audit DIR (the [audit] dir of your checkrein.toml) or --config FILE")
        audit = resolve_audit_dir(cfg.audit, cfg.base_dir)
    if not audit.is_dir():
        raise _fail(f"{audit}: no such audit directory (the gateway creates it when it starts)")
    try:
        auth = Authenticator.from_config(cfg) if cfg is not None else _env_authenticator()
    except ConfigError as exc:
        raise _fail(exc.message) from None
    loopback = host in LOOPBACK_HOSTS
    generated = None
    if not auth.required:
        if not loopback:
            raise _fail(f"refusing to serve the audit on {host} without a token: set [gateway] token (or env "
                        "CHECKREIN_TOKEN), or bind 127.0.0.1")
        if not no_token:
            generated = secrets.token_urlsafe(24)
            auth = Authenticator(generated, {})
    origins = tuple(cfg.gateway.allowed_origins) if cfg is not None else ()
    _serve(audit.resolve(), auth, host, port, loopback, origins, generated)


def _env_authenticator() -> Authenticator:
    from checkrein.frontend.auth import Authenticator

    token = os.environ.get("CHECKREIN_TOKEN")
    if token is not None and not token.strip():
        raise ConfigError("CHECKREIN_TOKEN is set but empty: unset it, or set a token", key="CHECKREIN_TOKEN")
    return Authenticator(token or None, {})


def _serve(directory: Path, auth: Authenticator, host: str, port: int, loopback: bool, origins: tuple[str, ...],
           generated: str | None) -> None:
    import uvicorn

    from checkrein.frontend.http import HttpGuard, bind_socket
    from checkrein.ui import LOOPBACK_HOSTS, BrowserLogin, VerifyMonitor, build_ui_app

    monitor = VerifyMonitor(directory)
    app = build_ui_app(directory, allowed_hosts=LOOPBACK_HOSTS if loopback else None, monitor=monitor)
    hint = ("Use the address `checkrein ui` printed when it started (it holds a one-time token)." if generated
            else "The token is the gateway's: [gateway] token, an [[identities]] token, or env CHECKREIN_TOKEN.")
    guarded = BrowserLogin(HttpGuard(app, auth, origins), login_hint=hint)
    try:
        sock = bind_socket(host, port)
    except OSError as exc:
        raise _fail(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    address = f"http://{shown}:{bound}/" + (f"?token={generated}" if generated else "")
    print(f"checkrein: audit view of {directory} on {address}", file=sys.stderr)
    print("checkrein: read-only; Ctrl-C stops it", file=sys.stderr, flush=True)
    server = _server_class()(uvicorn.Config(guarded, log_level="warning", access_log=False, lifespan="off"))
    try:
        server.run(sockets=[sock])
    finally:
        monitor.close()


def _server_class() -> type:
    import uvicorn

    class Server(uvicorn.Server):
        """SIGINT/SIGTERM stop serving and return (exit 0; uvicorn would re-raise the signal)."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            def stop(signum: int, frame: object) -> None:
                del signum, frame
                if self.should_exit:
                    self.force_exit = True
                self.should_exit = True

            previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    return Server


def register(app: typer.Typer) -> None:
    """Add the `ui` command to `app`."""
    app.command("ui", epilog="Exit codes: 0 stopped, 2 usage or config error.")(ui)
