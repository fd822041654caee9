"""Two replicas of the app behind Debian's nginx with the repository's ``deploy/nginx.conf``, on loopback.

The config is used as it is, with only its listen port and the two replica ports replaced by free ones. It
must route every request of one browser, the websocket included, to one replica (cookie affinity), and two
browsers, each pinned to a different replica, must each keep their own config across reruns and pages.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import socket
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_support import (
    CHROMIUM,
    LOOPBACK,
    ROOT,
    chromium_browser,
    free_port,
    stop_process,
    streamlit_server,
    wait_until_healthy,
)
from test_e2e import idle, load_preset, nav, open_app, preset_config, review_json

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("nginx")]

playwright_api = pytest.importorskip("playwright.sync_api")

CONF = ROOT / "deploy" / "nginx.conf"
ROUTE_COOKIE = "dsstudio_route"
REPLICA_HEADER = "X-Dsstudio-Replica"


def render_config(listen: int, replicas: tuple[int, int]) -> str:
    """deploy/nginx.conf with its listen port and its two upstream ports replaced."""
    text = CONF.read_text(encoding="utf-8")
    defaults = ("server 127.0.0.1:8501;", "server 127.0.0.1:8502;")
    assert "listen 8080;" in text and all(d in text for d in defaults), "deploy/nginx.conf changed shape"
    text = text.replace("listen 8080;", f"listen {LOOPBACK}:{listen};")
    for default, port in zip(defaults, replicas, strict=True):
        text = text.replace(default, f"server {LOOPBACK}:{port};")
    return text


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None)


@contextlib.contextmanager
def nginx(prefix: Path, listen: int, replicas: tuple[int, int]) -> Iterator[str]:
    """Run nginx in the foreground with the rendered config under ``prefix``; yield its base URL."""
    binary = nginx_binary()
    if binary is None:
        pytest.skip("nginx is not installed (Debian's nginx-light; make test installs it)")
    for sub in ("logs", "tmp"):
        (prefix / sub).mkdir(parents=True, exist_ok=True)
    conf = prefix / "nginx.conf"
    conf.write_text(render_config(listen, replicas), encoding="utf-8")
    command = [binary, "-e", "stderr", "-p", str(prefix), "-c", str(conf)]
    checked = subprocess.run([*command, "-t"], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stderr
    proc = subprocess.Popen([*command, "-g", "daemon off;"], stdout=subprocess.DEVNULL)
    url = f"http://{LOOPBACK}:{listen}"
    try:
        wait_until_healthy(url, proc, 30, "nginx did not come up (its errors are on this test's stderr)")
        yield url
    finally:
        stop_process(proc)


def get(url: str, route: str | None = None) -> tuple[str, str | None]:
    """(the replica that answered, the route cookie nginx set) for one plain request."""
    request = urllib.request.Request(f"{url}/_stcore/health")  # noqa: S310
    if route is not None:
        request.add_header("Cookie", f"{ROUTE_COOKIE}={route}")
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
        ours = [c for c in response.headers.get_all("Set-Cookie") or [] if c.startswith(f"{ROUTE_COOKIE}=")]
        return response.headers[REPLICA_HEADER], ours[0].split(";")[0].split("=", 1)[1] if ours else None


def test_render_config_replaces_only_the_ports():
    text = render_config(9000, (9001, 9002))
    assert "listen 127.0.0.1:9000;" in text and "server 127.0.0.1:9001;" in text and "server 127.0.0.1:9002;" in text
    assert "8501" not in text and "8080" not in text
    assert "hash $dsstudio_route consistent;" in text and "proxy_set_header Upgrade $http_upgrade;" in text


def websocket_handshake(url: str, host: str) -> int:
    """The status of a websocket handshake on /_stcore/stream sent to ``url`` as a browser that reached the server
    as ``host`` (its Host and Origin)."""
    address, port = url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((address, int(port)), timeout=10) as conn:
        conn.sendall((f"GET /_stcore/stream HTTP/1.1\r\nHost: {host}\r\nOrigin: http://{host}\r\n"
                      "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                      f"Sec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}\r\n"
                      "Sec-WebSocket-Protocol: streamlit\r\n\r\n").encode())
        return int(conn.recv(4096).split(b" ", 2)[1])


def test_a_browser_that_reaches_nginx_by_name_and_port_gets_its_websocket(tmp_path):
    """A room reaches nginx as http://studio.example:8080: Streamlit accepts the websocket only when the Host it
    sees is the one the browser sent (port included) as its Origin; with nginx's $host (no port) it refused it
    (403, "disallowed Origin or Host header")."""
    with contextlib.ExitStack() as stack:
        backends = [stack.enter_context(streamlit_server(f"streamlit-nginx-ws{i}.log")) for i in (1, 2)]
        ports = tuple(int(b.rsplit(":", 1)[1]) for b in backends)
        listen = free_port()
        url = stack.enter_context(nginx(tmp_path / "nginx", listen, ports))
        assert websocket_handshake(url, f"studio.example:{listen}") == 101
        assert websocket_handshake(url, f"{LOOPBACK}:{listen}") == 101


def test_two_replicas_behind_nginx_keep_each_browser_on_its_own_replica(tmp_path):
    if CHROMIUM is None:
        pytest.skip("Chromium is not installed (Debian's chromium package; make test installs it)")
    with contextlib.ExitStack() as stack:
        backends = [stack.enter_context(streamlit_server(f"streamlit-nginx-replica{i}.log")) for i in (1, 2)]
        ports = tuple(int(b.rsplit(":", 1)[1]) for b in backends)
        url = stack.enter_context(nginx(tmp_path / "nginx", free_port(), ports))

        # affinity: a first visit gets a route cookie, and every request with it reaches the same replica
        first_replica, route = get(url)
        assert route, "nginx set no route cookie"
        assert {get(url, route)[0] for _ in range(8)} == {first_replica}
        # both replicas serve through nginx: find one route for each (the consistent hash is deterministic)
        route_of: dict[str, str] = {}
        for i in range(200):
            replica, _ = get(url, f"probe-{i}")
            route_of.setdefault(replica, f"probe-{i}")
            if len(route_of) == 2:
                break
        assert sorted(int(r.rsplit(":", 1)[1]) for r in route_of) == sorted(ports), route_of

        browser = stack.enter_context(chromium_browser())
        tabs = {}
        for (replica, route), preset in zip(sorted(route_of.items()), ("zero3-offload-cpu", "zero2-bf16"),
                                            strict=True):
            context = browser.new_context(viewport={"width": 1400, "height": 1800})
            stack.callback(context.close)
            context.add_cookies([{"name": ROUTE_COOKIE, "value": route, "url": url}])
            tab = context.new_page()
            tab.set_default_timeout(60_000)
            open_app(tab, url)  # the page and its websocket both go through nginx
            assert context.request.get(f"{url}/_stcore/health").headers[REPLICA_HEADER.lower()] == replica
            tabs[preset] = tab
        for preset, tab in tabs.items():
            load_preset(tab, preset)
        for preset, tab in tabs.items():  # reruns and page switches on each replica keep each session's state
            nav(tab, "Batch size")
            idle(tab)
            assert review_json(tab) == preset_config(preset), preset
