#!/usr/bin/python3
"""bench/vm.py - the microVM guest booted raw under QEMU (TCG): what the vm driver will cost.

Boots the guest that spaced prepares (build/space-vm-guest, from the cache) N times, each in
its own QEMU, and reports medians: QEMU start to the agent's hello, the exec round trip of a
static program over the serial port, and QEMU's memory (RSS and PSS) right after the hello
and after IDLE seconds idle: guest RAM anonymous (QEMU's default) or from a memfd, each
without and with virtio-balloon free page reporting.

    /usr/bin/python3 bench/vm.py [--boots N] [--idle S] [--cache DIR]

Needs make vm-guest first (it may download the kernel); never uses KVM.
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
import test_boot  # noqa: E402  (the VM of the boot test)

REPORTING = ("-device", "virtio-balloon-device,free-page-reporting=on")
# Guest RAM from a memfd: QEMU madvises anonymous guest RAM for transparent huge pages, so
# on a host with THP in madvise mode each 4 KiB the guest touches costs the host 2 MiB;
# shared memory follows shmem_enabled (never, by default) instead.
MEMFD = ("-object", "memory-backend-memfd,id=mem,size=256M", "-machine", "memory-backend=mem")
CONFIGS = (("anonymous RAM", ()), ("anonymous RAM, free page reporting", REPORTING),
           ("memfd RAM", MEMFD), ("memfd RAM, free page reporting", MEMFD + REPORTING))


def one(guest, devices, idle):
    with tempfile.TemporaryDirectory(prefix="space-bench-vm.") as d:
        vm = test_boot.VM(guest, pathlib.Path(d), devices=devices)
        try:
            host, _hello, boot = vm.connect()
            rounds = []
            for _ in range(20):
                t0 = time.monotonic()
                pid = host.exec(["/init", "--pid1-state"], cwd="/")
                assert host.collect(pid)[2] == 0
                rounds.append(time.monotonic() - t0)
            at_hello = (vm.rss_kib(), vm.pss_kib())
            # idle: nothing to wait on but time itself; the guest is left alone
            select.select([], [], [], idle)
            host.ping()
            after = (vm.rss_kib(), vm.pss_kib())
            return boot, statistics.median(rounds), at_hello, after
        finally:
            vm.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--boots", type=int, default=5)
    ap.add_argument("--idle", type=float, default=20.0)
    ap.add_argument("--cache", default=os.environ.get("SPACE_VM_CACHE", "/var/cache/space"))
    args = ap.parse_args()
    r = subprocess.run([os.path.join(ROOT, "build", "space-vm-guest"), "--cache-dir", args.cache,
                        "--agent", os.path.join(ROOT, "build", "space-agent"), "--no-fetch"],
                       capture_output=True, text=True, check=True)
    guest = json.loads(r.stdout)
    print(f"kernel {guest['kernel']['package']} {guest['kernel']['version']}, "
          f"initramfs {guest['initramfs']['bytes'] / 1e6:.2f} MB, -m 256, tb-size=32, {args.boots} boots")
    print("| guest RAM | boot to hello | exec round trip | RSS / PSS at hello | "
          f"RSS / PSS after {args.idle:.0f} s idle |")
    print("|---|---|---|---|---|")
    for name, devices in CONFIGS:
        runs = [one(guest, devices, args.idle) for _ in range(args.boots)]
        med = lambda xs: statistics.median(xs)  # noqa: E731
        boot = med([x[0] for x in runs])
        rt = med([x[1] for x in runs])
        h = (med([x[2][0] for x in runs]) / 1024, med([x[2][1] for x in runs]) / 1024)
        i = (med([x[3][0] for x in runs]) / 1024, med([x[3][1] for x in runs]) / 1024)
        print(f"| {name} | {boot:.2f} s | {rt * 1000:.1f} ms | {h[0]:.0f} / {h[1]:.0f} MiB | "
              f"{i[0]:.0f} / {i[1]:.0f} MiB |")


if __name__ == "__main__":
    main()
