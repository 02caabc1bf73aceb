"""DNS: spaced's resolver answers every sandbox with a network, by its policy.

The made-up internet's resolver (nettopo.DNS) knows a few names under .test; spaced asks it.
Every DNS question a sandbox sends over UDP or TCP, to whatever server, is answered by spaced's
resolver; names refused by policy are answered REFUSED; the addresses answered for a name
allowed by name become reachable for as long as the answer lives.
"""

import json
import textwrap

import pytest

import nettopo
from conftest import probe_from
from spacetest import wait_until
from test_egress import network_of, reached, stopped

# One question from inside: server, name, count -> {"rcode": N, "a": [...]} for the last, and
# how many answers came at all.
ASK = textwrap.dedent(r"""
    import json, os, socket, struct, sys
    server, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3)
    q = os.urandom(2) + struct.pack("!HHHHH", 0x0100, 1, 0, 0, 0)
    q += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0" + struct.pack("!HH", 1, 1)
    for _ in range(count):
        s.sendto(q, (server, 53))
    got, last = 0, None
    try:
        while got < count:
            last, _ = s.recvfrom(2048); got += 1
    except socket.timeout:
        pass
    out = {"answers": got, "rcode": None, "a": []}
    if last:
        out["rcode"] = last[3] & 0xf
        an, p = struct.unpack("!H", last[6:8])[0], 12
        while last[p]:
            p += 1 + last[p]
        p += 5
        for _ in range(an):
            p += 2 if last[p] & 0xc0 == 0xc0 else 0
            t, c, ttl, l = struct.unpack("!HHIH", last[p:p + 10]); p += 10
            if t == 1:
                out["a"].append(socket.inet_ntoa(last[p:p + 4]))
            p += l
    print(json.dumps(out))
""")


# Questions over TCP, one connection each, opened all at once: server, name, connections ->
# [{"rcode": N, "a": [...]} or {"closed": true}] in the order they were opened.
ASK_TCP = textwrap.dedent(r"""
    import json, os, socket, struct, sys
    server, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    q = struct.pack("!HHHHH", 0x0100, 1, 0, 0, 0)
    q += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0" + struct.pack("!HH", 1, 1)
    conns = [socket.create_connection((server, 53), timeout=10) for _ in range(count)]
    out = []
    for c in conns:
        try:
            c.sendall(struct.pack("!H", len(q) + 2) + os.urandom(2) + q)
            head = c.recv(2, socket.MSG_WAITALL)
        except OSError:
            head = b""
        if len(head) < 2:
            out.append({"closed": True})
            continue
        m = c.recv(struct.unpack("!H", head)[0], socket.MSG_WAITALL)
        an, p = struct.unpack("!H", m[6:8])[0], 12
        while m[p]:
            p += 1 + m[p]
        p += 5
        a = []
        for _ in range(an):
            p += 2
            t, _, _, l = struct.unpack("!HHIH", m[p:p + 10]); p += 10
            if t == 1:
                a.append(socket.inet_ntoa(m[p:p + 4]))
            p += l
        out.append({"rcode": m[3] & 0xf, "a": a})
    print(json.dumps(out))
""")


def ask_tcp(api, sbid, name, server="169.254.0.22", count=1):
    res = api.exec(sbid, ["python3", "-c", ASK_TCP, server, name, str(count)], timeout=120)
    assert res["exit_code"] == 0, res
    return json.loads(res["stdout"])


def ask(api, sbid, name, server="169.254.0.22", count=1):
    res = api.exec(sbid, ["python3", "-c", ASK, server, name, str(count)], timeout=120)
    assert res["exit_code"] == 0, res
    return json.loads(res["stdout"])


def lookup_all(api, sbid, name):
    """Every address getaddrinfo finds inside, through the sandbox's own resolv.conf."""
    res = api.exec(sbid, ["python3", "-c", "import socket,sys\nprint(' '.join(socket.gethostbyname_ex(sys.argv[1])[2]))",
                          name])
    assert res["exit_code"] == 0, res
    return res["stdout"].split()


def lookup(api, sbid, name):
    """getaddrinfo inside, through the sandbox's own resolv.conf: an address, or the error."""
    res = api.exec(sbid, ["python3", "-c", "import socket,sys\ntry: print(socket.gethostbyname(sys.argv[1]))\n"
                                           "except OSError as e: print('error', e)", name])
    return res["stdout"].strip()


def test_open_resolves_through_spaceds_resolver(api, make_sandbox):
    sbid = make_sandbox()
    conf = api.exec(sbid, ["cat", "/etc/resolv.conf"])["stdout"]
    assert "nameserver 169.254.0.22" in conf, conf
    assert lookup(api, sbid, "web.test") == nettopo.PUBLIC[0]
    assert lookup(api, sbid, "nowhere.test").startswith("error")
    # a question to any other server goes to spaced's resolver all the same (a TEST-NET address
    # where nothing listens)
    r = ask(api, sbid, "web.test", server="198.51.100.99")
    assert r["rcode"] == 0 and r["a"] == [nettopo.PUBLIC[0]], r


def test_none_is_refused_and_deny_by_name_too(api, make_sandbox):
    none = make_sandbox(network={"egress": "none"})
    r = ask(api, none, "web.test")
    assert r["rcode"] == 5 and r["a"] == [], r  # REFUSED
    denied = make_sandbox(network={"egress": "open", "deny": ["web2.test"]})
    assert ask(api, denied, "web2.test")["rcode"] == 5
    assert lookup(api, denied, "web.test") == nettopo.PUBLIC[0]


def test_allow_by_name_reaches_what_the_resolver_answered_only(api, make_sandbox, probe):
    sbid = make_sandbox(network={"egress": "allow", "allow": ["web.test", "*.cdn.test"]})
    web, cdn = f"{nettopo.PUBLIC[0]}:80", f"{nettopo.PUBLIC[2]}:80"
    # before any answer, the address is one like any other: not allowed
    assert stopped(probe(sbid, [web]), web)
    assert lookup(api, sbid, "web.test") == nettopo.PUBLIC[0]
    assert reached(probe(sbid, [web]), web)
    assert lookup(api, sbid, "a.cdn.test") == nettopo.PUBLIC[2]
    assert reached(probe(sbid, [cdn]), cdn)
    assert ask(api, sbid, "web2.test")["rcode"] == 5  # not allowed: refused
    assert ask(api, sbid, "cdn.test")["rcode"] == 5   # *.cdn.test is what is under it
    r = probe(sbid, [f"{nettopo.PUBLIC[1]}:80"])
    assert stopped(r, f"{nettopo.PUBLIC[1]}:80"), r
    # another sandbox with the same policy has pinned nothing
    other = make_sandbox(network={"egress": "allow", "allow": ["web.test"]})
    assert stopped(probe(other, [web]), web)


def test_a_name_whose_address_changes_moves_its_pin(api, make_sandbox, probe, topo):
    sbid = make_sandbox(network={"egress": "allow", "allow": ["moving.test"]})
    first, second = nettopo.PUBLIC[0], nettopo.PUBLIC[1]
    try:
        assert lookup(api, sbid, "moving.test") == first
        assert reached(probe(sbid, [f"{first}:80"]), f"{first}:80")
        topo.move("moving.test", second)
        wait_until(lambda: lookup(api, sbid, "moving.test") == second, 30, "the new answer (TTL 1 s)")
        assert reached(probe(sbid, [f"{second}:80"]), f"{second}:80")
        # the old answer's pin lasts its TTL, at least 5 s (NET_DNS_PIN_MIN_S), then goes
        wait_until(lambda: stopped(probe(sbid, [f"{first}:80"], timeout=1), f"{first}:80"), 60,
                   "the old address's pin to run out")
    finally:
        topo.move("moving.test", first)


def test_a_flood_of_questions_stays_the_floods_own(api, make_sandbox):
    neighbour = make_sandbox()
    flooder = make_sandbox()
    r = ask(api, flooder, "web.test", count=3000)
    assert r["answers"] > 0, r
    # the neighbour's questions are answered meanwhile and after
    assert lookup(api, neighbour, "web.test") == nettopo.PUBLIC[0]
    assert lookup(api, flooder, "web.test") == nettopo.PUBLIC[0]


def test_rebinding_an_allowed_name_to_a_blocked_address_reaches_nothing(api, make_sandbox, probe):
    sbid = make_sandbox(network={"egress": "allow", "allow": ["rebind.test", "private.test"]})
    assert lookup(api, sbid, "rebind.test") == "169.254.169.254"  # answered: the name is allowed
    assert lookup(api, sbid, "private.test") == "10.9.9.9"
    r = probe(sbid, ["169.254.169.254:80", "10.9.9.9:80"])
    assert stopped(r, "169.254.169.254:80") and stopped(r, "10.9.9.9:80"), r  # pinned, still blocked


def test_a_long_answer_is_asked_again_over_tcp_and_pins_what_it_names(api, make_sandbox, probe):
    big = nettopo.NAMES["big.test"]
    opened = make_sandbox()
    # truncated over UDP: the sandbox's resolver library asks again over TCP, and gets it all
    assert sorted(lookup_all(api, opened, "big.test")) == sorted(big)
    allowed = make_sandbox(network={"egress": "allow", "allow": ["big.test"]})
    target = f"{big[0]}:80"
    assert stopped(probe(allowed, [target]), target)
    assert sorted(lookup_all(api, allowed, "big.test")) == sorted(big)
    assert reached(probe(allowed, [target]), target)


def test_over_tcp_refusals_and_the_connection_limit_hold(api, make_sandbox):
    none = make_sandbox(network={"egress": "none"})
    assert ask_tcp(api, none, "web.test") == [{"rcode": 5, "a": []}]
    sbid = make_sandbox(network={"egress": "open", "deny": ["web2.test"]})
    assert ask_tcp(api, sbid, "web2.test") == [{"rcode": 5, "a": []}]
    # to whatever server: spaced's resolver answers
    assert ask_tcp(api, sbid, "web.test", server="198.51.100.99") == [{"rcode": 0, "a": [nettopo.PUBLIC[0]]}]
    # NET_DNS_TCP_PER_SANDBOX (4) connections at once are served; one more is closed unanswered
    got = ask_tcp(api, sbid, "web.test", count=5)
    assert got[:4] == [{"rcode": 0, "a": [nettopo.PUBLIC[0]]}] * 4 and got[4] == {"closed": True}, got
    assert ask_tcp(api, sbid, "web.test") == [{"rcode": 0, "a": [nettopo.PUBLIC[0]]}]  # and after


def test_a_slot_taken_again_starts_with_no_pins(api, make_sandbox, probe):
    """The addresses pinned for one sandbox go with it: the next sandbox given the same slot
    (the lowest free one, of whatever tenant: the slot picker knows no tenants) reaches none of
    them, though the answer that pinned them lives on (TTL 300 s)."""
    web = f"{nettopo.PUBLIC[0]}:80"
    first = api.create(network={"egress": "allow", "allow": ["web.test"]})
    try:
        slot = network_of(api, first)["host_address"]
        assert lookup(api, first, "web.test") == nettopo.PUBLIC[0]
        assert reached(probe(first, [web]), web)
    finally:
        api.delete(first)
    second = make_sandbox(network={"egress": "allow", "allow": ["web2.test"]})
    assert network_of(api, second)["host_address"] == slot  # the slot the first one held
    r = probe(second, [web])
    assert stopped(r, web), r


def test_upstream_questions_leave_from_many_ports(api, make_sandbox, topo):
    """Each question asked upstream leaves from a socket of its own, on a port the kernel picks
    at random: an answer forged from elsewhere has to guess the port as well as the id. Seen at
    the made-up internet's resolver."""
    sbid = make_sandbox()
    with open(topo.dns_log) as f:
        before = len(f.readlines())
    r = ask(api, sbid, "web.test", count=8)
    assert r["answers"] == 8 and r["a"] == [nettopo.PUBLIC[0]], r
    with open(topo.dns_log) as f:
        ports = {line.strip().rsplit(":", 1)[1] for line in f.readlines()[before:]}
    assert len(ports) > 1, ports


# A question over TCP sent a byte at a time, `pause` seconds apart: prints how many of its bytes
# went before the resolver closed the connection, and how many it has.
TRICKLE = textwrap.dedent(r"""
    import json, select, socket, struct, sys, time
    pause = float(sys.argv[1])
    q = struct.pack("!HHHHHH", 7, 0x0100, 1, 0, 0, 0) + b"\x03web\x04test\x00" + struct.pack("!HH", 1, 1)
    msg = struct.pack("!H", len(q)) + q
    c = socket.create_connection(("169.254.0.22", 53), timeout=10)
    sent = 0
    for b in msg:
        if select.select([c], [], [], pause)[0] and not c.recv(1):
            break  # closed by the resolver
        try:
            c.send(bytes([b]))
        except OSError:
            break
        sent += 1
    print(json.dumps({"sent": sent, "whole": len(msg)}))
""")


def test_a_question_trickled_over_tcp_is_cut_at_its_deadline(api, make_sandbox):
    """A question over TCP has NET_DNS_TCP_MSG_MS (5 s) to come whole, however it trickles in:
    one sent a byte every 0.7 s (18 s in all) is cut before its end, so it holds no place of
    the sandbox's share for long."""
    sbid = make_sandbox()
    res = api.exec(sbid, ["python3", "-c", TRICKLE, "0.7"], timeout=120)
    assert res["exit_code"] == 0, res
    r = json.loads(res["stdout"])
    assert r["sent"] < r["whole"], r
    assert ask_tcp(api, sbid, "web.test") == [{"rcode": 0, "a": [nettopo.PUBLIC[0]]}]  # a whole one is served


# One sandbox's share taken, for `seconds`: questions for a name never answered upstream, over
# UDP, 80 a second (more than its share of 64 waiting), and NET_DNS_TCP_PER_SANDBOX connections over TCP kept open a byte at a time.
FLOOD = textwrap.dedent(r"""
    import os, socket, struct, sys, time
    until = time.time() + float(sys.argv[1])
    q = struct.pack("!HHHHH", 0x0100, 1, 0, 0, 0) + b"\x04drop\x04test\x00" + struct.pack("!HH", 1, 1)
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.setblocking(False)
    conns = []
    while time.time() < until:
        for _ in range(80):
            try:
                u.sendto(os.urandom(2) + q, ("169.254.0.22", 53))
            except OSError:
                pass
        try:
            while u.recv(2048):
                pass
        except OSError:
            pass
        held = []
        for c in conns:
            try:
                c.send(b"\0")
                held.append(c)
            except OSError:
                c.close()
        conns = held
        while len(conns) < 4:
            try:
                c = socket.create_connection(("169.254.0.22", 53), timeout=5)
                c.send(b"\0\x40")  # a question of 64 bytes, to come a byte at a time
                conns.append(c)
            except OSError:
                break
        time.sleep(1)
    print("done")
""")


def test_one_tenants_floods_leave_every_other_sandbox_resolving(api, make_sandbox, topo):
    """Each sandbox has its own share of questions waiting upstream (NET_DNS_PENDING_MAX, 64)
    and of connections over TCP (NET_DNS_TCP_PER_SANDBOX, 4): sixteen sandboxes (one tenant
    may hold 64) each flooding with questions upstream never answers, and holding its
    connections open a byte at a time, take nothing of another sandbox's, whose questions are
    answered over UDP and TCP all the while."""
    import threading
    neighbour = make_sandbox()
    flooders = [make_sandbox() for _ in range(16)]
    with open(topo.dns_log) as f:
        before = len(f.readlines())
    outs = []

    def flood(sbid):
        outs.append(api.exec(sbid, ["python3", "-c", FLOOD, "60"], timeout=180))

    threads = [threading.Thread(target=flood, args=(s,)) for s in flooders]
    for t in threads:
        t.start()
    try:
        def flooding():
            with open(topo.dns_log) as f:
                return len(f.readlines()) - before >= 16 * 64
        wait_until(flooding, 120, "the floods to fill their shares upstream")
        for _ in range(3):
            assert lookup(api, neighbour, "web.test") == nettopo.PUBLIC[0]
            assert ask_tcp(api, neighbour, "web.test") == [{"rcode": 0, "a": [nettopo.PUBLIC[0]]}]
    finally:
        for t in threads:
            t.join()
    assert [o["exit_code"] for o in outs] == [0] * 16, outs


def test_a_sandboxs_share_of_questions_waiting_holds_at_its_edge(api, make_sandbox):
    """NET_DNS_PENDING_MAX (64) questions of one sandbox wait upstream at once: of 65 sent
    together for a name upstream never answers, the 65th alone is answered, REFUSED."""
    sbid = make_sandbox()
    r = ask(api, sbid, nettopo.DROP, count=65)
    assert r["answers"] == 1 and r["rcode"] == 5, r
