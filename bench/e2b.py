#!/usr/bin/python3
"""bench/e2b.py - a command's round trip through the E2B front, beside space's own API.

Starts its own spaced with --e2b-listen (sandboxes without a network) and measures, in
alternating rounds so the machine's noise falls on both alike:

  e2b        `commands.run('true')` with E2B's JavaScript SDK (e2b@2.51.0, installed by
             tests/e2b/run.py's rule) through the front: what E2B programs see. E2B's SDKs run
             every command as `/bin/bash -l -c CMD`.
  sdk        `commands.run("true")` with space's Python SDK (`/bin/sh -c true`).
  api-bash   the E2B SDK's work through space's own API: an exec of `/bin/bash -l -c true`.

Target (the issue): e2b at most 1.3x space's own API and Python SDK. Prints a Markdown table;
results also go to bench/results/<date>-<host>-e2b.json.

    /usr/bin/python3 bench/e2b.py [--rounds R] [--n N]
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2b"))
sys.path.insert(0, os.path.join(ROOT, "sdk", "python"))

import spacetest  # noqa: E402
import run as e2b_suite  # noqa: E402  (tests/e2b/run.py: where the SDK is kept)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--n", type=int, default=30)
    args = ap.parse_args()
    e2b_suite.ensure_sdk()
    port = spacetest.free_port()
    d = spacetest.Daemon(prefix="space-bench-e2b-", args=["--e2b-listen", f"127.0.0.1:{port}"])
    d.start()
    import space
    res = {"e2b": [], "sdk": [], "api-bash": []}
    try:
        url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "E2B_API_URL": url, "E2B_SANDBOX_URL": url, "E2B_API_KEY": d.token("bench"),
               "SPACE_E2B_SDK": os.path.join(e2b_suite.SDK_DIR, "node_modules", "e2b")}
        sb = space.Sandbox.create(host=f"unix://{d.socket}")
        try:
            for _ in range(3):
                sb.commands.run("true")
                d.api.exec(sb.id, ["/bin/bash", "-l", "-c", "true"])
            for _ in range(args.rounds):
                out = subprocess.run(["node", os.path.join(ROOT, "bench", "e2b_run.mjs"), str(args.n)], env=env,
                                     capture_output=True, text=True, timeout=600, check=True).stdout
                res["e2b"] += json.loads(out.strip().splitlines()[-1])
                for _ in range(args.n):
                    t = time.monotonic()
                    sb.commands.run("true")
                    res["sdk"].append((time.monotonic() - t) * 1000)
                for _ in range(args.n):
                    t = time.monotonic()
                    r = d.api.exec(sb.id, ["/bin/bash", "-l", "-c", "true"])
                    assert r["exit_code"] == 0, r
                    res["api-bash"].append((time.monotonic() - t) * 1000)
        finally:
            sb.kill()
    finally:
        d.cleanup()
    rows = {k: {"median_ms": statistics.median(v), "p90_ms": pct(v, 90), "n": len(v)} for k, v in res.items()}
    for k in ("sdk", "api-bash"):
        rows[k]["e2b_ratio"] = rows["e2b"]["median_ms"] / rows[k]["median_ms"]
    print("| round trip of `true` | median | p90 | E2B front's median over it |")
    print("|---|---|---|---|")
    for k, what in (("e2b", "E2B SDK through the front (`bash -l -c true`)"), ("sdk", "space's Python SDK (`sh -c true`)"),
                    ("api-bash", "space's API, exec of `bash -l -c true`")):
        r = rows[k]
        ratio = f"{r['e2b_ratio']:.2f}x" if "e2b_ratio" in r else ""
        print(f"| {what} | {r['median_ms']:.1f} ms | {r['p90_ms']:.1f} ms | {ratio} |")
    out = os.path.join(ROOT, "bench", "results")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, f"{datetime.date.today()}-{platform.node()}-e2b.json"), "w") as f:
        json.dump({"rows": rows, "samples": res}, f, indent=1)


if __name__ == "__main__":
    main()
