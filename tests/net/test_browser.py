"""A page served inside a sandbox, opened through the port proxy in a real browser.

Debian's chromium, headless, beside spaced (in the suite's host namespace): it opens
http://8000-<id>.localhost:<proxy port>/?space_token=..., follows the redirect that turns the
token into a cookie, renders the page, whose script opens a WebSocket to the same host and
writes what the echo answered into the page. The DOM chromium dumps shows both worked.
"""

import shutil
import tempfile
import textwrap

import pytest

from conftest import PROXY_PORT
from spacetest import wait_until

# HTTP and a WebSocket echo on one port, stdlib only.
SERVER = textwrap.dedent(r"""
    import base64, hashlib, socket, struct, sys, threading
    PAGE = b'''<!doctype html><html><head><title>space page</title></head><body>
    <p id="rendered">rendered in a sandbox</p><p id="ws">waiting</p>
    <script>
    const ws = new WebSocket("ws://" + location.host + "/ws");
    ws.onopen = () => ws.send("ping");
    ws.onmessage = (m) => { document.getElementById("ws").textContent = "ws " + m.data; };
    ws.onerror = () => { document.getElementById("ws").textContent = "ws error"; };
    </script></body></html>'''
    def serve(c):
        data = b""
        while b"\r\n\r\n" not in data:
            b = c.recv(4096)
            if not b:
                return
            data += b
        head = data.decode(errors="replace")
        if "upgrade: websocket" not in head.lower():
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n"
                      b"Connection: close\r\n\r\n" % len(PAGE) + PAGE)
            c.close()
            return
        key = [l.split(":", 1)[1].strip() for l in head.split("\r\n") if l.lower().startswith("sec-websocket-key")][0]
        acc = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
        c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  b"Sec-WebSocket-Accept: " + acc + b"\r\n\r\n")
        while True:
            h = c.recv(2)
            if len(h) < 2:
                return
            n = h[1] & 0x7f
            mask = c.recv(4)
            p = b""
            while len(p) < n:
                p += c.recv(n - len(p))
            p = bytes(b ^ mask[i % 4] for i, b in enumerate(p))
            if h[0] & 0x0f == 8:
                return
            r = b"echo:" + p
            c.sendall(bytes([0x81, len(r)]) + r)
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", 8000)); s.listen(16)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()
""")


@pytest.mark.skipif(not shutil.which("chromium"), reason="needs Debian's chromium (make deps installs it)")
def test_a_page_inside_renders_in_a_browser_and_its_websocket_works(api, make_sandbox, topo):
    sbid = make_sandbox()
    api.put_file(sbid, "/srv/page.py", SERVER.encode())
    api.exec(sbid, "(nohup python3 /srv/page.py >/dev/null 2>&1 &)")
    token = api.ok("GET", f"/v1/sandboxes/{sbid}")["traffic_token"]
    url = f"http://8000-{sbid}.localhost:{PROXY_PORT}/?space_token={token}"
    profile = tempfile.mkdtemp(prefix="space-net-chromium-")

    def render():
        r = topo.run(["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                      f"--user-data-dir={profile}", "--virtual-time-budget=10000", "--dump-dom", url],
                     capture_output=True, text=True, timeout=120)
        return r.stdout if "echo:ping" in r.stdout else None
    dom = wait_until(render, 180, "the page and its WebSocket through the proxy", interval=1)
    shutil.rmtree(profile, ignore_errors=True)
    assert "rendered in a sandbox" in dom and "ws echo:ping" in dom, dom
