"""The TCP ports listening inside a sandbox (GET /v1/sandboxes/:id/ports, `space ports`): every
listening socket on any address, IPv4 and IPv6, and nothing that is not listening (UDP sockets,
connections); a server that stops is gone from the list. `space port-forward` carries local
connections to a port inside: raw bytes both ways, several connections at once, a server bound
to loopback inside, a closed port, bad arguments. Runs on gVisor and, under
SPACE_TEST_ISOLATION=microvm, on microVMs, whose guest kernel writes the same tables."""
import contextlib
import json
import os
import re
import socket
import subprocess
import threading
import urllib.request

from spacetest import wait_until

# Listens on four addresses, holds a UDP socket and a connection to its own server, then waits.
SERVER = r"""
import socket, time
held = []
for family, addr in ((socket.AF_INET, ("0.0.0.0", 8000)), (socket.AF_INET, ("127.0.0.1", 9004)),
                     (socket.AF_INET6, ("::1", 9001)), (socket.AF_INET6, ("::", 9003))):
    s = socket.socket(family)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(addr)
    s.listen()
    held.append(s)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(("0.0.0.0", 9002))
c = socket.create_connection(("127.0.0.1", 8000))
held += [u, c, held[0].accept()[0]]
print("listening", flush=True)
time.sleep(600)
"""

EXPECTED = [(8000, "0.0.0.0"), (9001, "::1"), (9003, "::"), (9004, "127.0.0.1")]


def ports(api, sbid):
    body = api.ok("GET", f"/v1/sandboxes/{sbid}/ports")
    assert all(p["protocol"] == "tcp" for p in body["ports"]), body
    return sorted((p["port"], p["address"]) for p in body["ports"])


def start_server(api, sbid):
    pid = api.ok("POST", f"/v1/sandboxes/{sbid}/processes", {"cmd": ["python3", "-c", SERVER]})["pid"]
    wait_until(lambda: ports(api, sbid) == EXPECTED, 60, "the server's four listening sockets")
    return pid


def test_every_listening_socket_is_listed_and_nothing_else(api, sandbox):
    assert ports(api, sandbox) == []
    pid = start_server(api, sandbox)
    # the UDP socket, the client's connection and the accepted one are not ports
    assert ports(api, sandbox) == EXPECTED
    api.ok("POST", f"/v1/sandboxes/{sandbox}/processes/{pid}/signal", {"signal": "KILL"})
    wait_until(lambda: ports(api, sandbox) == [], 60, "the ports to close with their server")


def test_space_ports_prints_a_table_and_json(api, sandbox, cli):
    start_server(api, sandbox)
    r = cli("ports", sandbox)
    assert r.returncode == 0, r.stderr
    lines = [line.split() for line in r.stdout.splitlines()]
    assert lines[0] == ["PORT", "ADDRESS", "PROTOCOL"], r.stdout
    assert sorted((int(p), a) for p, a, proto in lines[1:]) == EXPECTED, r.stdout
    r = cli("ports", "--json", sandbox)
    assert r.returncode == 0, r.stderr
    assert sorted((p["port"], p["address"]) for p in json.loads(r.stdout)) == EXPECTED


def test_ports_of_a_sandbox_that_does_not_exist(api, cli):
    status, body = api.json("GET", "/v1/sandboxes/000000000000/ports")
    assert status == 404 and body["error"]["code"] == "not_found", (status, body)
    r = cli("ports", "000000000000")
    assert r.returncode != 0 and "000000000000" in r.stderr, (r.returncode, r.stderr)


# --------------------------------------------------------------------------
# port-forward: a local listener whose connections reach a port inside


ECHO = r"""
import socketserver
class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        while True:
            b = self.request.recv(65536)
            if not b:
                break
            self.request.sendall(b)
socketserver.ThreadingTCPServer(("127.0.0.1", 7000), Echo).serve_forever()
"""


@contextlib.contextmanager
def forwarding(cli, sbid, ports):
    """`space port-forward sbid ports` running; yields the local port it listens on."""
    proc = cli.popen("port-forward", sbid, ports, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        m = re.match(r"Forwarding from 127\.0\.0\.1:(\d+) -> " + sbid + r":\d+$", line.strip())
        assert m, (line, proc.poll())
        yield int(m.group(1)), proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def echo_through(port, data):
    with socket.create_connection(("127.0.0.1", port), timeout=120) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        got = bytearray()
        while chunk := s.recv(1 << 16):
            got += chunk
    return bytes(got)


def test_port_forward_carries_raw_tcp_both_ways(api, sandbox, cli):
    api.ok("POST", f"/v1/sandboxes/{sandbox}/processes", {"cmd": ["python3", "-c", ECHO]})
    wait_until(lambda: (7000, "127.0.0.1") in ports(api, sandbox), 60, "the echo server")
    data = [os.urandom(1 << 20), bytes(range(256)) * 64]
    with forwarding(cli, sandbox, "0:7000") as (port, _):
        results = [None, None]

        def run(i):
            results[i] = echo_through(port, data[i])
        threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=180)
        assert results[0] == data[0] and results[1] == data[1], [len(r or b"") for r in results]
    # each connection was a process inside while it lasted, and is gone with it
    def connections():
        procs = api.ok("GET", f"/v1/sandboxes/{sandbox}/processes")["processes"]
        return [p for p in procs if "--connect" in " ".join(p["cmd"] if isinstance(p["cmd"], list) else [p["cmd"]])]
    wait_until(lambda: len(connections()) == 2 and all(p["state"] == "exited" for p in connections()), 60,
               "both connections' processes to end")


def test_port_forward_reaches_a_server_bound_to_loopback_inside(api, sandbox, cli):
    api.ok("POST", f"/v1/sandboxes/{sandbox}/exec", {"cmd": ["sh", "-c", "echo hello > /work/index.html"]})
    api.ok("POST", f"/v1/sandboxes/{sandbox}/processes",
           {"cmd": ["python3", "-m", "http.server", "8000", "--bind", "127.0.0.1", "--directory", "/work"]})
    wait_until(lambda: (8000, "127.0.0.1") in ports(api, sandbox), 60, "the web server")
    with forwarding(cli, sandbox, "0:8000") as (port, _):
        for _ in range(2):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html", timeout=120) as r:
                assert r.status == 200 and r.read() == b"hello\n"


def test_port_forward_to_a_closed_port_closes_the_connection_and_says_why(sandbox, cli):
    with forwarding(cli, sandbox, "0:7999") as (port, proc):
        assert echo_through(port, b"anyone there?") == b""
        proc.terminate()
        err = proc.stderr.read()
    assert "connecting to port 7999 inside the sandbox: Connection refused" in err, err


def test_port_forward_refuses_bad_ports_and_unknown_sandboxes(api, sandbox, cli):
    for arg in ("abc", "0", "70000", "1:2:3", "-1:80"):
        r = cli("port-forward", sandbox, arg)
        assert r.returncode == 2 and "port-forward" in r.stderr, (arg, r.returncode, r.stderr)
    r = cli("port-forward", "000000000000", "80")
    assert r.returncode == 1 and "000000000000" in r.stderr, (r.returncode, r.stderr)
    for port in (0, 65536, "80", None):
        status, body = api.json("POST", f"/v1/sandboxes/{sandbox}/ports/connect", {"port": port})
        assert status == 400 and body["error"]["code"] == "invalid_argument", (port, status, body)
