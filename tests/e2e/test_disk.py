"""Each sandbox's files live on a disk of its own size (disk_mb): filling it gives ENOSPC
inside that sandbox, never a full host disk, and the size travels with snapshots and forks."""

import os
import shutil
import threading

import pytest

from conftest import q, gvisor_only

DISK_MIN_MB = 64
DISK_MAX_MB = 256 * 1024
DISK_DEFAULT_MB = 5120


@pytest.mark.parametrize("size", [DISK_MIN_MB - 1, DISK_MAX_MB + 1, 0, -5, 2**40])
def test_disk_size_out_of_range_is_refused(api, size):
    status, body = api.json("POST", "/v1/sandboxes", {"disk_mb": size})
    assert status == 400 and "disk_mb" in body["error"]["message"], (status, body)


def test_disk_size_must_be_an_integer(api):
    status, body = api.json("POST", "/v1/sandboxes", {"disk_mb": "1G"})
    assert status == 400 and "disk_mb" in body["error"]["message"], (status, body)


def test_default_disk_size_is_reported_and_seen_inside(api, sandbox):
    assert api.ok("GET", f"/v1/sandboxes/{sandbox}")["disk_mb"] == DISK_DEFAULT_MB
    # df inside reports the sandbox's own disk (the overlay's upper layer), in 1 MiB blocks
    out = api.exec(sandbox, ["df", "-m", "--output=size", "/"])["stdout"].split()
    assert abs(int(out[-1]) - DISK_DEFAULT_MB) < DISK_DEFAULT_MB * 0.05, out


def test_filling_the_smallest_disk_gives_enospc_inside_and_spares_the_host(api, spaced, neighbour):
    sbid = api.create(disk_mb=DISK_MIN_MB)
    try:
        assert api.ok("GET", f"/v1/sandboxes/{sbid}")["disk_mb"] == DISK_MIN_MB
        free = shutil.disk_usage(spaced.state_dir).free
        r = api.exec(sbid, ["sh", "-c", "dd if=/dev/zero of=/work/fill bs=1M count=200 2>&1; "
                                        "stat -c %s /work/fill"])
        assert "No space left on device" in r["stdout"], r
        size = int(r["stdout"].split()[-1])
        assert 32 << 20 < size < DISK_MIN_MB << 20, size
        # the host lost at most the disk's size (other writers on this host may add noise)
        assert free - shutil.disk_usage(spaced.state_dir).free < 4 * DISK_MIN_MB << 20
        # the file API reports the full disk as such, and nothing half-written is left
        status, body = api.json("PUT", f"/v1/sandboxes/{sbid}/files?path={q('/work/more')}", raw=b"x" * (1 << 20))
        assert status == 507 and body["error"]["code"] == "no_space", (status, body)
        # making room makes room
        api.exec(sbid, ["rm", "/work/fill"])
        api.ok("PUT", f"/v1/sandboxes/{sbid}/files?path={q('/work/more')}", raw=b"x" * (1 << 20), expect=(201,))
        assert api.exec(neighbour, ["echo", "alive"])["stdout"] == "alive\n"
    finally:
        api.delete(sbid)


@gvisor_only("it reads the disk mounted on the host; a microVM's disk is never mounted there")
def test_disk_survives_suspend_and_goes_with_the_sandbox(api, spaced):
    sbid = api.create(disk_mb=128)
    layer = os.path.join(spaced.state_dir, "sandboxes", sbid, "layer")
    try:
        api.ok("PUT", f"/v1/sandboxes/{sbid}/files?path={q('/work/a')}", raw=b"kept\n", expect=(201,))
        api.ok("POST", f"/v1/sandboxes/{sbid}/suspend")
        assert os.path.ismount(layer)
        assert api.exec(sbid, ["cat", "/work/a"])["stdout"] == "kept\n"
    finally:
        api.delete(sbid)
    assert not os.path.exists(layer)


def test_snapshot_and_fork_keep_the_disk_size(api):
    sbid = api.create(disk_mb=96)
    made = [sbid]
    try:
        api.exec(sbid, ["sh", "-c", "echo hello > /work/h"])
        snap = api.ok("POST", f"/v1/sandboxes/{sbid}/snapshot", {}, expect=(201,))
        assert snap["disk_mb"] == 96
        status, body = api.json("POST", "/v1/sandboxes", {"snapshot": snap["id"], "disk_mb": 200})
        assert status == 400 and "disk_mb" in body["error"]["message"], (status, body)
        child = api.ok("POST", "/v1/sandboxes", {"snapshot": snap["id"]}, expect=(201,))
        made.append(child["id"])
        assert child["disk_mb"] == 96
        out = api.exec(child["id"], ["sh", "-c", "cat /work/h; df -m --output=size / | tail -1"])["stdout"].split()
        assert out[0] == "hello" and abs(int(out[1]) - 96) < 10, out
        api.ok("DELETE", f"/v1/snapshots/{snap['id']}", expect=(204,))
    finally:
        for s in made:
            api.delete(s)


def test_concurrent_creates_of_a_new_disk_size(api):
    """The first sandboxes of a size make its blank image; several at once must all succeed."""
    made = []
    errors = []

    def one():
        try:
            made.append(api.create(disk_mb=77))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert not errors and len(made) == 4, errors
        for sbid in made:
            assert api.exec(sbid, ["sh", "-c", "echo ok > /work/f && cat /work/f"])["stdout"] == "ok\n"
    finally:
        for sbid in made:
            api.delete(sbid)


@gvisor_only("the socket folder is gVisor's bind mount; a microVM's port is a virtio-serial device")
def test_the_agent_socket_folder_is_no_way_onto_the_host_disk(api, spaced, sandbox):
    """/.space/sock is the one folder the sandbox shares with the host: a tiny tmpfs, so a
    write there fails at 64 KiB and 16 inodes instead of filling the host's disk, and
    what was left there does not keep the agent from reconnecting after a resume."""
    sock = os.path.join(spaced.sandbox_dir(sandbox), "sock")
    assert os.path.ismount(sock)
    free = shutil.disk_usage(spaced.state_dir).free
    r = api.exec(sandbox, ["sh", "-c", "dd if=/dev/zero of=/.space/sock/fill bs=1M count=100 2>&1; "
                                       "stat -c %s /.space/sock/fill"])
    assert "No space left on device" in r["stdout"], r
    assert int(r["stdout"].split()[-1]) <= 64 << 10, r
    r = api.exec(sandbox, ["sh", "-c", "for i in $(seq 1 40); do touch /.space/sock/f$i || exit 7; done"])
    assert r["exit_code"] == 7 and "No space left" in r["stderr"], r
    assert os.path.getsize(os.path.join(sock, "fill")) <= 64 << 10
    assert free - shutil.disk_usage(spaced.state_dir).free < 8 << 20
    # the folder is full of the sandbox's files: the agent still comes back after a resume
    api.ok("POST", f"/v1/sandboxes/{sandbox}/suspend")
    api.ok("POST", f"/v1/sandboxes/{sandbox}/resume")
    assert api.exec(sandbox, ["ls", "/.space/sock"])["stdout"] == "agent.sock\n"
    api.delete(sandbox)
    assert not os.path.exists(spaced.sandbox_dir(sandbox))


def mount_options(path):
    """The options of the mount at path, from /proc/self/mountinfo."""
    real = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        found = [line.split()[5].split(",") for line in f if line.split()[4] == real]
    assert found, f"{real} is not a mount point"
    return found[-1]


@gvisor_only("host mounts of the layer; a microVM's disk is a block device of its own kernel")
def test_the_host_mounts_a_sandboxs_files_nosuid_and_nodev(api, spaced, sandbox):
    """A set-user-ID file or a device node the sandbox writes into its own files gives no one
    on the host anything: the root filesystem and the disk under it are mounted nosuid,nodev
    (and the socket folder noexec besides)."""
    d = spaced.sandbox_dir(sandbox)
    mounts = {name: mount_options(os.path.join(d, name)) for name in ("rootfs", "layer", "sock")}
    for name, opts in mounts.items():
        assert "nosuid" in opts and "nodev" in opts, (name, opts)
    assert "noexec" in mounts["sock"], mounts


@gvisor_only("it reads /tmp's file on the host's mount of the disk")
def test_tmp_is_on_the_sandboxs_disk_not_in_its_memory(api, spaced):
    """As on Debian 12, /tmp is part of the root filesystem: a 700 MiB temporary file fits a
    512 MiB sandbox (its 1 GiB disk takes it), lands in the sandbox's layer on the host, and is
    still there after a suspend; a fork has its own copy."""
    sbid = api.create(disk_mb=1024)
    fork = None
    try:
        r = api.exec(sbid, ["sh", "-c", "stat -c %a /tmp; head -c 700M /dev/zero > /tmp/big && "
                                        "stat -c %s /tmp/big && df -m /tmp | tail -1"], timeout=300)
        lines = r["stdout"].split("\n")
        assert r["exit_code"] == 0 and lines[0] == "1777" and lines[1] == str(700 << 20), r
        assert os.path.getsize(spaced.layer(sbid, "tmp", "big")) == 700 << 20
        api.exec(sbid, ["rm", "/tmp/big"])
        api.exec(sbid, "echo kept > /tmp/note")
        api.ok("POST", f"/v1/sandboxes/{sbid}/suspend", expect=(200,))
        api.ok("POST", f"/v1/sandboxes/{sbid}/resume", expect=(200,))
        assert api.exec(sbid, ["cat", "/tmp/note"])["stdout"] == "kept\n"
        fork = api.ok("POST", f"/v1/sandboxes/{sbid}/fork", {"count": 1}, expect=(201,))["sandboxes"][0]["id"]
        api.exec(fork, "echo fork > /tmp/note")
        assert api.exec(sbid, ["cat", "/tmp/note"])["stdout"] == "kept\n"
        assert api.exec(fork, ["cat", "/tmp/note"])["stdout"] == "fork\n"
    finally:
        if fork:
            api.delete(fork)
        api.delete(sbid)
