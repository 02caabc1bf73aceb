"""The lifecycle: pause/resume keeps memory, suspend/resume writes everything to disk and
brings the same processes back, sync makes writes durable, snapshots and forks are
independent copies, idle timeouts suspend, and illegal transitions are refused.

Each check reads the sandbox's own state (a Python process holding a dict of 100,000 entries
and a counter) before and after, through the API, as a user would.
"""

import json
import os
import subprocess

from conftest import collect, event_bytes, q, wait_until, gvisor_only

# A process with memory worth keeping: a 100,000-entry dict, and a counter it writes to
# /dev/shm/n every 50 ms (a tmpfs: memory too, so it never writes to the sandbox's disk).
# /dev/shm/check tells whether the dict is intact.
HOLDER = r"""
import time, itertools
d = {i: i * 3 for i in range(100000)}
for n in itertools.count():
    open("/dev/shm/n.tmp", "w").write(str(n)); __import__("os").replace("/dev/shm/n.tmp", "/dev/shm/n")
    open("/dev/shm/check.tmp", "w").write(str(sum(d.values()))); __import__("os").replace("/dev/shm/check.tmp", "/dev/shm/check")
    time.sleep(0.05)
"""
DICT_SUM = str(sum(i * 3 for i in range(100000)))


def start_holder(api, sbid):
    pid = api.ok("POST", f"/v1/sandboxes/{sbid}/processes", {"cmd": ["python3", "-c", HOLDER]}, expect=(201,))["pid"]
    wait_until(lambda: counter(api, sbid) is not None, 60, "the holder to start counting")
    return pid


def counter(api, sbid):
    r = api.exec(sbid, "cat /dev/shm/n 2>/dev/null; echo; cat /dev/shm/check 2>/dev/null")
    lines = r["stdout"].split("\n")
    return int(lines[0]) if lines[0].strip() else None


def state(api, sbid):
    return api.ok("GET", f"/v1/sandboxes/{sbid}")["state"]


def holder_alive(api, sbid, pid):
    procs = api.ok("GET", f"/v1/sandboxes/{sbid}/processes")["processes"]
    return any(p["pid"] == pid and p["state"] == "running" for p in procs)


def advances(api, sbid, after):
    """The counter moves past `after` (the same process goes on), and the dict is intact."""
    n = wait_until(lambda: (counter(api, sbid) or -1) > after and counter(api, sbid), 60, "the counter to advance")
    check = api.exec(sbid, ["cat", "/dev/shm/check"])["stdout"]
    assert check == DICT_SUM, "the process's dict changed"
    return n


def runsc_processes(sbid):
    """Host processes of runsc that belong to sandbox sbid."""
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "runsc" in line and sbid in line]


def test_pause_resume_keeps_the_process(api, sandbox):
    pid = start_holder(api, sandbox)
    before = counter(api, sandbox)
    sb = api.ok("POST", f"/v1/sandboxes/{sandbox}/pause")
    assert sb["state"] == "paused"
    assert state(api, sandbox) == "paused"
    again = api.ok("POST", f"/v1/sandboxes/{sandbox}/pause")  # idempotent
    assert again["state"] == "paused"
    assert api.ok("POST", f"/v1/sandboxes/{sandbox}/resume")["state"] == "running"
    advances(api, sandbox, before)
    assert holder_alive(api, sandbox, pid)


def test_suspend_resume_brings_back_the_same_process(api, sandbox):
    pid = start_holder(api, sandbox)
    api.ok("PUT", f"/v1/sandboxes/{sandbox}/files?path={q('/work/before.txt')}", raw=b"written before\n",
           expect=(201,))
    before = counter(api, sandbox)
    sb = api.ok("POST", f"/v1/sandboxes/{sandbox}/suspend")
    assert sb["state"] == "suspended"
    assert runsc_processes(sandbox) == [], "runsc processes of a suspended sandbox are left"
    assert api.ok("POST", f"/v1/sandboxes/{sandbox}/suspend")["state"] == "suspended"  # idempotent
    assert api.ok("POST", f"/v1/sandboxes/{sandbox}/resume")["state"] == "running"
    advances(api, sandbox, before)
    assert holder_alive(api, sandbox, pid)
    assert api.exec(sandbox, ["cat", "/work/before.txt"])["stdout"] == "written before\n"


def test_output_reattached_after_suspend(api, sandbox):
    pid = api.ok("POST", f"/v1/sandboxes/{sandbox}/processes",
                 {"cmd": ["python3", "-u", "-c", "import time\nfor i in range(100000):\n print(i); time.sleep(0.05)"]},
                 expect=(201,))["pid"]
    with api.stream("GET", f"/v1/sandboxes/{sandbox}/processes/{pid}/output") as s:
        first = int(event_bytes(s.next_event()).split()[0])
    api.ok("POST", f"/v1/sandboxes/{sandbox}/suspend")
    api.ok("POST", f"/v1/sandboxes/{sandbox}/resume")
    with api.stream("GET", f"/v1/sandboxes/{sandbox}/processes/{pid}/output") as s:
        seen = b""
        while len(seen.split()) < 5:
            seen += event_bytes(s.next_event())
    nums = [int(x) for x in seen.split()]
    assert nums[0] > first and nums == list(range(nums[0], nums[0] + len(nums))), nums


def test_exec_on_suspended_resumes_it_and_says_so(api, sandbox):
    api.exec(sandbox, "echo kept > /tmp/x")
    api.ok("POST", f"/v1/sandboxes/{sandbox}/suspend")
    status, hdrs, body = api.request("POST", f"/v1/sandboxes/{sandbox}/exec", {"cmd": ["cat", "/tmp/x"]})
    assert status == 200, body
    assert hdrs.get("space-resumed") == "true"
    assert json.loads(body)["stdout"] == "kept\n"
    assert state(api, sandbox) == "running"
    # and a file read on a paused one
    api.ok("POST", f"/v1/sandboxes/{sandbox}/pause")
    status, hdrs, body = api.request("GET", f"/v1/sandboxes/{sandbox}/files?path={q('/tmp/x')}")
    assert (status, body, hdrs.get("space-resumed")) == (200, b"kept\n", "true")


def test_illegal_transitions_answer_409_with_the_state(api, sandbox):
    api.ok("POST", f"/v1/sandboxes/{sandbox}/suspend")
    status, body = api.json("POST", f"/v1/sandboxes/{sandbox}/pause")
    assert status == 409 and body["error"]["code"] == "conflict" and body["error"]["state"] == "suspended"
    status, body = api.json("POST", f"/v1/sandboxes/{sandbox}/snapshot")
    assert status == 409 and body["error"]["state"] == "suspended"
    assert api.ok("POST", f"/v1/sandboxes/{sandbox}/resume")["state"] == "running"
    assert api.ok("POST", f"/v1/sandboxes/{sandbox}/resume")["state"] == "running"  # idempotent


@gvisor_only("it reads the file on the host's mount of the disk")
def test_sync_reaches_the_host_disk(api, spaced, sandbox):
    api.exec(sandbox, "echo durable > /work/d.txt")
    assert api.ok("POST", f"/v1/sandboxes/{sandbox}/sync")["state"] == "running"
    # the writable layer on the host holds the bytes once sync answered
    with open(os.path.join(spaced.state_dir, "sandboxes", sandbox, "layer", "upper", "work", "d.txt"), "rb") as f:
        assert f.read() == b"durable\n"


def test_snapshot_and_create_from_it(api, sandbox):
    start_holder(api, sandbox)
    api.exec(sandbox, "echo original > /work/f")
    snap = api.ok("POST", f"/v1/sandboxes/{sandbox}/snapshot", {"name": "s1"}, expect=(201,))
    assert snap["name"] == "s1" and snap["sandbox_id"] == sandbox
    assert state(api, sandbox) == "running"
    n = counter(api, sandbox)
    advances(api, sandbox, n)  # the source runs on
    assert any(s["id"] == snap["id"] for s in api.ok("GET", "/v1/snapshots")["snapshots"])
    api.exec(sandbox, "echo changed > /work/f")

    clone = api.ok("POST", "/v1/sandboxes", {"snapshot": snap["id"]}, expect=(201,))["id"]
    try:
        assert api.exec(clone, ["cat", "/work/f"])["stdout"] == "original\n"
        advances(api, clone, -1)  # the holder runs on in the clone, dict intact
    finally:
        api.delete(clone)
    assert api.exec(sandbox, ["cat", "/work/f"])["stdout"] == "changed\n"
    api.ok("DELETE", f"/v1/snapshots/{snap['id']}", expect=(204,))
    assert api.json("GET", f"/v1/snapshots/{snap['id']}")[0] == 404


COMPUTE = r"""
import time, sys
total = 0
for i in range(60):
    total += i
    open("/work/progress", "w").write(str(i))
    time.sleep(0.05)
open("/work/result", "w").write(str(total))
"""


def test_forks_finish_independently_and_share_no_files(api, sandbox):
    api.ok("POST", f"/v1/sandboxes/{sandbox}/processes", {"cmd": ["python3", "-c", COMPUTE]}, expect=(201,))
    wait_until(lambda: api.exec(sandbox, "cat /work/progress 2>/dev/null")["stdout"].strip(), 60, "progress")
    forks = [s["id"] for s in api.ok("POST", f"/v1/sandboxes/{sandbox}/fork", {"count": 3},
                                     expect=(201,))["sandboxes"]]
    try:
        assert len(set(forks)) == 3 and sandbox not in forks
        for i, f in enumerate(forks):
            api.exec(f, f"echo fork{i} > /work/mine")
        for i, f in enumerate(forks):
            # each finishes the computation on its own
            wait_until(lambda: api.exec(f, "cat /work/result 2>/dev/null")["stdout"], 60, f"fork {f} to finish")
            assert api.exec(f, ["cat", "/work/result"])["stdout"] == str(sum(range(60)))
            assert api.exec(f, ["cat", "/work/mine"])["stdout"] == f"fork{i}\n"
        assert api.exec(sandbox, "cat /work/mine 2>/dev/null || echo none")["stdout"] == "none\n"
    finally:
        for f in forks:
            api.delete(f)


def test_idle_timeout_suspends_and_next_exec_resumes(api):
    sbid = api.create(timeout=2)
    try:
        start_holder(api, sbid)
        sb = api.ok("GET", f"/v1/sandboxes/{sbid}")
        assert sb["timeout_at"] is not None
        wait_until(lambda: state(api, sbid) == "suspended", 60, "the idle timeout to suspend it")
        n = int(api.exec(sbid, ["cat", "/dev/shm/n"])["stdout"])
        advances(api, sbid, n)
    finally:
        api.delete(sbid)


def test_timeout_kill_removes_it(api):
    sbid = api.create(timeout=1, timeout_action="kill")
    wait_until(lambda: api.json("GET", f"/v1/sandboxes/{sbid}")[0] == 404, 60, "the timeout to delete it")


def test_resume_keeps_what_was_left_of_the_timeout(api):
    sbid = api.create(timeout=3600)
    try:
        api.ok("POST", f"/v1/sandboxes/{sbid}/suspend")
        left = api.ok("GET", f"/v1/sandboxes/{sbid}")["timeout_left_ms"]
        assert 0 < left <= 3600 * 1000
        api.ok("POST", f"/v1/sandboxes/{sbid}/resume")
        sb = api.ok("GET", f"/v1/sandboxes/{sbid}")
        assert sb["timeout_at"] is not None
        # a resume that sets a timeout gets that one
        api.ok("POST", f"/v1/sandboxes/{sbid}/suspend")
        sb = api.ok("POST", f"/v1/sandboxes/{sbid}/resume", {"timeout": 7})
        assert sb["timeout"] == 7
    finally:
        api.delete(sbid)


def test_an_image_of_another_format_is_refused_and_kept(spaced, sandbox):
    """An image says what it is (its format and its kind, docs/lifecycle.md). A snapshot or a
    suspended sandbox whose image is of a format this spaced does not restore (a newer one, or
    none: from before image formats) is refused with why, and nothing is lost: once the image
    is what it was, it restores."""
    api = spaced.api
    api.exec(sandbox, "echo kept > /work/f")
    snap = api.ok("POST", f"/v1/sandboxes/{sandbox}/snapshot", {}, expect=(201,))["id"]
    mark = os.path.join(spaced.state_dir, "snapshots", snap, "image", "space-image-format")
    with open(mark) as f:
        was = f.read()
    assert was.startswith("space-image 1 "), was
    try:
        with open(mark + ".new", "w") as f:
            f.write(was.replace("space-image 1 ", "space-image 999 "))
        os.replace(mark + ".new", mark)  # a copy: the snapshot's other links stay as they were
        status, body = api.json("POST", "/v1/sandboxes", {"snapshot": snap})
        assert status == 409 and "space-image 999" in body["error"]["message"], body
        os.unlink(mark)
        status, body = api.json("POST", "/v1/sandboxes", {"snapshot": snap})
        assert status == 409 and "has no format" in body["error"]["message"], body
    finally:
        with open(mark, "w") as f:
            f.write(was)
    clone = api.ok("POST", "/v1/sandboxes", {"snapshot": snap}, expect=(201,))["id"]
    try:
        assert api.exec(clone, ["cat", "/work/f"])["stdout"] == "kept\n"
    finally:
        api.delete(clone)
        api.ok("DELETE", f"/v1/snapshots/{snap}", expect=(204,))

    api.ok("POST", f"/v1/sandboxes/{sandbox}/suspend")
    mark = os.path.join(spaced.state_dir, "sandboxes", sandbox, "checkpoint", "space-image-format")
    os.unlink(mark)
    status, body = api.json("POST", f"/v1/sandboxes/{sandbox}/resume")
    assert status == 409 and "has no format" in body["error"]["message"], body
    assert state(api, sandbox) == "suspended"
    with open(mark, "w") as f:
        f.write(was)
    assert api.ok("POST", f"/v1/sandboxes/{sandbox}/resume")["state"] == "running"
    assert api.exec(sandbox, ["cat", "/work/f"])["stdout"] == "kept\n"
