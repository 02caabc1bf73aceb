"""The warm pool (spaced --pool): sandboxes started ahead, each claimed once by a create that
matches, given that create's settings, never shown to anyone before, and made again behind it."""

import os
import re
import subprocess

import pytest

from conftest import Cli, gvisor_only
from spacetest import SPACED, Api, free_port, wait_until
from test_build import build, done


def pools(api):
    return api.ok("GET", "/v1/version")["pools"]


def full(api, i=0):
    p = pools(api)[i]
    return p["ready"] == p["size"]


def folders(d):
    return set(os.listdir(os.path.join(d.state_dir, "sandboxes")))


def listed(api):
    return {s["id"] for s in api.ok("GET", "/v1/sandboxes")["sandboxes"]}


def shares(sbid):
    with open(f"/sys/fs/cgroup/cpu/space/{sbid}/cpu.shares") as f:
        return int(f.read())


def test_a_create_claims_a_pooled_sandbox_with_its_own_settings_and_the_pool_fills_again(make_daemon):
    port = free_port()
    d = make_daemon(listen=f"127.0.0.1:{port}", args=["--pool", "default=2"])
    wait_until(lambda: full(d.api), 300, "the pool to fill")
    # pooled sandboxes are no one's: listed nowhere, given lower CPU shares
    assert listed(d.api) == set()
    pooled = folders(d)
    assert len(pooled) == 2 and {shares(x) for x in pooled} == {64}, pooled
    status = Cli(f"unix://{d.socket}")("status").stdout
    assert re.search(r"^pools: +default \((gvisor|microvm), 1 cpu, 512 MiB\): 2 of 2 ready, 0 filling, 0 claims$",
                     status, re.M), status

    alice = Api(tcp=("127.0.0.1", port), token=d.token("alice"))
    bob = Api(tcp=("127.0.0.1", port), token=d.token("bob"))
    sbid = alice.create(env={"GREETING": "hi alice"}, metadata={"team": "a"}, timeout=123)
    assert sbid in pooled and pools(d.api)[0]["claims"] == 1
    got = alice.ok("GET", f"/v1/sandboxes/{sbid}")
    assert got["metadata"] == {"team": "a"} and got["timeout"] == 123, got
    res = alice.exec(sbid, "echo $GREETING; cat /etc/hostname")
    assert res["stdout"] == f"hi alice\n{sbid}\n", res
    # the environment reaches every later process, and outlives a suspend
    alice.ok("POST", f"/v1/sandboxes/{sbid}/suspend")
    assert alice.exec(sbid, "sh -c 'echo $GREETING'")["stdout"] == "hi alice\n"
    assert shares(sbid) == 1024
    # the owner is the claimer's alone
    assert bob.json("GET", f"/v1/sandboxes/{sbid}")[0] == 404
    assert [s["id"] for s in alice.ok("GET", "/v1/sandboxes?label=team=a")["sandboxes"]] == [sbid]

    # what one user left never reaches the next: a claimed sandbox never goes back to the pool
    alice.exec(sbid, "echo alice was here > /tmp/mark; echo x > /root/mark")
    alice.delete(sbid)
    wait_until(lambda: full(d.api), 300, "the pool to fill again")
    seen = {sbid}
    for _ in range(3):
        other = bob.create()
        assert other not in seen, other
        seen.add(other)
        res = bob.exec(other, "cat /tmp/mark /root/mark; echo $GREETING")
        assert res["stdout"] == "\n" and "No such file" in res["stderr"], res
    assert pools(d.api)[0]["claims"] >= 3


@gvisor_only("what a pool does is the same for either kind; the microVM suite claims, refills and restarts")
def test_a_create_that_matches_no_pool_makes_its_own_sandbox(make_daemon):
    d = make_daemon(args=["--pool", "default=1,memory_mb=256"])
    wait_until(lambda: full(d.api), 300, "the pool to fill")
    [pooled] = folders(d)
    for ask in ({}, {"memory_mb": 256, "network": False}, {"memory_mb": 256, "disk_mb": 128}):
        sbid = d.api.create(**ask)
        assert sbid != pooled and pools(d.api)[0]["claims"] == 0, ask
        d.api.delete(sbid)
    sbid = d.api.create(memory_mb=256, network={"egress": "none"})
    assert sbid == pooled and pools(d.api)[0]["claims"] == 1
    assert d.api.exec(sbid, "true")["exit_code"] == 0


def test_a_restarted_spaced_empties_the_last_pool_keeps_what_was_claimed_and_fills_again(make_daemon):
    d = make_daemon(args=["--pool", "default=2"])
    wait_until(lambda: full(d.api), 300, "the pool to fill")
    mine = d.api.create()
    d.api.exec(mine, "echo kept > /tmp/kept")
    old = folders(d) - {mine}
    assert len(old) == 1 or len(old) == 2  # the refill may be under way
    d.kill()
    d.start()
    wait_until(lambda: full(d.api) and not (old & folders(d)), 300, "a new pool in place of the old one")
    assert listed(d.api) == {mine}
    assert d.api.exec(mine, "cat /tmp/kept")["stdout"] == "kept\n"
    assert len(folders(d)) == 3


@gvisor_only("what a pool does is the same for either kind; the microVM suite claims, refills and restarts")
def test_a_pool_of_a_template_made_later_fills_once_it_exists_and_keeps_it(make_daemon):
    d = make_daemon(args=["--pool", "web:v1=1"])
    # no such template yet: the pool says why, and tries again later
    wait_until(lambda: pools(d.api)[0]["failures"] >= 1, 120, "a failed fill")
    assert "web:v1" in pools(d.api)[0]["last_error"], pools(d.api)
    status, events = build(d.api, "web:v1", {"Dockerfile": "FROM space:default\nLABEL team=web\n"})
    done(events)
    wait_until(lambda: full(d.api), 300, "the pool to fill")
    status, body = d.api.json("DELETE", "/v1/templates/web:v1")
    assert status == 409 and "1 of them in the warm pool" in body["error"]["message"], body
    sbid = d.api.create(template="web:v1")
    assert pools(d.api)[0]["claims"] == 1 and d.api.ok("GET", f"/v1/sandboxes/{sbid}")["template"] == "web:v1"


@gvisor_only("what a pool does is the same for either kind; the microVM suite claims, refills and restarts")
def test_only_spaced_sets_space_metadata(make_daemon):
    port = free_port()
    d = make_daemon(listen=f"127.0.0.1:{port}")
    tenant = Api(tcp=("127.0.0.1", port), token=d.token("t"))
    status, body = tenant.json("POST", "/v1/sandboxes", {"metadata": {"space.pool": "default"}})
    assert status == 400 and "spaced's own" in body["error"]["message"], body


@pytest.mark.parametrize("spec, message", [
    ("default", "--pool wants TEMPLATE=N"),
    ("default=0", "the size is 1..64"),
    ("default=65", "the size is 1..64"),
    ("default=2,cpus=65", "cpus=1..64"),
    ("default=2,memory_mb=63", "memory_mb=64..65536"),
    ("default=2,colour=blue", "colour=blue is not one of"),
    ("../x=2", "not a template name"),
])
def test_a_bad_pool_is_refused_at_start(tmp_path, spec, message):
    r = subprocess.run([SPACED, "--state-dir", str(tmp_path), "--pool", spec], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and message in r.stderr, r.stderr


def test_the_largest_pool_and_size_are_accepted(tmp_path):
    # the pool parses; the start then stops at the next (bad) option
    r = subprocess.run([SPACED, "--state-dir", str(tmp_path), "--pool", "default=64,cpus=64,memory_mb=65536",
                        "--ready-timeout", "0"], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "--ready-timeout wants" in r.stderr and "--pool" not in r.stderr, r.stderr


@gvisor_only("what a pool does is the same for either kind; the microVM suite claims, refills and restarts")
def test_a_templates_own_pool_setting_makes_and_resizes_its_pool(make_daemon):
    d = make_daemon()
    name = "pooled-" + os.urandom(3).hex()

    def mine():
        return [p for p in pools(d.api) if p["template"] == name]
    status, events = build(d.api, name, {"Dockerfile": "FROM space:default\nLABEL space.pool=2\n"})
    assert done(events)["config"]["pool"] == 2
    wait_until(lambda: mine() and mine()[0]["ready"] == 2, 300, "the template's pool to fill")
    sbid = d.api.create(template=name)
    assert mine()[0]["claims"] == 1
    # a restarted spaced takes the setting from the record
    d.kill()
    d.start()
    wait_until(lambda: mine() and mine()[0]["ready"] == 2, 300, "the pool to fill after a restart")
    # a new build of it with another setting resizes the pool: what it held beyond goes
    status, events = build(d.api, name, {"Dockerfile": "FROM space:default\nLABEL space.pool=0\n"})
    done(events)
    wait_until(lambda: folders(d) == {sbid}, 120, "the pool to empty")
    assert mine()[0]["size"] == 0
    d.api.delete(sbid)
    assert d.api.json("DELETE", f"/v1/templates/{name}")[0] == 204
