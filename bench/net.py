#!/usr/bin/python3
"""bench/net.py - what a sandbox's network costs, each figure beside its peer in one run.

Runs in a made-up internet (tests/support/nettopo.py: two namespaces this bench makes and
removes, no packet leaves them), with its own spaced inside the `host` namespace and its port
proxy there. Prints a Markdown table of medians and p90s and the ratios; results also go to
bench/results/<date>-<host>-net.json.

    /usr/bin/python3 bench/net.py [--quick] [--isolation gvisor|microvm]

Scenarios:
  create     create -> first exec of `true` done, with a network (egress none) and without one
             ("network": false): what networking adds to a create
  proxy      HTTP/1.1 requests to a server inside a sandbox (keep-alive, 1 KiB answers):
             through the port proxy vs straight to the sandbox's address, from spaced's
             namespace; latency per request and requests per second on one connection; and a
             64 MiB download both ways (throughput)
  egress     from inside a sandbox to a server in the made-up internet: connect latency and a
             64 MiB upload, vs raw runsc in the same namespace set-up (an inner namespace, an
             edge translating its address, a veth to the host, made by this bench with ip and
             nft the way spaced makes a sandbox's) and vs the client run natively in spaced's
             namespace
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))

import nettopo  # noqa: E402
import spacetest  # noqa: E402

PROXY_PORT = 18090

SERVER = textwrap.dedent(r"""
    import http.server, socketserver, sys
    BODY = b"x" * 1024
    BIG = b"y" * (64 << 20)
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # head and body go as written, no delayed-ACK stall
        def do_GET(self):
            body = BIG if self.path == "/big" else BODY
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *a):
            pass
    class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
    S(("0.0.0.0", int(sys.argv[1])), H).serve_forever()
""")

# One keep-alive connection: n requests of /, each timed; then /big timed. JSON out.
CLIENT = textwrap.dedent(r"""
    import json, socket, sys, time
    host, port, hdr, n, extra = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
    s = socket.create_connection((host, port)); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = b""
    def get(path):
        global buf
        s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (path, hdr, extra)).encode())
        while b"\r\n\r\n" not in buf:
            got = s.recv(1 << 20)
            if not got:  # a refusal (its Connection: close) or a proxy gone: said, not spun on
                sys.exit("the connection closed before an answer's head: %r" % buf[:300])
            buf += got
        head, buf = buf.split(b"\r\n\r\n", 1)
        length = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0].split(b":")[1])
        while len(buf) < length:
            got = s.recv(1 << 20)
            if not got:
                sys.exit("the connection closed in an answer's body")
            buf += got
        buf = buf[length:]
    lat = []
    t0 = time.monotonic()
    for _ in range(n):
        t = time.monotonic(); get("/"); lat.append((time.monotonic() - t) * 1000)
    total = time.monotonic() - t0
    t = time.monotonic(); get("/big"); big = time.monotonic() - t
    print(json.dumps({"lat_ms": lat, "rps": n / total, "mib_s": 64 / big}))
""")

# From inside (or natively): n connects timed, then 64 MiB sent to a sink that answers when
# it has all of it.
EGRESS = textwrap.dedent(r"""
    import json, socket, sys, time
    host, n = sys.argv[1], int(sys.argv[2])
    lat = []
    for _ in range(n):
        t = time.monotonic(); c = socket.create_connection((host, 80)); lat.append((time.monotonic() - t) * 1000)
        c.close()
    s = socket.create_connection((host, 9100))
    chunk = b"z" * (1 << 20)
    t = time.monotonic()
    for _ in range(64):
        s.sendall(chunk)
    s.shutdown(socket.SHUT_WR)
    s.recv(16)
    print(json.dumps({"connect_ms": lat, "mib_s": 64 / (time.monotonic() - t)}))
""")

SINK = textwrap.dedent(r"""
    import socket, sys, threading
    l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind((sys.argv[1], 9100)); l.listen(8)
    print("ready", flush=True)
    def one(c):
        while c.recv(1 << 20):
            pass
        c.sendall(b"done"); c.close()
    while True:
        c, _ = l.accept()
        threading.Thread(target=one, args=(c,), daemon=True).start()
""")


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def summary(xs):
    return {"median": statistics.median(xs), "p90": pct(xs, 90), "n": len(xs)}


class Bench:
    def __init__(self, quick, isolation):
        self.quick = quick
        self.topo = nettopo.Topology(f"spbench{os.getpid() % 100000}")
        args = ["--default-egress", "open", "--proxy-listen", f"127.0.0.1:{PROXY_PORT}"]
        if isolation:
            args += ["--isolation", isolation]

        class D(spacetest.Daemon):
            def argv(inner):
                return ["nsenter", f"--net={self.topo.host_path}"] + spacetest.Daemon.argv(inner)
        self.d = D(prefix="space-bench-net-", args=args)
        self.d.start()
        self.api = self.d.api
        self.rows = []

    def record(self, name, unit, ours, peer, peer_name):
        row = {"scenario": name, "unit": unit, "space": summary(ours), "peer": peer_name}
        if peer:
            row["peer_summary"] = summary(peer)
            row["ratio"] = row["space"]["median"] / row["peer_summary"]["median"]
        self.rows.append(row)
        print(f"  {name}: {row['space']['median']:.2f} {unit}" +
              (f" ({peer_name} {row['peer_summary']['median']:.2f})" if peer else ""), file=sys.stderr)

    def create(self):
        n = 5 if self.quick else 15
        on, off = [], []
        for i in range(n):  # alternating, so the machine's drift hits both
            for body, out in (({"network": {"egress": "none"}}, on), ({"network": False}, off)):
                t = time.monotonic()
                sbid = self.api.create(**body)
                self.api.exec(sbid, ["true"])
                out.append((time.monotonic() - t) * 1000)
                self.api.delete(sbid)
        self.record("create -> first exec, with a network vs without", "ms", on, off, "no network")

    def in_host(self, script, *args):
        r = self.topo.run(["/usr/bin/python3", "-c", script, *args], capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise SystemExit(r.stderr)
        return json.loads(r.stdout)

    def proxy(self):
        sbid = self.api.create()
        self.api.put_file(sbid, "/srv/bench.py", SERVER.encode())
        self.api.exec(sbid, "(nohup python3 /srv/bench.py 8000 >/dev/null 2>&1 &)")
        sb = self.api.ok("GET", f"/v1/sandboxes/{sbid}")
        addr, token = sb["network"]["host_address"], sb["traffic_token"]
        host = f"8000-{sbid}.localhost:{PROXY_PORT}"
        spacetest.wait_until(lambda: self.topo.run(["/usr/bin/python3", "-c", CLIENT, addr, "8000", "x", "1", ""],
                                                   capture_output=True).returncode == 0, 60, "the server")
        n = "200" if self.quick else "1000"
        lat_p, lat_d, rps_p, rps_d, mib_p, mib_d = [], [], [], [], [], []
        for _ in range(3 if self.quick else 5):
            d = self.in_host(CLIENT, addr, "8000", "x", n, "")
            p = self.in_host(CLIENT, "127.0.0.1", str(PROXY_PORT), host, n, f"X-Space-Token: {token}\r\n")
            lat_d += d["lat_ms"]
            lat_p += p["lat_ms"]
            rps_d.append(d["rps"])
            rps_p.append(p["rps"])
            mib_d.append(d["mib_s"])
            mib_p.append(p["mib_s"])
        self.record("HTTP request through the proxy vs to the sandbox's address", "ms", lat_p, lat_d, "direct")
        self.record("requests/s on one connection, proxy vs direct", "req/s", rps_p, rps_d, "direct")
        self.record("64 MiB download, proxy vs direct", "MiB/s", mib_p, mib_d, "direct")
        self.api.delete(sbid)

    def raw_runsc(self, n):
        """The egress client under plain runsc (--network=sandbox) in namespaces made like a
        sandbox's; what it printed, parsed."""
        tag = f"spbr{os.getpid() % 10000}"
        inner, edge, tmp = f"{tag}-in", f"{tag}-edge", tempfile.mkdtemp(prefix="space-bench-raw-")
        host_ns = ["nsenter", f"--net={self.topo.host_path}"]
        sh = lambda *c: subprocess.run(list(c), check=True, capture_output=True)  # noqa: E731
        try:
            for ns in (inner, edge):
                sh("ip", "netns", "add", ns)
            sh(*host_ns, "ip", "link", "add", "spbrh", "type", "veth", "peer", "name", "up0", "netns", edge)
            sh(*host_ns, "ip", "addr", "add", "10.216.0.1/30", "dev", "spbrh")
            sh(*host_ns, "ip", "link", "set", "spbrh", "up")
            sh("ip", "-n", edge, "link", "add", "gw0", "type", "veth", "peer", "name", "eth0", "netns", inner)
            for ns, cmds in ((edge, [["addr", "add", "10.216.0.2/30", "dev", "up0"], ["link", "set", "up0", "up"],
                                     ["addr", "add", "169.254.0.22/30", "dev", "gw0"], ["link", "set", "gw0", "up"],
                                     ["link", "set", "lo", "up"], ["route", "add", "default", "via", "10.216.0.1"]]),
                             (inner, [["addr", "add", "169.254.0.21/30", "dev", "eth0"], ["link", "set", "eth0", "up"],
                                      ["link", "set", "lo", "up"],
                                      ["route", "add", "default", "via", "169.254.0.22"]])):
                for c in cmds:
                    sh("ip", "-n", ns, *c)
            sh("ip", "netns", "exec", edge, "sysctl", "-qw", "net.ipv4.ip_forward=1")
            sh("ip", "netns", "exec", edge, "nft", "add table ip raw; add chain ip raw post { type nat hook "
               "postrouting priority srcnat; }; add rule ip raw post oifname up0 snat to 10.216.0.2")
            sh(*host_ns, "nft", "add table ip rawbench; add chain ip rawbench post { type nat hook postrouting "
               "priority srcnat; }; add rule ip rawbench post iifname spbrh masquerade")
            rootfs = os.path.join(tmp, "rootfs")
            os.makedirs(rootfs)
            import sqlite3
            db = sqlite3.connect(os.path.join(self.d.state_dir, "state.db"))
            (lower,) = db.execute("SELECT path FROM templates WHERE name = 'default'").fetchone()
            db.close()
            for sub_ in ("upper", "work"):
                os.makedirs(os.path.join(tmp, sub_))
            sh("mount", "-t", "overlay", "overlay", "-o", f"lowerdir={lower},upperdir={tmp}/upper,workdir={tmp}/work",
               rootfs)
            spec = {"ociVersion": "1.0.2",
                    "process": {"args": ["python3", "-c", EGRESS, nettopo.PUBLIC[0], n],
                                "env": ["PATH=/usr/local/bin:/usr/bin:/bin"], "cwd": "/", "user": {"uid": 0, "gid": 0}},
                    "root": {"path": rootfs}, "hostname": "raw",
                    "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"}],
                    "linux": {"namespaces": [{"type": "pid"}, {"type": "network", "path": f"/run/netns/{inner}"},
                                             {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}]}}
            os.makedirs(os.path.join(tmp, "bundle"))
            with open(os.path.join(tmp, "bundle", "config.json"), "w") as f:
                json.dump(spec, f)
            # the same hiding of /proc/sys/net/core spaced does (docs/network.md), in a mount
            # namespace of this command's own
            script = ("mount -t tmpfs -o size=4k,mode=555 none /proc/sys/net/core && exec runsc --root "
                      f"{tmp}/runsc --platform=ptrace --network=sandbox run --bundle {tmp}/bundle raw")
            r = subprocess.run(["unshare", "-m", "--propagation", "private", "nsenter", f"--net=/run/netns/{inner}",
                                "sh", "-c", script], capture_output=True, text=True, timeout=600)
            if r.returncode != 0:
                raise SystemExit("raw runsc: " + r.stderr[-2000:])
            return json.loads(r.stdout.strip().splitlines()[-1])
        finally:
            subprocess.run(["runsc", "--root", f"{tmp}/runsc", "delete", "--force", "raw"], capture_output=True)
            subprocess.run(["umount", "-l", os.path.join(tmp, "rootfs")], capture_output=True)
            subprocess.run([*host_ns, "nft", "delete table ip rawbench"], capture_output=True)
            subprocess.run([*host_ns, "ip", "link", "del", "spbrh"], capture_output=True)
            for ns in (inner, edge):
                subprocess.run(["ip", "netns", "del", ns], capture_output=True)
            subprocess.run(["rm", "-rf", "--one-file-system", tmp], capture_output=True)

    def egress(self):
        p = subprocess.Popen(["ip", "netns", "exec", self.topo.inet, sys.executable, "-c", SINK, nettopo.PUBLIC[0]],
                             stdout=subprocess.PIPE, start_new_session=True)
        p.stdout.readline()
        self.topo.procs.append(p)
        sbid = self.api.create()
        n = "20" if self.quick else "100"
        inside_c, native_c, raw_c, inside_t, native_t, raw_t = [], [], [], [], [], []
        for _ in range(3 if self.quick else 5):
            res = self.api.exec(sbid, ["python3", "-c", EGRESS, nettopo.PUBLIC[0], n], timeout=600)
            got = json.loads(res["stdout"])
            inside_c += got["connect_ms"]
            inside_t.append(got["mib_s"])
            got = self.raw_runsc(n)
            raw_c += got["connect_ms"]
            raw_t.append(got["mib_s"])
            got = self.in_host(EGRESS, nettopo.PUBLIC[0], n)
            native_c += got["connect_ms"]
            native_t.append(got["mib_s"])
        self.record("connect to the made-up internet, sandbox vs raw runsc", "ms", inside_c, raw_c, "raw runsc")
        self.record("64 MiB upload to the made-up internet, sandbox vs raw runsc", "MiB/s", inside_t, raw_t,
                    "raw runsc")
        self.record("connect to the made-up internet, sandbox vs native", "ms", inside_c, native_c, "native")
        self.record("64 MiB upload to the made-up internet, sandbox vs native", "MiB/s", inside_t, native_t, "native")
        self.api.delete(sbid)

    def close(self):
        self.d.cleanup()
        self.topo.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--isolation", default="")
    args = ap.parse_args()
    b = Bench(args.quick, args.isolation)
    try:
        b.create()
        b.proxy()
        b.egress()
    finally:
        b.close()
    print("| scenario | space median | p90 | peer | peer median | ratio |")
    print("|---|---|---|---|---|---|")
    for r in b.rows:
        peer = r.get("peer_summary")
        print(f"| {r['scenario']} | {r['space']['median']:.2f} {r['unit']} | {r['space']['p90']:.2f} | {r['peer']} | "
              + (f"{peer['median']:.2f} | {r['ratio']:.2f} |" if peer else "- | - |"))
    out = os.path.join(ROOT, "bench", "results")
    os.makedirs(out, exist_ok=True)
    name = f"{datetime.date.today()}-{platform.node()}-net{'-' + args.isolation if args.isolation else ''}.json"
    with open(os.path.join(out, name), "w") as f:
        json.dump({"isolation": args.isolation or "gvisor", "rows": b.rows}, f, indent=1)


if __name__ == "__main__":
    main()
