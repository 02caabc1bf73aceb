#!/usr/bin/python3
"""bench/lock.py - how long spaced holds its global lock under a lifecycle workload.

Starts a private spaced (temporary state dir and socket, the shared template cache) and, while
one thread drives transitions (create, pause/resume, suspend/resume, snapshot, delete), another
runs `true` in a sandbox of its own again and again: the exec's round trip is what a user of a
neighbouring sandbox feels of the lock. At exit spaced logs its lock figures (how often it was
held, in all, the longest hold, how many holds took 1 ms / 10 ms or more), which this reads.

    /usr/bin/python3 bench/lock.py [--rounds N] [--peer PATH-TO-OTHER-SPACED] [--trials K]

With --peer, the same workload runs alternately on this tree's spaced and on the peer (another
build, for example of an earlier commit), K trials each, so the drift of this shared machine
hits both; the table gives medians over the trials.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import Space  # noqa: E402  (bench/run.py's client of the API)

LOCK_LINE = re.compile(r"lock: held (\d+) times, ([\d.]+) ms in all, longest ([\d.]+) ms, "
                       r"(\d+) holds of 1 ms or more, (\d+) of 10 ms or more")


def call(sock, method, path, body=None):
    return Space(sock).call(method, path, body)


def trial(spaced, rounds):
    tmp = tempfile.mkdtemp(prefix="space-lockbench-")
    sock = os.path.join(tmp, "space.sock")
    logpath = os.path.join(tmp, "spaced.log")
    with open(logpath, "w") as log:
        proc = subprocess.Popen([spaced, "--state-dir", os.path.join(tmp, "state"), "--socket", sock,
                                 "--agent", os.path.join(BUILD, "space-agent")], stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 900
        while True:
            try:
                call(sock, "GET", "/v1/health")
                break
            except (OSError, RuntimeError):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("spaced did not start; see " + logpath)
                time.sleep(0.2)
        quiet = call(sock, "POST", "/v1/sandboxes", {})["id"]
        busy = call(sock, "POST", "/v1/sandboxes", {})["id"]
        done = threading.Event()
        lat = []

        def neighbour():
            while not done.is_set():
                t = time.perf_counter()
                call(sock, "POST", f"/v1/sandboxes/{quiet}/exec", {"cmd": ["true"]})
                lat.append((time.perf_counter() - t) * 1000)

        th = threading.Thread(target=neighbour)
        th.start()
        t0 = time.perf_counter()
        try:
            for _ in range(rounds):
                for verb in ("pause", "resume", "suspend", "resume"):
                    call(sock, "POST", f"/v1/sandboxes/{busy}/{verb}")
                snap = call(sock, "POST", f"/v1/sandboxes/{busy}/snapshot", {})
                call(sock, "DELETE", f"/v1/snapshots/{snap['id']}")
                extra = call(sock, "POST", "/v1/sandboxes", {})["id"]
                call(sock, "DELETE", f"/v1/sandboxes/{extra}")
        finally:
            done.set()
            th.join()
        wall = time.perf_counter() - t0
        for sb in (quiet, busy):
            call(sock, "DELETE", f"/v1/sandboxes/{sb}")
    finally:
        proc.terminate()
        proc.wait()
    with open(logpath) as f:
        m = [LOCK_LINE.search(line) for line in f]
    m = [x for x in m if x]
    shutil.rmtree(tmp, ignore_errors=True)
    if not m:
        raise SystemExit(f"{spaced} logged no lock figures (is it older than the lock report?)")
    holds, total, longest, over1, over10 = m[-1].groups()
    lat.sort()
    return {"holds": int(holds), "held ms": float(total), "longest ms": float(longest),
            "holds >= 1 ms": int(over1), "holds >= 10 ms": int(over10),
            "neighbour exec p50 ms": lat[len(lat) // 2], "neighbour exec p99 ms": lat[int(len(lat) * 0.99)],
            "neighbour exec max ms": lat[-1], "workload s": wall}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--peer", help="another spaced binary to compare with, in the same run")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("bench: needs root")
    runs = {"this tree": os.path.join(BUILD, "spaced")}
    if args.peer:
        runs["peer"] = args.peer
    results = {k: [] for k in runs}
    for t in range(args.trials):
        for name, spaced in runs.items():
            print(f"trial {t + 1}: {name}...", file=sys.stderr)
            results[name].append(trial(spaced, args.rounds))
    keys = list(results["this tree"][0])
    print("| figure (median of %d trials, %d rounds each) | %s |" % (args.trials, args.rounds, " | ".join(runs)))
    print("|---|" + "---|" * len(runs))
    for k in keys:
        print(f"| {k} | " + " | ".join(f"{statistics.median(r[k] for r in results[n]):.1f}" for n in runs) + " |")


if __name__ == "__main__":
    main()
