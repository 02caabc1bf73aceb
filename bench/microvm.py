#!/usr/bin/python3
"""bench/microvm.py - microVM sandboxes through spaced, beside raw QEMU in the same run.

Each figure has its peer, measured in the same run on the same guest (kernel, initramfs,
the default template's erofs image, a fresh ext4 disk, TCG with tb-size=32):

  create -> first exec of `true`   vs  raw QEMU start -> the agent's hello (its first program)
      (256 MiB: a size without a booted image, so the guest boots)
  create from the template's booted image -> first exec (the usual size, 512 MiB)
                                   vs  raw -incoming of a booted 512 MiB guest's image + cont -> hello
  create from a snapshot of a booted guest -> first exec  vs  the same raw -incoming (256 MiB)
  exec round trip of `true`        vs  the same through spaced on a gVisor sandbox
  suspend / resume                 vs  raw QMP stop + migrate to a file / -incoming of it + cont
  PSS of QEMU per idle VM          (the target: 96 MiB)
  spaced's RSS with N idle VMs     (what dominates is said beside it)

    /usr/bin/python3 bench/microvm.py [--rounds N] [--idle-vms N] [--idle S]

Needs `make vm-guest` and the default template; never uses KVM on this host; every packet
stays on this machine (no network devices at all).
"""
import argparse
import json
import os
import pathlib
import select
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "vm"))
sys.path.insert(0, os.path.join(ROOT, "tests", "agent"))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import spacetest  # noqa: E402
import test_boot  # noqa: E402
import test_root  # noqa: E402

MEMORY_MB = 256


def med(xs):
    return statistics.median(xs)


def kib(pid, key, path="smaps_rollup"):
    with open(f"/proc/{pid}/{path}") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1])
    return 0


class RawVM(test_boot.VM):
    """The guest spaced boots, started by hand: the same devices, plus a monitor."""

    def __init__(self, guest, tmp, incoming=None, memory_mb=MEMORY_MB):
        disk = str(tmp / "disk.img")
        if not os.path.exists(disk):
            subprocess.run(["mkfs.ext4", "-q", "-F", "-E", "root_owner=0:0", disk, "1G"], check=True,
                           stdout=subprocess.DEVNULL)
        self.qmp_path = str(tmp / "qmp.sock")
        extra = list(test_root.disks(guest, disk)) + ["-qmp", f"unix:{self.qmp_path},server=on,wait=off",
                                                       "-device", "virtio-balloon-device,free-page-reporting=on"]
        if incoming:
            extra += ["-incoming", f"exec:cat {incoming}", "-S"]
        if os.path.exists(self.qmp_path):
            os.unlink(self.qmp_path)
        sock = tmp / "agent.sock"
        if sock.exists():
            sock.unlink()
        super().__init__(guest, tmp, memory_mb=memory_mb, devices=extra)

    def qmp(self, *commands):
        deadline = time.monotonic() + 60
        while not os.path.exists(self.qmp_path) and time.monotonic() < deadline:
            select.select([], [], [], 0.005)  # QEMU makes the socket as it sets up
        return spacetest.qmp(self.qmp_path, *commands)


def raw_round(guest, memory_mb=MEMORY_MB):
    """Raw QEMU: start -> hello; suspend (stop + migrate to a file, synced); resume (-incoming + cont -> hello)."""
    with tempfile.TemporaryDirectory(prefix="space-bench-raw.") as d:
        tmp = pathlib.Path(d)
        vm = RawVM(guest, tmp, memory_mb=memory_mb)
        try:
            _host, _hello, boot = vm.connect()
            image = str(tmp / "memory")
            t0 = time.monotonic()
            vm.qmp("stop", ("migrate", {"uri": f"exec:cat > {image}"}))
            while vm.qmp("query-migrate")[0]["return"].get("status") != "completed":
                select.select([], [], [], 0.02)
            fd = os.open(image, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)
            suspend = time.monotonic() - t0
        finally:
            vm.stop()
        t0 = time.monotonic()
        vm = RawVM(guest, tmp, incoming=image, memory_mb=memory_mb)
        try:
            while vm.qmp("query-status")[0]["return"]["status"] == "inmigrate":
                select.select([], [], [], 0.02)
            vm.qmp("cont")
            vm.connect()
            resume = time.monotonic() - t0
        finally:
            vm.stop()
        return boot, suspend, resume


def spaced_round(api):
    t0 = time.monotonic()
    sbid = api.create(isolation="microvm", memory_mb=MEMORY_MB)
    api.exec(sbid, ["true"])
    create = time.monotonic() - t0
    rts = []
    for _ in range(20):
        t = time.monotonic()
        api.exec(sbid, ["true"])
        rts.append(time.monotonic() - t)
    t = time.monotonic()
    api.ok("POST", f"/v1/sandboxes/{sbid}/suspend")
    suspend = time.monotonic() - t
    t = time.monotonic()
    api.ok("POST", f"/v1/sandboxes/{sbid}/resume")
    api.exec(sbid, ["true"])
    resume = time.monotonic() - t
    # a booted guest's image as the start of a new sandbox: restore instead of boot
    snap = api.ok("POST", f"/v1/sandboxes/{sbid}/snapshot", expect=(201,))["id"]
    t = time.monotonic()
    clone = api.ok("POST", "/v1/sandboxes", {"snapshot": snap}, expect=(201,))["id"]
    api.exec(clone, ["true"])
    restored = time.monotonic() - t
    api.delete(clone)
    api.ok("DELETE", f"/v1/snapshots/{snap}", expect=(204,))
    api.delete(sbid)
    # the usual size: from the template's booted image (made by the first such create)
    t = time.monotonic()
    warm = api.create(isolation="microvm")
    api.exec(warm, ["true"])
    booted = time.monotonic() - t
    api.delete(warm)
    return create, med(rts), suspend, resume, restored, booted


def gvisor_round_trip(api):
    sbid = api.create(isolation="gvisor")
    api.exec(sbid, ["true"])
    rts = []
    for _ in range(20):
        t = time.monotonic()
        api.exec(sbid, ["true"])
        rts.append(time.monotonic() - t)
    api.delete(sbid)
    return med(rts)


def qemu_of(daemon, sbid):
    """The QEMU of sandbox sbid: the pid spaced wrote for it."""
    with open(os.path.join(daemon.sandbox_dir(sbid), "vm", "qemu.pid")) as f:
        return int(f.read())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--idle-vms", type=int, default=10)
    ap.add_argument("--idle", type=float, default=20.0)
    ap.add_argument("--cache", default=os.environ.get("SPACE_VM_CACHE", "/var/cache/space"))
    args = ap.parse_args()
    r = subprocess.run([os.path.join(ROOT, "build", "space-vm-guest"), "--cache-dir", args.cache,
                        "--agent", os.path.join(ROOT, "build", "space-agent"), "--no-fetch", "--template", "default"],
                       capture_output=True, text=True, check=True)
    guest = json.loads(r.stdout)
    daemon = spacetest.Daemon(prefix="space-bench-vm-", args=["--isolation", "gvisor"])
    daemon.start()
    try:
        api = daemon.api
        api.delete(api.create(isolation="microvm"))  # the booted image made once, before timing
        raw, raw_usual, ours = [], [], []
        for _ in range(args.rounds):  # interleaved, so both see the same machine
            raw.append(raw_round(guest))
            raw_usual.append(raw_round(guest, 512))
            ours.append(spaced_round(api))
        gv = gvisor_round_trip(api)
        rb, rs, rr = (med([x[i] for x in raw]) for i in range(3))
        oc, ort, os_, orr, ocs, ob = (med([x[i] for x in ours]) for i in range(6))
        ru = med([x[2] for x in raw_usual])
        print(f"{args.rounds} rounds, -m {MEMORY_MB} unless said, TCG tb-size=32; medians")
        print("| figure | space (microvm) | peer | ratio | target |")
        print("|---|---|---|---|---|")
        print(f"| create -> first exec of true | {oc:.2f} s | raw QEMU start -> hello {rb:.2f} s | "
              f"{oc / rb:.2f}x | <= 1.2x |")
        print(f"| create from the template's booted image (512 MiB) -> first exec of true | {ob:.2f} s | "
              f"raw -incoming of a booted 512 MiB guest + cont -> hello {ru:.2f} s | {ob / ru:.2f}x | <= 1.2x |")
        print(f"| create from a snapshot of a booted guest -> first exec of true | {ocs:.2f} s | "
              f"raw -incoming + cont -> hello {rr:.2f} s | {ocs / rr:.2f}x | <= 1.2x |")
        print(f"| exec round trip of true | {ort * 1000:.1f} ms | gVisor sandbox {gv * 1000:.1f} ms | "
              f"{ort / gv:.2f}x | <= 15 ms |")
        print(f"| suspend | {os_:.2f} s | raw stop + migrate to a file {rs:.2f} s | {os_ / rs:.2f}x | <= 1.2x |")
        print(f"| resume (to an exec answered) | {orr:.2f} s | raw -incoming + cont -> hello {rr:.2f} s | "
              f"{orr / rr:.2f}x | <= 1.2x |")
        # idle memory: booted guests (256 MiB), guests restored from one booted guest's snapshot,
        # and guests of the usual size from the template's booted image (512 MiB)
        ids = [api.create(isolation="microvm", memory_mb=MEMORY_MB) for _ in range(args.idle_vms)]
        for sbid in ids:
            api.exec(sbid, ["true"])
        snap = api.ok("POST", f"/v1/sandboxes/{ids[0]}/snapshot", expect=(201,))["id"]
        restored = [api.ok("POST", "/v1/sandboxes", {"snapshot": snap}, expect=(201,))["id"]
                    for _ in range(args.idle_vms)]
        warm = [api.create(isolation="microvm") for _ in range(args.idle_vms)]
        for sbid in restored + warm:
            api.exec(sbid, ["true"])
        select.select([], [], [], args.idle)  # idle: the guests are left alone
        for what, group in (("booted, 256 MiB", ids), ("restored from a snapshot, 256 MiB", restored),
                            ("from the template's booted image, 512 MiB", warm)):
            pss = [kib(qemu_of(daemon, s), "Pss:") / 1024 for s in group]
            rss = [kib(qemu_of(daemon, s), "Rss:") / 1024 for s in group]
            print(f"| QEMU per idle VM, {what}, after {args.idle:.0f} s ({len(group)} VMs) | "
                  f"PSS {med(pss):.0f} MiB, RSS {med(rss):.0f} MiB | | | PSS <= 96 MiB (256 MiB guest) |")
        spaced_rss = daemon.rss_kib() / 1024
        print(f"| spaced's RSS with {3 * args.idle_vms} idle VMs | {spaced_rss:.1f} MiB | | | |")
        for sbid in ids + restored + warm:
            api.delete(sbid)
        api.ok("DELETE", f"/v1/snapshots/{snap}", expect=(204,))
    finally:
        daemon.cleanup()


if __name__ == "__main__":
    main()
