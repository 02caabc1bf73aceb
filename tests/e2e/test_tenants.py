"""Tenants: a token only sees and touches its own tenant's sandboxes and snapshots, and
another tenant's are 404 (not 403), so ids do not leak. The Unix socket is the host's
administrator and sees everything.
"""

import http.client
import json
import resource
import select
import subprocess

import pytest

from conftest import SPACED, Api, free_port, wait_until


def test_a_tenant_sees_only_its_own(make_daemon):
    port = free_port()
    d = make_daemon(listen=f"127.0.0.1:{port}")
    alice = Api(tcp=("127.0.0.1", port), token=d.token("alice"))
    bob = Api(tcp=("127.0.0.1", port), token=d.token("bob"))

    mine = alice.create(metadata={"who": "alice"})
    assert [s["id"] for s in alice.ok("GET", "/v1/sandboxes")["sandboxes"]] == [mine]
    assert bob.ok("GET", "/v1/sandboxes")["sandboxes"] == []
    # every route that names it answers as if it did not exist
    for method, path, body in (("GET", f"/v1/sandboxes/{mine}", None),
                               ("POST", f"/v1/sandboxes/{mine}/exec", {"cmd": ["true"]}),
                               ("GET", f"/v1/sandboxes/{mine}/files?path=/etc/hostname", None),
                               ("POST", f"/v1/sandboxes/{mine}/suspend", None),
                               ("POST", f"/v1/sandboxes/{mine}/snapshot", None),
                               ("DELETE", f"/v1/sandboxes/{mine}", None)):
        status, err = bob.json(method, path, body)
        assert status == 404 and err["error"]["code"] == "not_found", (method, path, status, err)

    snap = alice.ok("POST", f"/v1/sandboxes/{mine}/snapshot", expect=(201,))
    assert bob.ok("GET", "/v1/snapshots")["snapshots"] == []
    assert bob.json("GET", f"/v1/snapshots/{snap['id']}")[0] == 404
    assert bob.json("POST", "/v1/sandboxes", {"snapshot": snap["id"]})[0] == 404
    assert bob.json("DELETE", f"/v1/snapshots/{snap['id']}")[0] == 404

    # the administrator on the Unix socket sees both tenants' sandboxes
    theirs = bob.create()
    listed = {s["id"] for s in d.api.ok("GET", "/v1/sandboxes")["sandboxes"]}
    assert {mine, theirs} <= listed
    assert alice.exec(mine, ["echo", "still mine"])["stdout"] == "still mine\n"
    alice.ok("DELETE", f"/v1/snapshots/{snap['id']}", expect=(204,))


TENANT_MAX_REQUESTS = 64
TENANT_MAX_STREAMS = 1024  # requests that wait on a process (daemon/daemon.h)


def running(d, boxes):
    """How many processes run in boxes, as the administrator sees them."""
    return sum(p["state"] == "running" for b in boxes
               for p in d.api.ok("GET", f"/v1/sandboxes/{b}/processes")["processes"])


def send(port, tok, method, path, body=b"", length=None, source="127.0.0.2"):
    """Sends a request over TCP without reading its answer (a Content-Length above the body's
    leaves an upload unfinished); the connection."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120, source_address=(source, 0))
    c.putrequest(method, path)
    c.putheader("Authorization", f"Bearer {tok}")
    c.putheader("Content-Length", str(len(body) if length is None else length))
    c.endheaders(body)
    return c


def hold_execs(port, tok, boxes, streams):
    """Sends TENANT_MAX_REQUESTS execs of `sleep 600` (half of them streamed if streams) over
    TCP from two addresses, spread over boxes, without reading the answers; the connections."""
    return [send(port, tok, "POST", f"/v1/sandboxes/{boxes[i % len(boxes)]}/exec",
                 json.dumps({"cmd": ["sleep", "600"], "stream": streams and i % 4 < 2}).encode(),
                 source=f"127.0.0.{2 + i % 2}")
            for i in range(TENANT_MAX_REQUESTS)]


def answered(conns):
    """The connections among conns that have had an answer (or were closed) so far."""
    ready = []
    for c in conns:
        p = select.poll()
        p.register(c.sock, select.POLLIN)
        if p.poll(0):
            ready.append(c)
    return ready


def test_one_tenant_cannot_hold_more_than_its_share_of_requests(make_daemon):
    """A tenant with TENANT_MAX_REQUESTS requests in flight (here uploads left unfinished) gets
    429 for the next one; another tenant is served meanwhile, and the first is served again once
    its requests end. Streams are counted apart: the tenant's execs still start."""
    port = free_port()
    d = make_daemon(listen=f"127.0.0.1:{port}")
    alice_token = d.token("alice")
    alice = Api(tcp=("127.0.0.1", port), token=alice_token)
    bob = Api(tcp=("127.0.0.1", port), token=d.token("bob"))
    box = alice.create()
    held = []
    try:
        held += [send(port, alice_token, "PUT", f"/v1/sandboxes/{box}/files?path=/tmp/up{i}", b"x", length=1 << 20)
                 for i in range(TENANT_MAX_REQUESTS)]
        wait_until(lambda: alice.json("GET", "/v1/sandboxes")[0] == 429, 60, "every upload to be in flight")
        status, body = alice.json("GET", "/v1/sandboxes")
        assert status == 429 and body["error"]["code"] == "too_many" and "requests in flight" in body["error"]["message"]
        assert bob.json("GET", "/v1/sandboxes")[0] == 200
        assert alice.exec(box, ["echo", "a stream"])["stdout"] == "a stream\n"
        assert answered(held) == []
        for c in held:
            c.close()
        wait_until(lambda: alice.json("GET", "/v1/sandboxes")[0] == 200, 60, "alice to be served again")
    finally:
        for c in held:
            c.close()


def test_a_tenant_holds_its_streams_up_to_their_own_limit(make_daemon):
    """A tenant may hold TENANT_MAX_STREAMS requests that wait on processes at once (here execs of
    `sleep`, plain and streamed, and waits on one more `sleep`); the next is 429 while its other
    requests are served. A client that drops its connections does not keep them: spaced notices
    while they wait, frees their room, and the commands run on."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < TENANT_MAX_STREAMS + 256:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    port = free_port()
    d = make_daemon(listen=f"127.0.0.1:{port}")
    tok = d.token("alice")
    alice = Api(tcp=("127.0.0.1", port), token=tok)
    boxes = [alice.create(), alice.create()]  # a sandbox runs at most 64 processes
    box = boxes[0]
    pid = alice.ok("POST", f"/v1/sandboxes/{box}/processes", {"cmd": ["sleep", "600"]}, expect=(201,))["pid"]
    wait_path = f"/v1/sandboxes/{box}/processes/{pid}/wait"

    def probe():
        """A wait of half a second: 429 once the tenant holds every stream it may."""
        return alice.json("GET", wait_path + "?timeout=0.5")

    execs, waits = [], []
    try:
        execs += hold_execs(port, tok, boxes, streams=True)
        wait_until(lambda: running(d, boxes) == 1 + TENANT_MAX_REQUESTS, 120, "every held exec to be running")
        waits += [send(port, tok, "GET", wait_path) for _ in range(TENANT_MAX_STREAMS - TENANT_MAX_REQUESTS)]
        wait_until(lambda: probe()[0] == 429, 120, "every wait to be held")
        status, body = probe()
        assert status == 429 and "waiting on processes" in body["error"]["message"], (status, body)
        assert answered(waits) == []  # none of the held ones was refused (streamed execs answer at once)
        assert alice.json("GET", f"/v1/sandboxes/{box}")[0] == 200  # other requests go on
        for c in execs:
            c.close()
        wait_until(lambda: probe()[0] == 200, 60, "the abandoned execs' room to be free")
        assert running(d, boxes) == 1 + TENANT_MAX_REQUESTS  # leaving a request is not killing its process
    finally:
        for c in execs + waits:
            c.close()


TENANT_NAME_MAX = 63  # bytes (daemon/daemon.h)


def token_create(d, *args):
    return subprocess.run([SPACED, "--state-dir", d.state_dir, "token", "create", *args],
                          capture_output=True, text=True, timeout=60)


def test_tenant_names_over_the_limit_are_refused_not_cut(make_daemon):
    """Two tenants whose names share their first TENANT_NAME_MAX - 1 bytes stay two tenants
    when each is exactly TENANT_NAME_MAX bytes; a name one byte over is refused by `token
    create`, whether it comes as --tenant or as the --name a tenant defaults to, and no token
    is made for it (the old code cut it, so two such names became one tenant)."""
    port = free_port()
    d = make_daemon(listen=f"127.0.0.1:{port}")
    stem = "t" * (TENANT_NAME_MAX - 1)
    first = Api(tcp=("127.0.0.1", port), token=d.token(stem + "a"))
    second = Api(tcp=("127.0.0.1", port), token=d.token(stem + "b"))
    mine = first.create()
    assert [s["id"] for s in first.ok("GET", "/v1/sandboxes")["sandboxes"]] == [mine]
    assert second.ok("GET", "/v1/sandboxes")["sandboxes"] == []

    for args in (["--tenant", stem + "aa"], ["--name", stem + "ab"], ["--name", "ci", "--tenant", stem + "ac"]):
        r = token_create(d, *args)
        assert r.returncode != 0 and r.stdout == "", (args, r)
        assert f"at most {TENANT_NAME_MAX}" in r.stderr and "64 bytes" in r.stderr, (args, r.stderr)
    # nor is a token taken for an option it does not know
    r = token_create(d, "--tenat", "x")
    assert r.returncode == 2 and r.stdout == "" and "--tenat" in r.stderr, r


def test_the_administrator_acting_for_a_tenant(make_daemon):
    """On the Unix socket, a Space-Tenant-Token header makes a request the token's tenant's
    (what the E2B front does with a client's key): it sees and makes only that tenant's
    sandboxes. A header with a token spaced does not know is 401; without it, the socket is
    the administrator as ever."""
    d = make_daemon()
    alice = {"Space-Tenant-Token": d.token("alice")}
    bob = {"Space-Tenant-Token": d.token("bob")}
    status, made = d.api.json("POST", "/v1/sandboxes", {"metadata": {"who": "alice"}}, headers=alice)
    assert status == 201, made
    mine = made["id"]
    try:
        listed = d.api.ok("GET", "/v1/sandboxes", headers=alice)["sandboxes"]
        assert [s["id"] for s in listed] == [mine]
        assert d.api.ok("GET", "/v1/sandboxes", headers=bob)["sandboxes"] == []
        status, err = d.api.json("POST", f"/v1/sandboxes/{mine}/exec", {"cmd": ["true"]}, headers=bob)
        assert status == 404 and err["error"]["code"] == "not_found", err
        status, err = d.api.json("GET", "/v1/sandboxes", headers={"Space-Tenant-Token": "sp_00"})
        assert status == 401 and "Space-Tenant-Token" in err["error"]["message"], err
        # the administrator, without the header, sees it
        assert mine in [s["id"] for s in d.api.ok("GET", "/v1/sandboxes")["sandboxes"]]
    finally:
        d.api.delete(mine)


def test_a_database_from_before_numbered_steps_is_refused_and_left(make_daemon):
    """A state.db as a spaced from before any release left it (our tables, user_version 0) is
    not patched at start: spaced says why and stops, and the database is as it was. (What a
    token from before tenants becomes is the schema's unit test's: test_schema.c.)"""
    import sqlite3
    d = make_daemon()
    kept = d.api.create()
    d.stop()
    d.proc.wait(timeout=60)
    db = sqlite3.connect(f"{d.state_dir}/state.db")
    db.execute("PRAGMA user_version = 0")
    db.close()
    with pytest.raises(pytest.fail.Exception) as got:
        d.start()
    assert "from before numbered schemas" in str(got.value), got.value
    db = sqlite3.connect(f"{d.state_dir}/state.db")
    assert db.execute("PRAGMA user_version").fetchone()[0] == 0
    assert db.execute("SELECT id FROM sandboxes").fetchall() == [(kept,)]
    db.close()
