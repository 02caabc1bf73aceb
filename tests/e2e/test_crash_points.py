"""A crash at each named step of suspend, resume, snapshot and fork.

spaced, run with SPACE_TEST_CRASH_AT=<step>, kills itself with SIGKILL at that step
(daemon/base/crash.h). For every step the test restarts spaced without the hook and
asserts that the sandbox is running or completely suspended (a suspended one resumes),
that the same process goes on with its memory and its files, and that no runsc
container (under microVMs: no QEMU), mount or directory is left that no record owns. docs/lifecycle.md says what
a crash at each step leaves.
"""

from test_lifecycle_stress import keeper, recovered
SUSPEND_STEPS = ["suspend:detached", "suspend:checkpointed", "suspend:layer-synced", "suspend:image-synced",
                 "suspend:published", "suspend:released"]
RESUME_STEPS = ["resume:restored", "resume:connected"]
# the snapshot copied out while the source is suspended; the source running again; the record written
SNAPSHOT_STEPS = ["snapshot:copied", "snapshot:taken", "snapshot:recorded"]
# the copy fork starts from (the same step as a snapshot's); the first of two forks made; both
FORK_STEPS = ["snapshot:copied", "fork:built-one", "fork:built"]
# (operation, step): every step of suspend and resume, and snapshot and fork, which go
# through both, cut at a step of each
WALK = ([("suspend", s) for s in SUSPEND_STEPS] + [("resume", s) for s in RESUME_STEPS] +
        [("snapshot", "suspend:layer-synced"), ("snapshot", "resume:restored"), ("fork", "suspend:published")] +
        [("snapshot", s) for s in SNAPSHOT_STEPS] + [("fork", s) for s in FORK_STEPS])


def test_a_crash_at_every_named_step_leaves_each_sandbox_whole(make_daemon, monkeypatch):
    d = make_daemon()
    api = d.api
    src, n = keeper(api)
    seen, made = {}, {}  # the state src was found in; (snapshots, forks) found
    for op, step in WALK:
        print(f"-- {op}, spaced killed at {step}")  # shown with a failure
        d.stop()
        monkeypatch.setenv("SPACE_TEST_CRASH_AT", step)
        d.start()
        monkeypatch.delenv("SPACE_TEST_CRASH_AT")
        # the agent is back with the new spaced before the transition starts (a suspend asked
        # of an adopted sandbox before its agent's hello can wait for it: see docs/lifecycle.md)
        if api.ok("GET", f"/v1/sandboxes/{src}")["state"] == "running":
            api.exec(src, ["true"])
        st = api.ok("GET", f"/v1/sandboxes/{src}")["state"]
        want = "suspended" if op == "resume" else "running"
        if st != want:
            api.ok("POST", f"/v1/sandboxes/{src}/{'suspend' if want == 'suspended' else 'resume'}")
        try:
            api.request("POST", f"/v1/sandboxes/{src}/{op}", {"count": 2} if op == "fork" else None, timeout=120)
        except Exception:  # noqa: BLE001 - the daemon dies under the request
            pass
        d.proc.wait(timeout=120)
        assert d.proc.returncode == -9, f"{op} at {step}: spaced did not stop at the step ({d.proc.returncode})"
        assert f"killing spaced at step {step}" in d.log_tail(200)
        d.start()
        made[(op, step)] = (len(d.api.ok("GET", "/v1/snapshots")["snapshots"]),
                            len(d.api.ok("GET", "/v1/sandboxes")["sandboxes"]) - 1)
        seen[(op, step)], n = recovered(d, src, n)
    # a crash before the image is published undoes the suspend; one after it completes it
    assert seen[("suspend", "suspend:detached")] == "running", seen
    assert seen[("suspend", "suspend:checkpointed")] == "running", seen
    assert seen[("suspend", "suspend:published")] == "suspended", seen
    assert seen[("suspend", "suspend:released")] == "suspended", seen
    assert seen[("resume", "resume:connected")] == "running", seen
    # a snapshot exists once it is recorded, not before; a fork once it is made
    assert made[("snapshot", "snapshot:copied")] == (0, 0), made
    assert made[("snapshot", "snapshot:taken")] == (0, 0), made
    assert made[("snapshot", "snapshot:recorded")] == (1, 0), made
    assert made[("fork", "snapshot:copied")] == (0, 0), made
    assert made[("fork", "fork:built-one")] == (0, 1), made
    assert made[("fork", "fork:built")] == (0, 2), made


def test_an_unknown_step_changes_nothing(make_daemon, monkeypatch):
    monkeypatch.setenv("SPACE_TEST_CRASH_AT", "suspend:nowhere")
    d = make_daemon()
    sbid = d.api.create()
    assert d.api.ok("POST", f"/v1/sandboxes/{sbid}/suspend")["state"] == "suspended"
    assert d.api.ok("POST", f"/v1/sandboxes/{sbid}/resume")["state"] == "running"
    assert d.proc.poll() is None
