"""An upgrade keeps every sandbox: sandboxes made under this version (running, paused and
suspended, each with a process, memory-only files and files on its disk) and a snapshot live on
under the next one (`make next`: spaced and its agent built again as VERSION+next), which is
what installing the next package over this one does (docs/spaced.md, "Upgrades"): the old
spaced stops, leaving its sandboxes running, and the new one adopts them from the same state.
"""

import hashlib
import json
import os

import pytest
from conftest import ROOT, wait_usable
from spacetest import ISOLATION, wait_until

NEXT = os.path.join(ROOT, "build", "next")
NEEDS_NEXT = pytest.mark.skipif(not os.path.exists(os.path.join(NEXT, "spaced")),
                                reason="the next version is not built: `make next` (make e2e and make test build it)")
# a gVisor sandbox mounts its agent and shim from files kept by content in <state>/agents
GVISOR_ONLY = pytest.mark.skipif(ISOLATION == "microvm", reason="a microVM's agent is in its image")

# a process whose life is in memory: a counter it keeps in a file of the sandbox's memory
COUNTER = ("nohup sh -c 'i=0; while true; do i=$((i+1)); echo $i > /dev/shm/n.new; mv /dev/shm/n.new /dev/shm/n; "
           "sleep 0.05; done' >/dev/null 2>&1 & echo $! > /dev/shm/pid")


def sh(api, sbid, script):
    res = api.exec(sbid, ["sh", "-c", script])
    assert res["exit_code"] == 0, res
    return res["stdout"]


def count(api, sbid):
    return int(sh(api, sbid, "cat /dev/shm/n 2>/dev/null || echo 0"))


def alive_and_counting(api, sbid, name):
    """sbid's counter process is the one started under the old version, and counts on."""
    assert sh(api, sbid, "kill -0 $(cat /dev/shm/pid) && cat /work/f").strip() == name
    n = count(api, sbid)
    wait_until(lambda: count(api, sbid) > n, 60, f"{name}'s counter to go on under the new version")


@NEEDS_NEXT
def test_sandboxes_and_snapshots_made_before_an_upgrade_live_on_after_it(make_daemon):
    d = make_daemon()
    api = d.api
    old_version = api.ok("GET", "/v1/version")["version"]
    made = {}
    for name in ("running", "paused", "suspended"):
        sbid = api.create(metadata={"made": name})
        sh(api, sbid, f"echo {name} > /work/f; {COUNTER}")
        wait_until(lambda: count(api, sbid) > 2, 60, "the counter to count")
        made[name] = sbid
    snap = api.ok("POST", f"/v1/sandboxes/{made['running']}/snapshot", {"name": "before-upgrade"})
    api.ok("POST", f"/v1/sandboxes/{made['paused']}/pause")
    api.ok("POST", f"/v1/sandboxes/{made['suspended']}/suspend")

    # the upgrade: the old spaced stops (its sandboxes run on), the new one starts on its state
    d.stop()
    d.spaced = os.path.join(NEXT, "spaced")
    d.agent = os.path.join(NEXT, "space-agent")
    d.start()
    new_version = api.ok("GET", "/v1/version")["version"]
    assert new_version == old_version + "+next", (old_version, new_version)

    states = {sb["id"]: sb["state"] for sb in api.ok("GET", "/v1/sandboxes")["sandboxes"]}
    assert states == {made["running"]: "running", made["paused"]: "paused", made["suspended"]: "suspended"}, states
    wait_usable(api, made["running"])
    alive_and_counting(api, made["running"], "running")
    for name in ("paused", "suspended"):
        api.ok("POST", f"/v1/sandboxes/{made[name]}/resume")
        alive_and_counting(api, made[name], name)

    # a sandbox made now runs the new agent
    fresh = api.create()
    assert sh(api, fresh, "echo $((6*7))").strip() == "42"
    # a snapshot taken under the old version is still there, and starts a sandbox (which
    # test_a_snapshot_made_before_an_upgrade_runs_commands_after_it follows further)
    assert [x["id"] for x in api.ok("GET", "/v1/snapshots")["snapshots"]] == [snap["id"]]
    api.create(snapshot=snap["id"])


@NEEDS_NEXT
def test_a_snapshot_made_before_an_upgrade_runs_commands_after_it(make_daemon):
    d = make_daemon()
    api = d.api
    sbid = api.create()
    sh(api, sbid, "echo before > /work/f")
    snap = api.ok("POST", f"/v1/sandboxes/{sbid}/snapshot", {"name": "before-upgrade"})
    d.stop()
    d.spaced = os.path.join(NEXT, "spaced")
    d.agent = os.path.join(NEXT, "space-agent")
    d.start()
    made = api.create(snapshot=snap["id"])
    assert sh(api, made, "cat /work/f").strip() == "before"


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def kept(d):
    """The agent files kept in d's state dir: their names (the SHA-256 of their content)."""
    return set(os.listdir(os.path.join(d.state_dir, "agents")))


def shim_of(agent):
    return os.path.join(os.path.dirname(agent), "libspace-shim.so")


def uses(d, sbid, digest):
    """Whether sandbox sbid mounts the kept agent file digest (its link in its dir is that file)."""
    return os.path.samefile(os.path.join(d.sandbox_dir(sbid), "agent"), os.path.join(d.state_dir, "agents", digest))


@NEEDS_NEXT
@GVISOR_ONLY
def test_an_agent_file_is_kept_while_a_sandbox_or_snapshot_uses_it_and_removed_at_the_start_after(make_daemon):
    d = make_daemon()
    api = d.api
    old, shim = sha256(d.agent), sha256(shim_of(d.agent))
    assert kept(d) == {old, shim}
    sbid = api.create()
    snap = api.ok("POST", f"/v1/sandboxes/{sbid}/snapshot", {"name": "old-agent"})
    assert uses(d, sbid, old)
    d.stop()
    # what a copy cut short leaves, and a kept file that nothing links to
    agents = os.path.join(d.state_dir, "agents")
    for name in (".new-1", "0" * 64):
        with open(os.path.join(agents, name), "w") as f:
            f.write("left over\n")

    d.spaced = os.path.join(NEXT, "spaced")
    d.agent = os.path.join(NEXT, "space-agent")
    d.start()
    new = sha256(d.agent)
    assert new != old
    assert kept(d) == {old, new, shim}  # the old agent stays: a sandbox and a snapshot use it
    made = api.create(snapshot=snap["id"])
    assert uses(d, made, old)  # restored on the agent its image was made with
    fresh = api.create()
    assert uses(d, fresh, new)
    assert sh(api, made, "echo $((6*7))").strip() == "42"

    api.delete(sbid)
    api.ok("DELETE", f"/v1/snapshots/{snap['id']}", expect=(204,))
    d.stop()
    d.start()
    assert kept(d) == {old, new, shim}  # `made` still uses it
    api.delete(made)
    d.stop()
    d.start()
    assert kept(d) == {new, shim}
    assert sh(api, fresh, "echo $((6*7))").strip() == "42"


@GVISOR_ONLY
def test_sandboxes_and_snapshots_from_before_agent_files_were_kept_still_resume_and_start(make_daemon):
    """A state dir of a version from before <state>/agents: a suspended sandbox whose config mounts
    the agent where it was installed and a snapshot, neither with a link to a kept agent (made here
    by taking the links away, as that version had none). They run on the agent their config names,
    and a sandbox started from the snapshot on this spaced's."""
    d = make_daemon()
    api = d.api
    old = api.create()
    sh(api, old, "echo old > /work/f")
    api.ok("POST", f"/v1/sandboxes/{old}/suspend")
    src = api.create()
    sh(api, src, "echo snap > /work/f")
    snap = api.ok("POST", f"/v1/sandboxes/{src}/snapshot", {"name": "from-before"})
    api.delete(src)
    d.stop()

    sbdir = d.sandbox_dir(old)
    for folder in (sbdir, os.path.join(sbdir, "checkpoint"), os.path.join(d.state_dir, "snapshots", snap["id"], "image")):
        for leaf in ("agent", "shim.so"):
            os.unlink(os.path.join(folder, leaf))
    cfgpath = os.path.join(sbdir, "bundle", "config.json")
    with open(cfgpath) as f:
        cfg = json.load(f)
    sources = {"/.space/agent": d.agent, "/.space/shim.so": shim_of(d.agent)}
    for m in cfg["mounts"]:
        m["source"] = sources.get(m["destination"], m["source"])
    with open(cfgpath, "w") as f:
        json.dump(cfg, f)

    d.start()
    assert kept(d) == {sha256(d.agent), sha256(shim_of(d.agent))}
    api.ok("POST", f"/v1/sandboxes/{old}/resume")
    assert sh(api, old, "cat /work/f").strip() == "old"
    assert not os.path.exists(os.path.join(sbdir, "agent"))
    again = api.ok("POST", f"/v1/sandboxes/{old}/snapshot", {"name": "after"})
    assert sh(api, api.create(snapshot=again["id"]), "cat /work/f").strip() == "old"
    made = api.create(snapshot=snap["id"])
    assert uses(d, made, sha256(d.agent))
    assert sh(api, made, "cat /work/f").strip() == "snap"
