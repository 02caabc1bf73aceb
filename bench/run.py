#!/usr/bin/python3
"""bench/run.py - space against raw runsc on the same template, in one run.

Starts its own spaced (temporary state dir and socket, the shared template cache), then runs
each scenario alternating space and raw runsc so that drift of this shared machine hits both,
and prints a Markdown table of medians, p90 and the ratio space/runsc. Results also go to
bench/results/<date>-<host>.json with a description of the machine.

    /usr/bin/python3 bench/run.py [--quick] [--only NAME[,NAME...]]

Scenarios (--only takes their names):
  exec       round trip of `true` through the API and through the Python SDK in a running sandbox
             (vs runsc exec, native)
  exec_python  round trip of `python3 -c pass` (vs runsc exec, native)
  create     create -> first exec of `true` done (vs runsc run of `true`); and from a snapshot
  stream     stdout of `head -c 1G /dev/zero` through the API (vs runsc exec)
  files      upload and download of 256 MiB through the API (vs a native copy)
  lifecycle  pause/resume; suspend/resume of an idle Python sandbox and of one holding 200 MiB
             (vs runsc checkpoint + restore of the same contents); host memory before and after;
             snapshot; fork of 4
  concurrent 20 creates at once: latency distribution and throughput
  density    50, 100, 200 idle sandboxes (Python waiting on input): PSS total and per sandbox,
             spaced's own memory, the host CPU they use (over IDLE_WINDOW_S, from /proc/stat,
             in all and per sandbox), exec latency of one sandbox meanwhile
  noisy      exec latency of one sandbox while a neighbour runs a CPU hog, then a fork bomb
Published figures of systems that cannot run here are printed separately, never in a ratio.
"""
import argparse
import concurrent.futures
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
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
sys.path.insert(0, os.path.join(ROOT, "sdk", "python"))

from space import Sandbox  # noqa: E402  (the Python SDK, from the tree)


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
             "--agent", os.path.join(BUILD, "space-agent"),
             # a bench sends nothing beyond the machine (tests/README.md): its sandboxes' networks
             # are made (their cost is part of every figure) and lead nowhere
             "--default-egress", "none", "--net-transit", "10.215.0.0/16"], stdout=self.log, stderr=self.log)
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

    def record(self, name, unit, ours, raw, native=None):
        row = {"scenario": name, "unit": unit, "space": summary(ours)}
        if raw:
            row["runsc"] = summary(raw)
            row["ratio"] = row["space"]["median"] / row["runsc"]["median"]
        if native:
            row["native"] = summary(native)
        print(f"  {name}: {row['space']['median']:.1f} {unit}", file=sys.stderr)
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
        sdk_sb = Sandbox.connect(sb["id"], host=f"unix://{self.sockpath}")
        ours, sdk, raw, native = [], [], [], []
        for _ in range(n):
            t = time.perf_counter()
            self.api.call("POST", f"/v1/sandboxes/{sb['id']}/exec", {"cmd": ["/bin/true"]})
            ours.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            sdk_sb.commands.run(["/bin/true"])
            sdk.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            self.runsc("exec", "--process", proc, cid, check=True)
            raw.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            subprocess.run(["/bin/true"], check=True)
            native.append((time.perf_counter() - t) * 1000)
        self.record("exec round trip of `true`", "ms", ours, raw, native=native)
        self.record("exec round trip of `true` through the Python SDK", "ms", sdk, raw, native=native)
        self.api.call("DELETE", f"/v1/sandboxes/{sb['id']}")
        self.raw_cleanup(d, cid)

    def create(self):
        n = 5 if self.quick else 10
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
        src = self.api.call("POST", "/v1/sandboxes", {})
        snap = self.api.call("POST", f"/v1/sandboxes/{src['id']}/snapshot", {})
        self.api.call("DELETE", f"/v1/sandboxes/{src['id']}")
        fromsnap = []
        for _ in range(n):
            t = time.perf_counter()
            sb = self.api.call("POST", "/v1/sandboxes", {"snapshot": snap["id"]})
            self.api.call("POST", f"/v1/sandboxes/{sb['id']}/exec", {"cmd": ["/bin/true"]})
            fromsnap.append((time.perf_counter() - t) * 1000)
            self.api.call("DELETE", f"/v1/sandboxes/{sb['id']}")
        self.api.call("DELETE", f"/v1/snapshots/{snap['id']}")
        self.record("create from a snapshot -> first exec of `true` done", "ms", fromsnap, raw)

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
        for _ in range(1):  # one 1 GiB round each: the slowest scenario by far
            t = time.perf_counter()
            got = self.api.stream_bytes(f"/v1/sandboxes/{sb['id']}/exec",
                                        {"cmd": ["head", "-c", size, "/dev/zero"], "stream": True})
            assert got == nbytes, got
            ours.append(nbytes / (1 << 20) / (time.perf_counter() - t))
            t = time.perf_counter()
            out = self.runsc("exec", "--process", proc, cid, stdout=subprocess.PIPE, check=True)
            assert len(out.stdout) == nbytes
            raw.append(nbytes / (1 << 20) / (time.perf_counter() - t))
        self.record(f"stdout of `head -c {size} /dev/zero`", "MiB/s", ours, raw)
        self.api.call("DELETE", f"/v1/sandboxes/{sb['id']}")
        self.raw_cleanup(d, cid)

    def raw_running(self, argv):
        d, cid = self.raw_bundle(argv)
        self.runsc("run", "--detach", "--bundle", f"{d}/bundle", cid, check=True)
        return d, cid

    def raw_process(self, d, name, argv):
        path = os.path.join(d, name)
        with open(path, "w") as f:
            json.dump({"args": argv, "env": ["PATH=/usr/local/bin:/usr/bin:/bin"], "cwd": "/",
                       "user": {"uid": 0, "gid": 0}}, f)
        return path

    def exec_python(self):
        n = 10 if self.quick else 20
        sb = self.api.call("POST", "/v1/sandboxes", {})
        d, cid = self.raw_running(["/bin/sleep", "100000"])
        proc = self.raw_process(d, "py.json", ["/usr/bin/python3", "-c", "pass"])
        ours, raw, native = [], [], []
        for _ in range(n):
            t = time.perf_counter()
            self.api.call("POST", f"/v1/sandboxes/{sb['id']}/exec", {"cmd": ["python3", "-c", "pass"]})
            ours.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            self.runsc("exec", "--process", proc, cid, check=True)
            raw.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            subprocess.run(["python3", "-c", "pass"], check=True)
            native.append((time.perf_counter() - t) * 1000)
        self.record("exec round trip of `python3 -c pass`", "ms", ours, raw, native=native)
        self.api.call("DELETE", f"/v1/sandboxes/{sb['id']}")
        self.raw_cleanup(d, cid)

    def files(self):
        size = 64 << 20 if self.quick else 256 << 20
        sb = self.api.call("POST", "/v1/sandboxes", {})
        src = os.path.join(self.tmp, "blob")
        with open(src, "wb") as f:
            f.write(os.urandom(size))
        up, down, native = [], [], []
        for _ in range(1 if self.quick else 3):
            t = time.perf_counter()
            c = UnixHTTP(self.sockpath)
            with open(src, "rb") as f:
                c.request("PUT", f"/v1/sandboxes/{sb['id']}/files?path=/work/blob", body=f,
                          headers={"Content-Length": str(size)})
                r = c.getresponse()
                r.read()
            c.close()
            up.append(size / (1 << 20) / (time.perf_counter() - t))
            t = time.perf_counter()
            c = UnixHTTP(self.sockpath)
            c.request("GET", f"/v1/sandboxes/{sb['id']}/files?path=/work/blob")
            r = c.getresponse()
            got = 0
            while True:
                chunk = r.read(1 << 20)
                if not chunk:
                    break
                got += len(chunk)
            c.close()
            assert got == size, got
            down.append(size / (1 << 20) / (time.perf_counter() - t))
            t = time.perf_counter()
            shutil.copyfile(src, src + ".copy")
            native.append(size / (1 << 20) / (time.perf_counter() - t))
        mib = size >> 20
        self.record(f"file upload of {mib} MiB", "MiB/s", up, None, native=native)
        self.record(f"file download of {mib} MiB", "MiB/s", down, None, native=native)
        self.api.call("DELETE", f"/v1/sandboxes/{sb['id']}")

    def lifecycle(self):
        n = 5 if self.quick else 15
        sb = self.api.call("POST", "/v1/sandboxes", {})
        d, cid = self.raw_running(["/bin/sleep", "100000"])
        ours_p, ours_r, raw_p, raw_r = [], [], [], []
        for _ in range(n * 2):
            t = time.perf_counter(); self.api.call("POST", f"/v1/sandboxes/{sb['id']}/pause")
            ours_p.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter(); self.api.call("POST", f"/v1/sandboxes/{sb['id']}/resume")
            ours_r.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter(); self.runsc("pause", cid, check=True)
            raw_p.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter(); self.runsc("resume", cid, check=True)
            raw_r.append((time.perf_counter() - t) * 1000)
        self.record("pause", "ms", ours_p, raw_p)
        self.record("resume from paused", "ms", ours_r, raw_r)
        self.api.call("DELETE", f"/v1/sandboxes/{sb['id']}")
        self.raw_cleanup(d, cid)
        for label, heap in (("idle Python", 0), ("Python holding 200 MiB", 200)):
            prog = f"import sys; x = bytearray({heap} * 1024 * 1024); x[::4096] = b'x' * len(x[::4096]); sys.stdin.read()"
            sb = self.api.call("POST", "/v1/sandboxes", {})
            self.api.call("POST", f"/v1/sandboxes/{sb['id']}/processes", {"cmd": ["python3", "-c", prog], "stdin_open": True})
            d, cid = self.raw_running(["/usr/bin/python3", "-c", prog.replace("sys.stdin.read()", "__import__('time').sleep(10**6)")])
            time.sleep(2)  # both programs allocate; a benchmark, not a test: the settle time is part of the setup
            os_s, os_r, raw_s, raw_r, freed = [], [], [], [], []
            for i in range(2 if self.quick else 4):
                before = used_mib()
                t = time.perf_counter(); self.api.call("POST", f"/v1/sandboxes/{sb['id']}/suspend")
                os_s.append((time.perf_counter() - t) * 1000)
                freed.append(before - used_mib())
                t = time.perf_counter(); self.api.call("POST", f"/v1/sandboxes/{sb['id']}/resume")
                os_r.append((time.perf_counter() - t) * 1000)
                img = os.path.join(d, f"img{i}")
                os.makedirs(img)
                t = time.perf_counter(); self.runsc("checkpoint", f"--image-path={img}", cid, check=True)
                raw_s.append((time.perf_counter() - t) * 1000)
                self.runsc("delete", "--force", cid, capture_output=True)
                t = time.perf_counter()
                self.runsc("restore", "--detach", "--bundle", f"{d}/bundle", f"--image-path={img}", cid, check=True)
                raw_r.append((time.perf_counter() - t) * 1000)
            self.record(f"suspend of an {label} sandbox" if label.startswith("idle") else f"suspend of a {label}", "ms", os_s, raw_s)
            self.record(f"resume from suspended ({label})", "ms", os_r, raw_r)
            self.record(f"host memory freed by suspend ({label})", "MiB", freed, None)
            self.api.call("DELETE", f"/v1/sandboxes/{sb['id']}")
            self.raw_cleanup(d, cid)
        sb = self.api.call("POST", "/v1/sandboxes", {})
        snaps, forks = [], []
        for _ in range(2 if self.quick else 4):
            t = time.perf_counter(); s = self.api.call("POST", f"/v1/sandboxes/{sb['id']}/snapshot", {})
            snaps.append((time.perf_counter() - t) * 1000)
            self.api.call("DELETE", f"/v1/snapshots/{s['id']}")
        for _ in range(1 if self.quick else 2):
            t = time.perf_counter(); made = self.api.call("POST", f"/v1/sandboxes/{sb['id']}/fork", {"count": 4})
            forks.append((time.perf_counter() - t) * 1000)
            for f in made["sandboxes"]:
                self.api.call("DELETE", f"/v1/sandboxes/{f['id']}")
        self.record("snapshot of a running sandbox", "ms", snaps, None)
        self.record("fork into 4", "ms", forks, None)
        self.api.call("DELETE", f"/v1/sandboxes/{sb['id']}")

    def concurrent(self):
        n = 8 if self.quick else 20
        lat, ids, lock = [], [], threading.Lock()

        def one():
            t = time.perf_counter()
            sb = self.api.call("POST", "/v1/sandboxes", {})
            with lock:
                lat.append((time.perf_counter() - t) * 1000)
                ids.append(sb["id"])
        t0 = time.perf_counter()
        ts = [threading.Thread(target=one) for _ in range(n)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        total = time.perf_counter() - t0
        self.record(f"{n} concurrent creates: latency", "ms", lat, None)
        self.record(f"{n} concurrent creates: throughput", "creates/s", [n / total], None)
        self.delete_all(ids)

    def delete_all(self, ids):
        """Deletes sandboxes a few at a time (teardown, not measured)."""
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda i: self.api.call("DELETE", f"/v1/sandboxes/{i}"), ids))

    def density(self):
        steps = (10, 20) if self.quick else (50, 100, 200)
        ids = []
        idle = ["python3", "-c", "import sys; sys.stdin.read()"]
        def one(_):
            sb = self.api.call("POST", "/v1/sandboxes", {"memory_mb": 128})
            self.api.call("POST", f"/v1/sandboxes/{sb['id']}/processes", {"cmd": idle, "stdin_open": True})
            return sb["id"]
        for target in steps:
            # set-up, not measured: three creates at a time
            with concurrent.futures.ThreadPoolExecutor(3) as pool:
                ids += pool.map(one, range(target - len(ids)))
            pss = pss_mib(self.state)
            rss = rss_mib(self.proc.pid)
            cpu = host_busy_pct(IDLE_WINDOW_S)  # nothing else of this bench runs meanwhile
            lat = []
            for _ in range(10):
                t = time.perf_counter()
                self.api.call("POST", f"/v1/sandboxes/{ids[0]}/exec", {"cmd": ["true"]})
                lat.append((time.perf_counter() - t) * 1000)
            self.record(f"{target} idle sandboxes: host memory (PSS) in all", "MiB", [pss], None)
            self.record(f"{target} idle sandboxes: per sandbox (PSS)", "MiB", [pss / target], None)
            self.record(f"{target} idle sandboxes: spaced resident memory", "MiB", [rss], None)
            self.record(f"{target} idle sandboxes: host CPU in all (% of one core)", "%", [cpu], None)
            self.record(f"{target} idle sandboxes: host CPU per sandbox (% of one core)", "%", [cpu / target], None)
            self.record(f"{target} idle sandboxes: exec of `true` in one", "ms", lat, None)
        self.delete_all(ids)

    def noisy(self):
        n = 10 if self.quick else 30
        a = self.api.call("POST", "/v1/sandboxes", {})["id"]
        b = self.api.call("POST", "/v1/sandboxes", {"cpus": 1})["id"]

        def sample():
            out = []
            for _ in range(n):
                t = time.perf_counter()
                self.api.call("POST", f"/v1/sandboxes/{a}/exec", {"cmd": ["true"]})
                out.append((time.perf_counter() - t) * 1000)
            return out
        base = sample()
        hog = self.api.call("POST", f"/v1/sandboxes/{b}/processes",
                            {"cmd": ["sh", "-c", "for i in 1 2 3 4; do python3 -c 'while True: pass' & done; wait"]})
        hogged = sample()
        self.api.call("POST", f"/v1/sandboxes/{b}/processes/{hog['pid']}/signal", {"signal": 9})
        self.api.call("POST", f"/v1/sandboxes/{b}/processes",
                      {"cmd": ["python3", "-c", "import os, time\nwhile True:\n try:\n  os.fork() or time.sleep(60)\n except OSError: time.sleep(0.1)"]})
        bombed = sample()
        self.record("exec `true`, neighbour idle", "ms", base, None)
        self.record("exec `true`, neighbour runs 4 CPU hogs", "ms", hogged, None)
        self.record("exec `true`, neighbour runs a fork bomb", "ms", bombed, None)
        for i in (a, b):
            self.api.call("DELETE", f"/v1/sandboxes/{i}")

    def close(self):
        # spaced leaves its sandboxes running when it stops (by design): a bench that failed
        # midway deletes what it made first, or they stay behind and load every later run
        if self.proc.poll() is None:
            try:
                left = [sb["id"] for sb in self.api.call("GET", "/v1/sandboxes")["sandboxes"]]
                self.delete_all(left)
            except (OSError, RuntimeError) as e:
                print(f"bench: cannot delete the sandboxes it made: {e}", file=sys.stderr)
        self.proc.terminate()
        self.proc.wait()
        spaced_runsc = ["runsc", "--root", os.path.join(self.state, "runsc")]
        for line in subprocess.run([*spaced_runsc, "list", "--quiet"], capture_output=True, text=True).stdout.split():
            subprocess.run([*spaced_runsc, "delete", "--force", line], capture_output=True)
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


def used_mib():
    """Host memory in use (MemTotal - MemAvailable), MiB."""
    info = {}
    with open("/proc/meminfo") as f:
        for line in f:
            k, v = line.split(":")
            info[k] = int(v.split()[0])
    return (info["MemTotal"] - info["MemAvailable"]) / 1024


IDLE_WINDOW_S = 20  # the density bench's window for the host CPU idle sandboxes use


def host_busy_pct(window):
    """The host's CPU time used over the next `window` seconds, from /proc/stat (every CPU's
    user, nice, system, irq, softirq and steal time), as a percentage of one core."""
    def busy():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v) - v[3] - v[4]  # all but idle and iowait
    b0, t0 = busy(), time.monotonic()
    time.sleep(window)  # the measurement window itself, not a wait for anything
    return 100 * (busy() - b0) / os.sysconf("SC_CLK_TCK") / (time.monotonic() - t0)


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def pss_mib(state):
    """PSS of every runsc process of this state dir, MiB: shared pages counted once."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            if state.encode() not in cmd or b"runsc" not in cmd and b"exe" not in cmd:
                continue
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


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
    out = ["| scenario | unit | space median | p90 | p99 | raw runsc median | p90 | space/runsc | native median |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s = r["space"]
        w = r.get("runsc")
        nat = r.get("native")
        out.append(f"| {r['scenario']} | {r['unit']} | {s['median']:.1f} | {s['p90']:.1f} | {s['p99']:.1f} | "
                   + (f"{w['median']:.1f} | {w['p90']:.1f} | {r['ratio']:.2f} | " if w else "- | - | - | ")
                   + (f"{nat['median']:.1f} |" if nat else "- |"))
    return "\n".join(out)


# Figures published by systems that cannot run on this machine (no VT-x here, or not packaged).
# Quoted with their source; never part of a ratio.
QUOTED = [
    ("Firecracker", "VMM start to API socket: 8 CPU ms (wall clock typically ~12 ms)",
     "https://github.com/firecracker-microvm/firecracker/blob/main/SPECIFICATION.md"),
    ("Firecracker", "VMM memory overhead <= 5 MiB for a 1 vCPU / 128 MiB microVM",
     "https://github.com/firecracker-microvm/firecracker/blob/main/SPECIFICATION.md"),
    ("Firecracker", "5 microVM creations per host core per second",
     "https://github.com/firecracker-microvm/firecracker/blob/main/docs/design.md"),
]


def quoted_table():
    out = ["| system (quoted, not measured here) | figure | source |", "|---|---|---|"]
    out += [f"| {s} | {fig} | {src} |" for s, fig, src in QUOTED]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer rounds and smaller transfers")
    ap.add_argument("--only", default="", help="comma-separated scenario names (see the top of this file)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("bench: needs root (it runs runsc and mounts overlays)")
    # a timeout or Ctrl-C still removes what the bench made (its spaced and sandboxes)
    import signal
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    b = Bench(args.quick)
    scenarios = {"exec": b.exec_rtt, "exec_python": b.exec_python, "create": b.create, "stream": b.stream,
                 "files": b.files, "lifecycle": b.lifecycle, "concurrent": b.concurrent,
                 "density": b.density, "noisy": b.noisy}
    only = [s for s in args.only.split(",") if s] or list(scenarios)
    t0 = time.monotonic()
    try:
        for name in only:
            print(f"running {name}...", file=sys.stderr)
            t = time.monotonic()
            scenarios[name]()
            print(f"  ({name}: {time.monotonic() - t:.0f} s)", file=sys.stderr)
    finally:
        b.close()
    print(table(b.rows))
    print()
    print(quoted_table())
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    out = os.path.join(ROOT, "bench", "results",
                       f"{datetime.date.today().isoformat()}-{socket.gethostname()}.json")
    with open(out, "w") as f:
        json.dump({"machine": machine(), "quick": args.quick, "results": b.rows,
                   "quoted": [{"system": s, "figure": fig, "source": src} for s, fig, src in QUOTED]}, f, indent=1)
    print(f"\nwritten to {out}; the run took {time.monotonic() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
