"""Tenants: a token only sees and touches its own tenant's sandboxes and snapshots, and
another tenant's are 404 (not 403), so ids do not leak. The Unix socket is the host's
administrator and sees everything.
"""

import subprocess

from conftest import SPACED, Api, free_port


def token(d, tenant):
    r = subprocess.run([SPACED, "--state-dir", d.state_dir, "token", "create", "--tenant", tenant],
                       capture_output=True, text=True, check=True)
    return r.stdout.strip()


def test_a_tenant_sees_only_its_own(make_daemon):
    port = free_port()
    d = make_daemon(listen=f"127.0.0.1:{port}")
    alice = Api(tcp=("127.0.0.1", port), token=token(d, "alice"))
    bob = Api(tcp=("127.0.0.1", port), token=token(d, "bob"))

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
