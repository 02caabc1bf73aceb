#!/usr/bin/python3
"""bench/templates.py - what building and importing templates costs, each beside its peer.

Starts its own spaced (sandboxes without a network) and prints a Markdown table of medians;
results also go to bench/results/<date>-<host>-templates.json.

    /usr/bin/python3 bench/templates.py [--quick]

Scenarios:
  rebuild    `space template build` of a Dockerfile whose steps are all in the cache (COPY,
             RUN, WORKDIR, ENV), vs the same build the first time (every step run): target,
             an unchanged rebuild in 1 s or less (SPECIFICATION.md)
  import     `space template import NAME oci-archive:FILE` of an image of 200 MiB (40 files of
             5 MiB of random bytes, one layer), sent through the API, vs `umoci unpack` alone
             on the same image: target, 2x at most. Each round changes one small file, so its
             image is new to the cache.
  pool       create -> first exec of `true` from a warm pool of 5 (spaced --pool default=5, the
             pool full before each), vs the same without a pool: target, a median of 60 ms or
             less; a burst of 20 creates, one after another, against the pool of 5 (p50, p99,
             and how many the pool served: target p99 150 ms or less); what the pool costs:
             memory of a pooled sandbox (its cgroup's), CPU time to make one (its cgroup's
             and spaced's), and the time to fill the pool of 5 from empty.
  disk       host disk per sandbox of one template beyond what it writes: N sandboxes made
             (20 with --quick, else 100), the state dir's blocks before and after, divided by N
             (target 5 MiB or less).
"""
import argparse
import datetime
import json
import os
import platform
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))

import spacetest  # noqa: E402

DOCKERFILE = """\
FROM space:default
ENV APP=/srv/app
WORKDIR /srv/app
COPY src/ ./src/
RUN python3 -c "open('/srv/app/built.txt', 'w').write('x' * (1 << 20))"
RUN ls -R /srv/app > /srv/app/listing.txt
"""


def run(*argv, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=1800, **kw)
    if r.returncode != 0:
        raise SystemExit(f"{argv}: {r.stderr}")
    return r.stdout


class Bench:
    def __init__(self, quick):
        self.quick = quick
        self.d = spacetest.Daemon(prefix="space-bench-tpl-")
        self.d.start()
        self.env = {**os.environ, "SPACE_HOST": f"unix://{self.d.socket}"}
        self.tmp = tempfile.mkdtemp(prefix="space-bench-tpl-")
        self.rows = []

    def space(self, *args):
        return run(spacetest.SPACE, *args, env=self.env)

    def record(self, name, unit, ours, peer, peer_name):
        row = {"scenario": name, "unit": unit, "space": statistics.median(ours), "n": len(ours), "peer": peer_name,
               "peer_median": statistics.median(peer), "ratio": statistics.median(ours) / statistics.median(peer)}
        self.rows.append(row)
        print(f"  {name}: {row['space']:.2f} {unit} ({peer_name} {row['peer_median']:.2f})", file=sys.stderr)

    def rebuild(self):
        n = 3 if self.quick else 7
        ctx = os.path.join(self.tmp, "ctx")
        os.makedirs(os.path.join(ctx, "src"))
        with open(os.path.join(ctx, "Dockerfile"), "w") as f:
            f.write(DOCKERFILE)
        first, again = [], []
        for i in range(3 if self.quick else 5):
            with open(os.path.join(ctx, "src", "main.py"), "w") as f:  # new to the cache: every step runs
                f.write(f"print({secrets.token_hex(8)!r})\n")
            t = time.monotonic()
            self.space("template", "build", "-q", "-t", "bench", ctx)
            first.append(time.monotonic() - t)
            for _ in range(n // 2 + 1):
                t = time.monotonic()
                out = self.space("template", "build", "-t", "bench", ctx)
                again.append(time.monotonic() - t)
                assert out.count("(cached)") == 4, out
        self.record("template build, every step cached vs the first build", "s", again, first, "first build")

    def image(self, root):
        """An OCI layout of 200 MiB (one layer) under root, and its archive."""
        layout, bundle = os.path.join(root, "layout"), os.path.join(root, "bundle")
        run("umoci", "init", "--layout", layout)
        run("umoci", "new", "--image", f"{layout}:v1")
        run("umoci", "unpack", "--image", f"{layout}:v1", bundle)
        data = os.path.join(bundle, "rootfs", "data")
        os.makedirs(data)
        for i in range(40):
            with open(os.path.join(data, f"blob{i}"), "wb") as f:
                f.write(os.urandom(5 << 20))
        with open(os.path.join(data, "round"), "w") as f:
            f.write(secrets.token_hex(8))
        run("umoci", "repack", "--image", f"{layout}:v1", bundle)
        shutil.rmtree(bundle)
        archive = os.path.join(root, "image.tar")
        run("tar", "-C", layout, "-cf", archive, ".")
        return layout, archive

    def imports(self):
        rounds = 2 if self.quick else 4
        ours, peer = [], []
        for i in range(rounds):
            root = os.path.join(self.tmp, f"img{i}")
            os.makedirs(root)
            layout, archive = self.image(root)
            unpacked = os.path.join(root, "unpacked")
            t = time.monotonic()
            run("umoci", "unpack", "--image", f"{layout}:v1", unpacked)
            peer.append(time.monotonic() - t)
            shutil.rmtree(unpacked)
            t = time.monotonic()
            self.space("template", "import", f"img{i}", f"oci-archive:{archive}")
            ours.append(time.monotonic() - t)
            self.space("template", "rm", f"img{i}")  # its files leave the cache with it
            shutil.rmtree(root)
        self.record("template import of a 200 MiB OCI archive vs umoci unpack alone", "s", ours, peer,
                    "umoci unpack")

    def first_exec(self, d):
        """Seconds from a create's request to its first exec of `true` answered; the sandbox."""
        t = time.monotonic()
        sbid = d.api.create()
        assert d.api.exec(sbid, "true")["exit_code"] == 0
        return time.monotonic() - t, sbid

    def pool(self):
        size, rounds = 5, (5 if self.quick else 15)
        d = spacetest.Daemon(prefix="space-bench-pool-", args=["--pool", f"default={size}"])
        d.start()
        try:
            def full():
                p = d.api.ok("GET", "/v1/version")["pools"][0]
                return p["ready"] == p["size"] and p["filling"] == 0
            t = time.monotonic()
            spacetest.wait_until(full, 600, "the pool to fill")
            fill_s = time.monotonic() - t
            pooled = os.listdir(os.path.join(d.state_dir, "sandboxes"))
            mem = [cg("memory", x, "memory.usage_in_bytes") / (1 << 20) for x in pooled]
            cpu = [cg("cpuacct", x, "cpuacct.usage") / 1e9 for x in pooled]
            ours, peer = [], []
            for _ in range(rounds):
                spacetest.wait_until(full, 600, "the pool to fill again")
                s, sbid = self.first_exec(d)
                ours.append(s * 1000)
                d.api.delete(sbid)
                s, sbid = self.first_exec(self.d)
                peer.append(s * 1000)
                self.d.api.delete(sbid)
            self.record("create -> first exec from a warm pool of 5 vs without a pool", "ms", ours, peer, "no pool")
            spacetest.wait_until(full, 600, "the pool to fill again")
            claims = d.api.ok("GET", "/v1/version")["pools"][0]["claims"]
            burst, made = [], []
            for _ in range(20):
                s, sbid = self.first_exec(d)
                burst.append(s * 1000)
                made.append(sbid)
            served = d.api.ok("GET", "/v1/version")["pools"][0]["claims"] - claims
            for sbid in made:
                d.api.delete(sbid)
            burst.sort()
            row = {"scenario": "burst of 20 creates -> first exec against a pool of 5", "unit": "ms",
                   "p50": statistics.median(burst), "p99": burst[-1], "served_by_pool": served,
                   "pooled_memory_mib": statistics.median(mem), "pooled_boot_cpu_s": statistics.median(cpu),
                   "fill_5_s": fill_s}
            self.rows.append(row)
            print(f"  burst: p50 {row['p50']:.0f} ms, p99 {row['p99']:.0f} ms, {served} of 20 from the pool; "
                  f"a pooled sandbox {row['pooled_memory_mib']:.0f} MiB, {row['pooled_boot_cpu_s']:.2f} s CPU to make; "
                  f"pool of 5 filled in {fill_s:.1f} s", file=sys.stderr)
        finally:
            d.cleanup()

    def disk(self):
        n = 20 if self.quick else 100
        state = self.d.state_dir
        before = blocks(state)
        made = [self.d.api.create(network=False) for _ in range(n)]
        self.d.api.ok("POST", f"/v1/sandboxes/{made[0]}/sync")
        per = (blocks(state) - before) / n / (1 << 20)
        for sbid in made:
            self.d.api.delete(sbid)
        row = {"scenario": f"host disk per sandbox of one template, {n} sandboxes", "unit": "MiB", "space": per,
               "n": n}
        self.rows.append(row)
        print(f"  disk: {per:.2f} MiB a sandbox over {n}", file=sys.stderr)

    def close(self):
        self.d.cleanup()
        shutil.rmtree(self.tmp, ignore_errors=True)


def cg(controller, sbid, name):
    with open(f"/sys/fs/cgroup/{controller}/space/{sbid}/{name}") as f:
        return int(f.read())


def blocks(path):
    """Bytes the files under path take on disk (allocated blocks; sparse files count as written)."""
    return int(subprocess.run(["du", "-s", "-B1", "-x", path], capture_output=True, text=True).stdout.split()[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=["rebuild", "import", "pool", "disk"])
    args = ap.parse_args()
    b = Bench(args.quick)
    try:
        for name, fn in (("rebuild", b.rebuild), ("import", b.imports), ("pool", b.pool), ("disk", b.disk)):
            if args.only in (None, name):
                fn()
    finally:
        b.close()
    print("| scenario | space (median) | peer | ratio |")
    print("|---|---|---|---|")
    for r in b.rows:
        if "peer" in r:
            print(f"| {r['scenario']} | {r['space']:.2f} {r['unit']} | {r['peer']}: {r['peer_median']:.2f} {r['unit']} |"
                  f" {r['ratio']:.2f} |")
        elif "p99" in r:
            print(f"| {r['scenario']} | p50 {r['p50']:.0f} ms, p99 {r['p99']:.0f} ms, {r['served_by_pool']} of 20 "
                  f"from the pool | a pooled sandbox: {r['pooled_memory_mib']:.0f} MiB, "
                  f"{r['pooled_boot_cpu_s']:.2f} s CPU to make; pool of 5 filled in {r['fill_5_s']:.1f} s | |")
        else:
            print(f"| {r['scenario']} | {r['space']:.2f} {r['unit']} | | |")
    out = os.path.join(ROOT, "bench", "results")
    os.makedirs(out, exist_ok=True)
    name = f"{datetime.date.today()}-{platform.node()}-templates.json"
    with open(os.path.join(out, name), "w") as f:
        json.dump({"rows": b.rows}, f, indent=1)


if __name__ == "__main__":
    main()
