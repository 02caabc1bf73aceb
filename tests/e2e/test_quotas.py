"""Snapshot quotas per tenant and the free-space check (docs/api.md, Snapshots and forks):
the Nth snapshot a tenant may keep is made, the next is 429 too_many until one is deleted;
the same for the bytes its snapshots take; and a snapshot or fork the host's free space
cannot hold is 507 no_space before anything is written.

The limits are lowered with spaced's flags (--tenant-snapshots, --tenant-snapshot-mb,
--reserve-mb) so the edges are reached in a few snapshots.
"""

import os

from conftest import Api, free_port


def tenant_daemon(make_daemon, *args):
    port = free_port()
    d = make_daemon(listen=f"127.0.0.1:{port}", args=list(args))
    return d, Api(tcp=("127.0.0.1", port), token=d.token("alice"))


def snapshot(api, sbid):
    return api.json("POST", f"/v1/sandboxes/{sbid}/snapshot", {})


def test_the_nth_snapshot_is_made_and_the_next_is_429_until_one_is_deleted(make_daemon):
    d, alice = tenant_daemon(make_daemon, "--tenant-snapshots", "2")
    sbid = alice.create()
    made = []
    for _ in range(2):
        status, body = snapshot(alice, sbid)
        assert status == 201, (status, body)
        made.append(body["id"])
    status, body = snapshot(alice, sbid)
    assert status == 429 and body["error"]["code"] == "too_many", (status, body)
    assert len(alice.ok("GET", "/v1/snapshots")["snapshots"]) == 2
    alice.ok("DELETE", f"/v1/snapshots/{made[0]}", expect=(204,))
    status, body = snapshot(alice, sbid)
    assert status == 201, (status, body)
    # the administrator's own sandboxes count toward no tenant
    mine = d.api.create()
    assert snapshot(d.api, mine)[0] == 201
    assert alice.exec(sbid, ["echo", "runs on"])["stdout"] == "runs on\n"


def test_the_bytes_quota_refuses_once_reached_and_a_delete_makes_room(make_daemon):
    d, alice = tenant_daemon(make_daemon, "--tenant-snapshot-mb", "1")
    sbid = alice.create()
    alice.exec(sbid, "head -c 2097152 /dev/urandom > /work/big")  # the layer copy alone is 2 MiB
    status, first = snapshot(alice, sbid)
    assert status == 201, (status, first)
    assert first["bytes"] >= 2 << 20, first   # what its directory takes: over the 1 MiB quota
    status, body = snapshot(alice, sbid)
    assert status == 429 and body["error"]["code"] == "too_many" and "MiB" in body["error"]["message"], body
    alice.ok("DELETE", f"/v1/snapshots/{first['id']}", expect=(204,))
    status, body = snapshot(alice, sbid)
    assert status == 201, (status, body)


def test_no_space_answers_507_before_anything_is_written(make_daemon):
    # a reserve no disk here has: whatever the estimate, the host cannot hold it
    d, alice = tenant_daemon(make_daemon, "--reserve-mb", str(1 << 40))
    sbid = alice.create()
    alice.exec(sbid, "echo mine > /work/f")
    for path, body in ((f"/v1/sandboxes/{sbid}/snapshot", {}), (f"/v1/sandboxes/{sbid}/fork", {"count": 2})):
        status, err = alice.json("POST", path, body)
        assert status == 507 and err["error"]["code"] == "no_space", (path, status, err)
    snaps = os.path.join(d.state_dir, "snapshots")
    assert not os.path.isdir(snaps) or os.listdir(snaps) == []
    assert not os.path.exists(os.path.join(d.sandbox_dir(sbid), "checkpoint"))
    assert [s["id"] for s in alice.ok("GET", "/v1/sandboxes")["sandboxes"]] == [sbid]
    assert alice.ok("GET", f"/v1/sandboxes/{sbid}")["state"] == "running"
    assert alice.exec(sbid, ["cat", "/work/f"])["stdout"] == "mine\n"
