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

    def close(self):
        self.d.cleanup()
        shutil.rmtree(self.tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    b = Bench(args.quick)
    try:
        b.rebuild()
        b.imports()
    finally:
        b.close()
    print("| scenario | space (median) | peer | ratio |")
    print("|---|---|---|---|")
    for r in b.rows:
        print(f"| {r['scenario']} | {r['space']:.2f} {r['unit']} | {r['peer']}: {r['peer_median']:.2f} {r['unit']} |"
              f" {r['ratio']:.2f} |")
    out = os.path.join(ROOT, "bench", "results")
    os.makedirs(out, exist_ok=True)
    name = f"{datetime.date.today()}-{platform.node()}-templates.json"
    with open(os.path.join(out, name), "w") as f:
        json.dump({"rows": b.rows}, f, indent=1)


if __name__ == "__main__":
    main()
