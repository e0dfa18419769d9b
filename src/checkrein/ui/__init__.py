"""checkrein.ui: the local, read-only web view of an audit directory.

    ui/app.py            `build_ui_app`: routes, security headers, Host and Fetch Metadata checks
    ui/login.py          `BrowserLogin` (token -> session cookie) and `UiMount` (``/ui`` in the gateway)
    ui/filters.py        the event list's query string <-> `EventFilter`
    ui/pages.py          page bodies;  ui/charts.py  inline SVG charts;  ui/html.py  escaping, layout
    ui/verify_status.py  `checkrein audit verify --live` in a child process, cached for the header
    ui/static/           the stylesheet and the one script (no CDN: everything ships in the package)

It reads only through `checkrein.audit.query`; who may read is decided by the HTTP frontend's
guard (`checkrein.frontend.HttpGuard`), which `checkrein ui` and `checkrein serve --ui` put in front.
"""

from .app import CSP, LOOPBACK_HOSTS, build_ui_app
from .login import BrowserLogin, UiMount
from .verify_status import VerifyMonitor, VerifyState

__all__ = ["CSP", "DEFAULT_PORT", "LOOPBACK_HOSTS", "BrowserLogin", "UiMount", "VerifyMonitor", "VerifyState", "build_ui_app"]

DEFAULT_PORT = 8766
