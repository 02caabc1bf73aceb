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

With --part code (or all, the default) it measures the Code Interpreter too, in sandboxes of
template code-interpreter-v1 (built on the first create if the machine's cache lacks it):

  ci-code    `runCode('1+1')` with E2B's Code Interpreter SDK (@e2b/code-interpreter@2.8.0)
             through the front and spaced's port proxy to the template's server (an IPython
             kernel), after 3 to warm up; and, reported apart, the first runCode after create.
  sdk-code   `run_code("1+1")` with space's Python SDK in a sandbox of the same template (its
             own REPL), likewise; and its first run_code after create.

Target: ci-code at most 1.3x sdk-code (medians).

    /usr/bin/python3 bench/e2b.py [--rounds R] [--n N] [--part commands|code|all]
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

CI_TEMPLATE = "code-interpreter-v1"


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--part", choices=("commands", "code", "all"), default="all")
    args = ap.parse_args()
    e2b_suite.ensure_sdk(e2b_suite.SDK_DIR, "e2b", e2b_suite.SDK_VERSION)
    if args.part != "commands":
        e2b_suite.ensure_sdk(e2b_suite.CI_SDK_DIR, "@e2b/code-interpreter", e2b_suite.CI_SDK_VERSION)
    port, proxy_port = spacetest.free_port(), spacetest.free_port()
    d = spacetest.Daemon(prefix="space-bench-e2b-", args=["--e2b-listen", f"127.0.0.1:{port}",
                                                          "--proxy-listen", f"127.0.0.1:{proxy_port}"])
    d.start()
    res = {}
    try:
        url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "E2B_API_URL": url, "E2B_SANDBOX_URL": url, "E2B_API_KEY": d.token("bench"),
               "SPACE_E2B_SDK": os.path.join(e2b_suite.SDK_DIR, "node_modules", "e2b"),
               "SPACE_E2B_CI_SDK": os.path.join(e2b_suite.CI_SDK_DIR, "node_modules", "@e2b", "code-interpreter")}
        if args.part != "code":
            res.update(commands(d, env, args))
        if args.part != "commands":
            res.update(code(d, env, args))
    finally:
        d.cleanup()
    report(res)


def commands(d, env, args):
    """The round trips of `true`: e2b, sdk and api-bash."""
    import space
    res = {"e2b": [], "sdk": [], "api-bash": []}
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
    return res


def code(d, env, args):
    """runCode('1+1') through the Code Interpreter SDK and run_code("1+1") through space's SDK,
    each in its own sandbox of code-interpreter-v1; the first call after create apart."""
    import space
    res = {"ci-code": [], "sdk-code": [], "ci-first": [], "sdk-first": [], "ci-create": [], "sdk-create": []}
    for _ in range(args.rounds):
        out = subprocess.run(["node", os.path.join(ROOT, "bench", "e2b_code.mjs"), str(args.n)], env=env,
                             capture_output=True, text=True, timeout=4000, check=True).stdout
        ci = json.loads(out.strip().splitlines()[-1])
        res["ci-code"] += ci["ms"]
        res["ci-first"].append(ci["first"])
        res["ci-create"].append(ci["create"])
        t = time.monotonic()
        sb = space.Sandbox.create(template=CI_TEMPLATE, host=f"unix://{d.socket}", request_timeout=3600)
        res["sdk-create"].append((time.monotonic() - t) * 1000)
        try:
            t = time.monotonic()
            assert sb.run_code("1+1").text == "2"
            res["sdk-first"].append((time.monotonic() - t) * 1000)
            for _ in range(3):
                sb.run_code("1+1")
            for _ in range(args.n):
                t = time.monotonic()
                sb.run_code("1+1")
                res["sdk-code"].append((time.monotonic() - t) * 1000)
        finally:
            sb.kill()
    return res


def report(res):
    rows = {k: {"median_ms": statistics.median(v), "p90_ms": pct(v, 90), "n": len(v)} for k, v in res.items()}
    for k in ("sdk", "api-bash"):
        if k in rows:
            rows[k]["e2b_ratio"] = rows["e2b"]["median_ms"] / rows[k]["median_ms"]
    if "sdk-code" in rows:
        rows["sdk-code"]["e2b_ratio"] = rows["ci-code"]["median_ms"] / rows["sdk-code"]["median_ms"]
    print("| round trip | median | p90 | E2B's median over it |")
    print("|---|---|---|---|")
    for k, what in (("e2b", "E2B SDK through the front (`bash -l -c true`)"), ("sdk", "space's Python SDK (`sh -c true`)"),
                    ("api-bash", "space's API, exec of `bash -l -c true`"),
                    ("ci-code", "Code Interpreter SDK `runCode('1+1')` through the front"),
                    ("sdk-code", "space's Python SDK `run_code(\"1+1\")`"),
                    ("ci-first", "first `runCode` after create (Code Interpreter SDK)"),
                    ("sdk-first", "first `run_code` after create (space's SDK: its REPL starts)"),
                    ("ci-create", "create of code-interpreter-v1 (Code Interpreter SDK)"),
                    ("sdk-create", "create of code-interpreter-v1 (space's SDK)")):
        if k not in rows:
            continue
        r = rows[k]
        ratio = f"{r['e2b_ratio']:.2f}x" if "e2b_ratio" in r else ""
        print(f"| {what} | {r['median_ms']:.1f} ms | {r['p90_ms']:.1f} ms | {ratio} |")
    out = os.path.join(ROOT, "bench", "results")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, f"{datetime.date.today()}-{platform.node()}-e2b.json"), "w") as f:
        json.dump({"rows": rows, "samples": res}, f, indent=1)


if __name__ == "__main__":
    main()
