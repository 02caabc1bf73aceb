"""The microvm driver through a real spaced: what only a microVM has, or can go wrong only there.

Each test module starts its own spaced (a temporary state dir) whose sandboxes are microVMs
under QEMU's microvm machine, TCG here (this host's /dev/kvm, where there is one, is
PVM-backed: KVM under it would emulate). The guest is what `make vm-guest` put in the cache;
nothing here reaches the network.

What the tests do to a VM from outside is what an operator or a fault would do: kill QEMU,
panic the guest kernel, stop the VM behind spaced's back, restart spaced. Every wait is a
poll with a deadline or a read of a stream until an event.

Run: make vm-test (after make vm-guest), or /usr/bin/python3 -m pytest -q tests/vm/test_driver.py
"""

import json
import os
import shutil
import signal
import socket
import sys
import threading
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import spacetest  # noqa: E402
from spacetest import collect, wait_until  # noqa: E402

VM_ARGS = ["--isolation", "microvm"]
FAIL_DEADLINE = 90  # for spaced to see a VM gone or silent: liveness ping (5 s) + deadline (15 s) + wake


def make_daemon(**kw):
    return spacetest.Daemon(prefix="space-vm-", args=VM_ARGS + kw.pop("args", []), **kw)


@pytest.fixture(scope="module")
def spaced():
    d = make_daemon()
    try:
        d.start()
        yield d
    finally:
        d.cleanup()


@pytest.fixture
def api(spaced):
    return spaced.api


@pytest.fixture
def vm(api):
    sbid = api.create(isolation="microvm")
    yield sbid
    api.delete(sbid)


def sh(api, sbid, script, **kw):
    res = api.exec(sbid, ["sh", "-c", script], **kw)
    assert res["exit_code"] == 0, res
    return res["stdout"]


def qemu_pids(daemon, sbid):
    """Live QEMU processes whose command line names this sandbox (-name ID)."""
    mine = sbid.encode()
    return [pid for pid, args in spacetest.host_processes()
            if args and args[0].endswith(b"qemu-system-x86_64")
            and any(a == b"-name" and b == mine for a, b in zip(args, args[1:]))]


def state(api, sbid):
    return api.ok("GET", f"/v1/sandboxes/{sbid}")


def wait_state(api, sbid, want, deadline=FAIL_DEADLINE):
    got = {}

    def reached():
        got.update(state(api, sbid))
        return got["state"] == want
    wait_until(reached, deadline, f"sandbox {sbid} to be {want}", interval=0.2)
    return got


def qmp(daemon, sbid, command):
    """One command on the VM's monitor, from outside spaced (as an operator's tool would)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(os.path.join(daemon.sandbox_dir(sbid), "vm", "qmp.sock"))
    f = s.makefile("rwb")
    json.loads(f.readline())  # greeting
    for cmd in ("qmp_capabilities", command):
        f.write(json.dumps({"execute": cmd}).encode() + b"\n")
        f.flush()
        while True:
            msg = json.loads(f.readline())
            if "return" in msg or "error" in msg:
                break
        assert "return" in msg, msg
    s.close()


# --------------------------------------------------------------------------
# boot, the guest's own kernel, the accelerator


def test_a_microvm_runs_its_own_kernel_named_after_the_sandbox(api, spaced, vm):
    out = sh(api, vm, "uname -r; hostname; cat /etc/hostname; getent hosts localhost | head -1; "
                      "mount | grep ' / '; python3 -c 'print(6*7)'")
    lines = out.splitlines()
    assert lines[0] != os.uname().release and "cloud-amd64" in lines[0], out  # not the host's kernel
    assert lines[1] == vm and lines[2] == vm, out
    assert "localhost" in lines[3], out
    assert "overlay" in lines[4], out  # the template's image under the sandbox's own disk
    assert lines[5] == "42", out
    assert len(qemu_pids(spaced, vm)) == 1
    assert state(api, vm)["isolation"] == "microvm"


def test_the_accelerator_is_chosen_from_the_cpu_and_shown(api, spaced):
    version = api.ok("GET", "/v1/version")
    runtime = json.dumps(version)
    with open("/proc/cpuinfo") as f:
        flags = next((line for line in f if line.startswith("flags")), "").split()
    kvm_usable = ("vmx" in flags or "svm" in flags) and os.access("/dev/kvm", os.R_OK | os.W_OK)
    assert ("kvm" if kvm_usable else "tcg") in runtime, runtime
    assert "QEMU" in runtime, runtime


def kvm_opens():
    try:
        os.close(os.open("/dev/kvm", os.O_RDWR))
        return True
    except OSError:
        return False


def test_accel_overrides_the_choice_and_nonsense_is_refused_at_start():
    """--accel kvm is taken where /dev/kvm opens (even a PVM-backed one, which auto avoids) and
    refused at start where it does not; an unknown accelerator is refused everywhere."""
    bad = make_daemon(args=["--accel", "warp"])
    try:
        with pytest.raises(BaseException):
            bad.start(deadline=60)
        assert bad.proc.wait(timeout=60) != 0
        assert "--accel" in bad.log_tail(), bad.log_tail()
    finally:
        bad.cleanup()
    d = make_daemon(args=["--accel", "kvm"])
    try:
        if kvm_opens():
            d.start()  # no VM is booted: KVM on a PVM host would emulate every instruction
            assert "kvm" in json.dumps(d.api.ok("GET", "/v1/version"))
        else:
            with pytest.raises(BaseException):
                d.start(deadline=60)
            assert d.proc.wait(timeout=60) != 0
            assert "/dev/kvm" in d.log_tail(), d.log_tail()
    finally:
        d.cleanup()


def test_the_vms_resources_are_its_own(api, spaced):
    sbid = api.create(isolation="microvm", memory_mb=384, cpus=2)
    try:
        out = sh(api, sbid, "nproc; awk '/MemTotal/ {print $2}' /proc/meminfo")
        cpus, mem_kib = out.split()
        assert int(cpus) == 2
        assert 300 * 1024 < int(mem_kib) <= 384 * 1024  # the guest kernel's view of its RAM
    finally:
        api.delete(sbid)


def proc_status(pid):
    with open(f"/proc/{pid}/status") as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def test_qemu_runs_jailed_as_a_user_of_its_own_seeing_nothing_of_the_host(api, spaced, vm):
    [pid] = qemu_pids(spaced, vm)
    st = proc_status(pid)
    uids, gids = st["Uid"].split(), st["Gid"].split()
    assert len(set(uids)) == 1 and int(uids[0]) != 0, st["Uid"]  # real, effective, saved, fs
    assert gids == [uids[0]] * 4 and st["Groups"].strip() == ""
    assert st["NoNewPrivs"] == "1" and st["Seccomp"] == "2"  # QEMU's -sandbox filter
    assert st["NSpid"].split()[-1] == "1"  # the only process of its own PID namespace
    for ns in ("mnt", "pid", "net", "ipc", "uts"):
        assert os.readlink(f"/proc/{pid}/ns/{ns}") != os.readlink(f"/proc/self/ns/{ns}"), ns
    # its root holds the programs and libraries, a few device nodes, its own /proc; no state
    # dir, cache, /tmp, /home, /run or /sys of the host
    root = f"/proc/{pid}/root"
    assert set(os.listdir(root)) <= {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "dev", "proc"}
    assert os.listdir(f"{root}/etc") == ["ld.so.cache"]
    assert set(os.listdir(f"{root}/dev")) <= {"null", "zero", "full", "random", "urandom", "kvm"}
    assert not os.path.exists(root + spaced.state_dir)
    with open(f"/proc/{pid}/net/dev") as f:  # a network namespace with loopback alone
        assert [line.split(":")[0].strip() for line in f.readlines()[2:]] == ["lo"]
    other = api.create(isolation="microvm")
    try:
        [other_pid] = qemu_pids(spaced, other)
        assert proc_status(other_pid)["Uid"] != st["Uid"]  # each VM's QEMU its own user
        assert os.readlink(f"/proc/{other_pid}/ns/pid") != os.readlink(f"/proc/{pid}/ns/pid")
    finally:
        api.delete(other)
    assert sh(api, vm, "echo fine").strip() == "fine"  # and the VM works in there


def test_root_inside_owns_its_kernel_and_reaches_only_its_own_devices(api, vm):
    """What gVisor refuses (mounts, sethostname, raw sockets: the escape suite's gVisor-only
    tests) is allowed in a guest kernel; the guest still reaches nothing of the host but the
    devices its QEMU gives it, and not the agent's port from a second opener."""
    host_name = socket.gethostname()
    out = sh(api, vm, r"""
        ls /sys/block | tr '\n' ' '; echo
        ls /sys/class/net | tr '\n' ' '; echo
        for p in /sys/class/virtio-ports/*; do
            [ "$(cat $p/name)" = space.agent ] && port=/dev/$(basename $p)
        done
        python3 -c "import os, sys
try:
    os.open(sys.argv[1], os.O_RDWR); print('port: OPENED')
except OSError as e:
    print('port:', e.strerror)" "$port"
        mkdir -p /mnt/c && mount -t cgroup2 none /mnt/c && echo mounted
        hostname evil-name && hostname
    """)
    blocks, nets, port, mounted, name = out.splitlines()
    assert blocks.split() == ["vda", "vdb"]  # the template's image and the sandbox's disk
    # its network: one device, behind which is a tap in a namespace of its own (docs/network.md)
    assert nets.split() == ["eth0", "lo"]
    assert port == "port: Device or resource busy"  # the agent holds its port alone
    assert mounted == "mounted" and name == "evil-name"  # its own kernel's, allowed
    assert socket.gethostname() == host_name  # the host's own name untouched


def test_a_process_over_the_memory_limit_is_killed_by_the_guest_kernel_alone(api, vm):
    sh(api, vm, "sleep 600 >/dev/null 2>&1 & echo $! > /work/survivor")
    # 16 MiB at a time, each touched, far past the guest's RAM (one 700 MiB request would be
    # refused outright by the kernel's overcommit heuristic, as on any Linux)
    grow = "b = []\nwhile True: b.append(bytearray(16 << 20))"
    res = api.exec(vm, ["python3", "-c", grow])
    assert res["exit_code"] == 137, res
    assert res.get("oom_killed") is True, res  # reported as the gVisor watcher's kills are
    # the sandbox, and its other processes, live on
    assert sh(api, vm, "kill -0 $(cat /work/survivor) && echo alive").strip() == "alive"


def test_commands_meet_their_own_limits_and_the_agent_keeps_answering(api, vm):
    """Commands run as root, whom RLIMIT_NPROC does not stop: they live in a cgroup of their
    own inside the guest, at most SPACE_NPROC processes; the agent stays outside it."""
    limits = sh(api, vm, "cat /proc/self/cgroup /sys/fs/cgroup/space/pids.max /proc/1/cgroup").split()
    assert limits == ["0::/space", "1024", "0::/"], limits
    # processes past the limit cannot start, and execs beside them still run (each is started
    # outside the group and joins it, which the limit does not refuse)
    storm = ("import os, time\nn = 0\nwhile True:\n    try:\n        pid = os.fork()\n"
             "    except BlockingIOError:\n        break\n    if pid == 0:\n        os.closerange(0, 3)\n"
             "        time.sleep(600)\n        os._exit(0)\n    n += 1\nprint(n)")
    forked = int(sh(api, vm, f"python3 -c '{storm}'", timeout=300))
    assert 1000 < forked < 1024, forked  # with the shell and python itself: 1024 in all
    here, held = sh(api, vm, "read n < /sys/fs/cgroup/space/pids.current; echo here $n").split()
    assert here == "here" and int(held) > forked, (here, held, forked)


# --------------------------------------------------------------------------
# the channel: back-pressure, and across a suspend


def test_output_much_larger_than_every_buffer_arrives_whole(api, vm):
    n = 64 << 20
    out, err, events = collect(api.exec_stream(vm, ["sh", "-c", f"head -c {n} /dev/zero | tr '\\0' x"]))
    assert len(out) == n and set(out) == {ord("x")}, (len(out), err)
    assert events[-1]["type"] == "exit" and events[-1]["exit_code"] == 0, events[-1]


def test_a_stream_goes_on_across_a_suspend_without_losing_a_line(api, vm):
    """Output queued in the guest's agent when its memory is written goes out after the
    restore: read again from the process's output, every line is there, in order, to the end."""
    script = "import time\nfor i in range(1, 401):\n print(i); time.sleep(0.01)"
    pid = api.ok("POST", f"/v1/sandboxes/{vm}/processes", {"cmd": ["python3", "-u", "-c", script]},
                 expect=(201,))["pid"]
    with api.stream("GET", f"/v1/sandboxes/{vm}/processes/{pid}/output") as s:
        first = int(spacetest.event_bytes(s.next_event()).split()[0])
    api.ok("POST", f"/v1/sandboxes/{vm}/suspend")
    api.ok("POST", f"/v1/sandboxes/{vm}/resume")
    with api.stream("GET", f"/v1/sandboxes/{vm}/processes/{pid}/output") as s:
        out, _, events = collect(s)
    nums = [int(x) for x in out.split()]
    assert nums and nums[0] > first and nums == list(range(nums[0], 401)), (first, nums[:3], nums[-3:])
    assert events[-1]["type"] == "exit" and events[-1]["exit_code"] == 0, events[-1]


# --------------------------------------------------------------------------
# lifecycle: pause, suspend, adoption


def test_pause_stops_the_guest_and_resume_continues_it(api, spaced, vm):
    sh(api, vm, "nohup sh -c 'while true; do date +%s%N > /dev/shm/t.new; mv /dev/shm/t.new /dev/shm/t; sleep 0.05; done' >/dev/null 2>&1 &")
    wait_until(lambda: sh(api, vm, "cat /dev/shm/t 2>/dev/null || true").strip(), 30, "the clock loop to start")
    api.ok("POST", f"/v1/sandboxes/{vm}/pause")
    assert state(api, vm)["state"] == "paused"
    assert qemu_pids(spaced, vm)  # memory kept on the host
    api.ok("POST", f"/v1/sandboxes/{vm}/resume")
    t1 = int(sh(api, vm, "cat /dev/shm/t"))
    wait_until(lambda: int(sh(api, vm, "cat /dev/shm/t")) > t1, 30, "the guest's clock loop to go on")


def guest_time(api, sbid):
    return int(sh(api, sbid, "date +%s"))


def test_the_guests_clock_is_the_hosts_after_a_start_a_pause_and_a_suspend(api):
    """A guest's clock stands still while QEMU is stopped, and a guest restored from an image
    (a template's booted image, a suspend) wakes up at the time of the image: spaced gives the
    agent its own clock after each (H_CLOCK), so the guest's is never behind the host's."""
    before = time.time()
    sbid = api.create(isolation="microvm")
    try:
        assert int(before) <= guest_time(api, sbid) <= time.time() + 1
        for action in ("pause", "suspend"):
            sh(api, sbid, "date -s @1000000000 >/dev/null")  # 2001: far behind
            assert guest_time(api, sbid) < 1000000000 + 86400
            api.ok("POST", f"/v1/sandboxes/{sbid}/{action}")
            before = time.time()
            api.ok("POST", f"/v1/sandboxes/{sbid}/resume")
            assert int(before) <= guest_time(api, sbid) <= time.time() + 1, action
    finally:
        api.delete(sbid)


def test_suspend_frees_the_vm_and_resume_restores_it_where_it_was(api, spaced, vm):
    sh(api, vm, "echo on-disk > /work/f; nohup sh -c 'i=0; while true; do i=$((i+1)); echo $i > /dev/shm/n.new; mv /dev/shm/n.new /dev/shm/n; "
                "sleep 0.05; done' >/dev/null 2>&1 & echo $! > /dev/shm/pid")
    wait_until(lambda: int(sh(api, vm, "cat /dev/shm/n 2>/dev/null || echo 0")) > 2, 30, "the counter to count")
    api.ok("POST", f"/v1/sandboxes/{vm}/suspend")
    assert state(api, vm)["state"] == "suspended"
    assert qemu_pids(spaced, vm) == []  # the machine's resources are released
    image = os.path.join(spaced.sandbox_dir(vm), "checkpoint", "memory")
    assert os.path.getsize(image) > 1 << 20
    api.ok("POST", f"/v1/sandboxes/{vm}/resume")
    # the same processes, memory-only files and disk, as they were
    assert sh(api, vm, "kill -0 $(cat /dev/shm/pid) && cat /work/f").strip() == "on-disk"
    n = int(sh(api, vm, "cat /dev/shm/n"))
    wait_until(lambda: int(sh(api, vm, "cat /dev/shm/n")) > n, 30, "the counter to go on after the restore")


def test_a_restarted_spaced_adopts_its_running_vms():
    d = make_daemon()
    try:
        d.start()
        sbid = d.api.create(isolation="microvm")
        sh(d.api, sbid, "nohup sleep 600 >/dev/null 2>&1 & echo $! > /work/pid")
        before = qemu_pids(d, sbid)
        d.kill(signal.SIGKILL)
        d.start()
        assert state(d.api, sbid)["state"] == "running"
        assert qemu_pids(d, sbid) == before  # the same VM, not a new boot

        def usable():  # spaced connects to the port again: 503 until the agent has answered
            status, body = d.api.json("POST", f"/v1/sandboxes/{sbid}/exec", {"cmd": ["true"]})
            assert status in (200, 503), (status, body)
            return status == 200
        wait_until(usable, 60, "the adopted VM's agent to answer", interval=0.1)
        assert sh(d.api, sbid, "kill -0 $(cat /work/pid) && echo same").strip() == "same"
    finally:
        d.cleanup()


# --------------------------------------------------------------------------
# a template's booted image


def boot_json(daemon, sbid):
    with open(os.path.join(daemon.sandbox_dir(sbid), "vm", "boot.json")) as f:
        return json.load(f)


def builders():
    """Live QEMU processes making a booted image (named boot<key>, never a sandbox's hex id)."""
    found = []
    for p in os.listdir("/proc"):
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if args[0].endswith(b"qemu-system-x86_64") and any(
                a == b"-name" and b.startswith(b"boot") for a, b in zip(args, args[1:])):
            found.append(int(p))
    return found


def test_sandboxes_of_the_usual_size_start_from_one_booted_image_each_its_own(api, spaced):
    a = api.create(isolation="microvm", env={"WHO": "first"})
    b = api.create(isolation="microvm", env={"WHO": "second", "EXTRA": "x" * 3000})
    try:
        ja, jb = boot_json(spaced, a), boot_json(spaced, b)
        assert ja["booted"] and ja["booted"] == jb["booted"]  # one image, built once, for both
        assert os.path.getsize(os.path.join(ja["booted"], "memory")) > 1 << 20
        assert os.path.exists(os.path.join(ja["booted"], "disk.img"))  # the disk its memory knows
        draw = "head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \\n'"
        script = (f"hostname; cat /etc/hostname; echo $WHO; echo ${{#EXTRA}}; mount | grep -c ' / .*overlay'; "
                  f"test -d /work && echo work; python3 -c 'print(6*7)'; {draw}")
        out_a, out_b = sh(api, a, script).split(), sh(api, b, script).split()
        assert out_a[:7] == [a, a, "first", "0", "1", "work", "42"], out_a
        assert out_b[:7] == [b, b, "second", "3000", "1", "work", "42"], out_b
        assert out_a[7] != out_b[7]  # the random stream is each one's own from the start
        assert a in sh(api, a, "cat /etc/hosts") and b not in sh(api, a, "cat /etc/hosts")
        # their disks are their own: a file of one is not in the other
        sh(api, a, "echo mine > /work/f")
        assert sh(api, b, "cat /work/f 2>/dev/null || echo absent").strip() == "absent"
        # and such a sandbox lives the whole life of any: suspend, resume, with its file
        api.ok("POST", f"/v1/sandboxes/{a}/suspend")
        api.ok("POST", f"/v1/sandboxes/{a}/resume")
        assert sh(api, a, "cat /work/f; hostname").split() == ["mine", a]
    finally:
        api.delete(a)
        api.delete(b)


def test_other_sizes_boot_and_the_booted_image_is_left_unchanged(api, spaced):
    usual = api.create(isolation="microvm")
    image = os.path.join(boot_json(spaced, usual)["booted"], "memory")
    before = os.stat(image)
    other = api.create(isolation="microvm", memory_mb=256)
    try:
        assert boot_json(spaced, other)["booted"] == ""
        assert f"--name={other}" in boot_json(spaced, other)["cmdline"]  # named as it boots
        assert "--name=" not in boot_json(spaced, usual)["cmdline"]  # named by the host once restored
        assert sh(api, other, "hostname").strip() == other
        sh(api, usual, "dd if=/dev/urandom of=/work/big bs=1M count=8 2>/dev/null; sync")
        after = os.stat(image)
        assert (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size)
    finally:
        api.delete(usual)
        api.delete(other)


def test_a_spaced_killed_while_making_a_booted_image_leaves_no_vm_behind():
    d = make_daemon()
    moved = None
    try:
        d.start()
        probe = d.api.create(isolation="microvm")
        image = boot_json(d, probe)["booted"]
        d.api.delete(probe)
        moved = image + ".kept-by-test"
        os.rename(image, moved)  # the next create must make the image again
        def create():  # answered by no one: spaced dies while making the image
            try:
                d.api.json("POST", "/v1/sandboxes", {"isolation": "microvm"})
            except OSError:
                pass
        t = threading.Thread(target=create, daemon=True)
        t.start()
        wait_until(lambda: builders() != [], 60, "the booted image's QEMU to start", interval=0.05)
        d.kill(signal.SIGKILL)
        wait_until(lambda: builders() == [], 30, "the builder to die with spaced", interval=0.05)
        assert not os.path.exists(image)  # nothing half made was published
        d.start()
        sbid = d.api.create(isolation="microvm")  # a new builder clears what was left and builds
        assert boot_json(d, sbid)["booted"] == image and os.path.exists(os.path.join(image, "memory"))
        assert sh(d.api, sbid, "hostname").strip() == sbid
    finally:
        d.cleanup()
        if moved and os.path.exists(moved):
            shutil.rmtree(moved)


# --------------------------------------------------------------------------
# forks


def test_a_fork_has_its_own_name_machine_id_and_randomness(api, vm):
    sh(api, vm, "echo 0123456789abcdef0123456789abcdef > /etc/machine-id; echo parent > /work/f")
    forks = api.ok("POST", f"/v1/sandboxes/{vm}/fork", {"count": 1}, expect=(200, 201))
    fork = (forks.get("sandboxes") or forks.get("ids") or [forks])[0]
    fork = fork["id"] if isinstance(fork, dict) else fork
    try:
        draw = "head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \\n'"
        p = sh(api, vm, f"hostname; cat /etc/machine-id; cat /work/f; {draw}").split()
        c = sh(api, fork, f"hostname; cat /etc/machine-id; cat /work/f; {draw}").split()
        assert p[0] == vm and c[0] == fork
        assert p[1] == "0123456789abcdef0123456789abcdef" and c[1] != p[1] and len(c[1]) == 32
        assert c[2] == "parent"
        assert c[3] != p[3]
        assert fork in sh(api, fork, "cat /etc/hosts")
    finally:
        api.delete(fork)


# --------------------------------------------------------------------------
# faults


def test_a_qemu_killed_from_outside_fails_the_sandbox_and_keeps_its_files(api, spaced, vm):
    sh(api, vm, "echo kept > /work/f; sync")
    for pid in qemu_pids(spaced, vm):
        os.kill(pid, signal.SIGKILL)
    got = wait_state(api, vm, "failed")
    assert got.get("reason"), got
    assert os.path.exists(os.path.join(spaced.sandbox_dir(vm), "upper", "disk.img"))
    other = api.create(isolation="microvm")  # the daemon and other sandboxes are fine
    try:
        assert sh(api, other, "echo ok").strip() == "ok"
    finally:
        api.delete(other)


def test_a_guest_kernel_panic_fails_the_sandbox_with_the_reason(api, spaced, vm):
    # the kernel's own crash: the exec's answer is the failure itself, or its exit if it wins
    status, _ = api.json("POST", f"/v1/sandboxes/{vm}/exec", {"cmd": ["sh", "-c", "echo c > /proc/sysrq-trigger"]})
    assert status in (200, 500), status
    got = wait_state(api, vm, "failed")
    assert "panic" in got.get("reason", ""), got
    assert qemu_pids(spaced, vm) == []
    assert os.path.exists(os.path.join(spaced.sandbox_dir(vm), "upper", "disk.img"))


def test_a_vm_stopped_behind_spaceds_back_is_continued(api, spaced, vm):
    """A guest that never answers: QEMU's VM stopped from outside. spaced's liveness ping
    goes unanswered, and its wake continues the VM, which answers again."""
    proc = api.exec_stream(vm, ["sh", "-c", "sleep 1000"])  # someone waits on the agent
    qmp(spaced, vm, "stop")
    wait_until(lambda: "running" in json.dumps(qmp_status(spaced, vm)), FAIL_DEADLINE,
               "spaced to continue the stopped VM")
    assert sh(api, vm, "echo back").strip() == "back"
    assert state(api, vm)["state"] == "running"
    proc.close()


def qmp_status(daemon, sbid):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(os.path.join(daemon.sandbox_dir(sbid), "vm", "qmp.sock"))
    f = s.makefile("rwb")
    json.loads(f.readline())
    out = None
    for cmd in ("qmp_capabilities", "query-status"):
        f.write(json.dumps({"execute": cmd}).encode() + b"\n")
        f.flush()
        while True:
            msg = json.loads(f.readline())
            if "return" in msg or "error" in msg:
                out = msg.get("return")
                break
    s.close()
    return out
