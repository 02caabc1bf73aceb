"""Reaching out: raw and packet sockets, the host's network, spaced's own
socket, host Unix sockets, and another sandbox.

Sandboxes run with --network=none: gVisor gives them a loopback of their own
and nothing else; the only host socket inside is the agent's, bind-mounted
at /.space/sock and reachable because runsc runs with --host-uds=open.
"""

import os
import secrets
import socket
import textwrap
import threading

import pytest

from conftest import gvisor_only, MICROVM, OWN_KERNEL


class HostListener(threading.Thread):
    """A host TCP/UDP/Unix listener that records every peer that reaches it."""

    def __init__(self, family, kind, addr):
        super().__init__(daemon=True)
        self.sock = socket.socket(family, kind)
        if family != socket.AF_UNIX:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(addr)
        if kind == socket.SOCK_STREAM:
            self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.kind = kind
        self.hits = []
        self._halt = threading.Event()
        self.start()

    @property
    def port(self):
        return self.sock.getsockname()[1]

    def run(self):
        while not self._halt.is_set():
            try:
                if self.kind == socket.SOCK_STREAM:
                    c, peer = self.sock.accept()
                    self.hits.append(peer)
                    c.close()
                else:
                    data, peer = self.sock.recvfrom(4096)
                    self.hits.append((peer, data))
            except (socket.timeout, OSError):
                continue

    def close(self):
        self._halt.set()
        self.join(timeout=5)
        self.sock.close()


def host_addresses():
    """The host's IPv4 addresses (from the routing table's local entries)."""
    addrs = {"127.0.0.1"}
    try:
        with open("/proc/net/fib_trie") as f:
            lines = f.read().splitlines()
        for i, line in enumerate(lines):
            if "/32 host LOCAL" in line and i > 0:
                addrs.add(lines[i - 1].split()[-1])
    except OSError:
        pass
    return sorted(addrs)


@gvisor_only(OWN_KERNEL)
@pytest.mark.sandbox(network=False)
def test_raw_and_packet_sockets(attack):
    """Raw IPv4 and IPv6 sockets (ICMP, IPPROTO_RAW) and AF_PACKET sockets (raw and datagram),
    from a sandbox made with no network.

    Expected: all refused (no NET_RAW); the sandbox's only interface is its own
    loopback and the host's routes are unchanged. (With a network: tests/net/test_escape.py.)
    """
    host_routes = open("/proc/net/route").read()
    code = textwrap.dedent("""
        import socket
        out = []
        for name, args in [("raw icmp", (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)),
                           ("raw ip", (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)),
                           ("raw icmpv6", (socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)),
                           ("packet", (socket.AF_PACKET, socket.SOCK_RAW, 0x0300)),
                           ("packet dgram", (socket.AF_PACKET, socket.SOCK_DGRAM, 0x0300))]:
            try:
                socket.socket(*args).close()
                out.append(name + ": OPENED")
            except OSError as e:
                out.append(f"{name}: {e.strerror}")
        print("; ".join(out))
        print("interfaces:", " ".join(sorted(n for _, n in socket.if_nameindex())))
    """)
    res = attack.py(code)
    assert res["exit_code"] == 0, res
    assert "OPENED" not in res["stdout"], res
    assert open("/proc/net/route").read() == host_routes
    attack.note(" ".join(res["stdout"].split()))


@pytest.mark.sandbox(network=False)
def test_reach_the_host_network(attack):
    """TCP and UDP to listeners on the host's loopback and every host address, to a public DNS
    server, to the cloud metadata address, and to IPv6 loopback, from a sandbox made with no
    network (a networked sandbox's attempts run in tests/net/test_escape.py, inside namespaces
    that lead nowhere).

    Expected: nothing leaves the sandbox: connects fail (no route, or refused
    by the sandbox's own loopback) and the host listeners see no peer.
    """
    tcp_lo = HostListener(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", 0))
    tcp_any = HostListener(socket.AF_INET, socket.SOCK_STREAM, ("0.0.0.0", 0))
    udp_any = HostListener(socket.AF_INET, socket.SOCK_DGRAM, ("0.0.0.0", 0))
    try:
        targets = [(a, tcp_lo.port) for a in ["127.0.0.1"]] + [(a, tcp_any.port) for a in host_addresses()]
        targets += [("8.8.8.8", 53), ("1.1.1.1", 443), ("169.254.169.254", 80), ("10.0.2.2", 22)]
        udp_targets = [(a, udp_any.port) for a in host_addresses()] + [("8.8.8.8", 53)]
        # Addresses beyond this machine are tried only from a sandbox that has no route but
        # loopback (its own network namespace, made for this test): the connects fail inside
        # the sandbox and no packet leaves it. With any other route the attempt stops first.
        code = textwrap.dedent(f"""
            import socket
            routes = [l.split()[0] for l in open("/proc/net/route").read().splitlines()[1:] if l.split()]
            if [r for r in routes if r != "lo"]:
                print("ROUTES", routes)
                raise SystemExit(0)
            out = []
            for addr in {targets!r}:
                s = socket.socket(); s.settimeout(3)
                try:
                    s.connect(tuple(addr)); out.append(f"{{addr}}: CONNECTED")
                except OSError as e:
                    out.append(f"{{addr[0]}}: {{e.strerror or e}}")
                s.close()
            for addr in {udp_targets!r}:
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                try:
                    s.sendto(b"hello", tuple(addr)); out.append(f"udp {{addr[0]}}: sent")
                except OSError as e:
                    out.append(f"udp {{addr[0]}}: {{e.strerror}}")
            s = socket.socket(socket.AF_INET6); s.settimeout(3)
            try:
                s.connect(("::1", {tcp_lo.port})); out.append("::1 CONNECTED")
            except OSError as e:
                out.append(f"::1: {{e.strerror}}")
            print("; ".join(out))
        """)
        res = attack.py(code, timeout=120)
        # a UDP datagram that did go out would have arrived by the time the guard finishes;
        # the listeners are read once more below
        assert res["exit_code"] == 0, res
        assert "ROUTES" not in res["stdout"], res
        assert "CONNECTED" not in res["stdout"], res
    finally:
        for l in (tcp_lo, tcp_any, udp_any):
            l.close()
    assert not tcp_lo.hits and not tcp_any.hits and not udp_any.hits, (tcp_lo.hits, tcp_any.hits, udp_any.hits)
    attack.note(f"{len(targets)} TCP and {len(udp_targets)} UDP targets: "
                + "; ".join(sorted(set(x.split(": ", 1)[-1] for x in res["stdout"].strip().split("; ")))))


def test_reach_spaced_and_host_unix_sockets(attack, spaced, neighbour):
    """Unix sockets of the host: spaced's API socket (by its host path, and through a symlink made
    in the agent's bind-mounted socket directory), the system's /run/space/space.sock, the
    neighbour's agent socket, and an abstract-namespace socket the host listens on.

    Expected: none reachable: host paths do not exist in the sandbox (a
    symlink is resolved inside it), and the abstract namespace is the
    sandbox's own.
    """
    name = "space-sec-" + secrets.token_hex(4)
    abstract = HostListener(socket.AF_UNIX, socket.SOCK_STREAM, "\0" + name)
    nb_sock = os.path.join(spaced.sandbox_dir(neighbour.id), "sock", "agent.sock")
    try:
        targets = [spaced.socket, "/run/space/space.sock", nb_sock, "/.space/sock/evil.sock",
                   "/.space/sock/../../" + spaced.socket]
        # a microVM has no socket folder of the host inside: the link is made where it can be
        sock_dir = "/tmp" if MICROVM else "/.space/sock"
        code = textwrap.dedent(f"""
            import os, socket
            os.symlink({spaced.socket!r}, "{sock_dir}/evil.sock")
            out = []
            for p in {targets!r} + ["{sock_dir}/evil.sock", "\\0{name}"]:
                s = socket.socket(socket.AF_UNIX)
                try:
                    s.connect(p); out.append(f"{{p!r}}: CONNECTED")
                except OSError as e:
                    out.append(f"{{p[:40]!r}}: {{e.strerror}}")
            print("; ".join(out))
        """)
        res = attack.py(code)
        assert res["exit_code"] == 0, res
        assert "ROUTES" not in res["stdout"], res
        assert "CONNECTED" not in res["stdout"], res
    finally:
        abstract.close()
    assert not abstract.hits
    link = os.path.join(spaced.sandbox_dir(attack.id), "sock", "evil.sock")
    attack.note("spaced's socket, /run/space, the neighbour's agent socket, a symlink in /.space/sock and "
                "a host abstract socket: none reachable; "
                + ("the symlink sits in the sandbox's socket directory on the host (spaced never follows it)"
                   if os.path.islink(link) else "no symlink on the host"))


def test_reach_another_sandbox(attack, neighbour):
    """The neighbour listens on its own loopback (TCP and an abstract Unix socket); the attacker
    connects to the same addresses, and looks for the neighbour's processes and files.

    Expected: the attacker's loopback, abstract namespace, /proc and file
    system are its own: it reaches none of the neighbour's.
    """
    listener = textwrap.dedent("""
        import socket, sys
        t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        t.bind(("127.0.0.1", 47123)); t.listen(8)
        u = socket.socket(socket.AF_UNIX); u.bind("\\0space-sec-neighbour"); u.listen(8)
        print("listening", flush=True)
        t.settimeout(60); u.settimeout(0.1)
        try:
            c, _ = t.accept(); print("GOT A PEER", flush=True)
        except OSError:
            pass
    """)
    api = neighbour.api
    pid = api.ok("POST", f"/v1/sandboxes/{neighbour.id}/processes", {"cmd": ["python3", "-c", listener]},
                 expect=(201,))["pid"]
    try:
        with api.stream("GET", f"/v1/sandboxes/{neighbour.id}/processes/{pid}/output") as s:
            ev = s.next_event()
            assert ev and ev["type"] == "stdout" and "listening" in ev["data"], ev
        code = textwrap.dedent(f"""
            import os, socket
            out = []
            s = socket.socket(); s.settimeout(3)
            try:
                s.connect(("127.0.0.1", 47123)); out.append("tcp CONNECTED")
            except OSError as e:
                out.append(f"tcp: {{e.strerror}}")
            u = socket.socket(socket.AF_UNIX)
            try:
                u.connect("\\0space-sec-neighbour"); out.append("abstract CONNECTED")
            except OSError as e:
                out.append(f"abstract: {{e.strerror}}")
            me = str(os.getpid())  # this program's own command line names the port
            procs = [open(f"/proc/{{p}}/cmdline", "rb").read() for p in os.listdir("/proc") if p.isdigit() and p != me]
            out.append("neighbour process visible: " + str(any(b"47123" in c for c in procs)))
            out.append("neighbour file visible: " + str(os.path.exists({neighbour.PATH!r})))
            print("; ".join(out))
        """)
        res = attack.py(code)
        assert res["exit_code"] == 0, res
        assert "CONNECTED" not in res["stdout"], res
        assert "process visible: False" in res["stdout"] and "file visible: False" in res["stdout"], res
    finally:
        api.request("POST", f"/v1/sandboxes/{neighbour.id}/processes/{pid}/signal", body={"signal": "KILL"})
        api.ok("GET", f"/v1/sandboxes/{neighbour.id}/processes/{pid}/wait?timeout=60")
    out = api.exec(neighbour.id, ["true"])
    assert out["exit_code"] == 0
    attack.note(res["stdout"].strip())
