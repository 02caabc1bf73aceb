"""Moving a sandbox's timeouts while it exists: POST /v1/sandboxes/{id}/timeout and
`space timeout` set a new idle timeout or a new lifetime counted from the request, the
sandbox ends at the new time (activity extends the idle timeout, never the lifetime), a
suspended sandbox gets its new idle timeout when it resumes, the change survives a restart
of spaced, and bad requests change nothing.

What is checked here is spaced's bookkeeping, the same for every kind of sandbox, so the
module runs under gVisor only.
"""

import datetime
import signal
import time

from conftest import gvisor_only, wait_until, wait_usable

pytestmark = gvisor_only("spaced's bookkeeping, the same for every kind")


def when(text):
    """A timestamp of the API as seconds since the epoch."""
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def gone(api, sbid):
    return api.json("GET", f"/v1/sandboxes/{sbid}")[0] == 404


def test_a_new_lifetime_ends_the_sandbox_however_busy_it_is(api):
    sbid = api.create(lifetime=3600, timeout_action="kill")
    try:
        before = time.time()
        sb = api.ok("POST", f"/v1/sandboxes/{sbid}/timeout", {"lifetime": 2})
        assert sb["lifetime"] == 2 and sb["timeout_action"] == "kill", sb
        assert before + 1 <= when(sb["expires_at"]) <= time.time() + 3, sb
        # execs back to back: each is activity, none moves the lifetime
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            status, body = api.json("POST", f"/v1/sandboxes/{sbid}/exec", {"cmd": ["true"]})
            if status != 200:
                break
        assert status != 200, "the sandbox outlived its lifetime by a minute"
        wait_until(lambda: gone(api, sbid), 30, "the lifetime to remove it")
    finally:
        api.json("DELETE", f"/v1/sandboxes/{sbid}")


def test_a_new_idle_timeout_counts_from_the_request(api):
    sbid = api.create(timeout=3600)
    try:
        before = time.time()
        sb = api.ok("POST", f"/v1/sandboxes/{sbid}/timeout", {"timeout": 1})
        assert sb["timeout"] == 1 and sb["timeout_action"] == "suspend", sb
        assert before <= when(sb["timeout_at"]) <= time.time() + 2, sb
        wait_until(lambda: api.ok("GET", f"/v1/sandboxes/{sbid}")["state"] == "suspended", 60,
                   "the new idle timeout to suspend it")
        # no timeout at all: it stays
        sb = api.ok("POST", f"/v1/sandboxes/{sbid}/timeout", {"timeout": 0, "lifetime": 0})
        assert (sb["timeout"], sb["lifetime"], sb["expires_at"]) == (0, 0, None), sb
    finally:
        api.delete(sbid)


def test_a_suspended_sandbox_gets_its_new_idle_timeout_on_resume(api):
    sbid = api.create(timeout=3600)
    try:
        api.ok("POST", f"/v1/sandboxes/{sbid}/suspend")
        sb = api.ok("POST", f"/v1/sandboxes/{sbid}/timeout", {"timeout": 900})
        assert (sb["state"], sb["timeout"], sb["timeout_left_ms"], sb["timeout_at"]) == \
            ("suspended", 900, 900000, None), sb
        api.ok("POST", f"/v1/sandboxes/{sbid}/resume")
        sb = api.ok("GET", f"/v1/sandboxes/{sbid}")
        assert sb["state"] == "running" and 890 <= when(sb["timeout_at"]) - time.time() <= 900, sb
    finally:
        api.delete(sbid)


def test_bad_requests_change_nothing(api, sandbox):
    before = api.ok("GET", f"/v1/sandboxes/{sandbox}")
    for body, word in (({}, "timeout"), ({"timeout": -1}, "timeout"), ({"lifetime": 86400 * 365}, "lifetime"),
                       ({"lifetime": "soon"}, "lifetime"), ({"timeout_action": "stop"}, "timeout_action"),
                       ({"timeout": 5, "idle": 3}, "idle")):
        status, err = api.json("POST", f"/v1/sandboxes/{sandbox}/timeout", body)
        assert status == 400 and err["error"]["code"] == "invalid_argument", (body, status, err)
        assert word in err["error"]["message"], (body, err)
    status, err = api.json("POST", "/v1/sandboxes/000000000000/timeout", {"timeout": 5})
    assert status == 404 and err["error"]["code"] == "not_found", err
    after = api.ok("GET", f"/v1/sandboxes/{sandbox}")
    assert {k: after[k] for k in ("timeout", "lifetime", "timeout_action", "expires_at")} == \
        {k: before[k] for k in ("timeout", "lifetime", "timeout_action", "expires_at")}


def test_the_new_timeouts_survive_a_restart_of_spaced(make_daemon):
    d = make_daemon()
    sbid = d.api.create()
    sb = d.api.ok("POST", f"/v1/sandboxes/{sbid}/timeout", {"lifetime": 7200, "timeout": 600,
                                                             "timeout_action": "kill"})
    d.kill(signal.SIGKILL)
    d.start()
    again = d.api.ok("GET", f"/v1/sandboxes/{sbid}")
    assert {k: again[k] for k in ("timeout", "lifetime", "timeout_action", "expires_at")} == \
        {k: sb[k] for k in ("timeout", "lifetime", "timeout_action", "expires_at")}, (sb, again)
    wait_usable(d.api, sbid)
    d.api.delete(sbid)


def test_the_cli_moves_either_and_refuses_bad_input(cli, api, sandbox):
    r = cli("timeout", sandbox, "600")
    assert (r.returncode, r.stdout, r.stderr) == (0, f"{sandbox}\n", ""), r
    sb = api.ok("GET", f"/v1/sandboxes/{sandbox}")
    assert sb["timeout"] == 600 and sb["lifetime"] == 0, sb

    r = cli("timeout", "--lifetime", "--action", "kill", sandbox, "3600")
    assert (r.returncode, r.stdout) == (0, f"{sandbox}\n"), r
    sb = api.ok("GET", f"/v1/sandboxes/{sandbox}")
    assert (sb["timeout"], sb["lifetime"], sb["timeout_action"]) == (600, 3600, "kill"), sb
    assert 3590 <= when(sb["expires_at"]) - time.time() <= 3600, sb

    for bad, word in ((["timeout", sandbox], "SECONDS"), (["timeout", sandbox, "soon"], "soon"),
                      (["timeout", "--action", "stop", sandbox, "5"], "--action")):
        r = cli(*bad)
        assert r.returncode == 2 and r.stdout == "" and word in r.stderr, (bad, r)
    r = cli("timeout", "000000000000", "5")
    assert r.returncode == 1 and "000000000000" in r.stderr, r
    assert api.ok("GET", f"/v1/sandboxes/{sandbox}")["timeout"] == 600


# --------------------------------------------------------------------------
# requests that wait on a sandbox: activity while open, ended clearly when it is suspended
