"""Watching a folder of a sandbox for changes: GET /v1/sandboxes/{id}/files/watch, an NDJSON
stream of what processes inside the sandbox do to its files (docs/api.md).

Changes are made by commands run in the sandbox, so the events are what the sandbox's kernel
(gVisor's, or a microVM's Linux) reports. A negative check ("this was not seen") reads up to a
marker made after the change, never waits out a period.
"""

import json
import os
import re
import select
import signal
import subprocess

import pytest

from conftest import IO_TIMEOUT, q, wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _limit(name):
    text = open(os.path.join(ROOT, "agent", "watch.h")).read()
    return int(re.search(r"#define %s (\d+)u" % name, text).group(1))


MAX_WATCHES = _limit("AGENT_MAX_WATCHES")
MAX_FOLDERS = _limit("AGENT_WATCH_FOLDERS")


def watch_url(sbid, path, recursive=None):
    url = f"/v1/sandboxes/{sbid}/files/watch?path={q(path)}"
    return url + (f"&recursive={recursive}" if recursive is not None else "")


def open_watch(api, sbid, path, recursive=None):
    s = api.stream("GET", watch_url(sbid, path, recursive))
    assert s.status == 200, (s.status, s.body)
    assert s.headers["content-type"].startswith("application/x-ndjson")
    assert s.next_event() == {"type": "start", "path": path}
    return s


def read_until(stream, last):
    """The events (keepalives left out) up to and including the first that equals last."""
    got = []
    for ev in stream:
        if ev["type"] == "keepalive":
            continue
        got.append(ev)
        if ev == last:
            return got
    raise AssertionError(f"the stream ended before {last}: {got[-20:]}")


def sh(api, sbid, script):
    res = api.exec(sbid, ["sh", "-ec", script])
    assert res["exit_code"] == 0, res


def ev(type_, name):
    return {"type": type_, "name": name}


def test_each_kind_of_change_in_order(api, sandbox):
    sh(api, sandbox, "mkdir -p /work/w")
    with open_watch(api, sandbox, "/work/w") as s:
        sh(api, sandbox, "cd /work/w; echo one > a.txt; chmod 600 a.txt; mv a.txt b.txt; rm b.txt")
        got = read_until(s, ev("remove", "b.txt"))
    # the kernel may say more (a write as two), never less nor in another order
    want = [ev("create", "a.txt"), ev("write", "a.txt"), ev("chmod", "a.txt"), ev("rename", "a.txt"),
            ev("create", "b.txt"), ev("remove", "b.txt")]
    it = iter(got)
    assert all(w in it for w in want), got


def test_recursive_sees_a_new_folders_files_and_plain_does_not(api, sandbox):
    sh(api, sandbox, "mkdir -p /work/r")
    with open_watch(api, sandbox, "/work/r", recursive=1) as deep, open_watch(api, sandbox, "/work/r") as flat:
        sh(api, sandbox, "mkdir -p /work/r/sub/inner && echo x > /work/r/sub/inner/f.txt")
        got = read_until(deep, ev("create", "sub/inner/f.txt"))
        assert ev("create", "sub") in got and ev("create", "sub/inner") in got
        sh(api, sandbox, "echo y > /work/r/marker")
        read_until(deep, ev("create", "marker"))
        plain = read_until(flat, ev("create", "marker"))
        assert [e for e in plain if e["name"].startswith("sub/")] == [], plain
        assert ev("create", "sub") in plain


def test_refusals(api, sandbox):
    sh(api, sandbox, "echo x > /work/plain")
    # a relative path is taken from /work, as in the other file calls: "missing" is /work/missing
    for path, rec, status in (("/work/missing", None, 404), ("/work/plain", None, 400), ("missing", None, 404),
                              ("/work", "yes", 400)):
        s = api.stream("GET", watch_url(sandbox, path, rec))
        assert s.status == status, (path, s.status, s.body)
        assert s.json_body()["error"]["message"], s.body
    status, _, _ = api.request("GET", watch_url("nosuchsandbox", "/work"))
    assert status == 404


def test_watches_per_sandbox_and_closing_gives_one_back(api, sandbox):
    streams = [open_watch(api, sandbox, "/work") for _ in range(MAX_WATCHES)]
    try:
        s = api.stream("GET", watch_url(sandbox, "/work"))
        assert s.status == 429 and s.json_body()["error"]["code"] == "too_many", (s.status, s.body)
        streams.pop().close()
        # the close reaches the agent once spaced notices the client left: poll for the place
        def take_place():
            s = api.stream("GET", watch_url(sandbox, "/work"))
            assert s.status in (200, 429), (s.status, s.body)
            if s.status == 200:
                streams.append(s)
            return s.status == 200
        wait_until(take_place, 30, "a closed watch's place to come back", interval=0.1)
    finally:
        for s in streams:
            s.close()


def test_folders_per_watch_at_the_limit(api, sandbox):
    sh(api, sandbox, f"mkdir -p /work/many && cd /work/many && seq 1 {MAX_FOLDERS - 1} | xargs mkdir")
    with open_watch(api, sandbox, "/work/many", recursive=1) as s:  # the watched one and 1023 below
        sh(api, sandbox, "mkdir /work/many/one-more")
        got = read_until(s, ev("create", "one-more"))
        end = s.next_event()
        assert end["type"] == "error" and str(MAX_FOLDERS) in end["error"]["message"], (got[-3:], end)
        assert s.next_event() is None
    s = api.stream("GET", watch_url(sandbox, "/work/many", 1))
    assert s.status == 400 and str(MAX_FOLDERS) in s.json_body()["error"]["message"], (s.status, s.body)
    with open_watch(api, sandbox, "/work/many", recursive=0):  # a plain watch follows one folder
        pass


def test_a_client_that_does_not_read_gets_a_lost_event_then_more(api, sandbox):
    sh(api, sandbox, "mkdir -p /work/flood")
    with open_watch(api, sandbox, "/work/flood") as s:
        # far more than the agent's queue, spaced's window and the sockets between hold
        sh(api, sandbox, "cd /work/flood && python3 -c \"[open('%05d' % i + 'x' * 200, 'w').close() "
                         "for i in range(8000)]\"")
        got = read_until(s, {"type": "lost"})
        assert 1000 < len(got) < 8000 and all(e["type"] == "create" for e in got[:-1]), len(got)
        sh(api, sandbox, "echo > /work/flood/after")  # made after the loss: seen
        read_until(s, ev("create", "after"))


def test_the_folder_removed_ends_the_stream(api, sandbox):
    sh(api, sandbox, "mkdir -p /work/gone")
    with open_watch(api, sandbox, "/work/gone") as s:
        sh(api, sandbox, "rm -r /work/gone")
        got = read_until(s, {"type": "end"})
        assert ev("remove", "") in got
        assert s.next_event() is None


def test_a_watch_left_open_across_pause_and_resume(api, sandbox):
    sh(api, sandbox, "mkdir -p /work/p")
    with open_watch(api, sandbox, "/work/p") as s:
        api.ok("POST", f"/v1/sandboxes/{sandbox}/pause")
        api.ok("POST", f"/v1/sandboxes/{sandbox}/resume")
        sh(api, sandbox, "echo x > /work/p/after-resume")
        read_until(s, ev("create", "after-resume"))
    assert api.exec(sandbox, ["echo", "alive"])["stdout"] == "alive\n"


def test_cli_watch_prints_changes_until_interrupted(api, cli, sandbox):
    sh(api, sandbox, "mkdir -p /work/cw/sub")
    p = cli.popen("watch", "--json", "-r", sandbox, "/work/cw", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                  text=True)
    try:
        assert json.loads(p.stdout.readline()) == {"type": "start", "path": "/work/cw"}
        sh(api, sandbox, "echo x > /work/cw/sub/f.txt")
        while json.loads(p.stdout.readline()) != ev("create", "sub/f.txt"):
            pass
        p.send_signal(signal.SIGINT)
        assert p.wait(timeout=IO_TIMEOUT) != 0
    finally:
        p.kill()
        p.wait()
    # the text form has no start line: marks are made until one is seen, then the folder's
    # removal ends the command with status 0
    sh(api, sandbox, "mkdir -p /work/cw2")
    plain = cli.popen("watch", sandbox, "/work/cw2", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        n = [0]

        def mark_seen():
            n[0] += 1
            sh(api, sandbox, f"touch /work/cw2/m{n[0]}")
            return select.select([plain.stdout], [], [], 1)[0]
        wait_until(mark_seen, 60, "space watch to print a change")
        sh(api, sandbox, "rm -r /work/cw2")
        out, err = plain.communicate(timeout=IO_TIMEOUT)
        assert plain.returncode == 0, err
        lines = out.splitlines()
        assert re.fullmatch(r"create m\d+", lines[0]) and "remove " in lines, lines
    finally:
        plain.kill()
        plain.wait()
    r = cli("watch", sandbox, "/work/nothing-here")
    assert r.returncode != 0 and "nothing-here" in r.stderr, r
