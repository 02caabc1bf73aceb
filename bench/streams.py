#!/usr/bin/python3
"""bench/streams.py - what a stream held open costs spaced.

A background command's output stream (or an exec, or a wait) holds its request for the
command's whole life, so a tenant with hundreds of background commands holds hundreds of
requests at once. This starts its own spaced on TCP, opens N waits on one `sleep` (the
cheapest stream: no output) and N idle connections that never send a request (the peer: what
a connection alone costs), and reports spaced's resident memory, descriptors and threads per
stream and per idle connection (each kind from an address of its own, as HTTP_MAX_PER_IP counts
per address; idle ones are closed after 60 s, so it measures them at once). TENANT_MAX_STREAMS
and HTTP_MAX_PER_IP are set from it.

    /usr/bin/python3 bench/streams.py [--n N]
"""
import argparse
import datetime
import http.client
import json
import os
import platform
import resource
import socket
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))

import spacetest  # noqa: E402


def usage(pid):
    """spaced's resident KiB, descriptors and threads."""
    with open(f"/proc/{pid}/status") as f:
        st = dict(line.split(":", 1) for line in f)
    return (int(st["VmRSS"].split()[0]), len(os.listdir(f"/proc/{pid}/fd")), int(st["Threads"]))


# Descriptors spaced may open or close by itself meanwhile (a request's connection on its Unix
# socket, a sandbox's metrics sample): the count is waited for within this many.
SLACK = 16


def settle(pid, fds):
    """Waits until spaced holds at least fds - SLACK descriptors (well within the 60 s after
    which it closes idle connections); its usage then."""
    deadline = time.monotonic() + 50
    while usage(pid)[1] < fds - SLACK:
        if time.monotonic() > deadline:
            sys.exit(f"spaced never held {fds - SLACK} descriptors (has {usage(pid)[1]})")
        time.sleep(0.1)
    return usage(pid)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4 * args.n + 1024), hard))
    port = spacetest.free_port()
    d = spacetest.Daemon(prefix="space-bench-streams-", args=["--listen", f"127.0.0.1:{port}"])
    d.start()
    held = []
    try:
        tok = d.token("bench")
        sb = d.api.create()
        pid = d.api.ok("POST", f"/v1/sandboxes/{sb}/processes", {"cmd": ["sleep", "3600"]}, expect=(201,))["pid"]
        spid = d.proc.pid
        base = usage(spid)
        for _ in range(args.n):
            held.append(socket.create_connection(("127.0.0.1", port), source_address=("127.0.0.2", 0)))
        idle = settle(spid, base[1] + args.n)
        for _ in range(args.n):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=120, source_address=("127.0.0.3", 0))
            c.request("GET", f"/v1/sandboxes/{sb}/processes/{pid}/wait", headers={"Authorization": f"Bearer {tok}"})
            held.append(c)
        streams = settle(spid, idle[1] + args.n)
        # every wait must be held, none refused: a request of the same kind is still served
        assert d.api.ok("GET", f"/v1/sandboxes/{sb}/processes/{pid}/wait?timeout=0.1")["state"] == "running"
        res = {
            "n": args.n,
            "idle_connection": {"rss_kib": (idle[0] - base[0]) / args.n, "fds": (idle[1] - base[1]) / args.n,
                                "threads": (idle[2] - base[2]) / args.n},
            "stream": {"rss_kib": (streams[0] - idle[0]) / args.n, "fds": (streams[1] - idle[1]) / args.n,
                       "threads": (streams[2] - idle[2]) / args.n},
            "spaced_rss_kib": {"before": base[0], "idle": idle[0], "streams": streams[0]},
        }
    finally:
        for c in held:
            c.close()
        d.stop()
    print(f"| per {args.n} | resident KiB | descriptors | threads |")
    print("|---|---|---|---|")
    for k in ("idle_connection", "stream"):
        r = res[k]
        print(f"| {k.replace('_', ' ')} | {r['rss_kib']:.1f} | {r['fds']:.2f} | {r['threads']:.3f} |")
    out = os.path.join(ROOT, "bench", "results")
    os.makedirs(out, exist_ok=True)
    name = f"{datetime.date.today()}-{platform.node()}-streams.json"
    with open(os.path.join(out, name), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
