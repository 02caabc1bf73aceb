"""A sandbox's own settings and measures: whether a request resumes it when it is paused or
suspended (auto_resume, per sandbox), and what it uses of its CPUs, memory and disk
(GET /v1/sandboxes/{id}/metrics, `space metrics`).

Measures are checked as a user would notice them: memory used grows while a process holds
200 MiB, disk used grows after a file is written, the totals are the sandbox's size. Every wait
is a poll with a deadline.
"""

import json

from conftest import wait_until


def state(api, sbid):
    return api.ok("GET", f"/v1/sandboxes/{sbid}")["state"]


def test_auto_resume_is_chosen_per_sandbox(api):
    on, off = api.create(auto_resume=True), api.create(auto_resume=False)
    try:
        assert api.ok("GET", f"/v1/sandboxes/{on}")["auto_resume"] is True
        assert api.ok("GET", f"/v1/sandboxes/{off}")["auto_resume"] is False
        for sbid in (on, off):
            api.exec(sbid, "echo kept > /tmp/x")
            api.ok("POST", f"/v1/sandboxes/{sbid}/suspend")
        status, body = api.json("POST", f"/v1/sandboxes/{off}/exec", {"cmd": ["cat", "/tmp/x"]})
        assert status == 409 and body["error"]["state"] == "suspended", body
        assert state(api, off) == "suspended"
        status, hdrs, body = api.request("POST", f"/v1/sandboxes/{on}/exec", {"cmd": ["cat", "/tmp/x"]})
        assert (status, json.loads(body)["stdout"], hdrs.get("space-resumed")) == (200, "kept\n", "true")
        # an explicit resume still works for the one that does not resume by itself
        assert api.ok("POST", f"/v1/sandboxes/{off}/resume")["state"] == "running"
        assert api.exec(off, ["cat", "/tmp/x"])["stdout"] == "kept\n"
    finally:
        api.delete(on)
        api.delete(off)


def test_auto_resume_must_be_a_boolean(api):
    status, body = api.json("POST", "/v1/sandboxes", {"auto_resume": "yes"})
    assert status == 400 and "auto_resume" in body["error"]["message"], body


def test_auto_resume_defaults_to_the_daemons_setting(make_daemon):
    d = make_daemon(args=["--no-auto-resume"])
    sbid = d.api.create()
    assert d.api.ok("GET", f"/v1/sandboxes/{sbid}")["auto_resume"] is False
    d.api.ok("POST", f"/v1/sandboxes/{sbid}/pause")
    status, body = d.api.json("POST", f"/v1/sandboxes/{sbid}/exec", {"cmd": ["true"]})
    assert status == 409 and body["error"]["state"] == "paused", body
    # a sandbox may still ask for it
    other = d.api.create(auto_resume=True)
    d.api.ok("POST", f"/v1/sandboxes/{other}/pause")
    assert d.api.exec(other, ["echo", "up"])["stdout"] == "up\n"
