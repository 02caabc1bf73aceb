"""A full host disk (docs/lifecycle.md, A full disk): spaced's state dir on a filesystem of its
own (a sparse file, loop-mounted), filled by a file written on the host beside the state dir.

- Full for ordinary writers, the blocks ext4 keeps for root still free (what users filling a
  host leave): spaced answers; a create, a snapshot, a fork and a suspend are 507 no_space and
  write nothing; running sandboxes run on, their files readable and writable, a sync confirmed;
  a paused one stays paused. Once room is made, all of it works, and nothing was lost: the same
  process with the same memory, the files, a whole state.db, and a restarted spaced finding
  every sandbox and snapshot as it was.
- Full for root too, so that state.db itself cannot be written, the disk filling while a
  sandbox is being created: whatever cannot be recorded fails with an error (that create
  too), running sandboxes run on, a write the host had no room for is never confirmed by a
  sync, and a sandbox whose disk can no longer be written is refused a suspend and keeps
  running. Once room is made, state.db is whole and a restarted spaced agrees with it.
"""

import errno
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading

import pytest

from conftest import IO_TIMEOUT, MICROVM, Daemon, gvisor_only, wait_until
from test_lifecycle import advances, counter, holder_alive, start_holder
from test_lifecycle_stress import consistent, runsc_view

# The small filesystem, sparse (it costs the host what is written). A sandbox takes 3-5 MiB of
# it and a suspend's image well under 1 MiB (runsc compresses it), but a suspend goes ahead only
# with the memory the sandbox uses plus 64 MiB free (about 95 MiB here): 256 MiB leaves room
# for three sandboxes, two snapshots and a suspend, and ext4's 5% for root. A microVM's image
# is its touched RAM, uncompressed (about 95 MiB, and a suspend asks for ~260 MiB free), its
# disk a sparse ext4 image: 1 GiB holds the same.
HOST_MB = 1024 if MICROVM else 256
NOBODY = 65534
CREATE_NEEDS = 16 << 20  # QUOTA_CREATE_BYTES (daemon/core/quota.h)

# Allocates the file open at fd (argv[1]) until the filesystem refuses this process any more.
FILL = r"""
import errno, os, sys
fd, off, chunk = int(sys.argv[1]), 0, 1 << 30
while chunk >= 4096:
    try:
        os.posix_fallocate(fd, off, chunk)
        off += chunk
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        chunk //= 2
os.lseek(fd, 0, os.SEEK_END)
try:
    while True:
        os.write(fd, b"\0" * 4096)
except OSError as e:
    if e.errno != errno.ENOSPC:
        raise
os.fsync(fd)
"""


class SmallHost:
    """A loop-mounted ext4 filesystem (mkfs's defaults: 5% of it kept for root) holding one
    spaced's state dir. The spaced's log stays off it, whole whatever happens on it."""

    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="space-e2e-")  # short: sockets' paths live below it
        tmp = self.tmp
        self.image = os.path.join(tmp, "host.img")
        self.mnt = os.path.join(tmp, "host")
        self.log = os.path.join(tmp, "spaced.log")
        self.dev = None
        self.fillers = []
        self.daemons = []

    def mount(self):
        os.makedirs(self.mnt)
        subprocess.run(["truncate", "-s", f"{HOST_MB}M", self.image], check=True)
        subprocess.run(["mkfs.ext4", "-q", "-F", self.image], check=True)
        self.dev = subprocess.run(["losetup", "-f", "--show", self.image], capture_output=True, text=True,
                                  check=True).stdout.strip()
        subprocess.run(["mount", self.dev, self.mnt], check=True)

    def daemon(self, *args):
        state = os.path.join(self.mnt, "state")
        os.makedirs(state, exist_ok=True)
        d = Daemon(state_dir=state, args=list(args))
        d.log_path = self.log
        self.daemons.append(d)
        return d.start()

    def fill(self, as_root):
        """Writes a file beside the state dir until ENOSPC: as nobody (root's blocks stay free)
        or as root (nothing is left)."""
        path = os.path.join(self.mnt, f"filler{len(self.fillers)}")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        self.fillers.append(path)
        who = {} if as_root else {"user": NOBODY, "group": NOBODY, "extra_groups": []}
        try:
            subprocess.run([sys.executable, "-c", FILL, str(fd)], pass_fds=(fd,), check=True, timeout=IO_TIMEOUT,
                           **who)
        finally:
            os.close(fd)

    def free(self):
        for path in self.fillers:
            os.unlink(path)
        self.fillers = []

    def room(self):
        """Bytes an unprivileged writer may still take."""
        st = os.statvfs(self.mnt)
        return st.f_bavail * st.f_frsize

    def root_can_write(self):
        path = os.path.join(self.mnt, "probe")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, b"p" * 65536)
            os.fsync(fd)
            return True
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise
            return False
        finally:
            os.close(fd)
            os.unlink(path)

    def release(self):
        for d in self.daemons:
            if d.alive():
                d.proc.send_signal(signal.SIGCONT)  # one a failed test left frozen
        self.free()
        for d in self.daemons:
            d.cleanup()
        if self.dev:
            subprocess.run(["umount", "-l", self.mnt], capture_output=True)
            subprocess.run(["losetup", "-d", self.dev], capture_output=True)
        if not os.path.ismount(self.mnt):
            shutil.rmtree(self.tmp, ignore_errors=True)


@pytest.fixture
def small_host():
    """A SmallHost for one test; its spaceds, mount, loop device and files are released after
    it, even when it fails."""
    host = SmallHost()
    try:
        host.mount()
        yield host
    finally:
        host.release()


def state(api, sbid):
    return api.ok("GET", f"/v1/sandboxes/{sbid}")["state"]


def listed(api):
    return {s["id"]: s["state"] for s in api.ok("GET", "/v1/sandboxes")["sandboxes"]}


def refused(api, method, path, status, words, body=None):
    """Asks for something the disk has no room for: answered `status`, the message saying why."""
    got, err = api.json(method, path, body)
    assert got == status and words in err["error"]["message"], (method, path, got, err)
    return err["error"]


def state_db_whole(d):
    """spaced is stopped: SQLite finds state.db and its log whole."""
    db = sqlite3.connect(f"file:{os.path.join(d.state_dir, 'state.db')}?mode=ro", uri=True)
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        db.close()


def fill_while_creating(host, d):
    """Starts a create and fills the disk, as root, after the runtime has started the new
    sandbox and before spaced has heard from its agent and recorded it running: spaced is
    frozen (SIGSTOP) from the moment the runtime takes the container until it runs and the disk
    is full. Returns the create's (status, body)."""
    answer = {}
    known = set(os.listdir(d.runsc_root()))
    create = threading.Thread(target=lambda: answer.update(r=d.api.json("POST", "/v1/sandboxes", {})))
    create.start()
    try:
        new = wait_until(lambda: [f.split("_")[0] for f in set(os.listdir(d.runsc_root())) - known], 60,
                         "the runtime to take the new container", interval=0.002)[0]
        d.proc.send_signal(signal.SIGSTOP)
        wait_until(lambda: runsc_view(d).get(new) == "running", 60, f"container {new} to run")
        host.fill(as_root=True)
    finally:
        d.proc.send_signal(signal.SIGCONT)
        create.join(IO_TIMEOUT)
    return answer["r"]


@gvisor_only("its sandbox writes into root's reserved blocks; a microVM's disk is written by its jailed, unprivileged "
             "QEMU, which cannot: a write needing new blocks pauses the VM (QEMU's werror=enospc) until room returns "
             "(docs/microvm.md)")
def test_a_disk_full_for_users_refuses_what_would_fill_it_and_loses_nothing(small_host):
    d = small_host.daemon()
    api = d.api
    a = api.create()
    pid = start_holder(api, a)
    api.exec(a, "echo before > /work/f")
    p = api.create()
    api.ok("POST", f"/v1/sandboxes/{p}/pause")
    snap = api.ok("POST", f"/v1/sandboxes/{a}/snapshot", {}, expect=(201,))["id"]
    n = counter(api, a)
    dirs = sorted(os.listdir(os.path.join(d.state_dir, "sandboxes")))

    small_host.fill(as_root=False)
    assert small_host.room() < CREATE_NEEDS and small_host.root_can_write()

    assert d.healthy() and listed(api) == {a: "running", p: "paused"}
    refused(api, "POST", "/v1/sandboxes", 507, "a new sandbox needs", {})
    refused(api, "POST", f"/v1/sandboxes/{a}/snapshot", 507, "free", {})
    refused(api, "POST", f"/v1/sandboxes/{a}/fork", 507, "free", {"count": 1})
    assert refused(api, "POST", f"/v1/sandboxes/{a}/suspend", 507, "keeps running")["code"] == "no_space"
    assert refused(api, "POST", f"/v1/sandboxes/{p}/suspend", 507, "memory image")["code"] == "no_space"
    # nothing was written, and every sandbox is as it was
    assert listed(api) == {a: "running", p: "paused"}
    assert [s["id"] for s in api.ok("GET", "/v1/snapshots")["snapshots"]] == [snap]
    assert sorted(os.listdir(os.path.join(d.state_dir, "sandboxes"))) == dirs
    assert not os.path.exists(os.path.join(d.sandbox_dir(a), "checkpoint"))
    # the running sandbox runs on: the same process counting, its files readable and
    # writable, and a sync confirmed (its disk takes root's blocks)
    n = advances(api, a, n)
    assert holder_alive(api, a, pid)
    assert api.exec(a, "echo during >> /work/f && cat /work/f")["stdout"] == "before\nduring\n"
    api.ok("POST", f"/v1/sandboxes/{a}/sync")

    small_host.free()
    assert api.ok("POST", f"/v1/sandboxes/{a}/suspend")["state"] == "suspended"
    assert api.ok("POST", f"/v1/sandboxes/{a}/resume")["state"] == "running"
    n = advances(api, a, n)
    assert holder_alive(api, a, pid)
    c = api.create()
    snap2 = api.ok("POST", f"/v1/sandboxes/{a}/snapshot", {}, expect=(201,))["id"]

    d.stop()
    state_db_whole(d)
    d.start()
    assert consistent(d, {a: ("running",), p: ("paused",), c: ("running",)}) == {a: "running", p: "paused",
                                                                               c: "running"}
    assert {s["id"] for s in api.ok("GET", "/v1/snapshots")["snapshots"]} == {snap, snap2}
    advances(api, a, n)
    assert holder_alive(api, a, pid)
    assert api.exec(a, ["cat", "/work/f"])["stdout"] == "before\nduring\n"


@gvisor_only("it freezes spaced the moment runsc takes the new container; a microVM's start is not watched that way yet")
def test_a_disk_full_for_root_fails_what_cannot_be_recorded_and_loses_nothing(small_host):
    d = small_host.daemon("--reserve-mb", "0")
    api = d.api
    a = api.create()
    pid = start_holder(api, a)
    api.exec(a, "echo kept > /work/kept")
    w = api.create()
    api.exec(w, "echo kept > /work/kept")
    for sbid in (a, w):
        api.ok("POST", f"/v1/sandboxes/{sbid}/sync")
    n = counter(api, a)

    # the disk fills while a sandbox is being created: it could not be recorded, so it is no
    # sandbox (answered 201, the next spaced would have removed it as never confirmed)
    status, body = fill_while_creating(small_host, d)
    assert status == 500 and "cannot record" in body["error"]["message"], (status, body)
    small_host.fill(as_root=True)  # and what undoing it released
    assert not small_host.root_can_write()

    assert d.healthy() and listed(api) == {a: "running", w: "running"}  # the create was undone
    refused(api, "POST", "/v1/sandboxes", 507, "a new sandbox needs", {})
    refused(api, "POST", f"/v1/sandboxes/{a}/snapshot", 507, "free", {})
    refused(api, "POST", f"/v1/sandboxes/{a}/suspend", 500, "cannot record")
    refused(api, "POST", f"/v1/sandboxes/{w}/pause", 500, "cannot record")
    refused(api, "DELETE", f"/v1/sandboxes/{w}", 500, "cannot record")
    assert listed(api) == {a: "running", w: "running"}
    n = advances(api, a, n)
    assert holder_alive(api, a, pid)
    # a write the host has no blocks for lands in the page cache; the sync does not confirm it
    api.exec(w, "head -c 8388608 /dev/urandom > /work/late")
    got, err = api.json("POST", f"/v1/sandboxes/{w}/sync")
    assert got == 500, (got, err)

    small_host.free()
    assert api.ok("POST", f"/v1/sandboxes/{a}/suspend")["state"] == "suspended"
    assert api.ok("POST", f"/v1/sandboxes/{a}/resume")["state"] == "running"
    n = advances(api, a, n)
    assert holder_alive(api, a, pid)
    # w's disk was refused blocks for its journal, which aborted: it is read-only from then on
    # (runsc then cannot open its files, even to read them). A suspend would stop w and then
    # fail to sync its disk: it is refused, and w runs on. What was synced is on its disk.
    touch = api.exec(w, "touch /work/probe")
    assert touch["exit_code"] != 0 and "Read-only file system" in touch["stderr"], touch
    refused(api, "POST", f"/v1/sandboxes/{w}/suspend", 500, "keeps running")
    assert state(api, w) == "running"
    with open(d.layer(w, "work", "kept")) as f:
        assert f.read() == "kept\n"

    d.stop()
    state_db_whole(d)
    d.start()
    assert consistent(d, {a: ("running",), w: ("running",)}) == {a: "running", w: "running"}
    advances(api, a, n)
    assert holder_alive(api, a, pid)
    assert api.exec(a, ["cat", "/work/kept"])["stdout"] == "kept\n"


@pytest.mark.skipif(not MICROVM, reason="a gVisor sandbox writes into root's reserved blocks (the first test of this "
                    "file); only a microVM's QEMU, an unprivileged writer, is refused a block")
def test_a_microvm_stopped_by_a_refused_write_waits_for_room_and_loses_nothing(small_host):
    """The host is full for users; a microVM writes 32 MiB and syncs them: QEMU is refused a
    block of the disk image and stops the VM (werror=enospc). The sandbox is not taken for hung:
    it stays running, spaced says it waits for room on the host's disk and answers meanwhile.
    Once room is made, the VM goes on: the request that waited is answered, the same process
    counts on, the file is whole, and the other sandbox (which may have stopped the same way on
    a write of its own) serves."""
    d = small_host.daemon()
    api = d.api
    a = api.create()
    other = api.create()
    pid = start_holder(api, a)
    n = counter(api, a)

    # the writer starts before the host fills and writes once told on its stdin: a write of the
    # guest's own (its journal) may stop the VM as soon as the host is full, and a request to
    # start a process would then wait with it
    writer = ("read go && head -c 33554432 /dev/urandom > /work/big && sync /work/big && "
              "sha256sum /work/big > /work/big.sum")
    wpid = api.ok("POST", f"/v1/sandboxes/{a}/processes", {"cmd": ["sh", "-c", writer], "stdin_open": True},
                  expect=(201,))["pid"]
    small_host.fill(as_root=False)
    # a request that waits for the writer's file, and so on the stopped VM: what spaced watches
    check = "while [ ! -s /work/big.sum ]; do sleep 0.1; done; sha256sum -c /work/big.sum"
    answer = {}

    def go_and_check():
        api.request("POST", f"/v1/sandboxes/{a}/processes/{wpid}/stdin", raw=b"go\n", timeout=600)
        answer["r"] = api.ok("POST", f"/v1/sandboxes/{a}/exec", {"cmd": ["sh", "-c", check]}, expect=(200,),
                             timeout=600)
    waiting = threading.Thread(target=go_and_check)
    waiting.start()
    try:
        said = []
        with open(small_host.log, errors="replace") as log:
            wait_until(lambda: said.append(log.read()) or "waits for room on the host's disk" in "".join(said), 180,
                       "spaced to say the sandbox waits for room on the host's disk")
        assert state(api, a) == "running"
        assert waiting.is_alive()  # the VM is stopped: nothing inside answers
        # spaced answers meanwhile (any VM whose disk needs a block waits the same way)
        assert d.healthy() and listed(api) == {a: "running", other: "running"}
    finally:
        small_host.free()
        waiting.join(600)
    # continued: the request that waited is answered, with the file whole
    assert answer["r"]["exit_code"] == 0 and "/work/big: OK" in answer["r"]["stdout"], answer
    assert state(api, a) == "running"
    advances(api, a, n)
    assert holder_alive(api, a, pid)
    assert api.exec(other, ["true"])["exit_code"] == 0
