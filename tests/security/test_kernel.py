"""Escapes through the kernel interface: mounts, namespaces, chroot, ptrace,
signals to PID 1, device nodes, kernel modules, clocks, host name and the
system calls that reach the host kernel's most dangerous corners.

Every attempt runs as root inside the sandbox, with the capabilities a
sandbox gets (Docker's default set minus NET_RAW and MKNOD) and gVisor's
kernel between it and the host.
"""

import http.client
import os
import stat
import textwrap
import time

import pytest

from conftest import ApiError, wait_until
from conftest import gvisor_only, HOST_LAYOUT, MICROVM, OWN_KERNEL

# A Python prelude for raw system calls with errno names.
SYSCALL = textwrap.dedent("""
    import ctypes, errno, os
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    buf = ctypes.create_string_buffer(4096)
    def sc(nr, *args):
        a = [ctypes.c_long(x) if isinstance(x, int) else x for x in args]
        r = libc.syscall(nr, *a)
        e = ctypes.get_errno()
        return r, (errno.errorcode.get(e, str(e)) if r < 0 else "ok")
""")


def run_syscalls(attack, calls):
    """Runs {name: (nr, args...)} inside; {name: (ret, errno name or 'ok')}."""
    body = SYSCALL + "res = {}\n"
    for name, (nr, *args) in calls.items():
        body += f"res[{name!r}] = sc({nr}, {', '.join(args)})\n"
    body += "import json; print(json.dumps(res))\n"
    res = attack.py(body)
    assert res["exit_code"] == 0, res
    import json
    return {k: tuple(v) for k, v in json.loads(res["stdout"]).items()}


@gvisor_only(OWN_KERNEL)
def test_mount_family(attack):
    """mount (tmpfs, proc, cgroup, bind of /, remount of the agent binary read-write), umount of
    the agent's socket directory and of /proc, pivot_root, move_mount and the new mount API.

    Expected: every call refused (EPERM or ENOSYS): root in the sandbox has no
    CAP_SYS_ADMIN; the agent binary stays read-only.
    """
    got = run_syscalls(attack, {
        "mount tmpfs": (165, 'b"none"', 'b"/mnt"', 'b"tmpfs"', "0", "None"),
        "mount proc": (165, 'b"proc"', 'b"/mnt"', 'b"proc"', "0", "None"),
        "mount cgroup": (165, 'b"cgroup"', 'b"/mnt"', 'b"cgroup"', "0", 'b"memory"'),
        "bind /": (165, 'b"/"', 'b"/tmp"', "None", "4096", "None"),
        "remount agent rw": (165, "None", 'b"/.space/agent"', "None", str(32 | 4096), "None"),
        "umount sock": (166, 'b"/.space/sock"', "2"),
        "umount proc": (166, 'b"/proc"', "2"),
        "pivot_root": (155, 'b"/tmp"', 'b"/tmp"'),
        "fsopen": (430, 'b"tmpfs"', "0"),
        "open_tree": (428, "-100", 'b"/"', "1"),
        "mount_setattr": (442, "-100", 'b"/"', "0", "buf", "32"),
    })
    assert all(r < 0 for r, _ in got.values()), got
    res = attack.sh("echo x >> /.space/agent; cp /bin/true /.space/agent; chmod 777 /.space/agent; "
                    "rm -f /.space/agent; test -x /.space/agent && echo still-there")
    assert "still-there" in res["stdout"], res
    attack.note(", ".join(f"{k}: {e}" for k, (_, e) in got.items()) + "; the agent binary is read-only")


@gvisor_only(OWN_KERNEL)
def test_unshare_then_mount(attack, host):
    """unshare every namespace type (user namespace included), then mount and look for the host.

    Expected: whatever unshare allows stays inside gVisor: mounts still fail
    outside a user namespace, and inside one nothing of the host appears.
    """
    code = SYSCALL + textwrap.dedent(f"""
        flags = {{"mnt": 0x00020000, "uts": 0x04000000, "ipc": 0x08000000, "user": 0x10000000,
                 "pid": 0x20000000, "net": 0x40000000, "cgroup": 0x02000000}}
        out = []
        for name, f in flags.items():
            pid = os.fork()
            if pid == 0:
                r = sc(272, f)
                m = sc(165, b"none", b"/tmp", b"tmpfs", 0, None) if r[0] == 0 else None
                b = sc(165, b"/", b"/tmp", None, 4096, None) if r[0] == 0 else None
                seen = os.path.exists({host.canaries[0]!r})
                print(name, r[1], "mount:", m and m[1], "bind:", b and b[1], "canary seen:", seen, flush=True)
                os._exit(0)
            os.waitpid(pid, 0)
    """)
    res = attack.py(code)
    assert res["exit_code"] == 0, res
    lines = res["stdout"].strip().splitlines()
    assert len(lines) == 7, res
    assert all("canary seen: False" in l for l in lines), lines
    for l in lines:
        if "user ok" not in l:
            assert "mount: ok" not in l and "bind: ok" not in l, l
    attack.note("unshare " + "; ".join(" ".join(l.split()[:6]) for l in lines) + "; no canary seen")


@gvisor_only(OWN_KERNEL)
def test_chroot_escape(attack, host, spaced):
    """The classic chroot escape (chroot into a subdirectory, chdir .. many times, chroot .):
    root has CAP_SYS_CHROOT in the sandbox.

    Expected: the walk up stops at the sandbox's root; the host's root (its
    canaries, spaced's state directory) is not reachable.
    """
    code = textwrap.dedent(f"""
        import os
        os.makedirs("/tmp/jail/inner", exist_ok=True)
        real = os.open("/", os.O_RDONLY)
        os.chroot("/tmp/jail")
        os.fchdir(real)             # keep a handle outside the jail, then climb
        for _ in range(64):
            os.chdir("..")
        os.chroot(".")
        print("root has .space:", os.path.exists("/.space/agent"))
        print("canary:", any(os.path.exists(p) for p in {host.canaries!r}))
        print("state dir:", os.path.exists({spaced.state_dir!r}))
    """)
    res = attack.py(code)
    assert res["exit_code"] == 0, res
    assert "root has .space: True" in res["stdout"], res
    assert "canary: False" in res["stdout"] and "state dir: False" in res["stdout"], res
    attack.note("chroot escape ends at the sandbox's own root (/.space is there); no host path exists")


@gvisor_only(OWN_KERNEL)
def test_ptrace_and_memory_of_the_agent(attack):
    """ptrace(ATTACH/SEIZE) of PID 1 (the agent), /proc/1/mem, process_vm_readv into it.

    Expected: refused; the agent keeps serving (the next exec works).
    """
    got = run_syscalls(attack, {
        "attach": (101, "16", "1", "0", "0"),
        "seize": (101, "0x4206", "1", "0", "0"),
        "process_vm_readv": (310, "1", "buf", "1", "buf", "1", "0"),
    })
    assert all(r < 0 for r, _ in got.values()), got
    res = attack.py("open('/proc/1/mem', 'r+b')")
    assert res["exit_code"] != 0 and "PermissionError" in res["stderr"], res
    assert attack.sh("echo alive")["stdout"] == "alive\n"
    attack.note(", ".join(f"{k}: {e}" for k, (_, e) in got.items()) + ", /proc/1/mem: EACCES; agent alive")


IGNORED_BY_AGENT = ["HUP", "INT", "QUIT", "TERM", "USR1", "USR2", "ALRM", "TSTP", "TTIN", "TTOU", "VTALRM", "PROF",
                    "WINCH", "URG", "IO", "XCPU", "XFSZ", "PIPE", "CHLD", "CONT"]


def test_signals_the_agent_ignores(attack):
    """Every signal the agent declares it ignores, sent to PID 1 ten times each, plus kill -1 of everything.

    Expected: the agent survives and keeps serving; kill -9 -1 ends the
    sandbox's other processes only.
    """
    sigs = " ".join(IGNORED_BY_AGENT)
    res = attack.sh(f"for i in 1 2 3 4 5 6 7 8 9 10; do for s in {sigs}; do kill -$s 1; done; done; echo sent")
    assert res["stdout"] == "sent\n", res
    pid = attack.api.ok("POST", f"/v1/sandboxes/{attack.id}/processes", {"cmd": ["sleep", "1000"]},
                        expect=(201,))["pid"]
    res = attack.api.json("POST", f"/v1/sandboxes/{attack.id}/exec", {"cmd": ["sh", "-c", "kill -9 -1; sleep 5"]})
    assert res[0] == 200, res
    done = attack.api.ok("GET", f"/v1/sandboxes/{attack.id}/processes/{pid}/wait?timeout=60")
    assert done["state"] == "exited" and done["signal"] == 9, done
    assert attack.sh("echo alive")["stdout"] == "alive\n"
    attack.note(f"{len(IGNORED_BY_AGENT)} signals x10 to PID 1: agent alive; kill -9 -1 killed the sleeper "
                "and the killer, not the agent")


def wait_failed_or_serving(attack, timeout=120):
    """Polls until the sandbox is failed (with a reason) or runs commands again; its state."""
    def settled():
        state, reason = attack.state()
        if state == "failed":
            return ("failed", reason)
        try:
            status, body = attack.api.json("POST", f"/v1/sandboxes/{attack.id}/exec", {"cmd": ["true"]},
                                           timeout=15)
        except (OSError, http.client.HTTPException):
            return None
        return ("serving", None) if status == 200 else None
    return wait_until(settled, timeout, "the sandbox to fail safe or serve again", interval=0.5)


@pytest.mark.parametrize("sig", ["SEGV", "BUS", "TERM", "RTMIN+3", "RTMAX"])
def test_catchable_signal_to_the_agent(attack, sig):
    """A signal that kills a process by default (a fault signal, TERM, real-time ones), sent to
    PID 1 from inside while an exec waits.

    Expected: the agent ignores every signal it can, so it survives: the waiting
    exec ends normally and the sandbox goes on serving.
    """
    code = textwrap.dedent(f"""
        import os, signal, time
        base, _, plus = {sig!r}.partition("+")
        os.kill(1, getattr(signal, "SIG" + base) + int(plus or 0))
        time.sleep(1)
        print("survived")
    """)
    status, body = attack.api.json("POST", f"/v1/sandboxes/{attack.id}/exec",
                                   {"cmd": ["python3", "-c", code]}, timeout=120)
    attack.note(f"exec answered {status}: {str(body.get('stdout', body) if isinstance(body, dict) else body)[:60]!r}")
    assert status == 200 and body["stdout"] == "survived\n", body
    assert attack.state()[0] == "running"
    assert wait_failed_or_serving(attack)[0] == "serving"


def test_sigkill_to_the_agent(attack):
    """SIGKILL to PID 1 from inside while an exec waits: it cannot be ignored.

    Expected: gVisor delivers it and the agent dies, which ends the sandbox;
    spaced must fail safe: the waiting exec is answered (not left hanging), the
    sandbox turns `failed` with a reason, its files are kept, and nothing
    else is affected.
    """
    attack.api.put_file(attack.id, "/work/keep.txt", b"kept\n")
    status, body = attack.api.json("POST", f"/v1/sandboxes/{attack.id}/exec",
                                   {"cmd": ["sh", "-c", "kill -KILL 1; sleep 30; echo survived"]}, timeout=120)
    answer = f"{status} {body.get('error', {}).get('code') if isinstance(body, dict) and 'error' in body else body}"
    outcome, reason = wait_failed_or_serving(attack)
    attack.note(f"the waiting exec was answered ({answer[:80]}); then the sandbox was {outcome}"
                + (f" ({reason})" if reason else ""))
    if outcome == "failed":
        assert reason, "a failed sandbox says why"
        assert attack.read_layer("work/keep.txt") == b"kept\n", "the files of a failed sandbox are kept"


def test_sigstop_to_the_agent(attack):
    """SIGSTOP to PID 1 from inside (the agent cannot ignore it), with an exec waiting on it.

    Expected: requests never hang: spaced pings an agent someone waits on, and
    when the ping goes unanswered it continues the agent (SIGCONT from the
    host) or, failing that, fails the sandbox. Here it is continued and the
    waiting exec completes.
    """
    status, body = attack.api.json("POST", f"/v1/sandboxes/{attack.id}/exec",
                                   {"cmd": ["sh", "-c", "kill -STOP 1; echo after"]}, timeout=120)
    attack.note(f"the waiting exec was answered ({status}); ")
    outcome, reason = wait_failed_or_serving(attack, timeout=90)
    attack.note(f"the sandbox was {outcome} {reason or ''}")
    assert (status, outcome) == (200, "serving"), (status, body, outcome, reason)
    assert body["stdout"] == "after\n"


def test_sigstop_again_and_again(attack):
    """A process that stops PID 1 again as fast as it can, so continuing the agent does not help.

    Expected: no request hangs: a waiting exec is answered within the liveness
    deadlines (done, or 500 because the sandbox failed as unresponsive), and a
    failed sandbox says why and keeps its files.
    """
    attack.api.put_file(attack.id, "/work/keep.txt", b"kept\n")
    marker = attack.spaced.layer(attack.id, "work", "stopping")
    attack.api.ok("POST", f"/v1/sandboxes/{attack.id}/processes",
                  {"cmd": ["sh", "-c", "touch /work/stopping; while :; do kill -STOP 1; done"]}, expect=(201,))
    if MICROVM:  # a guest kernel never delivers SIGSTOP to its init: the agent answers on
        wait_until(lambda: attack.api.get_file(attack.id, "/work/stopping", timeout=30)[0] == 200, 60,
                   "the loop to start")
    else:
        wait_until(lambda: os.path.exists(marker), 60, "the loop to start")
    t0 = time.monotonic()
    status, body = attack.api.json("POST", f"/v1/sandboxes/{attack.id}/exec", {"cmd": ["echo", "ran"]},
                                   timeout=150)
    waited = time.monotonic() - t0
    code = body.get("error", {}).get("code") if isinstance(body, dict) and "error" in body else None
    outcome, reason = wait_failed_or_serving(attack, timeout=90)
    attack.note(f"the waiting exec was answered after {waited:.0f} s ({status} {code or ''}); "
                f"the sandbox was then {outcome}" + (f" ({reason})" if reason else ""))
    assert status == 200 or (status == 500 and code == "sandbox_failed"), (status, body)
    if outcome == "failed":
        assert reason.startswith("unresponsive"), reason
        if not MICROVM:  # a microVM's files are in its disk image, kept whole
            assert attack.read_layer("work/keep.txt") == b"kept\n"


@gvisor_only(OWN_KERNEL)
def test_device_nodes(attack, spaced):
    """mknod of block and character devices (the host disk, /dev/mem, /dev/kmsg), on the writable
    layer and on tmpfs; opening host device paths.

    Expected: no host device is reachable: mknod on the writable layer is
    EPERM (no CAP_MKNOD); on gVisor's tmpfs a node may be made but opening it
    gives ENXIO; /dev holds only gVisor's own devices; no device node lands in
    the sandbox's layer on the host.
    """
    code = textwrap.dedent("""
        import os, stat
        out = []
        for path in ("/work/sda", "/tmp/sda", "/dev/shm/sda"):
            for kind, dev in (("blk", stat.S_IFBLK | 0o600), ("chr", stat.S_IFCHR | 0o600)):
                p = f"{path}-{kind}"
                try:
                    os.mknod(p, dev, os.makedev(8, 0) if kind == "blk" else os.makedev(1, 1))
                    made = "made"
                except OSError as e:
                    out.append(f"{p}: mknod {e.strerror}")
                    continue
                try:
                    with open(p, "rb") as f:
                        out.append(f"{p}: made, READ {len(f.read(16))} bytes")
                except OSError as e:
                    out.append(f"{p}: made, open {e.strerror}")
        devs = sorted(os.listdir("/dev"))
        out.append("dev: " + " ".join(devs))
        for d in ("/dev/kvm", "/dev/mem", "/dev/kmsg", "/dev/sda", "/dev/vda", "/dev/nvme0", "/dev/port"):
            out.append(f"{d}: {'present' if os.path.exists(d) else 'absent'}")
        print("\\n".join(out))
    """)
    res = attack.py(code)
    out = res["stdout"]
    assert res["exit_code"] == 0, res
    assert "READ" not in out, out
    assert "/work/sda-blk: mknod" in out and "/work/sda-chr: mknod" in out, out
    for d in ("kvm", "mem", "kmsg", "sda", "vda", "nvme0", "port"):
        assert f"/dev/{d}: absent" in out, out
    upper = spaced.layer(attack.id)
    for root, dirs, files in os.walk(upper):
        for f in files:
            st = os.lstat(os.path.join(root, f))
            assert not stat.S_ISBLK(st.st_mode), f
            assert not stat.S_ISCHR(st.st_mode) or st.st_rdev == 0, f  # 0/0 is an overlay whiteout
    attack.note("; ".join(l for l in out.splitlines() if not l.startswith("dev:")))


def test_kernel_modules(attack):
    """init_module, finit_module, delete_module, and modprobe/insmod if present.

    Expected: EPERM; the host's module list is unchanged.
    """
    modules = "/proc/modules"
    before = open(modules).read().split("\n") if os.path.exists(modules) else None
    got = run_syscalls(attack, {
        "init_module": (175, "buf", "16", 'b""'),
        "finit_module": (313, "0", 'b""', "0"),
        "delete_module": (176, 'b"overlay"', "0"),
    })
    assert all(r < 0 for r, _ in got.values()), got
    attack.sh("(modprobe dummy || insmod /nonexistent.ko) 2>&1; echo rc=$?")
    if before is None:
        host = "the host kernel has no loadable modules at all"
    else:
        after = open(modules).read().split("\n")
        assert {l.split()[0] for l in before if l} == {l.split()[0] for l in after if l}
        host = "host module list unchanged"
    attack.note(", ".join(f"{k}: {e}" for k, (_, e) in got.items()) + "; " + host)


@gvisor_only(OWN_KERNEL)
def test_clock_and_hostname(attack, host):
    """date -s, settimeofday, clock_settime, adjtimex; hostname, sethostname, setdomainname.

    Expected: EPERM for all (no CAP_SYS_TIME, no CAP_SYS_ADMIN); the host's
    clock and name are unchanged (the guard checks both after every attack).
    """
    got = run_syscalls(attack, {
        "settimeofday": (164, "buf", "None"),
        "clock_settime": (227, "0", "buf"),
        "adjtimex": (159, "buf"),
        "sethostname": (170, 'b"evil"', "4"),
        "setdomainname": (171, 'b"evil"', "4"),
    })
    assert all(r < 0 for r, _ in got.values()), got
    res = attack.sh("date -s '2001-01-01 00:00:00' >/dev/null 2>&1; hostname evil 2>/dev/null; "
                    "echo evil > /proc/sys/kernel/hostname 2>/dev/null; date +%Y; hostname")
    year, name = res["stdout"].split()
    assert year != "2001" and name == attack.id, res
    attack.note(", ".join(f"{k}: {e}" for k, (_, e) in got.items()) + f"; inside: year {year}, host name {name}")


@gvisor_only(OWN_KERNEL)
def test_dangerous_syscalls(attack):
    """The calls behind past container escapes and host-kernel bugs: kexec, reboot, bpf,
    perf_event_open, userfaultfd, keyctl, iopl/ioperm, swapon, acct, quotactl,
    open_by_handle_at (shocker), vhangup, move_pages, syslog; and io_uring.

    Expected: refused, or (io_uring, syslog) served by gVisor's own kernel
    without reaching the host's: syslog shows gVisor's boot messages.
    """
    got = run_syscalls(attack, {
        "kexec_load": (246, "0", "0", "None", "0"),
        "kexec_file_load": (320, "-1", "-1", "0", 'b""', "0"),
        "reboot": (169, "0xfee1dead", "672274793", "0", "None"),
        "bpf": (321, "0", "buf", "48"),
        "perf_event_open": (298, "buf", "0", "-1", "-1", "0"),
        "userfaultfd": (323, "0"),
        "keyctl": (250, "0", "0"),
        "add_key": (248, 'b"user"', 'b"k"', 'b"v"', "1", "-4"),
        "iopl": (172, "3"),
        "ioperm": (173, "0x80", "1", "1"),
        "swapon": (167, 'b"/tmp/x"', "0"),
        "acct": (163, 'b"/tmp/acct"'),
        "quotactl": (179, "0", 'b"/dev/vda"', "0", "None"),
        "open_by_handle_at": (304, "-100", "buf", "0"),
        "name_to_handle_at": (303, "-100", 'b"/"', "buf", "buf", "0"),
        "vhangup": (153,),
        "move_pages": (279, "1", "0", "None", "None", "None", "0"),
        "lookup_dcookie": (212, "0", "buf", "10"),
    })
    assert all(r < 0 for r, _ in got.values()), got
    dmesg = attack.sh("dmesg | head -3")["stdout"]
    assert "gVisor" in dmesg, dmesg
    uring = run_syscalls(attack, {"io_uring_setup": (425, "8", "buf")})["io_uring_setup"]
    attack.note(", ".join(f"{k}: {e}" for k, (_, e) in got.items()) +
                f"; io_uring_setup: {'served by gVisor' if uring[0] >= 0 else uring[1]}; dmesg is gVisor's")


@gvisor_only(OWN_KERNEL)
def test_cgroup_release_agent_escape(attack):
    """The cgroup v1 release_agent escape: mount a cgroup hierarchy, then write release_agent and
    notify_on_release of a group.

    Expected: the mounts are refused (EPERM), and the sandbox's /sys/fs/cgroup
    (read-only sysfs) has no release_agent to write.
    """
    got = run_syscalls(attack, {
        "mount cgroup memory": (165, 'b"cgroup"', 'b"/tmp"', 'b"cgroup"', "0", 'b"memory"'),
        "mount cgroup rdma": (165, 'b"cgroup"', 'b"/tmp"', 'b"cgroup"', "0", 'b"rdma"'),
        "mount cgroup2": (165, 'b"cgroup2"', 'b"/tmp"', 'b"cgroup2"', "0", "None"),
    })
    assert all(r < 0 for r, _ in got.values()), got
    res = attack.sh("ls /sys/fs/cgroup 2>&1 | head -5; for f in $(find /sys/fs/cgroup -name release_agent "
                    "-o -name notify_on_release 2>/dev/null); do (echo /tmp/x > $f) 2>/dev/null && echo WROTE $f; done; "
                    "echo end")
    assert "WROTE" not in res["stdout"], res
    attack.note(", ".join(f"{k}: {e}" for k, (_, e) in got.items()) + "; /sys/fs/cgroup: "
                + (" ".join(res["stdout"].split()[:-1]) or "empty"))


@gvisor_only(HOST_LAYOUT)
def test_setuid_binary_in_the_writable_layer(attack, spaced):
    """A setuid-root copy of a shell made inside: it lands on the host in the sandbox's writable layer.

    Expected: the host does not run it: the sandbox's directories on the host
    are 0700 root (no other host user can reach the file), and the layer is
    never executed on the host.
    """
    res = attack.sh("cp /bin/bash /work/rootshell && chmod 4755 /work/rootshell && stat -c %a /work/rootshell")
    assert res["stdout"].strip() == "4755", res
    f = spaced.layer(attack.id, "work", "rootshell")
    st = os.stat(f)
    assert st.st_mode & stat.S_ISUID and st.st_uid == 0, "the file is on the host as made (setuid root)"
    for d in (os.path.join(spaced.state_dir, "sandboxes"), spaced.sandbox_dir(attack.id)):
        ds = os.stat(d)
        assert ds.st_uid == 0 and ds.st_mode & 0o077 == 0, f"{d} is {oct(ds.st_mode)}"
    attack.note("setuid-root file exists in the layer on the host, but sandboxes/ and sandboxes/<id>/ are "
                "0700 root: unreachable for other host users")
