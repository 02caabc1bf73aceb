"""Egress: what a sandbox reaches in each mode, and what it never reaches.

Every target is a real server in the made-up internet (tests/support/nettopo.py): a probe that
connects would get its answer, so "refused" or "timeout" means the rules stopped it, not that
nothing listens. The same tests run against gVisor and microVMs (SPACE_TEST_ISOLATION).
"""

import json
import signal
import socket
import struct
import subprocess

import pytest

import nettopo
from conftest import MICROVM, probe_from
from spacetest import wait_until

WEB = f"{nettopo.PUBLIC[0]}:80"
WEB2 = f"{nettopo.PUBLIC[1]}:80"
WEB3 = f"{nettopo.PUBLIC[2]}:80"
FORBIDDEN = [f"{a}:80" for a in nettopo.UNREACHABLE] + [f"{nettopo.UPLINK_HOST}:{nettopo.HOST_PORT}"]


def reached(result, target):
    return result[target] == f"ok hello from {target.split(':')[0]}"


def stopped(result, target):
    return result[target] in ("refused", "timeout")


def network_of(api, sbid):
    return api.ok("GET", f"/v1/sandboxes/{sbid}")["network"]


def forbidden_for(api, sbid):
    """The must-stay-unreachable targets, with the host's end of sbid's own link."""
    host_end = network_of(api, sbid)["host_address"].rsplit(".", 1)
    host_end = f"{host_end[0]}.{int(host_end[1]) - 1}"
    return FORBIDDEN + [f"{host_end}:{nettopo.HOST_PORT}"]


def test_open_reaches_the_internet_and_nothing_it_must_not(api, make_sandbox, probe):
    sbid = make_sandbox()
    net = network_of(api, sbid)
    assert net["egress"] == "open" and net["address"] == "169.254.0.21", net  # the operator's default
    targets = [WEB, WEB3] + forbidden_for(api, sbid)
    r = probe(sbid, targets)
    assert reached(r, WEB) and reached(r, WEB3), r
    for t in forbidden_for(api, sbid):
        assert stopped(r, t), (t, r)


def test_none_reaches_nothing(api, make_sandbox, probe):
    sbid = make_sandbox(network={"egress": "none"})
    r = probe(sbid, [WEB] + forbidden_for(api, sbid))
    for t in [WEB] + forbidden_for(api, sbid):
        assert stopped(r, t), (t, r)


def test_allow_reaches_only_its_list_and_never_a_blocked_range(api, make_sandbox, probe):
    # an allow entry inside a blocked range does not open it
    sbid = make_sandbox(network={"egress": "allow", "allow": [nettopo.PUBLIC[0], "172.16.0.0/24"]})
    assert network_of(api, sbid)["allow"] == [nettopo.PUBLIC[0], "172.16.0.0/24"]
    r = probe(sbid, [WEB, WEB2, "172.16.0.5:80"])
    assert reached(r, WEB), r
    assert stopped(r, WEB2) and stopped(r, "172.16.0.5:80"), r


def test_deny_takes_away_from_open(api, make_sandbox, probe):
    sbid = make_sandbox(network={"egress": "open", "deny": ["192.0.2.11/32"]})
    r = probe(sbid, [WEB, WEB2])
    assert reached(r, WEB) and stopped(r, WEB2), r


def test_an_operator_permitted_range_is_reachable_with_egress_only(api, make_sandbox, probe):
    permitted = f"{nettopo.PERMITTED}:80"
    open_sb = make_sandbox()
    none_sb = make_sandbox(network={"egress": "none"})
    assert reached(probe(open_sb, [permitted]), permitted)
    assert stopped(probe(none_sb, [permitted]), permitted)


@pytest.mark.parametrize("network, why", [
    ({"egress": "everywhere"}, "network.egress"),
    ({"egress": "allow", "allow": ["192.0.2.0/33"]}, "network.allow[0]"),
    ({"egress": "allow", "allow": "192.0.2.0/24"}, "network.allow must be a list"),
    ({"egress": "open", "allow": ["192.0.2.1"]}, "needs egress \"allow\""),
    ({"egress": "open", "deny": ["exa mple.com"]}, "network.deny[0]"),
    ({"mode": "open"}, "unknown field network.mode"),
    ("open", '"network" must be an object or false'),
])
def test_a_bad_policy_is_refused_and_makes_nothing(api, network, why):
    before = {s["id"] for s in api.ok("GET", "/v1/sandboxes")["sandboxes"]}
    status, body = api.json("POST", "/v1/sandboxes", {"network": network})
    assert status == 400 and why in body["error"]["message"], (status, body)
    assert {s["id"] for s in api.ok("GET", "/v1/sandboxes")["sandboxes"]} == before


def test_the_limit_of_entries_holds_at_its_edge(api, make_sandbox):
    entries = [f"198.51.100.{i}" for i in range(64)]
    sbid = make_sandbox(network={"egress": "allow", "allow": entries})
    assert len(network_of(api, sbid)["allow"]) == 64
    status, body = api.json("POST", "/v1/sandboxes", {"network": {"egress": "allow", "allow": entries + ["203.0.113.1"]}})
    assert status == 400 and "at most 64" in body["error"]["message"], body


def test_no_network_means_no_interface(api, make_sandbox, probe):
    sbid = make_sandbox(network=False)
    assert network_of(api, sbid) is None
    r = probe(sbid, [WEB])
    assert r[WEB].startswith("error") or stopped(r, WEB), r
    routes = api.exec(sbid, ["cat", "/proc/net/route"])["stdout"].splitlines()[1:]
    assert routes == [], routes


def test_bytes_in_and_out_are_counted(api, make_sandbox, probe):
    sbid = make_sandbox()
    before = network_of(api, sbid)
    assert reached(probe(sbid, [WEB]), WEB)
    after = network_of(api, sbid)
    assert after["bytes_out"] > before["bytes_out"] and after["bytes_in"] > before["bytes_in"], (before, after)


def serve(api, sbid, port=8000):
    """An HTTP server inside sbid on 0.0.0.0:port, answering with the sandbox's id."""
    api.exec(sbid, f"mkdir -p /srv && echo {sbid} > /srv/id && cd /srv && "
                   f"(nohup python3 -m http.server {port} >/dev/null 2>&1 &)")


def fetch(topo, address, port=8000, path="/id"):
    """GET from spaced's namespace (where the proxy runs), closing with a reset: no time-wait is
    left in the sandbox, which a gVisor suspend would have to wait out. The body, or None."""
    script = ("import socket,struct,sys\n"
              "s=socket.create_connection((sys.argv[1],int(sys.argv[2])),timeout=5)\n"
              "s.sendall(b'GET '+sys.argv[3].encode()+b' HTTP/1.0\\r\\n\\r\\n')\n"
              "d=b''\n"
              "while b'\\r\\n\\r\\n' not in d or len(d.split(b'\\r\\n\\r\\n',1)[1])<int(d.split(b'Content-Length: ')[1].split(b'\\r\\n')[0]):\n"
              "  b=s.recv(4096)\n"
              "  if not b: break\n"
              "  d+=b\n"
              "s.setsockopt(socket.SOL_SOCKET,socket.SO_LINGER,struct.pack('ii',1,0))\n"
              "s.close()\n"
              "print(d.split(b'\\r\\n\\r\\n',1)[1].decode().strip())\n")
    r = topo.run(["/usr/bin/python3", "-c", script, address, str(port), path], capture_output=True, text=True,
                 timeout=30)
    return r.stdout.strip() if r.returncode == 0 else None


def wait_served(api, topo, sbid, port=8000):
    addr = network_of(api, sbid)["host_address"]
    return wait_until(lambda: fetch(topo, addr, port), 30, f"{sbid}'s server")


def test_one_sandbox_cannot_reach_anothers_ports(api, make_sandbox, probe, topo):
    a, b = make_sandbox(), make_sandbox()
    serve(api, b)
    assert wait_served(api, topo, b) == b  # it serves, seen from spaced's side
    b_addr = network_of(api, b)["host_address"]
    r = probe(a, [f"{b_addr}:8000", "169.254.0.22:8000"])
    assert stopped(r, f"{b_addr}:8000") and stopped(r, "169.254.0.22:8000"), r


def test_policy_and_reachability_survive_pause_and_suspend(api, make_sandbox, probe, topo):
    sbid = make_sandbox(network={"egress": "allow", "allow": [nettopo.PUBLIC[0]]})
    serve(api, sbid)
    assert wait_served(api, topo, sbid) == sbid
    api.ok("POST", f"/v1/sandboxes/{sbid}/pause")
    api.ok("POST", f"/v1/sandboxes/{sbid}/resume")
    addr = network_of(api, sbid)["host_address"]
    assert fetch(topo, addr) == sbid
    api.ok("POST", f"/v1/sandboxes/{sbid}/suspend", timeout=300)
    api.ok("POST", f"/v1/sandboxes/{sbid}/resume", timeout=300)
    assert network_of(api, sbid)["host_address"] == addr
    assert wait_served(api, topo, sbid) == sbid  # the server inside kept listening
    r = probe(sbid, [WEB, WEB2])
    assert reached(r, WEB) and stopped(r, WEB2), r


def test_a_suspend_waits_for_the_sandboxs_connections_to_end(api, make_sandbox, probe):
    """Outbound traffic leaves connections in time-wait inside; gVisor cannot write them into an
    image (docs/network.md), so its suspend waits them out; a microVM's kernel keeps them."""
    sbid = make_sandbox()
    assert reached(probe(sbid, [WEB]), WEB)
    api.ok("POST", f"/v1/sandboxes/{sbid}/suspend", timeout=300)
    api.ok("POST", f"/v1/sandboxes/{sbid}/resume", timeout=300)
    assert reached(probe(sbid, [WEB]), WEB)


@pytest.mark.skipif(MICROVM, reason="gVisor only: a microVM's kernel keeps open connections in its image")
def test_a_suspend_refused_for_an_open_connection_leaves_the_sandbox_running(api, make_sandbox):
    sbid = make_sandbox()
    # a connection held open past the wait: the suspend is refused, the sandbox and the
    # connection go on
    api.exec(sbid, "nohup python3 -c 'import socket,time; s=socket.create_connection((\"192.0.2.10\",80)); "
                   "open(\"/tmp/up\",\"w\").close(); time.sleep(3600)' >/dev/null 2>&1 &")
    wait_until(lambda: api.exec(sbid, ["test", "-e", "/tmp/up"])["exit_code"] == 0, 30, "the connection")
    status, body = api.json("POST", f"/v1/sandboxes/{sbid}/suspend", timeout=300)
    assert status == 409 and "TCP connection" in body["error"]["message"] and "keeps running" in \
        body["error"]["message"], body
    assert api.ok("GET", f"/v1/sandboxes/{sbid}")["state"] == "running"
    assert api.exec(sbid, ["echo", "alive"])["stdout"] == "alive\n"


def test_three_forks_serve_at_once_each_with_its_own_address(api, make_sandbox, topo):
    src = make_sandbox(network={"egress": "open", "deny": ["192.0.2.11"]})
    serve(api, src)
    assert wait_served(api, topo, src) == src
    forks = api.ok("POST", f"/v1/sandboxes/{src}/fork", {"count": 3}, expect=(201,), timeout=600)
    ids = [f["id"] for f in forks["sandboxes"]]
    try:
        addrs = {network_of(api, f)["host_address"] for f in ids} | {network_of(api, src)["host_address"]}
        assert len(addrs) == 4, addrs
        for f in ids:
            assert network_of(api, f)["address"] == "169.254.0.21"
            assert network_of(api, f)["deny"] == ["192.0.2.11"]  # the source's policy
            # each fork's own server answers at its own address (with the source's files: the id
            # in /srv/id is the source's, the process is the fork's)
            assert wait_served(api, topo, f) == src
            api.exec(f, f"echo {f} > /srv/id")
            assert fetch(topo, network_of(api, f)["host_address"]) == f
    finally:
        for f in ids:
            api.delete(f)


def test_a_restarted_spaced_puts_every_sandboxs_rules_back(api, spaced, make_sandbox, probe):
    open_sb = make_sandbox()
    none_sb = make_sandbox(network={"egress": "none"})
    spaced.kill(signal.SIGKILL)
    spaced.start()
    r_open = probe(open_sb, [WEB] + FORBIDDEN)
    r_none = probe(none_sb, [WEB])
    assert reached(r_open, WEB) and stopped(r_none, WEB), (r_open, r_none)
    for t in FORBIDDEN:
        assert stopped(r_open, t), (t, r_open)


def test_a_policy_change_applies_to_new_connections_at_once_and_is_kept(api, spaced, make_sandbox, probe):
    sbid = make_sandbox(network={"egress": "none"})
    assert stopped(probe(sbid, [WEB]), WEB)
    net = api.ok("PATCH", f"/v1/sandboxes/{sbid}/network", {"egress": "allow", "allow": [nettopo.PUBLIC[0]]})["network"]
    assert net["egress"] == "allow" and net["allow"] == [nettopo.PUBLIC[0]], net
    r = probe(sbid, [WEB, WEB2])
    assert reached(r, WEB) and stopped(r, WEB2), r
    # a deny added alone keeps the mode and the allow list
    net = api.ok("PATCH", f"/v1/sandboxes/{sbid}/network", {"deny": ["192.0.2.10"]})["network"]
    assert net["egress"] == "allow" and net["allow"] == [nettopo.PUBLIC[0]] and net["deny"] == ["192.0.2.10"]
    assert stopped(probe(sbid, [WEB]), WEB)
    # kept across a restart of spaced
    spaced.kill(signal.SIGKILL)
    spaced.start()
    assert network_of(api, sbid)["deny"] == ["192.0.2.10"]
    assert stopped(probe(sbid, [WEB]), WEB)
    api.ok("PATCH", f"/v1/sandboxes/{sbid}/network", {"egress": "open", "deny": []})
    assert reached(probe(sbid, [WEB2]), WEB2)


def test_a_bad_change_is_refused_and_changes_nothing(api, make_sandbox, probe):
    sbid = make_sandbox(network={"egress": "allow", "allow": [nettopo.PUBLIC[0]]})
    for body, why in (({"egress": "some"}, "network.egress"), ({"allow": ["x_y"]}, "network.allow[0]"),
                      ({"allow": "192.0.2.1"}, "\"allow\" must be an array of strings"),
                      ({"egress": "open", "allow": ["192.0.2.1"]}, "needs egress \"allow\"")):
        status, reply = api.json("PATCH", f"/v1/sandboxes/{sbid}/network", body)
        assert status == 400 and why in reply["error"]["message"], (body, status, reply)
    assert network_of(api, sbid)["allow"] == [nettopo.PUBLIC[0]]
    assert reached(probe(sbid, [WEB]), WEB)
    none = make_sandbox(network=False)
    status, reply = api.json("PATCH", f"/v1/sandboxes/{none}/network", {"egress": "open"})
    assert status == 409 and "without a network" in reply["error"]["message"], reply
    status, reply = api.json("PATCH", "/v1/sandboxes/000000000000/network", {"egress": "open"})
    assert status == 404, reply


def test_the_cli_sets_and_shows_a_policy(api, spaced, probe):
    import subprocess
    from spacetest import SPACE
    env = {"SPACE_HOST": f"unix://{spaced.socket}", "PATH": "/usr/bin:/bin"}

    def space(*args):
        return subprocess.run([SPACE, *args], capture_output=True, text=True, env=env, timeout=300)

    r = space("create", "--egress", "allow", "--allow", nettopo.PUBLIC[0], "--deny", "203.0.113.0/24")
    assert r.returncode == 0, r.stderr
    sbid = r.stdout.strip()
    try:
        out = space("network", sbid)
        assert out.returncode == 0, out.stderr
        lines = dict(line.split(None, 1) for line in out.stdout.splitlines() if line.strip())
        assert lines["egress"] == "allow" and lines["allow"] == nettopo.PUBLIC[0] and lines["deny"] == "203.0.113.0/24"
        assert reached(probe(sbid, [WEB]), WEB)
        out = space("network", "--egress", "none", "--no-deny", sbid)
        assert out.returncode == 0 and "egress     none" in out.stdout, out
        assert stopped(probe(sbid, [WEB]), WEB)
        bad = space("network", "--egress", "sideways", sbid)
        assert bad.returncode != 0 and "network.egress" in bad.stderr, bad
    finally:
        api.delete(sbid)
    r = space("create", "--no-network", "--egress", "open")
    assert r.returncode == 2 and "--no-network cannot go with" in r.stderr, r


def test_the_sdk_sets_and_reads_a_policy(spaced, probe):
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                    "sdk", "python"))
    from space import Sandbox
    sb = Sandbox.create(network={"egress": "none"}, host=f"unix://{spaced.socket}")
    try:
        assert sb.network()["egress"] == "none"
        net = sb.set_network(egress="allow", allow=[nettopo.PUBLIC[0]])
        assert net["egress"] == "allow" and net["allow"] == [nettopo.PUBLIC[0]]
        assert reached(probe_from(spaced.api, sb.id, [WEB]), WEB)
    finally:
        sb.kill()
    bare = Sandbox.create(network=False, host=f"unix://{spaced.socket}")
    try:
        assert bare.network() is None
    finally:
        bare.kill()


def test_allow_mode_reaches_no_blocked_target_either(api, make_sandbox, probe):
    # every must-stay-unreachable target listed in allow: still unreachable
    sbid = make_sandbox(network={"egress": "allow", "allow": [t.split(":")[0] for t in FORBIDDEN]})
    r = probe(sbid, forbidden_for(api, sbid))
    for t in forbidden_for(api, sbid):
        assert stopped(r, t), (t, r)


def test_a_sandbox_from_a_snapshot_keeps_its_sources_policy(api, make_sandbox, probe, topo):
    src = make_sandbox(network={"egress": "allow", "allow": [nettopo.PUBLIC[0]]})
    serve(api, src)
    assert wait_served(api, topo, src) == src
    snap = api.ok("POST", f"/v1/sandboxes/{src}/snapshot", {}, expect=(201,), timeout=600)["id"]
    try:
        assert api.ok("GET", "/v1/snapshots")["snapshots"][-1]["network"]["allow"] == [nettopo.PUBLIC[0]]
        copy = make_sandbox(snapshot=snap)
        net = network_of(api, copy)
        assert net["egress"] == "allow" and net["allow"] == [nettopo.PUBLIC[0]], net
        assert net["host_address"] != network_of(api, src)["host_address"]
        assert wait_served(api, topo, copy) == src  # its server, restored, at its own address
        r = probe(copy, [WEB, WEB2])
        assert reached(r, WEB) and stopped(r, WEB2), r
        # a create from the snapshot may name another policy
        other = make_sandbox(snapshot=snap, network={"egress": "none"})
        assert stopped(probe(other, [WEB]), WEB)
    finally:
        api.ok("DELETE", f"/v1/snapshots/{snap}", expect=(204,))


def spaced_table(spaced):
    """The name of spaced's own table, inet space_<tag> (the tag: FNV-1a of its state dir)."""
    h = 2166136261
    for c in spaced.state_dir.encode():
        h = ((h ^ c) * 16777619) & 0xffffffff
    return f"space_{h & 0xffff:04x}"


def test_rules_taken_away_leave_sandboxes_reaching_nothing_until_they_are_back(api, spaced, make_sandbox, probe,
                                                                                topo):
    """With its rules gone (what `nft flush ruleset` or a restart of nftables.service does), a
    sandbox reaches nothing it may not, not everything: here only this spaced's own table is
    deleted (`nft delete table inet space_<tag>`), which is the same loss for this spaced and
    touches no other program's rules on the machine. The made-up internet routes the transit
    range back, as a network that routes private ranges would, so an unfiltered packet would get
    its answer. spaced puts its rules back, and the sandbox works as before."""
    from test_dns import lookup
    sbid = make_sandbox(network={"egress": "allow", "allow": ["web.test"]})
    assert lookup(api, sbid, "web.test") == nettopo.PUBLIC[0]
    r = probe(sbid, [WEB, WEB2])
    assert reached(r, WEB) and stopped(r, WEB2), r
    transit = spaced.transit  # the suite's spaced's slots
    subprocess.run(["ip", "-n", topo.inet, "route", "replace", transit, "via", nettopo.UPLINK_HOST], check=True)
    table = spaced_table(spaced)
    # until now the watch found the table whole each time it looked (net_intact)
    assert "is gone" not in spaced.log_tail(100000), spaced.log_tail(20)
    try:
        topo.run(["nft", "list", "table", "inet", table], check=True, capture_output=True)
        topo.run(["nft", "delete", "table", "inet", table], check=True)
        r = probe(sbid, [WEB2, f"{nettopo.UNREACHABLE[1]}:80"], timeout=2)
        assert stopped(r, WEB2) and stopped(r, f"{nettopo.UNREACHABLE[1]}:80"), r
        wait_until(lambda: topo.run(["nft", "list", "table", "inet", table], capture_output=True).returncode == 0,
                   60, "spaced to put its table back")
        wait_until(lambda: "is back, with every sandbox's policy" in spaced.log_tail(100000), 60,
                   "spaced to say its table is back")
        assert lookup(api, sbid, "web.test") == nettopo.PUBLIC[0]  # its pins went with the table: asked again
        r = probe(sbid, [WEB, WEB2])
        assert reached(r, WEB) and stopped(r, WEB2), r
    finally:
        subprocess.run(["ip", "-n", topo.inet, "route", "del", transit], capture_output=True)
