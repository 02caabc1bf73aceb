"""Sandboxes through the SDK: create, list, connect, the lifecycle, snapshots, forks, errors."""

import builtins
import datetime
import socket
import uuid

import pytest

import space
from space import Sandbox

import spacetest  # on the path through conftest


def uniq():
    return uuid.uuid4().hex[:10]


def test_create_with_the_issue_arguments(spaced):
    user = uniq()
    with Sandbox.create(template="default", timeout=300, env={"A": "1"}, metadata={"user": user}) as sb:
        info = sb.get_info()
        assert info.id == sb.id and info.state == "running"
        assert info.template == "default" and info.timeout == 300 and info.metadata == {"user": user}
        assert info.created_at is not None and info.timeout_at is not None
        assert sb.commands.run("echo $A").stdout == "1\n"
        assert sb.is_running()


def test_create_passes_timeouts_and_sizes(spaced):
    with Sandbox.create(timeout=0, lifetime=3600, timeout_action="kill", keepalive_processes=True, cpus=2,
                        memory_mb=256, disk_mb=128) as sb:
        info = sb.get_info()
        assert (info.timeout, info.lifetime, info.timeout_action, info.keepalive_processes) == (0, 3600, "kill", True)
        assert (info.cpus, info.memory_mb, info.disk_mb) == (2, 256, 128)
        # the disk's size is what the sandbox sees, and what stops a write
        r = sb.commands.run("df -m --output=size / | tail -1")
        assert abs(int(r.stdout) - 128) < 10, r.stdout
        assert info.expires_at is not None and info.timeout_at is None


def test_set_timeout_moves_either_from_now(spaced):
    with Sandbox.create(timeout=0) as sb:
        before = datetime.datetime.now(datetime.timezone.utc)
        info = sb.set_timeout(lifetime=3600, timeout_action="kill")
        assert (info.timeout, info.lifetime, info.timeout_action) == (0, 3600, "kill")
        assert 3590 <= (info.expires_at - before).total_seconds() <= 3610, info.expires_at
        info = sb.set_timeout(timeout=600)
        assert (info.timeout, info.lifetime) == (600, 3600) and info.timeout_at is not None
        assert sb.get_info().timeout == 600
        with pytest.raises(space.InvalidArgumentError):
            sb.set_timeout(timeout=-1)
        with pytest.raises(space.InvalidArgumentError):
            sb.set_timeout()
    with pytest.raises(space.SandboxNotFound):
        sb.set_timeout(timeout=5)


def test_a_with_block_kills_the_sandbox(spaced):
    with Sandbox.create() as sb:
        sid = sb.id
    assert sid not in [i.id for i in Sandbox.list()]
    with pytest.raises(space.SandboxNotFound):
        Sandbox.connect(sid)
    assert sb.kill() is False


def test_list_filters_by_metadata_and_state(spaced):
    a, b = uniq(), uniq()
    with Sandbox.create(metadata={"user": a, "team": "x"}) as sa, Sandbox.create(metadata={"user": b}) as sb:
        assert [i.id for i in Sandbox.list(metadata={"user": a})] == [sa.id]
        assert [i.id for i in Sandbox.list(metadata={"user": a, "team": "x"})] == [sa.id]
        assert Sandbox.list(metadata={"user": a, "team": "y"}) == []
        ids = [i.id for i in Sandbox.list()]
        assert sa.id in ids and sb.id in ids and ids.index(sa.id) < ids.index(sb.id)  # oldest first
        sb.suspend()
        assert sb.id in [i.id for i in Sandbox.list(state="suspended")]
        assert sb.id not in [i.id for i in Sandbox.list(state=["running", "paused"])]


def test_connect_resumes_a_suspended_sandbox(sandbox):
    sandbox.files.write("/work/kept.txt", "kept")
    h = sandbox.commands.run("sleep 100000", background=True)
    assert sandbox.suspend().state == "suspended"
    assert sandbox.get_info().state == "suspended"
    same = Sandbox.connect(sandbox.id)
    assert same.get_info().state == "running"
    assert same.files.read("/work/kept.txt") == "kept"
    assert same.commands.get(h.pid).state == "running"
    h.kill()


def test_connect_resumes_a_paused_sandbox_and_sets_a_new_timeout(sandbox):
    sandbox.pause()
    same = Sandbox.connect(sandbox.id, timeout=1234)
    info = same.get_info()
    assert info.state == "running" and info.timeout == 1234


def test_pause_and_resume(sandbox):
    assert sandbox.pause().state == "paused"
    assert sandbox.pause().state == "paused"  # idempotent
    assert sandbox.resume().state == "running"
    assert sandbox.resume().state == "running"
    # a command on a paused sandbox resumes it first
    sandbox.pause()
    assert sandbox.commands.run("echo up").stdout == "up\n"
    assert sandbox.get_info().state == "running"


def test_suspend_sync_and_resume(sandbox):
    sandbox.files.write("/work/durable.txt", "on disk")
    assert sandbox.sync().state == "running"
    assert sandbox.suspend().state == "suspended"
    assert sandbox.suspend().state == "suspended"  # idempotent
    assert sandbox.resume(timeout=600).state == "running"
    assert sandbox.get_info().timeout == 600
    assert sandbox.files.read("/work/durable.txt") == "on disk"


def test_an_illegal_transition_is_a_conflict_with_the_state(sandbox):
    sandbox.suspend()
    with pytest.raises(space.ConflictError) as e:
        sandbox.pause()
    assert e.value.state == "suspended" and e.value.status == 409 and e.value.code == "conflict"
    assert isinstance(e.value, space.SpaceError)
    with pytest.raises(space.ConflictError):
        sandbox.snapshot()


def test_unknown_sandbox_is_sandbox_not_found(spaced):
    with pytest.raises(space.SandboxNotFound) as e:
        Sandbox.connect("0123456789ab")
    assert isinstance(e.value, space.NotFoundError) and e.value.status == 404
    ghost = Sandbox("0123456789ab")
    for call in (lambda: ghost.commands.run("true"), lambda: ghost.files.read("/etc/hostname"),
                 lambda: ghost.suspend(), lambda: ghost.get_info(), lambda: ghost.run_code("1")):
        with pytest.raises(space.SandboxNotFound):
            call()
    assert ghost.kill() is False
    assert ghost.is_running() is False


def test_snapshot_and_sandboxes_made_from_it(sandbox):
    sandbox.files.write("/work/state.txt", "before")
    snap = sandbox.snapshot(name="sdk-test")
    assert snap.id.startswith("s-") and snap.sandbox_id == sandbox.id and snap.name == "sdk-test"
    assert snap.id in [s.id for s in Sandbox.list_snapshots()]
    assert Sandbox.get_snapshot(snap.id).name == "sdk-test"
    assert sandbox.get_info().state == "running"  # the source runs on
    sandbox.files.write("/work/state.txt", "after")
    with Sandbox.create(snapshot=snap) as restored:
        assert restored.files.read("/work/state.txt") == "before"
        restored.files.write("/work/state.txt", "restored")
        assert sandbox.files.read("/work/state.txt") == "after"
    with Sandbox.create(snapshot=snap.id) as again:
        assert again.files.read("/work/state.txt") == "before"
    assert snap.delete() is True
    assert snap.delete() is False
    assert Sandbox.delete_snapshot(snap.id) is False
    with pytest.raises(space.SnapshotNotFound):
        Sandbox.get_snapshot(snap.id)
    with pytest.raises(space.SnapshotNotFound):
        Sandbox.create(snapshot=snap.id)


def test_templates_are_listed_inspected_and_kept_while_used(sandbox):
    names = [t.name for t in Sandbox.list_templates()]
    assert "default" in names, names
    t = Sandbox.get_template("default")
    assert t.name == "default" and t.key and t.source.startswith("debian:") and t.sandboxes >= 1, t.raw
    assert t.created_at is not None
    with pytest.raises(space.ConflictError):  # the default one is always there
        Sandbox.delete_template("default")
    with pytest.raises(space.TemplateNotFound):
        Sandbox.get_template("no-such-template")
    assert Sandbox.delete_template("no-such-template") is False


def test_fork_makes_independent_copies(sandbox):
    sandbox.files.write("/work/shared.txt", "source")
    clones = sandbox.fork(count=2)
    try:
        assert len(clones) == 2 and len({c.id for c in clones} | {sandbox.id}) == 3
        for c in clones:
            assert c.files.read("/work/shared.txt") == "source"
        clones[0].files.write("/work/shared.txt", "clone 0")
        assert clones[1].files.read("/work/shared.txt") == "source"
        assert sandbox.files.read("/work/shared.txt") == "source"
    finally:
        for c in clones:
            c.kill()


def test_isolation_is_chosen_at_create_and_kept_by_snapshots(spaced):
    kinds = Sandbox.isolation_kinds()
    default = spacetest.ISOLATION or "gvisor"  # the operator's choice (make sdk-vm: microvm)
    assert kinds["default"] == default and kinds["available"]["gvisor"].startswith("runsc"), kinds
    with Sandbox.create() as dflt, Sandbox.create(isolation="gvisor") as named:
        assert dflt.get_info().isolation == default
        assert [i.isolation for i in Sandbox.list() if i.id == named.id] == ["gvisor"]
        snap = named.snapshot()
        try:
            assert snap.isolation == "gvisor"
            with Sandbox.create(snapshot=snap) as restored:
                assert restored.get_info().isolation == "gvisor"
            with pytest.raises(space.InvalidArgumentError, match="image"):
                Sandbox.create(snapshot=snap, isolation="microvm")
        finally:
            snap.delete()
    with pytest.raises(space.InvalidArgumentError, match='"gvisor", "microvm"'):
        Sandbox.create(isolation="firecracker")


def test_a_kind_the_host_cannot_run_is_isolation_unavailable(spaced):
    why = Sandbox.isolation_kinds()["unavailable"].get("microvm")
    if why is None:
        pytest.skip("microvm runs on this host")
    before = {i.id for i in Sandbox.list()}
    with pytest.raises(space.IsolationUnavailableError) as e:
        Sandbox.create(isolation="microvm")
    assert e.value.status == 400 and e.value.code == "isolation_unavailable" and why in str(e.value)
    assert {i.id for i in Sandbox.list()} == before


def test_tcp_needs_the_token(spaced, monkeypatch):
    with pytest.raises(space.AuthError) as e:
        Sandbox.list(host=spaced.tcp_host)
    assert e.value.status == 401
    with pytest.raises(space.AuthError):
        Sandbox.list(host=spaced.tcp_host, token="wrong")
    with pytest.raises(space.AuthError):
        Sandbox.create(host=spaced.tcp_host, token=spaced.tcp_token + "x")
    assert isinstance(Sandbox.list(host=spaced.tcp_host, token=spaced.tcp_token), list)
    # the same through SPACE_HOST / SPACE_TOKEN, as the CLI reads them
    monkeypatch.setenv("SPACE_HOST", spaced.tcp_host)
    monkeypatch.setenv("SPACE_TOKEN", spaced.tcp_token)
    with Sandbox.create() as sb:
        assert sb.commands.run("echo over tcp").stdout == "over tcp\n"
        assert sb.run_code("21 * 2").text == "42"
        assert sb.id in [i.id for i in Sandbox.list()]


def test_an_unreachable_daemon_is_a_connection_error(spaced, tmp_path):
    with pytest.raises(space.ConnectionError) as e:
        Sandbox.list(host="unix://" + str(tmp_path / "no.sock"))
    assert isinstance(e.value, builtins.ConnectionError)
    with pytest.raises(space.InvalidArgumentError):
        Sandbox.list(host="ftp://example")


def test_a_silent_daemon_is_a_timeout_error(spaced):
    mute = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    mute.bind(("127.0.0.1", 0))
    mute.listen(1)
    try:
        with pytest.raises(space.TimeoutError) as e:
            Sandbox.list(host="http://127.0.0.1:%d" % mute.getsockname()[1], request_timeout=0.5)
        assert isinstance(e.value, builtins.TimeoutError)
    finally:
        mute.close()


def test_ports_lists_what_listens_inside(sandbox, wait_until):
    assert sandbox.ports() == []
    h = sandbox.commands.run("python3 -m http.server 8000 --bind 127.0.0.1", background=True)
    wait_until(lambda: sandbox.ports() == [{"port": 8000, "address": "127.0.0.1", "protocol": "tcp"}], 60,
               "the server's port")
    h.kill()
    wait_until(lambda: sandbox.ports() == [], 60, "the port to close")


def test_metrics_show_memory_used_growing_and_the_sandbox_size(sandbox, wait_until):
    def settled():  # memory used holds still (a microVM's falls for a while after its start)
        m = sandbox.metrics()
        return len(m) >= 2 and abs(m[-1].mem_used - m[-2].mem_used) < (16 << 20) and m[-1]
    first = wait_until(settled, 180, "memory used to hold still")
    info = sandbox.get_info()
    assert isinstance(first, space.SandboxMetrics)
    assert (first.mem_total, first.disk_total, first.cpu_count) == (info.memory_mb << 20, info.disk_mb << 20, 1)
    assert first.timestamp.tzinfo is not None and 0 <= first.cpu_used_pct <= 100
    sandbox.commands.run("python3 -c \"import time; b = b'x' * (200 << 20); time.sleep(3600)\"", background=True)
    wait_until(lambda: sandbox.metrics()[-1].mem_used >= first.mem_used + (150 << 20), 90,
               "memory used to grow by the 200 MiB held")
    # a range, as datetimes or Unix seconds
    assert sandbox.metrics(start=first.timestamp)[0].timestamp == first.timestamp
    assert sandbox.metrics(end=1) == []
    with pytest.raises(space.InvalidArgumentError):
        sandbox.metrics(start="yesterday")
    # paused: the samples of when it ran; asking does not resume it
    sandbox.pause()
    assert sandbox.metrics() and sandbox.get_info().state == "paused"


def test_auto_resume_false_keeps_a_paused_sandbox_paused(spaced):
    with Sandbox.create(auto_resume=False) as sb:
        assert sb.get_info().auto_resume is False
        sb.pause()
        with pytest.raises(space.ConflictError) as e:
            sb.commands.run("true")
        assert e.value.state == "paused"
        sb.resume()
        assert sb.commands.run("echo up").stdout == "up\n"
    with Sandbox.create() as sb:
        assert sb.get_info().auto_resume is True  # the daemon's default
