"""The E2B front as a process of spaced's (docs/e2b.md): `--e2b-listen` serves on its port,
a taken port is spaced's error at its start, a front that dies is started again on the same
port, and the front ends with spaced. A sandbox's two secrets (its access token for commands
and files, its traffic token for ports) do not stand in for each other, survive restarts of
spaced, and a sandbox recorded before traffic tokens gets one. A create that asks for no
internet gets none whatever spaced's default. (What it serves is tests/e2b's, through E2B's
own SDK; these need a spaced of their own.)

spaced's bookkeeping, the same for every kind: gVisor only.
"""

import http.client
import json
import os
import signal
import socket
import sqlite3
import subprocess
import urllib.request

from conftest import Daemon, free_port, wait_until, gvisor_only
from spacetest import Api

pytestmark = gvisor_only("the front's process, the same for every kind")


def front_pids(port):
    """The pids of space-e2b processes serving the given port."""
    out = subprocess.run(["pgrep", "-f", f"space-e2b --listen-fd 3 --name 127.0.0.1:{port} "],
                         capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def healthy(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as r:
            return r.status == 200
    except OSError:
        return False


def test_the_front_serves_comes_back_when_killed_and_ends_with_spaced(make_daemon):
    port = free_port()
    d = make_daemon(args=["--e2b-listen", f"127.0.0.1:{port}"])
    wait_until(lambda: healthy(port), 60, "the E2B front to answer")
    [first] = front_pids(port)
    os.kill(first, signal.SIGKILL)
    wait_until(lambda: front_pids(port) and front_pids(port) != [first] and healthy(port), 60,
               "spaced to start the front again")
    assert "the E2B front ended; starting it again" in open(d.log_path).read()
    d.kill(signal.SIGKILL)
    wait_until(lambda: not front_pids(port), 60, "the front to end with spaced")
    assert not healthy(port)


def test_a_taken_port_stops_spaced_at_its_start():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        d = Daemon(args=["--e2b-listen", f"127.0.0.1:{port}"])
        try:
            r = subprocess.run(d.argv(), capture_output=True, text=True, timeout=120)
        finally:
            d.cleanup()
    assert r.returncode != 0
    assert f"cannot listen on 127.0.0.1:{port}" in r.stdout + r.stderr, r.stdout + r.stderr


def port_status(proxy, sbid, token):
    """The status of GET / on port 8000 of sbid through the proxy, with token (or None)."""
    c = http.client.HTTPConnection("127.0.0.1", proxy, timeout=30)
    try:
        c.request("GET", "/", headers={"Host": f"8000-{sbid}.localhost:{proxy}", "X-Space-Token": token})
        return c.getresponse().status
    except OSError:
        return None
    finally:
        c.close()


def plane_status(port, sbid, token, path="/files?path=/etc/hostname"):
    """The status of a sandbox-plane GET on the E2B front with X-Access-Token: token."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.request("GET", path, headers={"E2b-Sandbox-Id": sbid, "X-Access-Token": token})
        r = c.getresponse()
        r.read()
        return r.status
    finally:
        c.close()


def test_the_traffic_token_opens_ports_only_and_survives_restarts(make_daemon):
    e2b, proxy, tcp = free_port(), free_port(), free_port()
    d = make_daemon(listen=f"127.0.0.1:{tcp}", args=["--e2b-listen", f"127.0.0.1:{e2b}",
                                                     "--proxy-listen", f"127.0.0.1:{proxy}"])
    api = Api(tcp=("127.0.0.1", tcp), token=d.token("t1"))
    sb = api.ok("POST", "/v1/sandboxes", {"network": {"egress": "none"}})
    sbid, access, traffic = sb["id"], sb["access_token"], sb["traffic_token"]
    assert len(traffic) == len(access) == 32 and traffic != access
    api.exec(sbid, "(nohup python3 -m http.server 8000 --directory /tmp >/dev/null 2>&1 &)")
    wait_until(lambda: port_status(proxy, sbid, traffic) == 200, 60, "the port to open with the traffic token")
    assert port_status(proxy, sbid, access) == 403  # the access token opens no port
    # the traffic token runs nothing and reads nothing, on space's API or the E2B sandbox plane
    for token in (traffic, access):
        other = Api(tcp=("127.0.0.1", tcp), token=token)
        assert other.request("POST", f"/v1/sandboxes/{sbid}/exec", {"cmd": "id"})[0] == 401
        assert other.request("GET", f"/v1/sandboxes/{sbid}/files?path=/etc/hostname")[0] == 401
    ghost = plane_status(e2b, "0123456789ab", traffic)
    assert plane_status(e2b, sbid, traffic) == ghost == 502  # as for a sandbox that is not there
    assert plane_status(e2b, sbid, traffic, "/health") == 502
    assert plane_status(e2b, sbid, access) == 200

    d.stop()
    d.start()  # recorded: the same two after a restart
    again = api.ok("GET", f"/v1/sandboxes/{sbid}")
    assert (again["access_token"], again["traffic_token"]) == (access, traffic)

    # a sandbox recorded before traffic tokens gets one when spaced adopts it, kept from then on
    d.stop()
    with sqlite3.connect(os.path.join(d.state_dir, "state.db")) as db:
        db.execute("UPDATE sandboxes SET traffic_token = '' WHERE id = ?", (sbid,))
    d.start()
    made = api.ok("GET", f"/v1/sandboxes/{sbid}")["traffic_token"]
    assert len(made) == 32 and made not in (traffic, access)
    d.stop()
    d.start()
    assert api.ok("GET", f"/v1/sandboxes/{sbid}")["traffic_token"] == made
    wait_until(lambda: port_status(proxy, sbid, made) == 200, 60, "the port to open with the new traffic token")
    assert port_status(proxy, sbid, traffic) == 403


def test_no_internet_is_none_whatever_spaceds_default(make_daemon):
    """Under --default-egress open; no packet is sent: only the recorded policy is read."""
    port = free_port()
    d = make_daemon(args=["--e2b-listen", f"127.0.0.1:{port}", "--default-egress", "open"])
    key = d.token("e2b")

    def create(body):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        try:  # the wire shape of E2B's SDKs (docs/e2b.md)
            c.request("POST", "/v2/sandboxes", json.dumps(body), {"X-API-KEY": key, "Content-Type": "application/json"})
            r = c.getresponse()
            return r.status, json.loads(r.read())
        finally:
            c.close()

    status, open_one = create({"templateID": "base"})
    assert status == 201
    assert d.api.ok("GET", f"/v1/sandboxes/{open_one['sandboxID']}")["network"]["egress"] == "open"
    status, closed = create({"templateID": "base", "allow_internet_access": False})
    assert status == 201, closed
    assert d.api.ok("GET", f"/v1/sandboxes/{closed['sandboxID']}")["network"]["egress"] == "none"


def test_connections_refused_over_a_limit_are_logged_a_few_lines_a_minute(make_daemon):
    """An address past GW_MAX_PER_IP (256) is refused again and again; the log says so in at
    most GW_LOG_BURST (5) lines a minute."""
    port = free_port()
    d = make_daemon(args=["--e2b-listen", f"127.0.0.1:{port}"])
    sb = d.api.ok("POST", "/v1/sandboxes", {})
    head = (f"GET /health HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: {sb['id']}\r\n"
            f"X-Access-Token: {sb['access_token']}\r\n\r\n").encode()

    def authenticated():
        s = socket.create_connection(("127.0.0.1", port), timeout=30, source_address=("127.0.0.9", 0))
        got = b""
        try:
            s.sendall(head)
            while b"\r\n\r\n" not in got:
                b = s.recv(4096)
                if not b:
                    break
                got += b
        except (ConnectionResetError, BrokenPipeError):
            pass  # closed as it was accepted
        return s, got

    held = []
    try:
        for _ in range(256):
            s, got = authenticated()
            assert got.startswith(b"HTTP/1.1 204"), got
            held.append(s)
        for _ in range(30):
            s, got = authenticated()
            s.close()
            assert got == b""  # closed unanswered
    finally:
        for s in held:
            s.close()
    with open(d.log_path, "rb") as f:
        lines = [line for line in f if line.startswith(b"space-e2b: ") and b"limit" in line]
    assert 1 <= len(lines) <= 5, lines
