"""The daemon itself: a crash and a restart leave running sandboxes running
and usable, and the command line it is started with works as documented.

Each test here runs its own spaced (own state dir and socket), so the
session's daemon is never disturbed.
"""

import os
import subprocess
import signal
import stat
import tempfile

from conftest import AGENT, ROOT, collect, event_bytes, q, wait_usable, gvisor_only


# Prints a counter every 50 ms, echoes stdin lines, says bye at end of stdin.
TICKER = r"""
import select, sys
i = 0
while True:
    r, _, _ = select.select([sys.stdin], [], [], 0.05)
    if r:
        line = sys.stdin.readline()
        if not line:
            break
        print("got", line.strip(), flush=True)
    print(i, flush=True)
    i += 1
print("bye", flush=True)
"""


def read_until(stream, pred, what):
    """Reads output events until pred(bytes so far) holds; the bytes."""
    got = b""
    while not pred(got):
        ev = stream.next_event()
        assert ev is not None, f"stream ended before {what}: {got[-200:]!r}"
        assert ev["type"] in ("stdout", "stderr"), (what, ev)
        got += event_bytes(ev)
    return got


def counts(b):
    """The counter values in the complete lines of b."""
    return [int(x) for x in b[:b.rfind(b"\n") + 1].split() if x.isdigit()]


def crash_and_restart(make_daemon):
    """A daemon with a sandbox, a file and a running background process, SIGKILLed and restarted."""
    d = make_daemon()
    api = d.api
    sbid = api.create(metadata={"who": "restart"})
    api.ok("PUT", f"/v1/sandboxes/{sbid}/files?path={q('/work/keep.txt')}", raw=b"still here\n", expect=(201,))
    pid = api.ok("POST", f"/v1/sandboxes/{sbid}/processes", {"cmd": ["python3", "-u", "-c", TICKER],
                                                             "stdin_open": True}, expect=(201,))["pid"]
    api.ok("POST", f"/v1/sandboxes/{sbid}/processes/{pid}/stdin", raw=b"before\n", expect=(204,))
    with api.stream("GET", f"/v1/sandboxes/{sbid}/processes/{pid}/output") as s:
        seen = read_until(s, lambda b: b"got before\n" in b and len(counts(b)) >= 2, "output before the crash")

    d.kill(signal.SIGKILL)
    d.start()
    return d, sbid, pid, max(counts(seen))


def test_sigkill_and_restart_keeps_sandboxes_files_and_processes(make_daemon):
    d, sbid, pid, last_count = crash_and_restart(make_daemon)
    api = d.api

    sb = api.ok("GET", f"/v1/sandboxes/{sbid}")
    assert sb["state"] == "running", sb
    assert sb["metadata"] == {"who": "restart"}
    assert [x["id"] for x in api.ok("GET", "/v1/sandboxes")["sandboxes"]] == [sbid]

    # Until the agent has reconnected, requests that need it get 503 (docs/api.md); no longer.
    wait_usable(api, sbid)

    status, _, body = api.request("GET", f"/v1/sandboxes/{sbid}/files?path={q('/work/keep.txt')}")
    assert (status, body) == (200, b"still here\n")
    res = api.exec(sbid, ["sh", "-c", "cat /work/keep.txt; echo exec-works"])
    assert res["stdout"] == "still here\nexec-works\n", res

    p = api.ok("GET", f"/v1/sandboxes/{sbid}/processes/{pid}")
    assert p["state"] == "running", p
    listed = {x["pid"]: x for x in api.ok("GET", f"/v1/sandboxes/{sbid}/processes")["processes"]}
    assert listed[pid]["state"] == "running"

    with api.stream("GET", f"/v1/sandboxes/{sbid}/processes/{pid}/output") as s:
        assert s.status == 200, s.body
        later = read_until(s, lambda b: len(counts(b)) >= 3, "live output after the restart")
        assert counts(later)[-1] > last_count
        api.ok("DELETE", f"/v1/sandboxes/{sbid}/processes/{pid}/stdin", expect=(204,))
        out, _, events = collect(s)
    assert out.endswith(b"bye\n")
    assert events[-1]["type"] == "exit" and events[-1]["exit_code"] == 0

    status, _, _ = api.request("DELETE", f"/v1/sandboxes/{sbid}")
    assert status == 204


def test_stdin_reaches_a_process_adopted_after_a_restart(make_daemon):
    d, sbid, pid, _ = crash_and_restart(make_daemon)
    api = d.api
    wait_usable(api, sbid)
    with api.stream("GET", f"/v1/sandboxes/{sbid}/processes/{pid}/output") as s:
        status, _, body = api.request("POST", f"/v1/sandboxes/{sbid}/processes/{pid}/stdin", raw=b"after\n",
                                      timeout=20)
        assert status == 204, body
        read_until(s, lambda b: b"got after\n" in b, "the line given after the restart")
        api.ok("DELETE", f"/v1/sandboxes/{sbid}/processes/{pid}/stdin", expect=(204,))
        out, _, events = collect(s)
    assert events[-1]["type"] == "exit" and events[-1]["exit_code"] == 0


def test_sigterm_leaves_sandboxes_running_for_the_next_daemon(make_daemon):
    d = make_daemon()
    sbid = d.api.create()
    d.api.exec(sbid, "echo kept > /work/k")
    d.stop()
    assert d.proc.returncode == 0, d.log_tail()
    d.start()
    assert d.api.ok("GET", f"/v1/sandboxes/{sbid}")["state"] == "running"
    wait_usable(d.api, sbid)
    assert d.api.exec(sbid, ["cat", "/work/k"])["stdout"] == "kept\n"


def test_agent_path_relative_to_the_working_directory(make_daemon):
    """`spaced --agent build/space-agent`, run from the repository, as the docs show."""
    rel = os.path.relpath(AGENT, ROOT)
    d = make_daemon(agent=rel, cwd=ROOT)
    status, body = d.api.json("POST", "/v1/sandboxes", {})
    assert status == 201, (status, body)
    res = d.api.exec(body["id"], ["echo", "ok"])
    assert res["stdout"] == "ok\n"


def test_the_state_directory_and_database_are_spaceds_alone(make_daemon):
    """spaced runs with umask 077: a state directory left open to others (0755) is made 0700 and
    state.db, its -wal and its -shm, even ones an older spaced made 0644, are 0600; the Unix
    socket keeps the mode it is given on purpose (0660)."""
    state = tempfile.mkdtemp(prefix="space-e2e-")
    os.chmod(state, 0o755)
    db = os.path.join(state, "state.db")
    for suffix in ("", "-wal", "-shm"):
        with open(db + suffix, "wb"):
            pass
        os.chmod(db + suffix, 0o644)
    d = make_daemon(state_dir=state)
    d.token("modes")  # a write through another connection to the database

    def mode(p):
        return stat.S_IMODE(os.stat(p).st_mode)
    assert mode(state) == 0o700
    files = {db + suffix: mode(db + suffix) for suffix in ("", "-wal", "-shm")}
    assert files == {p: 0o600 for p in files}, {p: oct(m) for p, m in files.items()}
    assert mode(d.socket) == 0o660


@gvisor_only("runsc's CLI processes; QEMU is adopted, not waited for")
def test_a_restart_waits_for_the_runsc_commands_the_killed_daemon_left(make_daemon):
    """A runsc command that outlives a killed spaced (here an exec that writes a file after a
    while) has ended before the next spaced answers: it adopts what lasts, not a state about
    to change."""
    d = make_daemon()
    sbid = d.api.create()
    d.kill(signal.SIGKILL)
    left = subprocess.Popen(["runsc", "--root", d.runsc_root(), "--platform=ptrace", "--network=none",
                             "--host-uds=open", "exec", sbid, "/bin/sh", "-c", "sleep 2; echo late > /work/late"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        d.start()
        assert left.poll() is not None, "spaced answered while the earlier runsc command still ran"
        assert d.api.exec(sbid, ["cat", "/work/late"])["stdout"] == "late\n"
        assert "waiting for runsc command" in d.log_tail(50)
    finally:
        left.kill()
        left.wait()
