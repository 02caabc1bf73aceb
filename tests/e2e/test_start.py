"""A template's start and ready commands (LABEL space.start / space.ready): a server already
running, and answering, in every new sandbox of the template, on either kind of sandbox."""

import secrets
import subprocess

from conftest import gvisor_only
from spacetest import SPACED
from test_build import build, done

SERVE = ("python3 -c \"import urllib.request as u; "
         "print(u.urlopen('http://127.0.0.1:8000/hello.txt', timeout=5).read().decode())\"")


def template(api, start, ready=None, prefix="web"):
    """A template of the default one with these start and ready commands; its name."""
    name = f"{prefix}-{secrets.token_hex(3)}"
    labels = f'LABEL space.start="{start}"' + (f' space.ready="{ready}"' if ready else "")
    status, events = build(api, name, {"Dockerfile": f"FROM space:default\n{labels}\n"})
    assert status == 200, events
    done(events)
    return name


def test_a_start_command_serves_in_every_new_sandbox_once_ready(api):
    # the server only starts a second after the sandbox does: a create that answers before its
    # ready command succeeds would find nothing listening
    start = ("mkdir -p /tmp/www && cp /etc/hostname /tmp/www/hello.txt && sleep 1 && "
             "echo starting && exec python3 -m http.server 8000 --bind 127.0.0.1 --directory /tmp/www")
    ready = "python3 -c 'import socket; socket.create_connection((\\\"127.0.0.1\\\", 8000), 1)'"
    name = template(api, start, ready)
    made = []
    try:
        for _ in range(2):
            sbid = api.create(template=name)
            made.append(sbid)
            res = api.exec(sbid, SERVE)
            assert res["exit_code"] == 0 and res["stdout"] == f"{sbid}\n\n", res
            procs = api.ok("GET", f"/v1/sandboxes/{sbid}/processes")["processes"]
            [server] = [p for p in procs if p["cmd"] == start]
            assert server["state"] == "running", procs
            # its output goes to a file of the sandbox, never waiting on a reader
            log = api.exec(sbid, "cat /tmp/space-start.log")["stdout"]
            assert log.startswith("starting\n") and "GET /hello.txt" in log, log

        # a sandbox that comes back keeps its server and never starts another
        sbid = made[0]
        api.ok("POST", f"/v1/sandboxes/{sbid}/suspend")
        api.ok("POST", f"/v1/sandboxes/{sbid}/resume")
        forks = [f["id"] for f in api.ok("POST", f"/v1/sandboxes/{sbid}/fork", {"count": 1}, expect=(201,))["sandboxes"]]
        made += forks
        for other in [sbid] + forks:
            res = api.exec(other, "pgrep -c -f 'http[.]server 8000'; " + SERVE)
            assert res["exit_code"] == 0 and res["stdout"] == f"1\n{sbid}\n\n", (other, res)
    finally:
        for sbid in made:
            api.delete(sbid)


def test_a_start_command_that_ends_fails_the_create_with_its_output_and_leaves_nothing(api):
    name = template(api, "echo cannot bind here && exit 3", "false")
    before = {s["id"] for s in api.ok("GET", "/v1/sandboxes")["sandboxes"]}
    status, body = api.json("POST", "/v1/sandboxes", {"template": name})
    assert status == 422 and body["error"]["code"] == "not_ready", body
    assert "start command ended" in body["error"]["message"], body
    assert "cannot bind here" in body["error"]["message"], body
    assert {s["id"] for s in api.ok("GET", "/v1/sandboxes")["sandboxes"]} == before


@gvisor_only("how a failed start or ready is answered is the same for either kind")
def test_a_ready_command_that_never_succeeds_fails_the_create_at_the_ready_timeout(make_daemon):
    d = make_daemon(args=["--ready-timeout", "3"])
    name = template(d.api, "echo still warming up; exec sleep 600", "test -e /nothing")
    status, body = d.api.json("POST", "/v1/sandboxes", {"template": name}, timeout=120)
    assert status == 422 and body["error"]["code"] == "not_ready", body
    assert "did not succeed within 3 s" in body["error"]["message"], body
    assert "still warming up" in body["error"]["message"], body
    assert d.api.ok("GET", "/v1/sandboxes")["sandboxes"] == []
    # a ready command that succeeds on its own a second later is well within it
    name = template(d.api, "sleep 1; touch /tmp/up; exec sleep 600", "test -e /tmp/up")
    sbid = d.api.create(template=name)
    assert d.api.exec(sbid, "test -e /tmp/up")["exit_code"] == 0


def test_the_ready_timeout_is_seconds_from_1_to_3600(tmp_path):
    for bad in ("0", "3601", "2s", ""):
        r = subprocess.run([SPACED, "--state-dir", str(tmp_path), "--ready-timeout", bad], capture_output=True,
                           text=True, timeout=30)
        assert r.returncode != 0 and "--ready-timeout wants a whole number from 1 to 3600" in r.stderr, (bad, r.stderr)
