"""Boot tests of the microVM guest, under QEMU's microvm machine with TCG.

The guest is what spaced builds (daemon/driver/vm_guest.c, through build/space-vm-guest):
Debian's cloud kernel from the cache and our initramfs, whose /init is build/space-agent
started with `--vm`. Each test boots its own QEMU (no KVM, no network device) with the
agent's virtio-serial port on a Unix socket the test listens on and hands to QEMU as a
descriptor (so the test's connect is queued before QEMU runs: nothing to poll for), opens a
connection with H_OPEN and speaks the agent protocol there with the client of tests/agent.

Every wait is a read with a deadline (the socket, QEMU's exit); timings are printed for
docs/microvm.md, never asserted. `make vm-guest` is the setup step (it may download the
kernel); the test itself never reaches the network: a kernel missing from the cache fails.

Run: make vm-test, or /usr/bin/python3 -m pytest -s tests/vm after make vm-guest.
"""

import json
import os
import select
import shutil
import socket
import struct
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "agent"))
import test_agent as proto  # noqa: E402  (the protocol client: Host, P, parse_stat)

BUILD = os.path.join(ROOT, os.environ.get("BUILD", "build"))
GUEST_TOOL = os.path.join(BUILD, "space-vm-guest")
AGENT = os.environ.get("SPACE_AGENT_BIN", os.path.join(BUILD, "space-agent"))
CACHE = os.environ.get("SPACE_VM_CACHE", "/var/cache/space")
QEMU = "qemu-system-x86_64"
BOOT_TIMEOUT = 60.0  # from QEMU's start to the agent's hello, on a busy 2-core host
PORT = "space.agent"


@pytest.fixture(scope="module")
def guest():
    """The kernel, the initramfs and the command line, as spaced would use them."""
    assert shutil.which(QEMU), "qemu-system-x86 is not installed: run make vm-test"
    r = subprocess.run([GUEST_TOOL, "--cache-dir", CACHE, "--agent", AGENT, "--no-fetch", "--template", "default"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"space-vm-guest failed (run make vm-guest first): {r.stderr}"
    return json.loads(r.stdout)


class VM:
    """One QEMU microvm guest and the host end of its agent port."""

    def __init__(self, guest, tmp, memory_mb=256, devices=()):
        self.sock_path = str(tmp / "agent.sock")
        self.console = str(tmp / "console.log")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.sock_path)
        listener.listen(1)
        fd = listener.fileno()
        argv = [QEMU,
                "-M", "microvm,pit=on,pic=on,rtc=on", "-cpu", "max", "-m", str(memory_mb),
                "-accel", "tcg,tb-size=32",
                "-nodefaults", "-no-user-config", "-nographic", "-display", "none", "-no-reboot",
                "-kernel", guest["kernel"]["vmlinuz"], "-initrd", guest["initramfs"]["path"],
                "-append", guest["cmdline"],
                "-serial", "file:" + self.console,
                "-chardev", f"socket,id=agent,fd={fd},server=on,wait=off",
                "-device", "virtio-serial-device",
                "-device", f"virtserialport,chardev=agent,name={PORT}",
                "-device", "virtio-rng-device", *devices]
        self.started = time.monotonic()
        self.qemu = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, pass_fds=(fd,))
        listener.close()
        self.host = None

    def connect(self, timeout=BOOT_TIMEOUT):
        """A new host connection; returns (Host, hello fields, seconds from QEMU's start).

        The port has no connections of its own: the host opens one with H_OPEN and a fresh
        nonce, and everything before the agent's A_OPEN with that nonce belongs to an
        earlier connection (docs/agent-protocol.md, "The virtio-serial port")."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(self.sock_path)  # queued in the listener QEMU holds
        host = proto.Host(sock)
        nonce = os.urandom(8)
        host.send("H_OPEN", 0, nonce)
        marker = proto.HDR.pack(8, proto.P["A_OPEN"], 0, 0, 0) + nonce
        deadline = time.monotonic() + timeout
        raw = b""
        while marker not in raw:
            left = deadline - time.monotonic()
            r, _, _ = select.select([sock, self.qemu.stderr], [], [], max(0, left))
            if self.qemu.stderr in r or self.qemu.poll() is not None:
                raise AssertionError(f"QEMU exited ({self.qemu.poll()}): {self.qemu.stderr.read1(4096)!r}\n"
                                     + self.console_text())
            if not r:
                raise AssertionError(f"no A_OPEN within {timeout}s\n" + self.console_text())
            data = sock.recv(1 << 16)
            assert data, "QEMU closed the agent's socket"
            raw += data
        host.buf = raw[raw.index(marker) + len(marker):]
        t, chan, p = host.next(timeout=max(0.1, deadline - time.monotonic()))
        assert (t, chan) == ("A_HELLO", 0), f"after A_OPEN: {t} on {chan:#x}"
        version, max_pid, boot_id = struct.unpack_from("<IIQ", p)
        self.host = host
        return host, dict(version=version, max_pid=max_pid, boot_id=boot_id), time.monotonic() - self.started

    def console_text(self):
        try:
            with open(self.console, errors="replace") as f:
                return "console:\n" + f.read()[-4000:]
        except OSError:
            return "(no console output)"

    def rss_kib(self):
        return self._kib(f"/proc/{self.qemu.pid}/status", "VmRSS:")

    def pss_kib(self):
        return self._kib(f"/proc/{self.qemu.pid}/smaps_rollup", "Pss:")

    @staticmethod
    def _kib(path, key):
        with open(path) as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
        raise AssertionError(f"no {key} in {path}")

    def stop(self):
        if self.host:
            self.host.sock.close()
        if self.qemu.poll() is None:
            self.qemu.kill()
        self.qemu.wait(timeout=30)
        self.qemu.stderr.close()


@pytest.fixture
def vm(guest, tmp_path):
    v = VM(guest, tmp_path)
    yield v
    v.stop()


def run(host, argv, cwd="/"):
    """Runs argv in the guest; (stdout, stderr, code)."""
    pid = host.exec(argv, cwd=cwd)
    out, err, code, _signo, _flags = host.collect(pid)
    return out, err, code


def median_round_trip(host, argv, cwd="/", n=20):
    """The median time of n runs of argv (each asserted to exit 0), in seconds."""
    rounds = []
    for _ in range(n):
        t0 = time.monotonic()
        assert run(host, argv, cwd=cwd)[2] == 0
        rounds.append(time.monotonic() - t0)
    return sorted(rounds)[n // 2]


def test_boots_to_the_agents_hello(vm, guest):
    host, hello, seconds = vm.connect()
    assert hello["version"] == proto.P["PROTO_VERSION"]
    assert hello["max_pid"] == 0  # a fresh guest runs nothing yet
    assert hello["boot_id"] != 0
    host.ping()
    print(f"\nboot to hello: {seconds:.2f} s; initramfs {guest['initramfs']['bytes']} bytes")


def test_exec_over_the_serial_port(vm):
    host, _, _ = vm.connect()
    # the agent's own probe of PID 1: it needs /proc mounted by the agent as init
    t0 = time.monotonic()
    out, err, code = run(host, ["/init", "--pid1-state"])
    first = time.monotonic() - t0
    assert (code, err) == (0, b""), err
    assert out in (b"S\n", b"R\n"), out
    median = median_round_trip(host, ["/init", "--pid1-state"])
    print(f"\nexec round trip over the serial port: first {first * 1000:.1f} ms, median {median * 1000:.1f} ms of 20")


def test_a_command_that_cannot_start_is_an_error(vm):
    host, _, _ = vm.connect()
    with pytest.raises(proto.AgentError) as e:
        host.exec(["/bin/sh", "-c", "true"], cwd="/")  # the initramfs has no shell
    assert e.value.err == proto.errno.ENOENT


def test_modules_loaded_and_port_named(vm, guest):
    host, _, _ = vm.connect()
    _st, modules = host.read_file("/proc/modules")
    loaded = {line.split()[0] for line in modules.decode().splitlines()}
    wanted = guest["initramfs"]["modules"]
    assert set(wanted) <= loaded, f"not loaded: {set(wanted) - loaded}"
    # loaded, the files are removed: the initramfs is RAM the guest would keep
    assert [e["name"] for e in host.list("/.space/modules")] == []
    ports = [e["name"] for e in host.list("/sys/class/virtio-ports")]
    names = [host.read_file(f"/sys/class/virtio-ports/{p}/name")[1].strip() for p in ports]
    assert PORT.encode() in names
    dev = [e["name"] for e in host.list("/dev")]
    assert ports[names.index(PORT.encode())] in dev
    _st, mounts = host.read_file("/proc/mounts")
    kinds = {line.split()[2]: line.split()[1] for line in mounts.decode().splitlines()}
    assert (kinds.get("devtmpfs"), kinds.get("proc"), kinds.get("sysfs")) == ("/dev", "/proc", "/sys")


def test_host_reconnects_to_the_same_guest(vm):
    host, hello, _ = vm.connect()
    pid = host.exec(["/init", "--pid1-state"], cwd="/")
    host.collect(pid)
    host.sock.close()
    vm.host = None
    # a new host on the same port: the agent says hello again, same boot, and serves
    host2, hello2, _ = vm.connect(timeout=proto.TIMEOUT)
    assert hello2["boot_id"] == hello["boot_id"]
    assert hello2["max_pid"] >= pid
    out, _err, code = run(host2, ["/init", "--pid1-state"])
    assert code == 0 and out in (b"S\n", b"R\n")


def test_output_waits_for_a_host(vm):
    """Output of a process that exits while no host is connected is sent on the next connection."""
    host, _, _ = vm.connect()
    pid = host.exec(["/init", "--pid1-state"], cwd="/")
    host.sock.close()  # gone before the output and the exit are read
    vm.host = None
    host2, _, _ = vm.connect(timeout=proto.TIMEOUT)
    out, err, code, _signo, _flags = host2.collect(pid)
    assert code == 0 and out in (b"S\n", b"R\n"), (out, err)


def test_the_agent_ending_a_connection_says_so(vm):
    """A frame that fails the agent's checks (reserved bits set in its header) ends the
    connection on the agent's side. The port cannot hang up, so the agent writes out what it
    queued and then A_OPEN with nonce 0; the host opens again and finds the same guest serving,
    the exit of a process it started before the end given on one connection or the other."""
    host, hello, _ = vm.connect()
    pid = host.exec(["/init", "--pid1-state"], cwd="/")
    waiting = vm.console_text().count("waiting for the host to open")
    host.sock.sendall(proto.HDR.pack(0, proto.P["H_PING"], 0, 1, 0))  # rsvd must be 0
    seen = []
    while True:
        t, chan, p = host.next(timeout=proto.TIMEOUT)
        if t == "A_OPEN":
            break
        seen.append((t, chan))
    assert (chan, p) == (0, bytes(8)), (chan, p)
    # the agent opens its port again at once; an H_OPEN sent while it is closed would wait in
    # QEMU unread (spaced sends it again after AGENT_OPEN_MS)
    deadline = time.monotonic() + proto.TIMEOUT
    while vm.console_text().count("waiting for the host to open") == waiting:
        assert time.monotonic() < deadline, vm.console_text()
        select.select([], [], [], 0.01)
    host.sock.close()
    vm.host = None
    host2, hello2, _ = vm.connect(timeout=proto.TIMEOUT)
    assert hello2["boot_id"] == hello["boot_id"]
    if ("A_EXIT", pid) not in seen:  # the process had not exited when the connection ended
        assert host2.collect(pid)[2] == 0
    out, _err, code = run(host2, ["/init", "--pid1-state"])
    assert code == 0 and out in (b"S\n", b"R\n")


def test_idle_memory(vm):
    host, _, seconds = vm.connect()
    host.ping()
    rss = vm.rss_kib()
    assert rss > 0
    print(f"\nQEMU RSS right after hello: {rss / 1024:.0f} MiB (boot {seconds:.2f} s)")


def test_init_finds_its_argument_among_the_kernels_leftovers(guest, tmp_path):
    """The kernel passes init every command-line word it does not know (nokaslr is one of
    them) before what follows "--": the agent is a VM's init wherever --vm stands."""
    assert " -- " in guest["cmdline"]
    other = dict(guest, cmdline=guest["cmdline"].replace(" -- ", " nokaslr -- "))
    v = VM(other, tmp_path)
    try:
        host, _hello, _ = v.connect()
        _st, cmdline = host.read_file("/proc/cmdline")
        assert b"nokaslr" in cmdline
        _st, argv = host.read_file("/proc/1/cmdline")
        assert argv.split(b"\0")[:3] == [b"/init", b"nokaslr", b"--vm"]
    finally:
        v.stop()
