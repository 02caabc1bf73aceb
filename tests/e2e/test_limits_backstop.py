"""Limits in two layers: what a user sees inside, and the host backstop.

Under runsc's ptrace platform, a host cgroup limit that fires kills the whole sandbox. So the
limits a user meets are inside: the agent's memory watcher kills the largest process
(test_memory.py), and per-process limits stop a fork bomb. When the host cgroup fires anyway,
spaced notices and marks the sandbox failed with the reason, keeping its files: tested here
with the watcher turned off by a test hook, since it would otherwise stop the allocation first.
"""

from conftest import q, wait_until, gvisor_only


@gvisor_only("the host cgroup backstop under gVisor; a microVM's memory is its RAM (tests/vm)")
def test_host_backstop_fails_the_sandbox_with_the_reason_and_keeps_files(make_daemon):
    api = make_daemon(env={"SPACE_TEST_NO_MEMORY_WATCH": "1"}).api
    neighbour = api.create()
    sbid = api.create(memory_mb=256)
    try:
        api.ok("PUT", f"/v1/sandboxes/{sbid}/files?path={q('/work/keep')}", raw=b"keep\n", expect=(201,))
        # three processes together far over the sandbox's memory and its backstop
        status, body = api.json("POST", f"/v1/sandboxes/{sbid}/exec", {
            "cmd": "for i in 1 2 3; do python3 -c 'x = b\"x\" * (200 * 1024 * 1024); "
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
        api.delete(neighbour)


@gvisor_only("the host pids backstop under gVisor; a guest's processes are its own kernel's")
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
        # the process limit inside stopped it (EAGAIN), or the memory its processes took got the
        # largest killed, or the host backstop failed the sandbox (memory or pids, with the
        # reason); the neighbour and the daemon are untouched
        if status == 200 and r["oom_kills"]:
            assert api.exec(sbid, ["echo", "alive"])["stdout"] == "alive\n"
        elif status == 200:
            assert "stopped after" in r["stdout"] and r["stdout"].split()[-1] == "11", r
        else:
            assert status == 500 and r["error"]["code"] == "sandbox_failed", (status, r)
            sb = api.ok("GET", f"/v1/sandboxes/{sbid}")
            assert sb["state"] == "failed" and sb["reason"].split(":")[0] in ("oom", "pids"), sb
        assert api.exec(neighbour, ["echo", "alive"])["stdout"] == "alive\n"
    finally:
        api.delete(sbid)
