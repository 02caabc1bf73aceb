"""Reaching host files: `..` and symlink tricks through the file API, /proc and
/sys from inside, writes that try to land outside the sandbox's root.

The host holds canary files with a secret (the `host` fixture) in its /tmp,
in a directory of its own and in spaced's state directory; the neighbour's
file sits in its writable layer on the host. None of them may be read or
changed from the attacking sandbox, whatever path it names.
"""

import os
import stat
import textwrap

from conftest import out_bytes, q
from conftest import gvisor_only, HOST_LAYOUT, OWN_KERNEL


def secretless(host, data):
    if isinstance(data, str):
        data = data.encode()
    return host.secret.encode() not in data


def neighbour_host_path(spaced, neighbour):
    return spaced.layer(neighbour.id, neighbour.PATH.lstrip("/"))


@gvisor_only(HOST_LAYOUT)
def test_file_api_dotdot_read(attack, host, spaced, neighbour):
    """GET through the file API with `..` paths aimed at host files.

    Expected: every path resolves inside the sandbox's own root: the host's
    canaries and the neighbour's file (by their host paths) are not found, and
    /../../etc/shadow is the sandbox's own /etc/shadow.
    """
    nb = neighbour_host_path(spaced, neighbour)
    assert os.path.exists(nb), "the neighbour's file is where the test expects it on the host"
    paths = []
    for target in host.canaries + [nb]:
        paths += ["/../../.." + target, "/work/../../../.." + target, "/proc/1/root/../../" + target,
                  "/proc/self/root" + target, "/.space/sock/../../.." + target, "/./" + target]
    seen = {}
    for p in paths:
        status, data = attack.api.get_file(attack.id, p)
        seen[status] = seen.get(status, 0) + 1
        assert status in (400, 404), (p, status, data[:100])
        assert secretless(host, data)
    status, shadow = attack.api.get_file(attack.id, "/../../etc/shadow")
    inside = out_bytes(attack.sh("cat /etc/shadow"))
    assert status == 200 and shadow == inside
    attack.note(f"{len(paths)} host paths via .. and /proc/*/root: statuses {seen}; "
                "/../../etc/shadow gave the sandbox's own file")


def test_file_api_dotdot_write(attack, host):
    """PUT, mkdir and rename through the file API at host paths with `..`.

    Expected: the writes land inside the sandbox (the file shows up there under
    the host path's name); the host's canaries are unchanged.
    """
    target = host.canaries[0]
    status, _, body = attack.api.put_file(attack.id, "/../../../.." + target, b"EVIL\n")
    assert status == 201, body
    status, data = attack.api.get_file(attack.id, target)
    assert status == 200 and data == b"EVIL\n"
    status, body = attack.api.json("POST", f"/v1/sandboxes/{attack.id}/files/mkdir",
                                   {"path": "/../../" + os.path.dirname(target) + "/made-by-sandbox"})
    assert status == 201, body
    status, body = attack.api.json("POST", f"/v1/sandboxes/{attack.id}/files/rename",
                                   {"from": "/../../.." + target, "to": "/../../" + host.canaries[1]})
    assert status in (204, 404), body
    assert not os.path.exists(os.path.join(os.path.dirname(target), "made-by-sandbox"))
    attack.note("PUT/mkdir/rename at ../host paths wrote inside the sandbox only (host canaries unchanged)")


@gvisor_only(HOST_LAYOUT)
def test_symlinks_to_host_paths_then_file_api(attack, host, spaced, neighbour):
    """Symlinks made inside the sandbox point at host paths; then GET and PUT follow them through the API.

    Expected: the agent resolves the links inside the sandbox's root (gVisor's
    kernel walks them); nothing of the host is read or written.
    """
    nb = neighbour_host_path(spaced, neighbour)
    links = {f"/work/l{i}": t for i, t in enumerate(
        host.canaries + [nb, "/proc/1/root" + host.canaries[0], "../../../../../.." + host.canaries[0],
                         spaced.socket, spaced.state_dir + "/state.db"])}
    script = "\n".join(f"ln -sfn '{t}' '{p}'" for p, t in links.items())
    script += f"\nln -sfn '{host.dir}' /work/hostdir\nln -sfn / /work/rootlink"
    res = attack.sh(script)
    assert res["exit_code"] == 0, res
    for p in links:
        status, data = attack.api.get_file(attack.id, p)
        assert status in (400, 404), (p, status, data[:100])
        assert secretless(host, data)
    # gVisor (20221219) resolves "<link to />/a/b" to / itself, whatever follows: "Is a directory"
    status, data = attack.api.get_file(attack.id, "/work/rootlink" + host.canaries[0])
    assert status in (400, 404) and secretless(host, data)
    # writing through a link to the canaries' directory: refused while the link dangles, and once
    # the directory exists inside the sandbox the write lands there
    status, _, body = attack.api.put_file(attack.id, "/work/hostdir/canary.txt", b"EVIL\n")
    assert status == 404, body
    attack.sh(f"mkdir -p '{host.dir}'")
    status, _, body = attack.api.put_file(attack.id, "/work/hostdir/canary.txt", b"EVIL\n")
    assert status == 201, body
    res = attack.sh(f"cat '{host.dir}/canary.txt'")
    assert res["stdout"] == "EVIL\n", res
    # stat and list through the links say "symlink" and list the sandbox's own directories
    st = attack.api.ok("GET", f"/v1/sandboxes/{attack.id}/files/stat?path=/work/l0")
    assert st["type"] == "symlink"
    listing = attack.api.ok("GET", f"/v1/sandboxes/{attack.id}/files/list?path=/work/rootlink/")
    names = {e["name"] for e in listing["entries"]}
    assert ".space" in names and os.path.basename(spaced.state_dir) not in names
    attack.note(f"{len(links)} symlinks to host paths: GET 404 through each; PUT through a dangling "
                "directory link 404, through a live one it wrote inside the sandbox; a link to / followed by more components resolves to / itself "
                "(a gVisor quirk, still inside)")


@gvisor_only(OWN_KERNEL)
def test_proc_and_sys_show_no_host(attack, host, spaced):
    """Looks for the host through /proc and /sys: mount tables, other processes, kernel memory, cgroups.

    Expected: no host path (spaced's state directory, the canaries) and no
    secret appear; /proc/kcore, /proc/kallsyms addresses, host block devices
    and the host's cgroup files are not there or not readable.
    """
    code = textwrap.dedent(f"""
        import glob, os
        found, opened, refused = [], 0, 0
        needles = [{host.secret!r}, {spaced.state_dir!r}, {os.path.basename(spaced.state_dir)!r}]
        paths = ["/proc/self/mountinfo", "/proc/mounts", "/proc/1/mountinfo", "/proc/1/environ", "/proc/1/cmdline",
                 "/proc/cmdline", "/proc/kallsyms", "/proc/kcore", "/proc/modules", "/proc/self/cgroup",
                 "/proc/partitions", "/proc/diskstats", "/proc/net/unix", "/proc/net/tcp", "/proc/swaps",
                 "/sys/kernel/notes", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]
        me = str(os.getpid())  # this program's own command line holds the needles
        paths += [p for p in glob.glob("/proc/[0-9]*/environ") + glob.glob("/proc/[0-9]*/cmdline")
                  if p.split("/")[2] != me]
        paths += glob.glob("/sys/block/*/dev") + glob.glob("/sys/class/net/*/address")
        for p in paths:
            try:
                with open(p, "rb") as f:
                    data = f.read(1 << 20)
                opened += 1
            except OSError:
                refused += 1
                continue
            for n in needles:
                if n.encode() in data:
                    found.append((p, n))
        print("opened", opened, "refused", refused, "found", found)
        print("kallsyms nonzero", any(l.split()[0].strip(b"0") for l in open("/proc/kallsyms", "rb").read().splitlines()[:50]) if os.path.exists("/proc/kallsyms") else "absent")
        print("block", sorted(os.listdir("/sys/block")) if os.path.exists("/sys/block") else "absent")
    """)
    res = attack.py(code)
    out = res["stdout"]
    assert res["exit_code"] == 0, res
    assert "found []" in out, out
    assert "kallsyms nonzero True" not in out, out
    assert secretless(host, out)
    attack.note(" ".join(out.split()))


@gvisor_only(OWN_KERNEL)
def test_proc_sys_and_sysfs_writes(attack):
    """Writes to kernel knobs: /proc/sys (hostname, core_pattern, sysrq, drop_caches), /proc/sysrq-trigger, /sys.

    Expected: refused or confined to gVisor's own kernel; the host's values
    are unchanged (checked on the host before and after).
    """
    knobs = [k for k in ("/proc/sys/kernel/core_pattern", "/proc/sys/kernel/sysrq", "/proc/sys/vm/overcommit_memory",
                         "/proc/sys/kernel/hostname", "/proc/sys/kernel/modprobe") if os.path.exists(k)]
    before = {k: open(k).read() for k in knobs}
    script = textwrap.dedent("""
        r=""
        for k in /proc/sys/kernel/core_pattern /proc/sys/kernel/sysrq /proc/sys/vm/overcommit_memory \\
                 /proc/sys/kernel/hostname /proc/sys/kernel/modprobe /proc/sys/vm/drop_caches; do
            if (echo '|/tmp/evil %p' > $k) 2>/dev/null; then r="$r $k:written"; else r="$r $k:refused"; fi
        done
        (echo b > /proc/sysrq-trigger) 2>/dev/null && r="$r sysrq-trigger:written" || r="$r sysrq-trigger:refused"
        (echo 1 > /sys/kernel/mm/ksm/run) 2>/dev/null && r="$r sysfs:written" || r="$r sysfs:refused"
        echo $r
    """)
    res = attack.sh(script)
    after = {k: open(k).read() for k in knobs}
    assert after == before
    attack.note(res["stdout"].strip() + " (host values unchanged)")


def test_api_ids_with_traversal(attack, api, spaced, neighbour):
    """Sandbox and snapshot ids in the URL with `..`, encoded slashes, NUL and wildcards, for every method.

    Expected: 4xx for each; no sandbox is deleted or touched and the state
    directory keeps every sandbox's directory.
    """
    ids = ["..", "%2e%2e", "..%2f..", "..%2F..%2Fetc", "%2e%2e%2f%2e%2e%2fstate.db", "*", "%00", "%2f",
           neighbour.id + "%2f..", "." * 12, neighbour.id[:11] + "%00", "a" * 300, "%252e%252e"]
    seen = {}
    for i in ids:
        for method, path in (("GET", f"/v1/sandboxes/{i}"), ("DELETE", f"/v1/sandboxes/{i}"),
                             ("POST", f"/v1/sandboxes/{i}/exec"), ("GET", f"/v1/sandboxes/{i}/files?path=/etc/hostname"),
                             ("DELETE", f"/v1/snapshots/{i}"), ("GET", f"/v1/snapshots/{i}"),
                             ("POST", f"/v1/sandboxes/{i}/fork")):
            status, _, _ = api.request(method, path, body={"cmd": ["true"]} if method == "POST" else None)
            seen[status] = seen.get(status, 0) + 1
            assert 400 <= status < 500, (method, path, status)
            if "%00" in i:
                assert status == 400, (method, path, status)  # refused before it could be cut short
    listed = {s["id"] for s in api.ok("GET", "/v1/sandboxes")["sandboxes"]}
    assert {attack.id, neighbour.id} <= listed
    for sbid in (attack.id, neighbour.id):
        assert os.path.isdir(spaced.sandbox_dir(sbid))
    assert os.path.exists(os.path.join(spaced.state_dir, "state.db"))
    attack.note(f"{sum(seen.values())} requests with traversal ids: statuses {seen}; nothing removed")


@gvisor_only(HOST_LAYOUT)
def test_rm_rf_root_through_file_api(attack, host, spaced):
    """DELETE path=/ through the file API, then `rm -rf --no-preserve-root /` inside.

    Expected: only the sandbox's own view is emptied (read-only and special
    mounts stay); the shared template on the host, the agent binary and every
    other sandbox are untouched.
    """
    tpl = template_rootfs(spaced)
    probe = os.path.join(tpl, "usr/bin/python3.11")
    before = os.stat(probe)
    status, body = attack.api.json("DELETE", f"/v1/sandboxes/{attack.id}/files?path=/", timeout=600)
    attack.note(f"DELETE / answered {status} {(body or {}).get('error', {}).get('message', '')[:80]}")
    assert status in (204, 400, 403, 409, 500, 503), body
    # the same from inside, going on past every error
    res = attack.sh("rm -rf --no-preserve-root / 2>/dev/null; echo done", timeout=600)
    attack.note(f"rm -rf --no-preserve-root / inside: exit {res['exit_code']}")
    after = os.stat(probe)
    assert (after.st_size, after.st_mtime, after.st_ino) == (before.st_size, before.st_mtime, before.st_ino)
    sock_kept = os.path.exists(os.path.join(spaced.sandbox_dir(attack.id), "sock", "agent.sock"))
    upper = spaced.layer(attack.id)
    whiteouts = sum(1 for root, dirs, files in os.walk(upper) for f in files
                    if stat.S_ISCHR(os.lstat(os.path.join(root, f)).st_mode))
    attack.note(f"the sandbox's view was emptied through {whiteouts} overlay whiteouts in its own layer; "
                f"its own agent socket {'kept' if sock_kept else 'removed (its own channel only)'}; "
                "the template is unchanged")


def template_rootfs(spaced):
    """The default template's rootfs, from the sandbox's recorded overlay options."""
    for sbid in os.listdir(os.path.join(spaced.state_dir, "sandboxes")):
        p = os.path.join(spaced.sandbox_dir(sbid), "rootfs.opts")
        if os.path.exists(p):
            opts = dict(kv.split("=", 1) for kv in open(p).read().strip().split(","))
            return opts["lowerdir"]
    raise AssertionError("no sandbox records its overlay options")
