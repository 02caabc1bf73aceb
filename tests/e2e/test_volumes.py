"""Volumes: storage that outlives sandboxes (docs/volumes.md). A file written in one sandbox is
read by the next; a volume is mounted read-write by one sandbox at a time and read-only by any
number; it is full at its size; it is its tenant's only; its mounts survive a suspend and a
restart of spaced; bad input is refused with a clear message. gVisor only for now (a microVM's
create with volumes is refused, and that is tested too).

Each test starts a private spaced (make_daemon): volumes outlive sandboxes, and the limits are
counted per daemon.
"""

import re
import signal

import glob
import json
import hashlib
import os

from conftest import ROOT, Api, Cli, mounts_under, free_port, gvisor_only, wait_until, wait_usable

gvisor = gvisor_only("volumes are mounted under gVisor only for now")


def limit(name, header="daemon/core/volume.h"):
    with open(f"{ROOT}/{header}") as f:
        m = re.search(rf"#define {name} \(?([0-9* ]+)\)?", f.read())
    return eval(m.group(1))  # a product of integers, as the header writes it


VOLUME_MIN_MB = limit("VOLUME_MIN_MB")
VOLUME_MAX_MB = limit("VOLUME_MAX_MB")
VOLUME_DEFAULT_MB = limit("VOLUME_DEFAULT_MB")
TENANT_MAX_VOLUMES = limit("TENANT_MAX_VOLUMES")
SANDBOX_MAX_VOLUMES = limit("SANDBOX_MAX_VOLUMES", "daemon/daemon.h")


def volume(api, name, **fields):
    return api.ok("POST", "/v1/volumes", {"name": name, **fields}, expect=(201,))


def owned(tenant, name):
    """The folder of tenant's volume name under <state>/volumes (daemon/driver/disk.h)."""
    return hashlib.sha256(tenant.encode()).hexdigest()[:32] + "-" + name


def mount(name, path="/data", ro=False):
    return {"name": name, "path": path, "read_only": ro}


def sh(api, sbid, script):
    return api.exec(sbid, ["sh", "-c", script])


@gvisor
def test_a_file_outlives_the_sandbox_that_wrote_it(make_daemon):
    api = make_daemon().api
    v = volume(api, "data", labels={"k": "v"})
    assert (v["name"], v["size_mb"], v["labels"], v["holder"]) == ("data", VOLUME_DEFAULT_MB, {"k": "v"}, None), v
    a = api.create(volumes=[mount("data")])
    assert api.ok("GET", f"/v1/sandboxes/{a}")["volumes"] == [mount("data")]
    r = sh(api, a, "head -c 3000000 /dev/urandom > /data/blob && sha256sum /data/blob && echo hi > /data/note")
    assert r["exit_code"] == 0, r
    digest = r["stdout"].split()[0]
    got = api.ok("GET", "/v1/volumes/data")
    assert got["holder"] == a and got["used_bytes"] >= 3000000, got
    api.delete(a)
    b = api.create(volumes=[mount("data", "/mnt/other")])
    r = sh(api, b, "sha256sum /mnt/other/blob; cat /mnt/other/note")
    assert r["stdout"].split()[0] == digest and r["stdout"].endswith("hi\n"), r
    api.delete(b)
    assert api.ok("GET", "/v1/volumes/data")["mounted_by"] == []


@gvisor
def test_read_only_mounts_refuse_writes_and_a_second_writer_is_refused(make_daemon):
    api = make_daemon().api
    volume(api, "shared")
    writer = api.create(volumes=[mount("shared")])
    sh(api, writer, "echo first > /data/f")
    # any number of readers, beside the writer
    readers = [api.create(volumes=[mount("shared", "/ro", ro=True)]) for _ in range(2)]
    for rd in readers:
        r = sh(api, rd, "cat /ro/f; echo x > /ro/g; echo $?")
        assert r["stdout"].startswith("first\n") and "Read-only file system" in r["stderr"], r
    # a second writer is refused, naming the holder
    status, body = api.json("POST", "/v1/sandboxes", {"volumes": [mount("shared")]})
    assert status == 409 and writer in body["error"]["message"], (status, body)
    # ... until the holder is gone
    api.delete(writer)
    second = api.create(volumes=[mount("shared")])
    assert sh(api, second, "echo again > /data/f && cat /data/f")["stdout"] == "again\n"
    assert api.ok("GET", "/v1/volumes/shared")["holder"] == second


@gvisor
def test_removal_is_refused_while_mounted(make_daemon):
    api = make_daemon().api
    volume(api, "busy")
    sbid = api.create(volumes=[mount("busy", ro=True)])
    api.ok("POST", f"/v1/sandboxes/{sbid}/suspend")
    wait_until(lambda: api.ok("GET", f"/v1/sandboxes/{sbid}")["state"] == "suspended", 120, "the suspend")
    # a suspended sandbox keeps its mounts: the volume stays its
    status, body = api.json("DELETE", "/v1/volumes/busy")
    assert status == 409 and sbid in body["error"]["message"], (status, body)
    api.delete(sbid)
    api.ok("DELETE", "/v1/volumes/busy", expect=(204,))
    assert api.json("GET", "/v1/volumes/busy")[0] == 404
    assert api.ok("GET", "/v1/volumes")["volumes"] == []
    # the name is free again, and the new volume is empty
    volume(api, "busy")
    sbid = api.create(volumes=[mount("busy")])
    assert sh(api, sbid, "ls /data")["stdout"] == "lost+found\n"


@gvisor
def test_a_full_volume_gives_enospc_at_its_size(make_daemon):
    api = make_daemon().api
    volume(api, "small", size_mb=VOLUME_MIN_MB)
    sbid = api.create(volumes=[mount("small")])
    r = sh(api, sbid, "dd if=/dev/zero of=/data/fill bs=1M count=200 2>&1; stat -c %s /data/fill")
    assert "No space left on device" in r["stdout"], r
    size = int(r["stdout"].split()[-1])
    assert VOLUME_MIN_MB // 2 << 20 < size < VOLUME_MIN_MB << 20, size
    # inodes too: one per 16 KiB (driver/disk.h), so far fewer than 100,000 files fit
    sh(api, sbid, "rm /data/fill")
    r = sh(api, sbid, "cd /data && for i in $(seq 1 100000); do : > f$i || break; done 2>&1 | tail -1; ls | wc -l")
    assert "No space left on device" in r["stdout"], r
    assert int(r["stdout"].split()[-1]) < 100000
    # the sandbox's own disk is not the volume's
    assert sh(api, sbid, "echo ok > /root/own && cat /root/own")["stdout"] == "ok\n"


@gvisor
def test_a_tenant_sees_and_mounts_only_its_own(make_daemon):
    port = free_port()
    d = make_daemon(listen=f"127.0.0.1:{port}")
    alice = Api(tcp=("127.0.0.1", port), token=d.token("alice"))
    bob = Api(tcp=("127.0.0.1", port), token=d.token("bob"))
    volume(alice, "mine")
    assert [v["name"] for v in alice.ok("GET", "/v1/volumes")["volumes"]] == ["mine"]
    assert bob.ok("GET", "/v1/volumes")["volumes"] == []
    for method, path, body in (("GET", "/v1/volumes/mine", None), ("DELETE", "/v1/volumes/mine", None),
                               ("POST", "/v1/sandboxes", {"volumes": [mount("mine")]})):
        status, err = bob.json(method, path, body)
        assert status == 404 and err["error"]["code"] == "not_found", (method, path, status, err)
    # each tenant names its own: bob's "mine" is another volume, and learns nothing of alice's
    volume(bob, "mine")
    assert [v["tenant"] for v in bob.ok("GET", "/v1/volumes")["volumes"]] == ["bob"]
    a = alice.create(volumes=[mount("mine")])
    b = bob.create(volumes=[mount("mine")])  # read-write in both: two volumes, no holder shared
    sh(alice, a, "echo alice > /data/who")
    assert sh(bob, b, "ls /data")["stdout"] == "lost+found\n"
    assert alice.ok("GET", "/v1/volumes/mine")["holder"] == a and bob.ok("GET", "/v1/volumes/mine")["holder"] == b
    # the administrator sees every tenant's
    assert sorted(v["tenant"] for v in d.api.ok("GET", "/v1/volumes")["volumes"]) == ["alice", "bob"]
    assert d.api.json("GET", "/v1/volumes/mine")[0] == 404  # its own namespace has none
    # each tenant's folder is its own, whatever bytes its name holds
    names = os.listdir(os.path.join(d.state_dir, "volumes"))
    assert sorted(names) == sorted([owned("alice", "mine"), owned("bob", "mine")]), names


@gvisor
def test_mounts_survive_suspend_resume_and_a_restart_of_spaced(make_daemon):
    d = make_daemon()
    api = d.api
    volume(api, "keep")
    sbid = api.create(volumes=[mount("keep", "/srv/keep")])
    sh(api, sbid, "echo before > /srv/keep/f")
    api.ok("POST", f"/v1/sandboxes/{sbid}/suspend")
    wait_until(lambda: api.ok("GET", f"/v1/sandboxes/{sbid}")["state"] == "suspended", 120, "the suspend")
    api.ok("POST", f"/v1/sandboxes/{sbid}/resume")
    wait_usable(api, sbid)
    r = sh(api, sbid, "cat /srv/keep/f && echo after >> /srv/keep/f && cat /srv/keep/f")
    assert r["stdout"] == "before\nbefore\nafter\n", r
    # spaced killed and started again adopts the sandbox with its mount and its rule
    d.kill(signal.SIGKILL)
    d.start()
    wait_usable(api, sbid)
    assert sh(api, sbid, "cat /srv/keep/f")["stdout"] == "before\nafter\n"
    assert api.ok("GET", "/v1/volumes/keep")["holder"] == sbid
    status, body = api.json("POST", "/v1/sandboxes", {"volumes": [mount("keep")]})
    assert status == 409 and sbid in body["error"]["message"], (status, body)
    # suspended across a restart, then resumed: the volume is there again
    api.ok("POST", f"/v1/sandboxes/{sbid}/suspend")
    wait_until(lambda: api.ok("GET", f"/v1/sandboxes/{sbid}")["state"] == "suspended", 120, "the suspend")
    d.kill(signal.SIGKILL)
    d.start()
    api.ok("POST", f"/v1/sandboxes/{sbid}/resume")
    wait_usable(api, sbid)
    assert sh(api, sbid, "cat /srv/keep/f")["stdout"] == "before\nafter\n"


@gvisor
def test_bad_input_is_refused_with_a_clear_message(make_daemon):
    api = make_daemon().api
    for body, words in (({"name": "-x"}, "bad volume name"), ({"name": "a/b"}, "bad volume name"),
                        ({"name": "x" * 64}, "bad volume name"), ({}, "needs a name"),
                        ({"name": "v", "size_mb": VOLUME_MIN_MB - 1}, "size_mb"),
                        ({"name": "v", "size_mb": VOLUME_MAX_MB + 1}, "size_mb"),
                        ({"name": "v", "size_mb": "1G"}, "size_mb"),
                        ({"name": "v", "labels": {"k": 1}}, "labels"),
                        ({"name": "v", "colour": "red"}, "colour")):
        status, err = api.json("POST", "/v1/volumes", body)
        assert status == 400 and words in err["error"]["message"], (body, status, err)
    assert api.ok("GET", "/v1/volumes")["volumes"] == []
    volume(api, "x" * 63, size_mb=VOLUME_MIN_MB)  # the edges themselves are fine
    volume(api, "v", size_mb=VOLUME_MIN_MB)
    assert api.json("POST", "/v1/volumes", {"name": "v"})[0] == 409
    for path in ("data", "/", "/proc", "/proc/x", "/sys/x", "/dev", "/.space/x", "/a/../b", "/a//b", "/a/",
                 "/" + "x" * 255):
        status, err = api.json("POST", "/v1/sandboxes", {"volumes": [mount("v", path)]})
        assert status == 400 and "bad path" in err["error"]["message"], (path, status, err)
    for vols, words in (([mount("v"), mount("v", "/other")], "named twice"),
                        ([mount("v", ro=True), {"name": "x" * 63, "path": "/data", "read_only": True}], "two at"),
                        ([{"name": "v", "path": "/d", "mode": "rw"}], "unknown field"),
                        ([mount("v")] * (SANDBOX_MAX_VOLUMES + 1), f"at most {SANDBOX_MAX_VOLUMES}"),
                        ("v", "an array")):
        status, err = api.json("POST", "/v1/sandboxes", {"volumes": vols})
        assert status == 400 and words in err["error"]["message"], (vols, status, err)
    assert api.json("POST", "/v1/sandboxes", {"volumes": [mount("nope")]})[0] == 404
    assert api.ok("GET", "/v1/sandboxes")["sandboxes"] == []


@gvisor
def test_the_count_limit_at_its_edge(make_daemon):
    api = make_daemon().api
    for i in range(TENANT_MAX_VOLUMES):
        volume(api, f"v{i}", size_mb=VOLUME_MIN_MB)
    status, err = api.json("POST", "/v1/volumes", {"name": "one-more", "size_mb": VOLUME_MIN_MB})
    assert status == 429 and str(TENANT_MAX_VOLUMES) in err["error"]["message"], (status, err)
    api.ok("DELETE", "/v1/volumes/v0", expect=(204,))
    volume(api, "one-more", size_mb=VOLUME_MIN_MB)


@gvisor
def test_snapshots_and_forks_of_a_sandbox_with_volumes_are_refused(make_daemon):
    api = make_daemon().api
    volume(api, "v")
    sbid = api.create(volumes=[mount("v")])
    for path in (f"/v1/sandboxes/{sbid}/snapshot", f"/v1/sandboxes/{sbid}/fork"):
        status, err = api.json("POST", path)
        assert status == 409 and "volumes" in err["error"]["message"], (path, status, err)
    snap = api.ok("POST", f"/v1/sandboxes/{api.create()}/snapshot", expect=(201,))
    status, err = api.json("POST", "/v1/sandboxes", {"snapshot": snap["id"], "volumes": [mount("v", ro=True)]})
    assert status == 400 and "snapshot" in err["error"]["message"], (status, err)


def test_a_microvm_with_volumes_is_refused(make_daemon):
    """Refused before anything is made, whatever kind the host's default is."""
    api = make_daemon().api
    volume(api, "v", size_mb=VOLUME_MIN_MB)
    status, err = api.json("POST", "/v1/sandboxes", {"isolation": "microvm", "volumes": [mount("v")]})
    assert status == 400 and err["error"]["message"] == "volumes are not available in microVMs yet", (status, err)
    assert api.ok("GET", "/v1/volumes/v")["mounted_by"] == []


@gvisor
def test_the_cli_makes_lists_mounts_and_removes_a_volume(make_daemon):
    d = make_daemon()
    cli, api = Cli(f"unix://{d.socket}"), d.api
    r = cli("volume", "create", "notes", "--size", str(VOLUME_MIN_MB), "--label", "team=a")
    assert (r.returncode, r.stdout) == (0, "notes\n"), r.stderr
    r = cli("volume", "ls")
    assert r.returncode == 0 and r.stdout.split("\n")[1].split()[:3] == ["notes", str(VOLUME_MIN_MB), "MiB"], r.stdout
    r = cli("create", "--volume", "notes:/notes", "--volume", "notes:/also:ro")
    assert r.returncode != 0 and "named twice" in r.stderr, r
    sbid = cli("create", "--volume", "notes:/notes").stdout.strip()
    reader = cli("create", "--volume", "notes:/srv/a:b:ro").stdout.strip()  # a path may hold ':'
    assert api.ok("GET", f"/v1/sandboxes/{reader}")["volumes"] == [mount("notes", "/srv/a:b", ro=True)]
    assert cli("exec", sbid, "--", "sh", "-c", "echo hello > /notes/h").returncode == 0
    assert cli("exec", reader, "--", "cat", "/srv/a:b/h").stdout == "hello\n"
    got = json.loads(cli("volume", "inspect", "notes").stdout)
    assert got["labels"] == {"team": "a"} and got["holder"] == sbid, got
    r = cli("volume", "rm", "notes")
    assert r.returncode != 0 and sbid in r.stderr, r
    for box in (sbid, reader):
        assert cli("rm", box).returncode == 0
    r = cli("run", "--volume", "notes:/n:ro", "--", "cat", "/n/h")
    assert (r.returncode, r.stdout) == (0, "hello\n"), r.stderr
    assert cli("volume", "rm", "notes").stdout == "notes\n"
    assert cli("volume", "ls", "--json").stdout.strip() == "[]"
    r = cli("create", "--volume", "notes")
    assert r.returncode != 0 and "NAME:/path" in r.stderr, r


def loops_under(d):
    """Loop devices whose image file lies under folder d."""
    d = os.path.realpath(d)
    found = []
    for f in glob.glob("/sys/block/loop*/loop/backing_file"):
        try:
            with open(f) as fh:
                if fh.read().strip().startswith(d + "/"):
                    found.append(f)
        except FileNotFoundError:  # another program's device, released meanwhile
            pass
    return found


@gvisor
def test_a_crash_while_a_volume_is_made_or_removed_leaves_nothing_half_done(make_daemon, monkeypatch):
    """spaced killed at each step of a create (image made; named and mounted, not yet recorded)
    and of a removal (record gone, files not yet) starts again with no trace of the half-done
    work: no folder, no mount, no loop device, and the name free; a volume recorded before is
    untouched."""
    d = make_daemon()
    volume(d.api, "kept", size_mb=VOLUME_MIN_MB)
    folder = os.path.join(d.state_dir, "volumes")
    kept = owned("", "kept")
    for step, method, body in (("volume:imaged", "POST", {"name": "cut", "size_mb": VOLUME_MIN_MB}),
                               ("volume:named", "POST", {"name": "cut", "size_mb": VOLUME_MIN_MB}),
                               ("volume:unrecorded", "DELETE", None)):
        if method == "DELETE":
            volume(d.api, "cut", size_mb=VOLUME_MIN_MB)
        d.stop()
        monkeypatch.setenv("SPACE_TEST_CRASH_AT", step)
        d.start()
        monkeypatch.delenv("SPACE_TEST_CRASH_AT")
        try:
            d.api.request(method, "/v1/volumes" if method == "POST" else "/v1/volumes/cut", body, timeout=120)
        except Exception:  # noqa: BLE001 - the daemon dies under the request
            pass
        d.proc.wait(timeout=120)
        assert d.proc.returncode == -9, f"{step}: spaced did not stop at the step ({d.proc.returncode})"
        d.start()
        assert [v["name"] for v in d.api.ok("GET", "/v1/volumes")["volumes"]] == ["kept"], step
        assert sorted(os.listdir(folder)) == [kept], (step, os.listdir(folder))
        assert mounts_under(folder) == [os.path.realpath(os.path.join(folder, kept, "mnt"))], step
        assert len(loops_under(folder)) == 1, step
    volume(d.api, "cut", size_mb=VOLUME_MIN_MB)  # the name is free
    sbid = d.api.create(volumes=[mount("kept")])
    assert sh(d.api, sbid, "ls /data")["stdout"] == "lost+found\n"
