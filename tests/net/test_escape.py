"""Network attacks from inside a sandbox that has a network, in the made-up internet.

Each attempt aims at something the sandbox must not reach or disturb: the host's services,
its neighbours, the addresses its packets claim to come from, the host's shared connection
tracking. A neighbour sandbox is checked before and after each: it must go on reaching the
internet, and its exec latency during the attempt stays within LATENCY_RATIO of what it was
just before, scaled as the security suite scales it by the machine's other load meanwhile
(tests/security/conftest.py, spacetest.OtherLoad). Packets that
would get out could only end in the suite's own namespaces.
"""

import os
import statistics
import tempfile
import textwrap
import threading
import time

import pytest

import nettopo
from conftest import MICROVM, probe_from
from spacetest import OtherLoad, wait_until
from test_egress import FORBIDDEN, WEB, network_of, reached, serve, stopped, wait_served


LATENCY_RATIO = float(os.environ.get("SPACE_SECURITY_LATENCY_RATIO", "3"))


def exec_ms(api, sbid):
    t = time.monotonic()
    api.exec(sbid, ["true"])
    return (time.monotonic() - t) * 1000


@pytest.fixture
def neighbour(api, make_sandbox, probe):
    sbid = make_sandbox()
    assert reached(probe(sbid, [WEB]), WEB)
    load0 = OtherLoad()
    control = statistics.median(exec_ms(api, sbid) for _ in range(7))
    load1 = OtherLoad()
    samples, halt = [], threading.Event()

    def sample():
        while not halt.is_set():
            samples.append(exec_ms(api, sbid))
            halt.wait(0.05)
    t = threading.Thread(target=sample, daemon=True)
    t.start()
    yield sbid
    halt.set()
    t.join(timeout=120)
    load2 = OtherLoad()
    assert reached(probe(sbid, [WEB]), WEB), "the neighbour lost its network"
    during = statistics.median(samples) if samples else None
    other = (load1.since(load0), load2.since(load1))
    allowed = LATENCY_RATIO * OtherLoad.scale(*other)
    assert during is not None and during <= allowed * control, (during, control, len(samples), allowed, other)


def run_py(api, sbid, code, timeout=300):
    res = api.exec(sbid, ["python3", "-c", textwrap.dedent(code)], timeout=timeout)
    assert res["exit_code"] == 0, res
    return res["stdout"]


def test_port_scans_of_the_host_and_neighbours_find_nothing(api, make_sandbox, neighbour, topo):
    serve(api, neighbour)
    assert wait_served(api, topo, neighbour) == neighbour
    attacker = make_sandbox()
    net = network_of(api, attacker)
    host_end = net["host_address"].rsplit(".", 1)
    host_end = f"{host_end[0]}.{int(host_end[1]) - 1}"
    targets = [nettopo.UPLINK_HOST, host_end, network_of(api, neighbour)["host_address"], net["gateway"]]
    # port 53 of every address is spaced's resolver, whoever is asked (test_dns.py)
    ports = [p for p in range(1, 1025) if p != 53] + [nettopo.HOST_PORT, 8000, 8080, 18080]
    out = run_py(api, attacker, f"""
        import socket
        from concurrent.futures import ThreadPoolExecutor
        def try_one(hp):
            s = socket.socket(); s.settimeout(2)
            try:
                s.connect(hp); return "%s:%d" % hp
            except OSError:
                return None
            finally:
                s.close()
        with ThreadPoolExecutor(64) as ex:
            found = [x for x in ex.map(try_one, [(h, p) for h in {targets!r} for p in {ports!r}]) if x]
        print("open:", " ".join(found))
    """, timeout=900)
    assert out.strip() == "open:", out


def test_spoofed_source_addresses_do_not_leave(api, make_sandbox, neighbour, topo):
    sink = tempfile.NamedTemporaryFile(prefix="space-net-sink-", delete=False).name
    os.unlink(sink)
    topo.udp_sink(nettopo.PUBLIC[0], 9999, sink)
    attacker = make_sandbox()
    spoofs = ["192.0.2.77", nettopo.UPLINK_HOST, "10.213.0.2", "169.254.0.22", "127.0.0.1"]
    out = run_py(api, attacker, f"""
        import socket, struct
        def csum(b):
            if len(b) % 2: b += b"\\0"
            s = sum(struct.unpack("!%dH" % (len(b) // 2), b)); s = (s >> 16) + (s & 0xffff); s += s >> 16
            return ~s & 0xffff
        sent = []
        try:
            r = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
        except OSError as e:
            print("raw:", e.strerror); r = None
        if r:
            for src in {spoofs!r}:
                payload = b"spoofed-from-" + src.encode()
                udp = struct.pack("!HHHH", 4444, 9999, 8 + len(payload), 0) + payload
                ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                                 socket.inet_aton(src), socket.inet_aton("{nettopo.PUBLIC[0]}"))
                ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
                try:
                    r.sendto(ip + udp, ("{nettopo.PUBLIC[0]}", 0)); sent.append(src)
                except OSError as e:
                    print("send", src, e.strerror)
            print("sent:", " ".join(sent))
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.sendto(b"honest", ("{nettopo.PUBLIC[0]}", 9999))
    """)
    if not MICROVM:
        assert "raw: Operation not permitted" in out, out  # gVisor: no NET_RAW at all
    else:
        assert "sent: " + " ".join(spoofs) in out, out  # its own kernel lets root try
    wait_until(lambda: os.path.exists(sink) and "honest" in open(sink).read(), 30, "the honest datagram")
    lines = open(sink).read().splitlines()
    # one datagram arrived, the honest one, from the host's own address (translated twice)
    assert lines == [f"{nettopo.UPLINK_HOST} honest"], lines


@pytest.mark.skipif(not MICROVM, reason="microVM only: gVisor gives no packet sockets (test_spoofed_... shows)")
def test_arp_and_neighbour_tricks_reach_no_one(api, make_sandbox, neighbour, probe):
    attacker = make_sandbox()
    out = run_py(api, attacker, """
        import socket, struct
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0806))
        s.bind(("eth0", 0))
        mine = s.getsockname()[4]
        bcast = b"\\xff" * 6
        n = 0
        # claim the gateway's address, every address of the transit range's first slots, the host's
        for ip in ["169.254.0.22", "198.51.100.2", "198.51.100.1"] + ["10.213.0.%d" % i for i in range(1, 32)]:
            arp = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 2, mine, socket.inet_aton(ip), bcast,
                              socket.inet_aton(ip))
            for _ in range(20):
                s.send(bcast + mine + b"\\x08\\x06" + arp); n += 1
        print("sent", n)
    """)
    assert out.startswith("sent "), out
    # the attacker's own segment ends at its edge: the neighbour, the host and the attacker
    # itself go on as before
    assert reached(probe(attacker, [WEB]), WEB)
    r = probe(attacker, FORBIDDEN)
    for t in FORBIDDEN:
        assert stopped(r, t), (t, r)


def test_exhausting_connection_tracking_stops_at_the_sandboxs_own_limit(api, make_sandbox, neighbour, spaced):
    attacker = make_sandbox()
    # one UDP datagram to each of 6000 ports: a tracked flow each, at its edge and on the host
    out = run_py(api, attacker, """
        import socket
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        refused = 0
        for port in range(20000, 26000):
            try:
                s.sendto(b"x", ("192.0.2.11", port))
            except OSError:
                refused += 1
        print("done", refused)
    """, timeout=600)
    assert out.startswith("done"), out
    edge = os.path.join(spaced.sandbox_dir(attacker), "net", "edge")
    r = __import__("subprocess").run(["nsenter", f"--net={edge}", "cat", "/proc/net/nf_conntrack"],
                                     capture_output=True, text=True, timeout=60)
    flows = [l for l in r.stdout.splitlines() if " udp " in l and "dst=192.0.2.11" in l]
    assert 0 < len(flows) <= 4096, len(flows)  # NET_FLOWS_MAX, at its edge


def test_reaching_spaceds_proxy_and_api_from_inside_fails(api, make_sandbox):
    attacker = make_sandbox()
    net = network_of(api, attacker)
    host_end = net["host_address"].rsplit(".", 1)
    host_end = f"{host_end[0]}.{int(host_end[1]) - 1}"
    r = probe_from(api, attacker, [f"{host_end}:18080", f"{nettopo.UPLINK_HOST}:18080", "127.0.0.1:18080",
                                   f"{net['gateway']}:80"])
    for t, v in r.items():
        assert v in ("refused", "timeout"), (t, r)
