"""Limits in two layers: what a user sees fail inside, and the host backstop.

Under runsc's ptrace platform, a host cgroup limit that fires kills the whole sandbox. So each
command gets per-process limits inside (address space, processes, open files), which fail the
one operation, and when the host cgroup fires anyway, spaced notices and marks the sandbox
failed with the reason, keeping its files.
"""

from conftest import q, wait_until


def test_one_allocation_past_memory_fails_inside_and_the_sandbox_lives(api):
    sbid = api.create(memory_mb=256)
    try:
        r = api.exec(sbid, ["python3", "-c", "x = bytearray(400 * 1024 * 1024)"])
        assert r["exit_code"] == 1 and "MemoryError" in r["stderr"], r
        assert api.exec(sbid, ["echo", "alive"])["stdout"] == "alive\n"
    finally:
        api.delete(sbid)


def test_per_process_limits_are_visible(api, sandbox):
    out = api.exec(sandbox, ["bash", "-c", "ulimit -v; ulimit -u; ulimit -n"])["stdout"].split()
    assert out == [str(512 * 1024), "1024", "65536"], out


def test_host_backstop_fails_the_sandbox_with_the_reason_and_keeps_files(api, neighbour):
    sbid = api.create(memory_mb=256)
    try:
        api.ok("PUT", f"/v1/sandboxes/{sbid}/files?path={q('/work/keep')}", raw=b"keep\n", expect=(201,))
        # three processes, each under its own limit, together over the sandbox's memory
        status, body = api.json("POST", f"/v1/sandboxes/{sbid}/exec", {
            "cmd": "for i in 1 2 3; do python3 -c 'x = bytearray(200 * 1024 * 1024); "
                   "import time; time.sleep(60)' & done; wait"})
        assert status == 500 and body["error"]["code"] == "sandbox_failed", (status, body)
        sb = api.ok("GET", f"/v1/sandboxes/{sbid}")
        assert sb["state"] == "failed" and sb["reason"].startswith("oom"), sb
        status, body = api.json("POST", f"/v1/sandboxes/{sbid}/exec", {"cmd": ["true"]})
        assert status == 409 and body["error"]["state"] == "failed"
        # the daemon and the neighbour carry on
        assert api.exec(neighbour, ["echo", "alive"])["stdout"] == "alive\n"
    finally:
        api.delete(sbid)


def test_fork_bomb_stays_inside(api, neighbour):
    sbid = api.create()
    try:
        status, r = api.json("POST", f"/v1/sandboxes/{sbid}/exec", {"timeout": 120, "cmd": ["python3", "-c", """
import os, time
n = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(20)
            os._exit(0)
        n += 1
except OSError as e:
    print("stopped after", n, e.errno)
"""]})
        # either the process limit inside stopped it (EAGAIN), or the host backstop failed the
        # sandbox (memory or pids, with the reason); the neighbour and the daemon are untouched
        if status == 200:
            assert "stopped after" in r["stdout"] and r["stdout"].split()[-1] == "11", r
        else:
            assert status == 500 and r["error"]["code"] == "sandbox_failed", (status, r)
            sb = api.ok("GET", f"/v1/sandboxes/{sbid}")
            assert sb["state"] == "failed" and sb["reason"].split(":")[0] in ("oom", "pids"), sb
        assert api.exec(neighbour, ["echo", "alive"])["stdout"] == "alive\n"
    finally:
        api.delete(sbid)
