"""Memory limits that count memory used, not address space reserved.

A process may reserve as much address space as Linux allows; when the sandbox's memory in use
reaches its limit, its largest process is killed (SIGKILL) and only that one: the API says so
(`oom_killed` on the process, `oom_kills` on the one it belonged to, an `oom` event on its
stream), and the sandbox and its other processes live on. Commands start with a Debian
machine's resource limits, which they may lower, and raise up to the hard ones.
"""
from conftest import MICROVM, collect, wait_until, gvisor_only

# Touches `mib` MiB, 16 at a time, printing how far it got; then holds it.
HOG = r"""
import mmap, sys, time
mib = int(sys.argv[1])
held = []
for i in range(mib // 16):
    m = mmap.mmap(-1, 16 << 20)
    for off in range(0, 16 << 20, 4096):
        m[off] = 1
    held.append(m)
    print((i + 1) * 16, flush=True)
print("held", mib, flush=True)
time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 0)
"""


def hog(mib, hold=0):
    return ["python3", "-c", HOG, str(mib), str(hold)]


def running(api, sbid, pid):
    procs = api.ok("GET", f"/v1/sandboxes/{sbid}/processes")["processes"]
    return any(p["pid"] == pid and p["state"] == "running" for p in procs)


def rss_mib(api, sbid, pid):
    """What pid has resident, per the sandbox's kernel, in MiB."""
    out = api.exec(sbid, ["cat", f"/proc/{pid}/statm"])["stdout"].split()
    return int(out[1]) * 4096 >> 20 if len(out) > 1 else 0


@gvisor_only("the agent's watcher is gVisor's; a microVM's kernel has its own OOM killer and overcommit rules (tests/vm)")
def test_address_space_is_not_the_limit(api, sandbox):
    """A 4 GiB reservation in a 512 MiB sandbox, as Linux allows; touching a little of it is fine."""
    r = api.exec(sandbox, ["python3", "-c", """
import mmap
m = mmap.mmap(-1, 4 << 30)
for off in range(0, 64 << 20, 4096):
    m[off] = 1
print("reserved 4 GiB, touched 64 MiB")
"""])
    assert r["exit_code"] == 0 and r["stdout"] == "reserved 4 GiB, touched 64 MiB\n", r
    assert api.exec(sandbox, ["bash", "-c", "ulimit -v"])["stdout"] == "unlimited\n"


def test_a_process_over_the_limit_is_killed_alone(api, sandbox):
    bystander = api.ok("POST", f"/v1/sandboxes/{sandbox}/processes",
                       {"cmd": hog(64, 600)}, expect=(201,))["pid"]
    wait_until(lambda: rss_mib(api, sandbox, bystander) >= 64, 60, "the bystander to hold its memory")
    r = api.exec(sandbox, hog(2048), timeout=120)
    assert r["signal"] == 9 and r["oom_killed"] is True and r["oom_kills"] == 1, r
    reached = int(r["stdout"].split()[-1])
    assert 256 <= reached < 512, r  # it got near the 512 MiB limit, not past it
    assert running(api, sandbox, bystander)
    assert api.exec(sandbox, ["echo", "alive"])["stdout"] == "alive\n"
    assert api.ok("GET", f"/v1/sandboxes/{sandbox}")["state"] == "running"
    # and the memory is there again for the next program
    r = api.exec(sandbox, hog(256))
    assert r["exit_code"] == 0 and r["oom_kills"] == 0, r


@gvisor_only("the agent's watcher is gVisor's; a microVM's kernel has its own OOM killer and overcommit rules (tests/vm)")
def test_the_stream_tells_of_a_kill_among_a_commands_children(api, sandbox):
    with api.exec_stream(sandbox, ["sh", "-c", "python3 -c \"$0\" 2048; echo after $?", HOG]) as s:
        out, _, events = collect(s)
    kinds = [e["type"] for e in events if e["type"] not in ("stdout", "stderr", "keepalive")]
    assert kinds == ["start", "oom", "exit"], events
    oom = next(e for e in events if e["type"] == "oom")
    assert "python3" in oom["cmd"] and oom["memory_limit_bytes"] == 512 << 20, oom
    assert oom["memory_used_bytes"] <= oom["memory_limit_bytes"] and oom["rss_bytes"] >= 200 << 20, oom
    assert out.decode().rstrip().endswith("after 137"), out
    exit_ev = events[-1]
    assert exit_ev["exit_code"] == 0 and exit_ev["oom_killed"] is False and exit_ev["oom_kills"] == 1, exit_ev


@gvisor_only("the agent's watcher is gVisor's; a microVM's kernel has its own OOM killer and overcommit rules (tests/vm)")
def test_processes_together_over_the_limit_lose_only_what_it_takes(api, sandbox):
    """Three processes of 200 MiB in 512: the largest goes when the third pushes past the limit;
    the others finish and the sandbox lives (before, the host cgroup killed the whole sandbox)."""
    r = api.exec(sandbox, ["bash", "-c", "for i in 1 2 3; do (python3 -c \"$0\" 200 5 >/dev/null; echo $?) & done;"
                           " wait", HOG], timeout=120)
    assert r["exit_code"] == 0 and 1 <= r["oom_kills"] <= 2, r
    assert sorted(r["stdout"].split()) == ["0"] * (3 - r["oom_kills"]) + ["137"] * r["oom_kills"], r
    assert api.ok("GET", f"/v1/sandboxes/{sandbox}")["state"] == "running"


@gvisor_only("the agent's watcher is gVisor's; a microVM's kernel has its own OOM killer and overcommit rules (tests/vm)")
def test_a_sandbox_near_its_limit_suspends_and_resumes(api, sandbox):
    pid = api.ok("POST", f"/v1/sandboxes/{sandbox}/processes", {"cmd": hog(432, 3600)}, expect=(201,))["pid"]
    wait_until(lambda: rss_mib(api, sandbox, pid) >= 432, 120, "the hog to hold 432 MiB")
    api.ok("POST", f"/v1/sandboxes/{sandbox}/suspend", expect=(200,))
    api.ok("POST", f"/v1/sandboxes/{sandbox}/resume", expect=(200,))
    assert running(api, sandbox, pid)
    assert api.exec(sandbox, ["echo", "alive"])["stdout"] == "alive\n"


def test_commands_start_with_debians_limits_and_may_raise_soft_to_hard(api, sandbox):
    got = api.exec(sandbox, ["bash", "-c", "ulimit -Sn; ulimit -Hn; ulimit -Su; ulimit -Hu; ulimit -Ss; ulimit -Hs;"
                                           "ulimit -Sc; ulimit -Hc; ulimit -Sl; ulimit -v"])["stdout"].split()
    assert got == ["1024", "524288", "1024", "1024", "8192", "unlimited", "0", "unlimited", "8192",
                   "unlimited"], got
    r = api.exec(sandbox, ["bash", "-c", "ulimit -Sn 524288 && ulimit -Sn && ulimit -Sc unlimited && ulimit -Sc"])
    assert r["stdout"].split() == ["524288", "unlimited"], r
    # under gVisor a hard limit is raised by no one inside (root lacks CAP_SYS_RESOURCE); root
    # in a microVM has every capability of its own kernel and may, as on a Linux machine
    r = api.exec(sandbox, ["bash", "-c", "ulimit -Hn 600000"])
    assert (r["exit_code"] == 0) == MICROVM, r
    # lowered, a hard limit stays lowered for an unprivileged user everywhere
    r = api.exec(sandbox, ["bash", "-c", "ulimit -Hn 2048; ulimit -Hn 4096 || echo refused; ulimit -Hn"],
                 user="nobody")
    assert r["stdout"].split() == ["refused", "2048"], r


# Maps a file of `file_mib` MiB on the sandbox's disk and reads every page of it, beside
# `anon_mib` MiB of its own memory; then holds both.
MAPPER = r"""
import mmap, os, sys, time
file_mib, anon_mib = int(sys.argv[1]), int(sys.argv[2])
with open("/work/mapped", "wb") as f:
    f.truncate(file_mib << 20)
fd = os.open("/work/mapped", os.O_RDONLY)
m = mmap.mmap(fd, file_mib << 20, prot=mmap.PROT_READ)
total = sum(m[off] for off in range(0, file_mib << 20, 4096))
a = mmap.mmap(-1, anon_mib << 20)
for off in range(0, anon_mib << 20, 4096):
    a[off] = 1
print("mapped", file_mib, "held", anon_mib, total, flush=True)
"""


@gvisor_only("the agent's watcher is gVisor's; a microVM's kernel has its own OOM killer and overcommit rules (tests/vm)")
def test_mapped_file_pages_count_as_a_linux_cgroup_would(api, sandbox):
    """A Linux memory cgroup drops clean file pages before it kills; gVisor cannot, so they may
    take the sandbox past its limit by 1/8 + 64 MiB: 200 MiB of a mapped file beside 400 MiB of
    its own memory lives in 512; 900 MiB of a mapped file does not, and only that process goes."""
    r = api.exec(sandbox, ["python3", "-c", MAPPER, "200", "400"], timeout=120)
    assert r["exit_code"] == 0 and r["stdout"].startswith("mapped 200 held 400"), r
    r = api.exec(sandbox, ["python3", "-c", MAPPER, "900", "0"], timeout=120)
    assert r["oom_killed"] is True and r["signal"] == 9, r
    assert api.exec(sandbox, ["echo", "alive"])["stdout"] == "alive\n"
