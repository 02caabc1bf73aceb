"""Isolation per sandbox: each sandbox says which kind isolates it ("gvisor" or "microvm"),
creates that name none get the operator's default (spaced --isolation, gvisor unless told),
a kind that does not exist or that this host cannot run is refused before anything is
made, a fork and a create from a snapshot keep their source's kind, and a sandbox keeps
its kind across a restart of spaced, even one under which its kind cannot run."""
import os
import sqlite3
import subprocess
import tempfile

import pytest

from conftest import AGENT, MICROVM, SPACED, q, wait_usable, gvisor_only


def ids(api):
    return {sb["id"] for sb in api.ok("GET", "/v1/sandboxes")["sandboxes"]}


def version_isolation(api):
    return api.ok("GET", "/v1/version")["isolation"]


def microvm_unavailable(api):
    """Why microvm cannot run under this spaced; the test is skipped where it can."""
    v = version_isolation(api)
    if v["available"]["microvm"] is not None:
        pytest.skip("microvm runs on this host")
    return v["unavailable"]["microvm"]


@gvisor_only("it checks the operator's default kind, gvisor")
def test_the_default_is_gvisor_and_every_view_says_so(api):
    v = api.ok("GET", "/v1/version")
    assert v["isolation"]["default"] == "gvisor", v
    assert set(v["isolation"]["available"]) == {"gvisor", "microvm"}, v
    assert v["isolation"]["available"]["gvisor"] == v["runtime"], v  # the field older clients read stays
    assert v["runtime"].startswith("runsc"), v
    assert v["driver"] == "gvisor", v

    made = api.ok("POST", "/v1/sandboxes", {}, expect=(201,))
    try:
        assert made["isolation"] == "gvisor", made
        assert api.ok("GET", f"/v1/sandboxes/{made['id']}")["isolation"] == "gvisor"
        listed = [sb for sb in api.ok("GET", "/v1/sandboxes")["sandboxes"] if sb["id"] == made["id"]]
        assert [sb["isolation"] for sb in listed] == ["gvisor"], listed
        # asked for by name, the same
        named = api.ok("POST", "/v1/sandboxes", {"isolation": "gvisor"}, expect=(201,))
        api.delete(named["id"])
        assert named["isolation"] == "gvisor", named
    finally:
        api.delete(made["id"])


@pytest.mark.parametrize("kind", ["firecracker", "", "GVISOR", 7, None])
def test_an_unknown_isolation_is_refused_and_makes_nothing(api, kind):
    before = ids(api)
    status, body = api.json("POST", "/v1/sandboxes", {"isolation": kind})
    assert status == 400, body
    assert body["error"]["code"] == "invalid_argument", body
    if isinstance(kind, str):  # a string that names no kind is told the kinds there are
        assert '"gvisor"' in body["error"]["message"] and '"microvm"' in body["error"]["message"], body
    else:
        assert body["error"]["message"] == 'field "isolation" must be a string', body
    assert ids(api) == before


def test_a_kind_this_host_cannot_run_is_refused_with_the_reason(api):
    why = microvm_unavailable(api)
    before = ids(api)
    status, body = api.json("POST", "/v1/sandboxes", {"isolation": "microvm"})
    assert status == 400, body
    assert body["error"]["code"] == "isolation_unavailable", body
    assert "microvm" in body["error"]["message"] and why in body["error"]["message"], body
    assert ids(api) == before


def run_spaced(*args):
    with tempfile.TemporaryDirectory(prefix="space-e2e-iso-") as state:
        return subprocess.run([SPACED, "--state-dir", state, "--socket", os.path.join(state, "space.sock"),
                               "--agent", AGENT, *args], capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)


def test_spaced_will_not_start_with_a_default_it_cannot_run(api):
    why = microvm_unavailable(api)
    r = run_spaced("--isolation", "microvm")
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "isolation microvm is unavailable" in r.stderr and why in r.stderr, r.stderr

    r = run_spaced("--isolation", "firecracker")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "unknown isolation firecracker" in r.stderr, r.stderr


@gvisor_only("it forks a gvisor sandbox made by default")
def test_a_fork_and_a_snapshot_keep_the_kind_and_refuse_another(api, sandbox):
    api.exec(sandbox, "echo mine > /work/f")
    made = []
    snap = api.ok("POST", f"/v1/sandboxes/{sandbox}/snapshot", {}, expect=(201,))
    try:
        assert snap["isolation"] == "gvisor", snap
        assert api.ok("GET", f"/v1/snapshots/{snap['id']}")["isolation"] == "gvisor"
        before = ids(api)

        # another kind is refused whatever this host runs: the image restores only under its own
        status, body = api.json("POST", f"/v1/sandboxes/{sandbox}/fork", {"isolation": "microvm"})
        assert status == 400 and body["error"]["code"] == "invalid_argument", body
        assert "image" in body["error"]["message"] and "gvisor" in body["error"]["message"], body
        status, body = api.json("POST", "/v1/sandboxes", {"snapshot": snap["id"], "isolation": "microvm"})
        assert status == 400 and body["error"]["code"] == "invalid_argument", body
        assert "image" in body["error"]["message"] and "gvisor" in body["error"]["message"], body
        status, body = api.json("POST", f"/v1/sandboxes/{sandbox}/fork", {"isolation": "nope"})
        assert status == 400 and body["error"]["code"] == "invalid_argument", body
        assert ids(api) == before
        assert api.ok("GET", f"/v1/sandboxes/{sandbox}")["state"] == "running"

        # the same kind, named or not, is the source's
        forks = api.ok("POST", f"/v1/sandboxes/{sandbox}/fork", {"isolation": "gvisor"}, expect=(201,))["sandboxes"]
        made += [f["id"] for f in forks]
        clone = api.ok("POST", "/v1/sandboxes", {"snapshot": snap["id"]}, expect=(201,))
        made.append(clone["id"])
        for sb in forks + [clone]:
            assert sb["isolation"] == "gvisor", sb
            assert api.exec(sb["id"], ["cat", "/work/f"])["stdout"] == "mine\n"
    finally:
        for sbid in made:
            api.delete(sbid)
        api.ok("DELETE", f"/v1/snapshots/{snap['id']}", expect=(204,))


def set_isolation(d, sbid, kind):
    db = sqlite3.connect(os.path.join(d.state_dir, "state.db"))
    db.execute("UPDATE sandboxes SET isolation = ? WHERE id = ?", (kind, sbid))
    db.commit()
    db.close()


def recorded(d, sbid):
    db = sqlite3.connect(f"file:{os.path.join(d.state_dir, 'state.db')}?mode=ro", uri=True)
    row = db.execute("SELECT state, isolation FROM sandboxes WHERE id = ?", (sbid,)).fetchone()
    db.close()
    return row


def test_the_kind_survives_a_restart_even_one_that_cannot_run_it(make_daemon):
    # --driver, the flag's name before any release, says what it became
    with pytest.raises(pytest.fail.Exception) as got:
        make_daemon(args=["--driver", "auto"])
    assert "--driver is now --isolation" in str(got.value), got.value
    d = make_daemon(args=["--isolation", "gvisor"])
    sbid = d.api.create()
    d.api.ok("PUT", f"/v1/sandboxes/{sbid}/files?path={q('/work/keep.txt')}", raw=b"kept\n", expect=(201,))
    d.stop()
    d.start()
    assert d.api.ok("GET", f"/v1/sandboxes/{sbid}")["isolation"] == "gvisor"
    assert recorded(d, sbid) == ("running", "gvisor")

    # recorded as a kind this spaced cannot run: shown failed with why, and left alone, record and all
    if d.api.ok("GET", "/v1/version")["isolation"]["available"]["microvm"] is not None:
        pytest.skip("microvm runs on this host")
    d.stop()
    set_isolation(d, sbid, "microvm")
    d.start()
    sb = d.api.ok("GET", f"/v1/sandboxes/{sbid}")
    assert sb["isolation"] == "microvm", sb
    assert sb["state"] == "failed" and "microvm is unavailable" in sb["reason"], sb
    status, body = d.api.json("DELETE", f"/v1/sandboxes/{sbid}")
    assert status == 503 and body["error"]["code"] == "isolation_unavailable", body
    assert recorded(d, sbid) == ("running", "microvm")

    # under a spaced that runs its kind again, it is as it was: running, its files there
    d.stop()
    set_isolation(d, sbid, "gvisor")
    d.start()
    assert d.api.ok("GET", f"/v1/sandboxes/{sbid}")["state"] == "running"
    wait_usable(d.api, sbid)
    assert d.api.exec(sbid, ["cat", "/work/keep.txt"])["stdout"] == "kept\n"


def test_the_default_templates_user_has_root_through_sudo(api, sandbox):
    """The default template's `user` account, as in E2B's base template: a command of its own
    becomes root through sudo without a password. Under gVisor every process of a sandbox runs
    with no_new_privs (runsc sets it), so there sudo says it cannot, and the user stays itself."""
    res = api.exec(sandbox, ["sh", "-c", "id -u; sudo -n sh -c 'id -u; echo x > /root/by-user && cat /root/by-user'"],
                   user="user")
    if MICROVM:
        assert res["exit_code"] == 0, res
        assert res["stdout"].split() == ["1000", "0", "x"], res
    else:
        assert res["exit_code"] != 0 and res["stdout"].split() == ["1000"], res
        assert "no new privileges" in res["stderr"], res
