"""The sweep at start (docs/lifecycle.md, Orphans): what no sandbox record owns is released
and logged when spaced starts, real sandboxes keep running with their files, and a sandbox
whose destroy failed is kept, failed with the reason, until a later start destroys it.

Each test runs its own spaced (make_daemon), stopped and started again to make it sweep.
"""

import glob
import os
import sqlite3
import subprocess

from conftest import mounts_under, q, wait_usable, wait_until, gvisor_only


def runsc_ids(d):
    r = subprocess.run(["runsc", "--root", d.runsc_root(), "list", "-quiet"], capture_output=True, text=True)
    return set(r.stdout.split())


def loops_under(path):
    """{device: backing file} of the loop devices bound to files below path."""
    path = os.path.realpath(path)
    found = {}
    for f in glob.glob("/sys/block/loop*/loop/backing_file"):
        try:
            with open(f) as fh:
                backing = fh.read().strip().replace(" (deleted)", "")
        except OSError:
            continue
        if backing.startswith(path + "/"):
            found["/dev/" + f.split("/")[3]] = backing
    return found


def processes_naming(word):
    """Pids whose command line names word (runsc's processes name their container id)."""
    pids = []
    for p in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(p, "rb") as f:
                if word.encode() in f.read():
                    pids.append(p.split("/")[2])
        except OSError:
            pass
    return pids


def log_since(d, offset):
    with open(d.log_path, "rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace")


@gvisor_only("runsc containers, loop devices and mounts left behind; a microVM's leftovers are its QEMU (tests/vm)")
def test_orphans_are_released_and_logged_and_sandboxes_survive(make_daemon):
    d = make_daemon()
    keep = d.api.create()
    d.api.ok("PUT", f"/v1/sandboxes/{keep}/files?path={q('/work/keep.txt')}", raw=b"kept\n", expect=(201,))
    lost = d.api.create()            # its record goes: a running container nobody owns
    d.stop()

    sandboxes = os.path.join(d.state_dir, "sandboxes")
    # a folder no record owns
    folder = os.path.join(sandboxes, "f01de7000000")
    os.makedirs(folder)
    with open(os.path.join(folder, "junk"), "w") as f:
        f.write("junk")
    # a loop-mounted disk layer no record owns (a mount and its loop device)
    mounted = os.path.join(sandboxes, "m0a7ed000000")
    os.makedirs(os.path.join(mounted, "layer"))
    img = os.path.join(mounted, "disk.img")
    subprocess.run(["truncate", "-s", "16M", img], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", img], check=True)
    subprocess.run(["mount", "-o", "loop", img, os.path.join(mounted, "layer")], check=True)
    # a loop device alone, bound to an image under the state dir
    looped = os.path.join(sandboxes, "100b00000000")
    os.makedirs(looped)
    limg = os.path.join(looped, "disk.img")
    subprocess.run(["truncate", "-s", "1M", limg], check=True)
    dev = subprocess.run(["losetup", "-f", "--show", limg], capture_output=True, text=True, check=True).stdout.strip()
    # the running sandbox whose record is deleted while spaced is stopped
    db = sqlite3.connect(os.path.join(d.state_dir, "state.db"))
    db.execute("DELETE FROM sandboxes WHERE id = ?", (lost,))
    db.commit()
    db.close()
    assert lost in runsc_ids(d)
    before = {m for m in mounts_under(d.state_dir)}
    assert any(m.startswith(os.path.realpath(mounted)) for m in before)
    assert dev in loops_under(d.state_dir)

    offset = os.path.getsize(d.log_path)
    d.start()
    log = log_since(d, offset)

    # each orphan is gone ...
    assert lost not in runsc_ids(d)
    wait_until(lambda: not processes_naming(lost), 60, f"the processes of container {lost} to end")
    for gone in (folder, mounted, looped, d.sandbox_dir(lost)):
        assert not os.path.exists(gone), gone
    real = os.path.realpath(d.state_dir)
    assert all(m.startswith(os.path.join(real, "sandboxes", keep)) for m in mounts_under(d.state_dir)), \
        mounts_under(d.state_dir)
    assert all(f.startswith(os.path.join(real, "sandboxes", keep) + "/") for f in loops_under(d.state_dir).values())
    # ... and was logged
    assert f"sweep: container {lost} released" in log, log
    assert f"sweep: mount {os.path.join(os.path.realpath(mounted), 'layer')} released" in log, log
    assert f"sweep: loop device {dev} on {os.path.realpath(limg)} released" in log, log
    for f in (folder, mounted, looped, d.sandbox_dir(lost)):
        assert f"sweep: sandbox folder {f} removed" in log, log
    # the real sandbox survived, with its files
    assert d.api.json("GET", f"/v1/sandboxes/{lost}")[0] == 404
    assert d.api.ok("GET", f"/v1/sandboxes/{keep}")["state"] == "running"
    wait_usable(d.api, keep)
    assert d.api.exec(keep, ["cat", "/work/keep.txt"])["stdout"] == "kept\n"


def test_a_failed_destroy_keeps_the_record_until_a_later_start_finishes_it(make_daemon):
    d = make_daemon()
    keep = d.api.create()
    d.api.exec(keep, "echo kept > /work/k")
    doomed = d.api.create()
    # a busy mount inside the sandbox's folder, which destroy does not cross into: rm fails
    held = os.path.join(d.sandbox_dir(doomed), "held")
    os.makedirs(held)
    subprocess.run(["mount", "-t", "tmpfs", "none", held], check=True)
    holder = subprocess.Popen(["sleep", "600"], cwd=held)
    try:
        status, err = d.api.json("DELETE", f"/v1/sandboxes/{doomed}")
        assert status == 500, (status, err)
        sb = d.api.ok("GET", f"/v1/sandboxes/{doomed}")
        assert sb["state"] == "failed" and sb["reason"].startswith("delete failed: "), sb

        # a start while the mount is still there tries again, fails again, keeps it
        d.stop()
        offset = os.path.getsize(d.log_path)
        d.start()
        assert f"sweep: sandbox {doomed} could not be destroyed" in log_since(d, offset)
        sb = d.api.ok("GET", f"/v1/sandboxes/{doomed}")
        assert sb["state"] == "failed" and sb["reason"].startswith("delete failed: "), sb
        d.stop()
    finally:
        holder.kill()
        holder.wait()
    subprocess.run(["umount", held], check=True)

    # released: the next start finishes the destroy
    offset = os.path.getsize(d.log_path)
    d.start()
    assert f"sweep: sandbox {doomed} destroyed" in log_since(d, offset)
    assert d.api.json("GET", f"/v1/sandboxes/{doomed}")[0] == 404
    assert not os.path.exists(d.sandbox_dir(doomed))
    assert d.api.ok("GET", f"/v1/sandboxes/{keep}")["state"] == "running"
    wait_usable(d.api, keep)
    assert d.api.exec(keep, ["cat", "/work/k"])["stdout"] == "kept\n"
