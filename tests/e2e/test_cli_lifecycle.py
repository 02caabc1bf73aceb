"""The lifecycle through the `space` command: pause, resume, suspend, sync, snapshot, fork
and create --from-snapshot, as a user at a shell would type them (docs/cli.md,
docs/lifecycle.md).

Each test checks what that user sees - stdout, stderr, the exit status - and, through
the API, what the command did. The state a sandbox keeps is a Python process counting
into /tmp/n every 100 ms: a counter that went on past its old value means the same
process survived. Everything a test makes (sandboxes, forks, snapshots) is removed after
it, whatever happened.
"""

import json
import re
import subprocess

import pytest

from conftest import wait_until

ID_LINE = re.compile(r"\A[0-9a-f]{12}\n\Z")
SNAPSHOT_LINE = re.compile(r"\As-[0-9a-f]+\n\Z")

# The README's example: a process whose state is a number it keeps counting up.
COUNTER = ('import time,itertools\n'
           'for i in itertools.count(): open("/tmp/n","w").write(str(i)); time.sleep(0.1)')


class Made:
    """What a test created: removed after it (sandboxes first, then snapshots)."""

    def __init__(self):
        self.sandboxes = []
        self.snapshots = []


@pytest.fixture
def made(api):
    m = Made()
    yield m
    for sbid in m.sandboxes:
        api.delete(sbid)
    for sid in m.snapshots:
        status, _, _ = api.request("DELETE", f"/v1/snapshots/{sid}")
        assert status in (204, 404), f"DELETE snapshot {sid}: {status}"


def ok(r):
    """A CompletedProcess of `space` that must have succeeded; returns its stdout."""
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr}"
    return r.stdout


def create(cli, made, *args):
    out = ok(cli("create", *args))
    assert ID_LINE.match(out), f"space create printed {out!r}"
    made.sandboxes.append(out.strip())
    return out.strip()


def state(api, sbid):
    return api.ok("GET", f"/v1/sandboxes/{sbid}")["state"]


def start_counter(cli, sbid):
    """`space exec -d` the counter; returns its pid once it has counted."""
    out = ok(cli("exec", "-d", sbid, "--", "python3", "-c", COUNTER))
    assert re.fullmatch(r"\d+\n", out), f"space exec -d printed {out!r}"
    wait_until(lambda: counter(cli, sbid) is not None, 60, "the counter to start")
    return int(out)


def counter(cli, sbid):
    """The counter as `space exec` reads it, or None while the file is being rewritten."""
    r = cli("exec", sbid, "--", "cat", "/tmp/n")
    assert r.returncode in (0, 1), r.stderr
    return int(r.stdout) if r.returncode == 0 and r.stdout.strip() else None


def advances(cli, sbid, after):
    """Waits until the counter of sbid is past `after`; returns the value seen."""
    return wait_until(lambda: (counter(cli, sbid) or -1) > after and counter(cli, sbid), 60,
                      f"the counter of {sbid} to go past {after}")


def running_pids(cli, sbid):
    procs = json.loads(ok(cli("ps", "--json", sbid)))
    return {p["pid"] for p in procs if p["state"] == "running"}


def runsc_processes(sbid):
    """Host processes of runsc that belong to sandbox sbid."""
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "runsc" in line and sbid in line]


def test_the_readme_lifecycle_through_the_cli(cli, api, made):
    sbid = create(cli, made)
    pid = start_counter(cli, sbid)

    # pause / resume: the counter goes on
    before = counter(cli, sbid) or 0
    assert ok(cli("pause", sbid)) == f"{sbid}\n"
    assert state(api, sbid) == "paused"
    assert ok(cli("resume", sbid)) == f"{sbid}\n"
    assert state(api, sbid) == "running"
    before = advances(cli, sbid, before)

    # suspend: nothing of the sandbox is left running on the host
    assert ok(cli("suspend", sbid)) == f"{sbid}\n"
    assert state(api, sbid) == "suspended"
    assert runsc_processes(sbid) == [], "runsc processes of a suspended sandbox are left"

    # resume: the same python process is still counting, from where it was
    assert ok(cli("resume", sbid)) == f"{sbid}\n"
    assert state(api, sbid) == "running"
    before = advances(cli, sbid, before)
    assert pid in running_pids(cli, sbid)

    assert ok(cli("sync", sbid)) == f"{sbid}\n"

    # snapshot: prints the id alone; the sandbox keeps running
    at_snapshot = counter(cli, sbid) or before
    out = ok(cli("snapshot", sbid))
    assert SNAPSHOT_LINE.match(out), f"space snapshot printed {out!r}"
    snap = out.strip()
    made.snapshots.append(snap)
    assert state(api, sbid) == "running"
    before = advances(cli, sbid, at_snapshot)

    # fork --count 3: three new sandboxes, each continuing from now
    at_fork = before
    out = ok(cli("fork", sbid, "--count", "3"))
    forks = out.split()
    made.sandboxes.extend(forks)
    assert all(ID_LINE.match(line + "\n") for line in forks), f"space fork printed {out!r}"
    assert len(set(forks)) == 3 and sbid not in forks, forks
    for f in forks:
        assert state(api, f) == "running"
        first = wait_until(lambda: counter(cli, f), 60, f"fork {f} to count")
        assert first >= at_fork, f"fork {f} started again from {first}, the source was at {at_fork}"
        advances(cli, f, first)
        assert pid in running_pids(cli, f)
    advances(cli, sbid, at_fork)  # the source runs on

    # create --from-snapshot: the snapshot's process goes on in a new sandbox
    clone = create(cli, made, "--from-snapshot", snap)
    assert clone != sbid and clone not in forks
    first = wait_until(lambda: counter(cli, clone), 60, "the clone to count")
    assert first >= at_snapshot, f"the clone started again from {first}"
    advances(cli, clone, first)
    sb = api.ok("GET", f"/v1/sandboxes/{clone}")
    src = api.ok("GET", f"/v1/sandboxes/{sbid}")
    assert (sb["template"], sb["cpus"], sb["memory_mb"]) == (src["template"], src["cpus"], src["memory_mb"])


def test_transitions_are_idempotent_and_a_409_reads_well(cli, api, sandbox):
    assert ok(cli("suspend", sandbox)) == f"{sandbox}\n"
    assert ok(cli("suspend", sandbox)) == f"{sandbox}\n"  # already suspended: fine

    r = cli("pause", sandbox)
    assert r.returncode == 1
    assert r.stdout == ""
    assert r.stderr == f"space: sandbox {sandbox} is suspended and cannot be paused now (conflict)\n"

    r = cli("snapshot", sandbox)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith(f"space: sandbox {sandbox} is suspended") and r.stderr.endswith("(conflict)\n"), r.stderr
    assert len(r.stderr.splitlines()) == 1, r.stderr

    # several ids: each one is tried, the good ones printed, the status says one failed
    r = cli("resume", "000000000000", sandbox)
    assert r.returncode == 1
    assert r.stdout == f"{sandbox}\n"
    assert "000000000000" in r.stderr and "(not_found)" in r.stderr and len(r.stderr.splitlines()) == 1
    assert state(api, sandbox) == "running"
    assert ok(cli("resume", sandbox)) == f"{sandbox}\n"  # already running: fine

    for cmd in ("pause", "resume", "suspend", "sync", "fork", "snapshot"):
        r = cli(cmd)
        assert r.returncode == 2 and r.stdout == "", (cmd, r)
        assert f"space {cmd} --help" in r.stderr, (cmd, r.stderr)
        h = cli(cmd, "--help")
        assert h.returncode == 0 and h.stdout.startswith(f"Usage: space {cmd}"), (cmd, h)


def test_resume_timeout_sets_a_new_idle_timeout(cli, api, made):
    sbid = create(cli, made, "--timeout", "3600")
    ok(cli("suspend", sbid))
    assert 0 < api.ok("GET", f"/v1/sandboxes/{sbid}")["timeout_left_ms"] <= 3600 * 1000
    assert ok(cli("resume", "--timeout", "7", sbid)) == f"{sbid}\n"
    sb = api.ok("GET", f"/v1/sandboxes/{sbid}")
    assert sb["state"] == "running" and sb["timeout"] == 7 and sb["timeout_at"] is not None
    r = cli("resume", "--timeout", "soon", sbid)
    assert r.returncode == 2 and "--timeout" in r.stderr


def test_snapshot_name_ls_inspect_rm(cli, api, sandbox, made):
    out = ok(cli("snapshot", sandbox, "--name", "before-upgrade"))
    assert SNAPSHOT_LINE.match(out), out
    sid = out.strip()
    made.snapshots.append(sid)

    ls = ok(cli("snapshot", "ls"))
    lines = ls.splitlines()
    assert lines[0].split() == ["ID", "SANDBOX", "NAME", "CREATED"], ls
    row = [line.split() for line in lines[1:] if line.split()[0] == sid]
    assert len(row) == 1 and row[0][1:3] == [sandbox, "before-upgrade"], ls
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT[0-9:.]+Z", row[0][3]), ls

    assert sid in ok(cli("snapshot", "ls", "-q")).split()
    listed = json.loads(ok(cli("snapshot", "ls", "--json")))
    mine = [s for s in listed if s["id"] == sid]
    assert len(mine) == 1 and mine[0]["sandbox_id"] == sandbox and mine[0]["name"] == "before-upgrade"

    obj = json.loads(ok(cli("snapshot", "inspect", sid)))
    assert obj["id"] == sid and obj["sandbox_id"] == sandbox

    # --json on the snapshot itself: the API's object
    j = json.loads(ok(cli("snapshot", "--json", sandbox)))
    made.snapshots.append(j["id"])
    assert j["sandbox_id"] == sandbox and j["id"] != sid
    for field in ("template", "cpus", "memory_mb", "created_at"):
        assert field in j, (field, j)

    assert ok(cli("snapshot", "rm", sid, j["id"])) == f"{sid}\n{j['id']}\n"
    assert api.json("GET", f"/v1/snapshots/{sid}")[0] == 404
    assert sid not in ok(cli("snapshot", "ls", "-q")).split()
    again = cli("snapshot", "rm", sid)
    assert again.returncode == 1 and sid in again.stderr and "(not_found)" in again.stderr
    assert ok(cli("snapshot", "rm", "-f", sid)) == ""
    gone = cli("create", "--from-snapshot", sid)
    assert gone.returncode == 1 and gone.stdout == "" and sid in gone.stderr


def test_fork_and_create_from_snapshot_json(cli, api, sandbox, made):
    ok(cli("exec", sandbox, "--", "sh", "-c", "echo original > /work/f"))
    forks = json.loads(ok(cli("fork", "--json", sandbox)))
    assert isinstance(forks, list) and len(forks) == 1, forks
    made.sandboxes.extend(f["id"] for f in forks)
    assert forks[0]["state"] == "running" and forks[0]["id"] != sandbox
    assert ok(cli("exec", forks[0]["id"], "--", "cat", "/work/f")) == "original\n"

    too_many = cli("fork", sandbox, "--count", "17")
    assert too_many.returncode == 1 and too_many.stdout == ""
    assert "(invalid_argument)" in too_many.stderr, too_many.stderr
    assert cli("fork", sandbox, "--count", "0").returncode == 2

    sid = ok(cli("snapshot", sandbox)).strip()
    made.snapshots.append(sid)
    ok(cli("exec", sandbox, "--", "sh", "-c", "echo changed > /work/f"))
    sb = json.loads(ok(cli("create", "--json", "--from-snapshot", sid, "--label", "from=snap")))
    made.sandboxes.append(sb["id"])
    assert sb["state"] == "running" and sb["metadata"] == {"from": "snap"}
    assert ok(cli("exec", sb["id"], "--", "cat", "/work/f")) == "original\n"

    # the snapshot decides the size: asking for one is a usage error, and nothing is made
    before = {s["id"] for s in api.ok("GET", "/v1/sandboxes")["sandboxes"]}
    for opt in (["--cpus", "2"], ["--memory", "256"], ["--disk", "128"], ["--template", "default"]):
        r = cli("create", "--from-snapshot", sid, *opt)
        assert r.returncode == 2 and r.stdout == "" and opt[0] in r.stderr, (opt, r.stderr)
    assert {s["id"] for s in api.ok("GET", "/v1/sandboxes")["sandboxes"]} == before

    # space run takes it too, and removes its sandbox
    r = cli("run", "--from-snapshot", sid, "--", "cat", "/work/f")
    assert (r.returncode, r.stdout) == (0, "original\n"), r.stderr
    assert {s["id"] for s in api.ok("GET", "/v1/sandboxes")["sandboxes"]} == before


def test_create_timeout_options(cli, api, made):
    sbid = create(cli, made, "--timeout", "600", "--lifetime", "3600", "--timeout-action", "kill",
                  "--keepalive-processes")
    sb = json.loads(ok(cli("inspect", sbid)))
    assert (sb["timeout"], sb["lifetime"], sb["timeout_action"], sb["keepalive_processes"]) == \
        (600, 3600, "kill", True), sb
    assert sb["expires_at"] is not None and sb["timeout_at"] is not None

    plain = create(cli, made)
    sb = json.loads(ok(cli("inspect", plain)))
    assert (sb["lifetime"], sb["timeout_action"], sb["keepalive_processes"], sb["expires_at"]) == \
        (0, "suspend", False, None), sb

    for bad in (["--timeout-action", "stop"], ["--lifetime", "-1"], ["--lifetime", "forever"]):
        r = cli("create", *bad)
        assert r.returncode == 2 and r.stdout == "" and bad[0] in r.stderr, (bad, r.stderr)


def test_transparent_resume_is_silent_unless_verbose(cli, sandbox):
    ok(cli("exec", sandbox, "--", "sh", "-c", "echo kept > /tmp/x"))

    ok(cli("suspend", sandbox))
    r = cli("exec", sandbox, "--", "cat", "/tmp/x")
    assert (r.returncode, r.stdout, r.stderr) == (0, "kept\n", "")

    note = f"space: sandbox {sandbox} was paused or suspended; spaced resumed it\n"
    ok(cli("suspend", sandbox))
    r = cli("exec", sandbox, "--", "cat", "/tmp/x", env={"SPACE_VERBOSE": "1"})
    assert (r.returncode, r.stdout, r.stderr) == (0, "kept\n", note)

    ok(cli("pause", sandbox))
    r = cli("cp", f"{sandbox}:/tmp/x", "-", env={"SPACE_VERBOSE": "1"})
    assert (r.returncode, r.stdout, r.stderr) == (0, "kept\n", note)

    # a running sandbox: nothing to say
    r = cli("exec", sandbox, "--", "true", env={"SPACE_VERBOSE": "1"})
    assert (r.returncode, r.stderr) == (0, "")


def test_an_unreachable_daemon_is_one_line_and_125(cli):
    for args in (["pause", "000000000000"], ["snapshot", "ls"], ["fork", "000000000000"]):
        r = cli(*args, env={"SPACE_HOST": "unix:///nonexistent.sock"})
        assert r.returncode == 125 and r.stdout == "", (args, r)
        assert len(r.stderr.splitlines()) == 1 and "cannot reach spaced" in r.stderr, (args, r.stderr)
