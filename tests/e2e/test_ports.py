"""The TCP ports listening inside a sandbox (GET /v1/sandboxes/:id/ports, `space ports`): every
listening socket on any address, IPv4 and IPv6, and nothing that is not listening (UDP sockets,
connections); a server that stops is gone from the list. Runs on gVisor and, under
SPACE_TEST_ISOLATION=microvm, on microVMs, whose guest kernel writes the same tables."""
import json

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
