"""The microVM guest on its real root: the template's erofs image under an overlay whose
writable layer is the sandbox's own ext4 disk (agent/vminit.c, step 4).

Each test boots a guest as tests/vm/test_boot.py does, with two virtio-blk disks found by
their serial: the default template's image from the cache (read-only) and a fresh sparse
ext4 disk of the test's own. What is written inside lands in upper/ on that disk, which is
read back from the host with debugfs after QEMU has gone. Needs the default template (spaced
builds it at its start; `make vm-guest` then makes its image).

Run: make vm-test
"""

import os
import subprocess
import time

import pytest

from test_boot import VM, guest, median_round_trip, run  # noqa: F401  (guest is a fixture)


def disks(guest, disk):
    image = guest["template_image"]
    assert "path" in image, f"no template image ({image.get('error')}): make up builds the default " \
                            "template, make vm-guest its image"
    return ("-drive", f"file={image['path']},format=raw,if=none,id=tpl,readonly=on",
            "-device", "virtio-blk-device,drive=tpl,serial=space-template",
            "-drive", f"file={disk},format=raw,if=none,id=disk",
            "-device", "virtio-blk-device,drive=disk,serial=space-disk")


@pytest.fixture
def rooted(guest, tmp_path):
    disk = str(tmp_path / "disk.img")
    subprocess.run(["mkfs.ext4", "-q", "-F", "-E", "root_owner=0:0", disk, "256M"], check=True,
                   stdout=subprocess.DEVNULL)
    v = VM(guest, tmp_path, devices=disks(guest, disk))
    v.disk = disk
    yield v
    v.stop()


def debugfs_cat(disk, path):
    r = subprocess.run(["debugfs", "-R", f"cat {path}", disk], capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_python_runs_on_the_template(rooted):
    host, _hello, seconds = rooted.connect()
    t0 = time.monotonic()
    out, err, code = run(host, ["python3", "-c", "print(6*7)"], cwd="")
    first = time.monotonic() - t0
    assert (out, code) == (b"42\n", 0), err
    median = median_round_trip(host, ["true"], cwd="")
    print(f"\nboot to hello on the overlay root: {seconds:.2f} s; first python3 {first * 1000:.0f} ms; "
          f"exec round trip of true: median {median * 1000:.1f} ms of 20")


def test_root_is_the_overlay_on_the_sandboxs_disk(rooted):
    host, _hello, _ = rooted.connect()
    _st, mounts = host.read_file("/proc/mounts")
    fields = [line.split() for line in mounts.decode().splitlines()]
    root = [f for f in fields if f[1] == "/"]
    assert root and root[-1][2] == "overlay", root
    assert "lowerdir=/.space/lower" in root[-1][3]
    out, _err, code = run(host, ["sh", "-c", "cat /etc/debian_version; echo $PWD"], cwd="")
    assert code == 0 and out.split()[1] == b"/work"
    host.write_file("/work/hello.txt", b"written inside\n")
    host.simple("H_SYNC", b"")
    rooted.stop()
    assert debugfs_cat(rooted.disk, "/upper/work/hello.txt") == b"written inside\n"


def test_the_template_stays_read_only(rooted, guest):
    image = guest["template_image"]["path"]
    before = os.stat(image).st_mtime_ns
    host, _hello, _ = rooted.connect()
    ro = {}
    for e in host.list("/sys/block"):
        serial = host.read_file(f"/sys/block/{e['name']}/serial")[1].strip()
        ro[serial] = host.read_file(f"/sys/block/{e['name']}/ro")[1].strip()
    assert ro == {b"space-template": b"1", b"space-disk": b"0"}
    # a file of the template changed inside is copied up to the sandbox's disk
    out, err, code = run(host, ["sh", "-c", "echo changed >> /etc/debian_version"], cwd="")
    assert code == 0, err
    host.simple("H_SYNC", b"")
    rooted.stop()
    assert debugfs_cat(rooted.disk, "/upper/etc/debian_version").endswith(b"changed\n")
    assert os.stat(image).st_mtime_ns == before
