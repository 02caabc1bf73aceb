"""The port proxy: http://<port>-<id>.localhost:<proxy port>/ from spaced's namespace.

Clients run beside spaced (Topology.run), the way a browser on spaced's host would reach it;
servers run inside sandboxes. Each test can fail: a wrong route, a token not checked, a
stream cut or buffered whole, a WebSocket frame lost would each break an assertion.
"""

import json
import textwrap

import pytest

from conftest import PROXY_PORT
from spacetest import wait_until

# A client beside spaced: one connection, the requests given, each answer's status, headers
# and body; the connection is reset at the end (no time-wait inside the sandbox).
CLIENT = textwrap.dedent(r"""
    import json, socket, struct, sys, time
    host, reqs = sys.argv[1], json.loads(sys.argv[2])
    s = socket.create_connection(("127.0.0.1", PORT), timeout=30)
    out, buf = [], b""
    def read_response():
        global buf
        while b"\r\n\r\n" not in buf:
            b = s.recv(65536)
            if not b:
                return None
            buf += b
        head, buf = buf.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        status = int(lines[0].split()[1])
        hdrs = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:]}
        chunks = []
        if "content-length" in hdrs:
            n = int(hdrs["content-length"])
            while len(buf) < n:
                b = s.recv(65536)
                if not b:
                    break
                buf += b
            body, buf = buf[:n], buf[n:]
        else:  # until the end, noting when each piece came
            t0 = time.monotonic()
            while True:
                chunks.append((time.monotonic() - t0, len(buf)))
                b = s.recv(65536)
                if not b:
                    break
                buf += b
            body, buf = buf, b""
        return {"status": status, "headers": hdrs, "body": body.decode(errors="replace"), "chunks": chunks}
    for r in reqs:
        head = "%s %s HTTP/1.1\r\nHost: %s\r\n" % (r.get("method", "GET"), r["path"], r.get("host", host))
        for k, v in r.get("headers", {}).items():
            head += "%s: %s\r\n" % (k, v)
        body = r.get("body", "")
        if body:
            head += "Content-Length: %d\r\n" % len(body)
        try:
            s.sendall((head + "\r\n" + body).encode())
            out.append(read_response())
        except OSError:
            out.append(None)  # the proxy ended the connection (after an error answer)
        if out[-1] is None or out[-1]["headers"].get("connection") == "close":
            break
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    print(json.dumps(out))
""").replace("PORT", str(PROXY_PORT))

# An HTTP/1.1 server inside: keep-alive, /id (the sandbox's id), /stream (ten lines, a tenth
# of a second apart, no length: the end of the connection ends it), /echo-headers.
SERVER = textwrap.dedent(r"""
    import http.server, json, os, socketserver, sys, time
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def do_POST(self):
            n = int(self.headers.get("Content-Length", 0))
            body = self.rfile.read(n)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def do_GET(self):
            with open("/srv/seen", "a") as f:  # every request that reached the server
                f.write(json.dumps({"path": self.path, "headers": dict(self.headers)}) + "\n")
            if self.path == "/stream":
                self.send_response(200)
                self.send_header("Connection", "close")
                self.end_headers()
                for i in range(10):
                    self.wfile.write(b"line %d\n" % i)
                    self.wfile.flush()
                    time.sleep(0.1)
                self.close_connection = True
                return
            if self.path == "/echo-headers":
                body = json.dumps(dict(self.headers)).encode()
            else:
                body = open("/srv/id", "rb").read().strip() + b" " + self.path.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *a):
            pass
    class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
    S((sys.argv[1], int(sys.argv[2])), H).serve_forever()
""")

# A WebSocket echo server inside (RFC 6455, text frames), stdlib only.
WS_SERVER = textwrap.dedent(r"""
    import base64, hashlib, socket, struct, sys, threading
    GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
    def serve(c):
        data = b""
        while b"\r\n\r\n" not in data:
            data += c.recv(4096)
        key = [l.split(":", 1)[1].strip() for l in data.decode().split("\r\n") if l.lower().startswith("sec-websocket-key")][0]
        acc = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
        c.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   "Sec-WebSocket-Accept: %s\r\n\r\n" % acc).encode())
        while True:
            h = c.recv(2)
            if len(h) < 2:
                return
            n = h[1] & 0x7f
            if n == 126:
                n = struct.unpack(">H", c.recv(2))[0]
            mask = c.recv(4)
            payload = b""
            while len(payload) < n:
                payload += c.recv(n - len(payload))
            payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if h[0] & 0x0f == 8:
                c.close()
                return
            reply = b"echo:" + payload
            c.sendall(bytes([0x81, len(reply)]) + reply)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", int(sys.argv[1])))
    s.listen(16)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()
""")

WS_CLIENT = textwrap.dedent(r"""
    import base64, os, socket, struct, sys
    host, token, messages = sys.argv[1], sys.argv[2], sys.argv[3:]
    s = socket.create_connection(("127.0.0.1", PORT), timeout=30)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nX-Space-Token: %s\r\n\r\n"
               % (host, key, token)).encode())
    data = b""
    while b"\r\n\r\n" not in data:
        data += s.recv(4096)
    print(data.split(b"\r\n")[0].decode())
    for m in messages:
        p = m.encode(); mask = os.urandom(4)
        s.sendall(bytes([0x81, 0x80 | len(p)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(p)))
        h = s.recv(2)
        body = b""
        while len(body) < h[1]:
            body += s.recv(h[1] - len(body))
        print(body.decode())
    s.sendall(bytes([0x88, 0x80]) + os.urandom(4))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
""").replace("PORT", str(PROXY_PORT))


def host_of(sbid, port=8000):
    return f"{port}-{sbid}.localhost:{PROXY_PORT}"


def client(topo, host, reqs):
    r = topo.run(["/usr/bin/python3", "-c", CLIENT, host, json.dumps(reqs)], capture_output=True, text=True,
                 timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def start_server(api, sbid, bind="0.0.0.0", port=8000):
    api.put_file(sbid, "/srv/server.py", SERVER.encode())
    api.exec(sbid, f"echo {sbid} > /srv/id && (nohup python3 /srv/server.py {bind} {port} >/dev/null 2>&1 &)")


@pytest.fixture
def served(api, make_sandbox, topo):
    sbid = make_sandbox()
    start_server(api, sbid)
    token = api.ok("GET", f"/v1/sandboxes/{sbid}")["traffic_token"]

    def up():
        out = client(topo, host_of(sbid), [{"path": "/id", "headers": {"X-Space-Token": token}}])
        return out[0] and out[0]["status"] == 200
    wait_until(up, 60, "the server inside to answer through the proxy")
    return sbid, token


def test_http_through_the_proxy_with_keep_alive(served, topo):
    sbid, token = served
    out = client(topo, host_of(sbid), [{"path": f"/id?n={i}", "headers": {"X-Space-Token": token}} for i in range(5)])
    assert [o["status"] for o in out] == [200] * 5
    assert [o["body"] for o in out] == [f"{sbid} /id?n={i}" for i in range(5)]  # five on one connection


def test_the_token_is_checked_and_not_passed_in(served, topo, api, make_sandbox):
    sbid, token = served
    other = make_sandbox()
    other_token = api.ok("GET", f"/v1/sandboxes/{other}")["traffic_token"]
    assert other_token != token
    none = client(topo, host_of(sbid), [{"path": "/id"}])[0]
    wrong = client(topo, host_of(sbid), [{"path": "/id", "headers": {"X-Space-Token": other_token}}])[0]
    ghost = client(topo, host_of("0123456789ab"), [{"path": "/id", "headers": {"X-Space-Token": token}}])[0]
    ghost_none = client(topo, host_of("0123456789ab"), [{"path": "/id"}])[0]
    assert none["status"] == 401 and wrong["status"] == 403, (none, wrong)
    # the sandbox's access token (the E2B front's envdAccessToken) is not its traffic token
    access = api.ok("GET", f"/v1/sandboxes/{sbid}")["access_token"]
    assert access != token
    own = client(topo, host_of(sbid), [{"path": "/id", "headers": {"X-Space-Token": access}}])[0]
    assert (own["status"], own["body"]) == (wrong["status"], wrong["body"])
    # a sandbox that does not exist is answered exactly as one whose token is wrong
    assert (ghost["status"], ghost["body"]) == (wrong["status"], wrong["body"])
    assert (ghost_none["status"], ghost_none["body"]) == (none["status"], none["body"])
    seen = json.loads(client(topo, host_of(sbid), [{"path": "/echo-headers", "headers": {
        "X-Space-Token": token, "Cookie": "a=1; space_token=zzz; b=2"}}])[0]["body"])
    assert "X-Space-Token" not in seen and seen.get("Cookie") == "a=1; b=2", seen


def test_a_browser_token_in_the_query_becomes_a_cookie(served, topo):
    sbid, token = served
    first = client(topo, host_of(sbid), [{"path": f"/page?x=1&space_token={token}"}])[0]
    assert first["status"] == 302 and first["headers"]["location"] == "/page?x=1", first
    cookie = first["headers"]["set-cookie"]
    assert cookie.startswith(f"space_token={token};") and "HttpOnly" in cookie, cookie
    then = client(topo, host_of(sbid), [{"path": "/page?x=1", "headers": {"Cookie": f"space_token={token}"}}])[0]
    assert then["status"] == 200 and then["body"] == f"{sbid} /page?x=1", then


def test_a_long_response_streams_as_it_is_written(served, topo):
    sbid, token = served
    out = client(topo, host_of(sbid), [{"path": "/stream", "headers": {"X-Space-Token": token}}])[0]
    assert out["status"] == 200 and out["body"] == "".join(f"line {i}\n" for i in range(10)), out
    # the pieces came over a second, not all at the end
    arrivals = [t for t, n in out["chunks"] if n > 0]
    assert len(arrivals) >= 5, out["chunks"]


def test_a_websocket_echoes_through_the_proxy(api, make_sandbox, topo):
    sbid = make_sandbox()
    api.put_file(sbid, "/srv/ws.py", WS_SERVER.encode())
    api.exec(sbid, "(nohup python3 /srv/ws.py 8765 >/dev/null 2>&1 &)")
    token = api.ok("GET", f"/v1/sandboxes/{sbid}")["traffic_token"]

    def talk():
        r = topo.run(["/usr/bin/python3", "-c", WS_CLIENT, host_of(sbid, 8765), token, "one", "two", "three"],
                     capture_output=True, text=True, timeout=60)
        return r.stdout.splitlines() if r.returncode == 0 else None
    lines = wait_until(talk, 60, "the WebSocket server inside")
    assert lines == ["HTTP/1.1 101 Switching Protocols", "echo:one", "echo:two", "echo:three"], lines


def test_public_ports_need_no_token(api, make_sandbox, topo):
    sbid = make_sandbox(public_ports=True)
    assert api.ok("GET", f"/v1/sandboxes/{sbid}")["public_ports"] is True
    start_server(api, sbid)
    out = wait_until(lambda: (lambda o: o if o and o["status"] == 200 else None)(
        client(topo, host_of(sbid), [{"path": "/id"}])[0]), 60, "the public server")
    assert out["body"] == f"{sbid} /id"


def test_the_proxy_says_what_is_wrong(served, topo, api, make_sandbox):
    sbid, token = served
    nothing = client(topo, host_of(sbid, 8999), [{"path": "/", "headers": {"X-Space-Token": token}}])[0]
    assert nothing["status"] == 502 and "nothing answers on port 8999" in nothing["body"], nothing
    stray = client(topo, f"example.com:{PROXY_PORT}", [{"path": "/"}])[0]
    assert stray["status"] == 404 and "port proxy" in stray["body"], stray
    # a paused sandbox that requests do not resume (auto_resume false)
    still = make_sandbox(auto_resume=False)
    start_server(api, still)
    still_token = api.ok("GET", f"/v1/sandboxes/{still}")["traffic_token"]
    wait_until(lambda: client(topo, host_of(still), [{"path": "/id", "headers": {"X-Space-Token": still_token}}])[0]
               ["status"] == 200, 60, "the second server")
    api.ok("POST", f"/v1/sandboxes/{still}/pause")
    paused = client(topo, host_of(still), [{"path": "/", "headers": {"X-Space-Token": still_token}}])[0]
    assert paused["status"] == 503 and "paused" in paused["body"], paused
    assert api.ok("GET", f"/v1/sandboxes/{still}")["state"] == "paused"


def test_a_request_resumes_a_paused_or_suspended_sandbox_with_auto_resume(served, topo, api):
    sbid, token = served
    for how, state in (("pause", "paused"), ("suspend", "suspended")):
        assert api.ok("POST", f"/v1/sandboxes/{sbid}/{how}")["state"] == state
        out = client(topo, host_of(sbid), [{"path": f"/id?{how}", "headers": {"X-Space-Token": token}}])[0]
        assert out["status"] == 200 and out["body"] == f"{sbid} /id?{how}", (how, out)
        assert api.ok("GET", f"/v1/sandboxes/{sbid}")["state"] == "running"
    # a request the proxy does not let in resumes nothing
    api.ok("POST", f"/v1/sandboxes/{sbid}/pause")
    refused = client(topo, host_of(sbid), [{"path": "/id"}])[0]
    assert refused["status"] == 401 and api.ok("GET", f"/v1/sandboxes/{sbid}")["state"] == "paused", refused


def test_a_server_on_loopback_only_is_reached_through_the_agents_relay(api, make_sandbox, topo):
    sbid = make_sandbox()
    start_server(api, sbid, bind="127.0.0.1", port=8000)
    token = api.ok("GET", f"/v1/sandboxes/{sbid}")["traffic_token"]
    out = wait_until(lambda: (lambda o: o if o and o["status"] == 200 else None)(
        client(topo, host_of(sbid), [{"path": "/x0", "headers": {"X-Space-Token": token}}])[0]),
        60, "the loopback server through the proxy")
    assert out["body"] == f"{sbid} /x0"
    out = client(topo, host_of(sbid), [{"path": f"/x{i}", "headers": {"X-Space-Token": token}} for i in range(3)])
    assert [o["body"] for o in out] == [f"{sbid} /x{i}" for i in range(3)], out  # keep-alive, relayed
    # the relay is the agent's, not a port of the sandbox's
    ports = api.ok("GET", f"/v1/sandboxes/{sbid}/ports")["ports"]
    assert [(p["port"], p["address"]) for p in ports] == [(8000, "127.0.0.1")], ports


def seen(api, sbid):
    """The requests that reached the server in sbid: [{"path", "headers"}]."""
    status, data = api.get_file(sbid, "/srv/seen")
    assert status == 200, (status, data)
    return [json.loads(line) for line in data.decode().splitlines()]


def test_every_request_of_a_kept_alive_connection_loses_its_token(served, topo, api):
    """Each request on a connection is read: the second one's token headers and cookie go too,
    and a body that looks like a request is passed as the body it is, not read as one."""
    sbid, token = served
    smuggled = f"GET /smuggled HTTP/1.1\r\nHost: {host_of(sbid)}\r\nX-Space-Token: {token}\r\n\r\n"
    out = client(topo, host_of(sbid), [
        {"path": "/id?first", "headers": {"X-Space-Token": token}},
        {"method": "POST", "path": "/echo", "headers": {"X-Space-Token": token}, "body": smuggled},
        {"path": "/echo-headers", "headers": {"X-Space-Token": token, "E2b-Traffic-Access-Token": token,
                                              "Cookie": f"a=1; space_token={token}; b=2"}},
        {"path": "/echo-headers", "headers": {"Cookie": f"space_token={token}"}},
    ])
    assert [o["status"] for o in out] == [200] * 4, out
    assert out[1]["body"] == smuggled, out[1]
    second, third = json.loads(out[2]["body"]), json.loads(out[3]["body"])
    assert "X-Space-Token" not in second and "E2b-Traffic-Access-Token" not in second, second
    assert second.get("Cookie") == "a=1; b=2", second
    assert "Cookie" not in third, third
    assert token not in json.dumps(seen(api, sbid)), "a token reached the sandbox's server"
    assert "/smuggled" not in [r["path"] for r in seen(api, sbid)]


def test_a_later_request_for_another_sandbox_is_refused_and_goes_nowhere(served, topo, api, make_sandbox):
    """A connection let in for one port of one sandbox carries no request for another: a later
    request naming another sandbox's Host (with no token, the first one's token, or even its
    own) or the same Host without a token is refused, and reaches neither sandbox."""
    sbid, token = served
    other = make_sandbox()
    start_server(api, other)
    other_token = api.ok("GET", f"/v1/sandboxes/{other}")["traffic_token"]
    wait_until(lambda: client(topo, host_of(other), [{"path": "/id", "headers": {"X-Space-Token": other_token}}])[0]
               ["status"] == 200, 60, "the other sandbox's server")
    first = {"path": "/id?first", "headers": {"X-Space-Token": token}}
    cases = [
        ({"host": host_of(other)}, 401),
        ({"host": host_of(other), "headers": {"X-Space-Token": token}}, 403),
        ({"host": host_of(other), "headers": {"X-Space-Token": other_token}}, 421),
        ({"host": host_of(sbid, 8001), "headers": {"X-Space-Token": token}}, 421),
        ({"host": host_of(sbid)}, 401),
        ({"host": host_of(sbid), "headers": {"Cookie": "space_token=0123"}}, 403),
    ]
    for i, (second, status) in enumerate(cases):
        out = client(topo, host_of(sbid), [first, dict(second, path=f"/second-{i}")])
        assert out[0]["status"] == 200 and out[0]["body"] == f"{sbid} /id?first", (i, out)
        assert len(out) == 2 and out[1] and out[1]["status"] == status, (i, out)
        assert out[1]["headers"].get("connection") == "close", (i, out)
    for sb in (sbid, other):
        paths = [r["path"] for r in seen(api, sb)]
        assert not [p for p in paths if p.startswith("/second")], (sb, paths)


def test_the_token_redirect_stays_on_this_host(served, topo):
    """The redirect that takes a token out of the query points at a path of the same host:
    never //host or /\\host (another host to a browser) nor an absolute URL."""
    sbid, token = served
    for target in (f"//evil.example/?space_token={token}", f"/\\evil.example/?space_token={token}",
                   f"http://evil.example/?space_token={token}"):
        out = client(topo, host_of(sbid), [{"path": target}])[0]
        assert out["status"] == 302 and out["headers"]["location"] == "/", (target, out)
    out = client(topo, host_of(sbid), [{"path": f"/a/b?space_token={token}&c=1"}])[0]
    assert out["status"] == 302 and out["headers"]["location"] == "/a/b?c=1", out


# Holds PROXY_CONNS_PER_ADDR connections from 127.0.0.1 that send nothing, then: one more
# from it, one from 127.0.0.2 with a request, and, once one held is closed, one more from it.
PER_ADDR = textwrap.dedent(r"""
    import json, socket, struct, sys, time
    port, host, token, n = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    def conn(src):
        s = socket.socket()
        s.bind((src, 0))
        s.settimeout(30)
        s.connect(("127.0.0.1", port))
        return s
    def reset(s):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    def status(s, req=True):
        if req:
            s.sendall(("GET /id HTTP/1.1\r\nHost: %s\r\nX-Space-Token: %s\r\nConnection: close\r\n\r\n"
                       % (host, token)).encode())
        got = b""
        while True:
            try:
                b = s.recv(65536)
            except ConnectionResetError:
                break
            if not b:
                break
            got += b
        reset(s)
        return got.split(b"\r\n")[0].decode()
    held = [conn("127.0.0.1") for _ in range(n)]
    over = status(conn("127.0.0.1"), req=False)  # accepted after the n: its answer says all were seen
    quiet = 0
    for s in held:
        s.setblocking(False)
        try:
            s.recv(1)
        except BlockingIOError:
            quiet += 1
    other = status(conn("127.0.0.2"))
    reset(held.pop())
    deadline, again = time.monotonic() + 30, ""
    while time.monotonic() < deadline and not again.startswith("HTTP/1.1 200"):
        again = status(conn("127.0.0.1"))
    print(json.dumps({"over": over, "quiet": quiet, "other": other, "again": again}))
""")

PROXY_CONNS_PER_ADDR = 128  # daemon/net/proxy.h


def test_one_address_cannot_take_every_connection(served, topo):
    """PROXY_CONNS_PER_ADDR connections from one address that send nothing are held; one more
    from it is answered 503 and closed, while another address is served, and the first one is
    again once one of its connections goes."""
    sbid, token = served
    r = topo.run(["/usr/bin/python3", "-c", PER_ADDR, str(PROXY_PORT), host_of(sbid), token,
                  str(PROXY_CONNS_PER_ADDR)], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["over"] == "HTTP/1.1 503 Service Unavailable", out
    assert out["quiet"] == PROXY_CONNS_PER_ADDR, out
    assert out["other"] == "HTTP/1.1 200 OK", out
    assert out["again"] == "HTTP/1.1 200 OK", out


# Opens a connection and waits (at most 60 s) for the proxy to end it: with nothing sent, or
# (argv[3] a token) after one request answered on a kept-alive connection.
SILENT = textwrap.dedent(r"""
    import socket, sys, time
    port, host, token = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    if token != "-":
        s.sendall(("GET /id HTTP/1.1\r\nHost: %s\r\nX-Space-Token: %s\r\n\r\n" % (host, token)).encode())
    got = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
        print("closed", got.split(b"\r\n")[0].decode() if got else "-")
    except socket.timeout:
        print("still open", len(got))
""")

@pytest.mark.parametrize("after_a_request", [False, True])
def test_an_idle_connection_is_closed(served, topo, after_a_request):
    """A client that sends nothing, or nothing after its first answer, is closed by the
    proxy: the head's deadline, and the idle timeout of a kept-alive connection (the suite's
    spaced runs with --proxy-idle-timeout 10, conftest.py)."""
    sbid, token = served
    r = topo.run(["/usr/bin/python3", "-c", SILENT, str(PROXY_PORT), host_of(sbid), token if after_a_request else "-"],
                 capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    want = "closed HTTP/1.1 200 OK" if after_a_request else "closed HTTP/1.1 408 Request Timeout"
    assert r.stdout.strip() == want, r.stdout


# A server inside whose listening queue is full (it never accepts, and its own clients took the
# queue): a connection to it is never answered.
DEAF_SERVER = textwrap.dedent(r"""
    import socket, sys, time
    s = socket.socket()
    s.bind(("0.0.0.0", int(sys.argv[1])))
    s.listen(0)
    held = []
    for _ in range(16):
        c = socket.socket()
        c.setblocking(False)
        try:
            c.connect(("127.0.0.1", int(sys.argv[1])))
        except BlockingIOError:
            pass
        held.append(c)
    open("/srv/deaf", "w").close()
    while True:
        time.sleep(3600)
""")


def test_a_port_that_never_answers_is_given_up_on(api, make_sandbox, topo):
    """The proxy waits for a sandbox's port to answer at most PROXY_CONNECT_TIMEOUT_MS (10 s),
    then answers 504 (the client's own wait here is 60 s)."""
    sbid = make_sandbox()
    token = api.ok("GET", f"/v1/sandboxes/{sbid}")["traffic_token"]
    api.put_file(sbid, "/srv/deaf.py", DEAF_SERVER.encode())
    api.exec(sbid, "(nohup python3 /srv/deaf.py 8002 >/dev/null 2>&1 &)")
    wait_until(lambda: api.get_file(sbid, "/srv/deaf")[0] == 200, 60, "the deaf server")
    out = client(topo, host_of(sbid, 8002), [{"path": "/", "headers": {"X-Space-Token": token}}])[0]
    assert out and out["status"] == 504 and "did not answer in time" in out["body"], out
