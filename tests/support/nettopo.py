"""A made-up internet for network tests, in network namespaces the test creates.

Traffic in tests stays on this machine (tests/README.md): a test of sandboxes' networks runs
its spaced inside the namespace `host` made here, whose only way out is a veth to a second
namespace, `inet`, standing in for the internet. Nothing in either has a route to anything
else, so whatever a sandbox sends ends in these two namespaces.

    host (spaced runs here)   uplink 198.51.100.2/24, default route via 198.51.100.1
                              a listener on 0.0.0.0:HOST_PORT (the host's own services)
    inet                      wan 198.51.100.1/24 and, on its loopback, one address of each
                              kind below, each with an HTTP server on port 80 answering
                              "hello from <address>"

    PUBLIC       TEST-NET addresses a sandbox with egress may reach
    UNREACHABLE  stand-ins for what no sandbox may reach in any mode: the metadata address,
                 private (RFC 1918) and shared (CGNAT) ranges
    PERMITTED    a private address the suite's spaced permits (--egress-permit)

The resolver (DNS) answers the names of NAMES and `moving.test`, never answers DROP, and
writes the source ("address:port") of every question over UDP, a line each, to
Topology.dns_log.

Topology(prefix) makes it; close() removes both namespaces, which takes every interface and
process bound to them along.
"""

import json
import os
import signal
import tempfile
import subprocess
import sys
import textwrap

PUBLIC = ["192.0.2.10", "192.0.2.11", "203.0.113.7"]
DNS = "203.0.113.53"  # the made-up internet's resolver (UDP, TCP): the names of NAMES, and `moving.test`
DROP = "drop.test"  # a name that resolver never answers (its questions are dropped)
NAMES = {"web.test": PUBLIC[0], "web2.test": PUBLIC[1], "a.cdn.test": PUBLIC[2], "b.cdn.test": PUBLIC[1],
         # names that answer with what must stay unreachable: DNS rebinding against an allow list
         "rebind.test": "169.254.169.254", "private.test": "10.9.9.9",
         # an answer too long for UDP (truncated there): asked again over TCP
         "big.test": [PUBLIC[2]] + [f"192.0.2.{100 + i}" for i in range(40)]}
UNREACHABLE = ["169.254.169.254", "10.9.9.9", "172.16.0.5", "192.168.1.5", "100.64.0.5"]
PERMITTED = "10.0.0.5"
PERMIT_RANGE = "10.0.0.0/29"
UPLINK_HOST = "198.51.100.2"
UPLINK_INET = "198.51.100.1"
HOST_PORT = 8081

SERVER = textwrap.dedent("""
    import http.server, socketserver, sys, threading
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"
        def do_GET(self):
            body = ("hello from %s" % self.server.server_address[0]).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *a):
            pass
    class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        allow_reuse_address = True
    servers = [S((a, int(p)), H) for a, p in (x.split(":") for x in sys.argv[1:])]
    for s in servers[1:]:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print("ready", flush=True)
    servers[0].serve_forever()
""")


DNS_SERVER = textwrap.dedent("""
    import json, socket, struct, sys, threading
    names, moving, log = json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]

    def answer(q, tcp):
        p, labels = 12, []
        while q[p]:
            labels.append(q[p + 1:p + 1 + q[p]].decode().lower()); p += 1 + q[p]
        name, qtype = ".".join(labels), struct.unpack("!H", q[p + 1:p + 3])[0]
        if name == "drop.test":
            return None
        question = q[12:p + 5]
        addrs, ttl = names.get(name), 300
        if name == "moving.test":
            addrs, ttl = open(moving).read().strip(), 1
        addrs = [addrs] if isinstance(addrs, str) else addrs or []
        flags = 0x8180 if addrs else 0x8183
        if len(addrs) > 1 and not tcp:  # over UDP a long answer is truncated: ask over TCP
            flags, addrs = flags | 0x0200, []
        answers = [b"\\xc0\\x0c" + struct.pack("!HHIH", 1, 1, ttl, 4) + socket.inet_aton(a)
                   for a in addrs if qtype == 1]
        return q[:2] + struct.pack("!HHHHH", flags, 1, len(answers), 0, 0) + question + b"".join(answers)

    def serve_tcp(c):
        with c:
            while True:
                head = c.recv(2, socket.MSG_WAITALL)
                if len(head) < 2:
                    return
                q = c.recv(struct.unpack("!H", head)[0], socket.MSG_WAITALL)
                a = answer(q, True)
                if a is None:
                    continue
                c.sendall(struct.pack("!H", len(a)) + a)

    def tcp_main(l):
        while True:
            c, _ = l.accept()
            threading.Thread(target=serve_tcp, args=(c,), daemon=True).start()

    l = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind((sys.argv[1], 53)); l.listen(16)
    threading.Thread(target=tcp_main, args=(l,), daemon=True).start()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((sys.argv[1], 53))
    print("ready", flush=True)
    while True:
        q, src = s.recvfrom(2048)
        with open(log, "a") as f:
            f.write("%s:%d\\n" % src)
        try:
            a = answer(q, False)
            if a is not None:
                s.sendto(a, src)
        except Exception:
            continue
""")


def ip(*args, ns=None):
    argv = ["ip"] + (["-n", ns] if ns else []) + list(args)
    subprocess.run(argv, check=True, capture_output=True)


class Topology:
    def __init__(self, prefix):
        self.host = f"{prefix}-host"
        self.inet = f"{prefix}-inet"
        self.procs = []
        for ns in (self.host, self.inet):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
            ip("netns", "add", ns)
        try:
            self._build()
        except BaseException:
            self.close()
            raise

    @property
    def host_path(self):
        return f"/run/netns/{self.host}"

    def _build(self):
        ip("link", "add", "uplink", "type", "veth", "peer", "name", "wan", "netns", self.inet, ns=self.host)
        ip("addr", "add", f"{UPLINK_HOST}/24", "dev", "uplink", ns=self.host)
        ip("addr", "add", f"{UPLINK_INET}/24", "dev", "wan", ns=self.inet)
        for ns, dev in ((self.host, "uplink"), (self.inet, "wan")):
            ip("link", "set", "dev", dev, "up", ns=ns)
            ip("link", "set", "dev", "lo", "up", ns=ns)
        ip("route", "add", "default", "via", UPLINK_INET, ns=self.host)
        for a in PUBLIC + UNREACHABLE + [PERMITTED, DNS]:
            ip("addr", "add", f"{a}/32", "dev", "lo", ns=self.inet)
        self.serve(self.inet, [f"{a}:80" for a in PUBLIC + UNREACHABLE + [PERMITTED]])
        self.serve(self.host, [f"0.0.0.0:{HOST_PORT}"])
        self.moving = os.path.join(tempfile.mkdtemp(prefix="space-net-dns-"), "moving")
        self.dns_log = os.path.join(os.path.dirname(self.moving), "questions")  # "addr:port" a UDP question
        open(self.dns_log, "w").close()
        self.move("moving.test", PUBLIC[0])
        p = subprocess.Popen(["ip", "netns", "exec", self.inet, sys.executable, "-c", DNS_SERVER, DNS,
                              json.dumps(NAMES), self.moving, self.dns_log],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        if p.stdout.readline().strip() != b"ready":
            raise RuntimeError("the test resolver did not start")
        self.procs.append(p)

    def move(self, name, address):
        """What `moving.test` resolves to from now on (TTL 1 s)."""
        with open(self.moving + ".tmp", "w") as f:
            f.write(address)
        os.rename(self.moving + ".tmp", self.moving)

    def serve(self, ns, binds):
        p = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", SERVER] + binds,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        line = p.stdout.readline()
        if line.strip() != b"ready":
            raise RuntimeError(f"test server in {ns} did not start: {line!r}")
        self.procs.append(p)

    def udp_sink(self, address, port, path):
        """Records the source of every UDP datagram to address:port (in inet) into path, a line
        each: what a sandbox's packets look like once they leave spaced's host."""
        script = textwrap.dedent("""
            import socket, sys
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind((sys.argv[1], int(sys.argv[2])))
            print("ready", flush=True)
            while True:
                data, src = s.recvfrom(2048)
                with open(sys.argv[3], "a") as f:
                    f.write("%s %s\\n" % (src[0], data.decode(errors="replace")))
        """)
        p = subprocess.Popen(["ip", "netns", "exec", self.inet, sys.executable, "-c", script, address, str(port), path],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        if p.stdout.readline().strip() != b"ready":
            raise RuntimeError("udp sink did not start")
        self.procs.append(p)

    def run(self, argv, **kw):
        """Runs argv inside the host namespace (where spaced and its proxy are)."""
        return subprocess.run(["nsenter", f"--net={self.host_path}"] + list(argv), **kw)

    def close(self):
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        for ns in (self.host, self.inet):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
