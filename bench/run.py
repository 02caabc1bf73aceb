#!/usr/bin/python3
"""bench/run.py - space against raw runsc on the same template, in one run.

Starts its own spaced (temporary state dir and socket, the shared template cache), then runs
each scenario alternating space and raw runsc so that drift of this shared machine hits both,
and prints a Markdown table of medians, p90 and the ratio space/runsc. Results also go to
bench/results/<date>-<host>.json with a description of the machine.

    /usr/bin/python3 bench/run.py [--quick] [--only NAME[,NAME...]]

Scenarios: exec (round trip of `true` in a running sandbox), create (create -> first exec of
`true` finished, against `runsc run` of `true`), stream (stdout of `head -c 1G /dev/zero`
through the API, against `runsc exec` of the same), idle50 (spaced's resident memory with 50
idle sandboxes).
"""
import argparse
import datetime
import http.client
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path, timeout=600):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


class Space:
    def __init__(self, sock):
        self.sock = sock

    def call(self, method, path, body=None):
        c = UnixHTTP(self.sock)
        c.request(method, path, body=None if body is None else json.dumps(body))
        r = c.getresponse()
        data = r.read()
        c.close()
        if r.status >= 300:
            raise RuntimeError(f"{method} {path}: {r.status} {data[:200]!r}")
        return json.loads(data) if data else None

    def stream_bytes(self, path, body):
        """Reads an NDJSON exec stream to the end; returns raw output bytes counted."""
        import base64
        c = UnixHTTP(self.sock)
        c.request("POST", path, body=json.dumps(body))
        r = c.getresponse()
        n = 0
        for line in r:
            ev = json.loads(line)
            if "data" in ev:
                n += len(ev["data"].encode())
            elif "data_b64" in ev:
                n += len(base64.b64decode(ev["data_b64"]))
        c.close()
        return n


def pct(xs, p):
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(p / 100 * (len(xs) - 1)))))
    return xs[k]


class Bench:
    def __init__(self, quick):
        self.quick = quick
        self.tmp = tempfile.mkdtemp(prefix="space-bench-")
        self.state = os.path.join(self.tmp, "state")
        self.sockpath = os.path.join(self.tmp, "space.sock")
        self.log = open(os.path.join(self.tmp, "spaced.log"), "w")
        self.proc = subprocess.Popen(
            [os.path.join(BUILD, "spaced"), "--state-dir", self.state, "--socket", self.sockpath,
             "--agent", os.path.join(BUILD, "space-agent")], stdout=self.log, stderr=self.log)
        self.api = Space(self.sockpath)
        deadline = time.monotonic() + 900
        while True:
            try:
                self.api.call("GET", "/v1/health")
                break
            except (OSError, RuntimeError):
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("spaced did not start; see " + self.log.name)
                time.sleep(0.2)
        self.template = self.api.call("GET", "/v1/templates")["templates"][0]
        with sqlite_path(self.state) as rootfs:
            self.rootfs = rootfs
        self.runsc_root = os.path.join(self.tmp, "runsc-raw")
        os.makedirs(self.runsc_root)
        self.raw_n = 0
        self.rows = []
        self.results = {}

    # raw runsc, same template, same flags as the gvisor driver
    def runsc(self, *args, **kw):
        return subprocess.run(["runsc", "--root", self.runsc_root, "--platform=ptrace", "--network=none",
                               "--host-uds=open", *args], **kw)

    def raw_bundle(self, argv):
        self.raw_n += 1
        d = os.path.join(self.tmp, f"raw{self.raw_n}")
        for sub in ("upper", "work", "rootfs", "bundle"):
            os.makedirs(os.path.join(d, sub))
        subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                        f"lowerdir={self.rootfs},upperdir={d}/upper,workdir={d}/work", f"{d}/rootfs"], check=True)
        spec = {"ociVersion": "1.0.2",
                "process": {"args": argv, "env": ["PATH=/usr/local/bin:/usr/bin:/bin"], "cwd": "/",
                            "user": {"uid": 0, "gid": 0}},
                "root": {"path": f"{d}/rootfs"}, "hostname": f"raw{self.raw_n}",
                "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"}],
                # the limits spaced gives a default sandbox: runsc's cgroup setup is part of the cost
                "linux": {"namespaces": [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount")],
                          "resources": {"memory": {"limit": 512 << 20}, "cpu": {"quota": 100000, "period": 100000},
                                        "pids": {"limit": 1024}},
                          "cgroupsPath": f"/space-bench/raw{self.raw_n}"}}
        with open(f"{d}/bundle/config.json", "w") as f:
            json.dump(spec, f)
        return d, f"raw{self.raw_n}"

    def raw_cleanup(self, d, cid):
        self.runsc("delete", "--force", cid, capture_output=True)
        for ctl in os.listdir("/sys/fs/cgroup"):
            for p in (f"/sys/fs/cgroup/{ctl}/space-bench/{cid}", f"/sys/fs/cgroup/{ctl}/space-bench"):
                try:
                    os.rmdir(p)
                except OSError:
                    pass
        subprocess.run(["umount", "-l", f"{d}/rootfs"], capture_output=True)
        shutil.rmtree(d, ignore_errors=True)

    def record(self, name, unit, ours, raw, better="lower"):
        row = {"scenario": name, "unit": unit, "space": summary(ours)}
        if raw:
            row["runsc"] = summary(raw)
            row["ratio"] = row["space"]["median"] / row["runsc"]["median"]
        self.rows.append(row)
        self.results[name] = row

    # scenarios ------------------------------------------------------------------------------
    def exec_rtt(self):
        n = 15 if self.quick else 60
        sb = self.api.call("POST", "/v1/sandboxes", {})
        d, cid = self.raw_bundle(["/bin/sleep", "100000"])
        self.runsc("run", "--detach", "--bundle", f"{d}/bundle", cid, check=True)
        proc = os.path.join(d, "true.json")
        with open(proc, "w") as f:
            json.dump({"args": ["/bin/true"], "env": ["PATH=/usr/bin:/bin"], "cwd": "/", "user": {"uid": 0, "gid": 0}}, f)
        ours, raw = [], []
        for _ in range(n):
            t = time.perf_counter()
            self.api.call("POST", f"/v1/sandboxes/{sb['id']}/exec", {"cmd": ["/bin/true"]})
            ours.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            self.runsc("exec", "--process", proc, cid, check=True)
            raw.append((time.perf_counter() - t) * 1000)
        self.record("exec round trip of `true`", "ms", ours, raw)
        self.api.call("DELETE", f"/v1/sandboxes/{sb['id']}")
        self.raw_cleanup(d, cid)

    def create(self):
        n = 5 if self.quick else 15
        ours, raw = [], []
        for _ in range(n):
            t = time.perf_counter()
            sb = self.api.call("POST", "/v1/sandboxes", {})
            self.api.call("POST", f"/v1/sandboxes/{sb['id']}/exec", {"cmd": ["/bin/true"]})
            ours.append((time.perf_counter() - t) * 1000)
            self.api.call("DELETE", f"/v1/sandboxes/{sb['id']}")
            t = time.perf_counter()
            d, cid = self.raw_bundle(["/bin/true"])
            self.runsc("run", "--bundle", f"{d}/bundle", cid, check=True)
            raw.append((time.perf_counter() - t) * 1000)
            self.raw_cleanup(d, cid)
        self.record("create -> first exec of `true` done", "ms", ours, raw)

    def stream(self):
        size = "256M" if self.quick else "1G"
        nbytes = 256 << 20 if self.quick else 1 << 30
        sb = self.api.call("POST", "/v1/sandboxes", {})
        d, cid = self.raw_bundle(["/bin/sleep", "100000"])
        self.runsc("run", "--detach", "--bundle", f"{d}/bundle", cid, check=True)
        proc = os.path.join(d, "head.json")
        with open(proc, "w") as f:
            json.dump({"args": ["/usr/bin/head", "-c", size, "/dev/zero"], "env": ["PATH=/usr/bin:/bin"],
                       "cwd": "/", "user": {"uid": 0, "gid": 0}}, f)
        ours, raw = [], []
        for _ in range(1 if self.quick else 3):
            t = time.perf_counter()
            got = self.api.stream_bytes(f"/v1/sandboxes/{sb['id']}/exec",
                                        {"cmd": ["head", "-c", size, "/dev/zero"], "stream": True})
            assert got == nbytes, got
            ours.append(nbytes / (1 << 20) / (time.perf_counter() - t))
            t = time.perf_counter()
            out = self.runsc("exec", "--process", proc, cid, stdout=subprocess.PIPE, check=True)
            assert len(out.stdout) == nbytes
            raw.append(nbytes / (1 << 20) / (time.perf_counter() - t))
        self.record(f"stdout of `head -c {size} /dev/zero`", "MiB/s", ours, raw, better="higher")
        self.api.call("DELETE", f"/v1/sandboxes/{sb['id']}")
        self.raw_cleanup(d, cid)

    def idle(self):
        n = 10 if self.quick else 50
        ids = [self.api.call("POST", "/v1/sandboxes", {})["id"] for _ in range(n)]
        rss = []
        for _ in range(3):
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        rss.append(int(line.split()[1]) / 1024)
        self.record(f"spaced resident memory, {n} idle sandboxes", "MiB", rss, None)
        for i in ids:
            self.api.call("DELETE", f"/v1/sandboxes/{i}")

    def close(self):
        self.proc.terminate()
        self.proc.wait()
        for line in self.runsc("list", "--quiet", capture_output=True, text=True).stdout.split():
            self.runsc("delete", "--force", line, capture_output=True)
        subprocess.run(["umount", "-l", *[os.path.join(self.tmp, d, "rootfs") for d in os.listdir(self.tmp)
                                          if d.startswith("raw")]], capture_output=True)
        shutil.rmtree(self.tmp, ignore_errors=True)


class sqlite_path:
    """The default template's rootfs path, from spaced's own database."""
    def __init__(self, state):
        self.state = state

    def __enter__(self):
        import sqlite3
        db = sqlite3.connect(os.path.join(self.state, "state.db"))
        (path,) = db.execute("SELECT path FROM templates WHERE name = 'default'").fetchone()
        db.close()
        return path

    def __exit__(self, *a):
        return False


def summary(xs):
    return {"n": len(xs), "median": statistics.median(xs), "p90": pct(xs, 90), "p99": pct(xs, 99)}


def machine():
    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem = int(f.readline().split()[1]) // 1024
    runsc = subprocess.run(["runsc", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_mib": mem, "kernel": platform.release(),
            "driver": "gvisor (ptrace)", "runsc": runsc, "host": socket.gethostname()}


def table(rows):
    out = ["| scenario | unit | space median | p90 | p99 | runsc median | p90 | space/runsc |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s = r["space"]
        if "runsc" in r:
            w = r["runsc"]
            out.append(f"| {r['scenario']} | {r['unit']} | {s['median']:.1f} | {s['p90']:.1f} | {s['p99']:.1f} | "
                       f"{w['median']:.1f} | {w['p90']:.1f} | {r['ratio']:.2f} |")
        else:
            out.append(f"| {r['scenario']} | {r['unit']} | {s['median']:.1f} | {s['p90']:.1f} | {s['p99']:.1f} | - | - | - |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer rounds and smaller transfers")
    ap.add_argument("--only", default="", help="comma-separated: exec,create,stream,idle")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("bench: needs root (it runs runsc and mounts overlays)")
    b = Bench(args.quick)
    scenarios = {"exec": b.exec_rtt, "create": b.create, "stream": b.stream, "idle": b.idle}
    only = [s for s in args.only.split(",") if s] or list(scenarios)
    try:
        for name in only:
            print(f"running {name}...", file=sys.stderr)
            scenarios[name]()
    finally:
        b.close()
    print(table(b.rows))
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    out = os.path.join(ROOT, "bench", "results",
                       f"{datetime.date.today().isoformat()}-{socket.gethostname()}.json")
    with open(out, "w") as f:
        json.dump({"machine": machine(), "quick": args.quick, "results": b.rows}, f, indent=1)
    print(f"\nwritten to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
