"""Requests that wait on a sandbox (an exec, a process's output or wait, a folder watch) and the
sandbox's life: while one is open the idle timeout does not pass; a suspend or a delete ends it
at once with an error naming the state; a pause holds it until the resume. On every kind of
sandbox: what ends the requests is spaced's, but what a suspend leaves of them is the driver's."""

import datetime
import time
from concurrent.futures import ThreadPoolExecutor

from conftest import collect, wait_until


def when(text):
    """A timestamp of the API as seconds since the epoch."""
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def state_of(api, sbid):
    return api.ok("GET", f"/v1/sandboxes/{sbid}")["state"]


STREAM_CAP = 60  # seconds an event may take to come, keepalives apart (they come every 15 s)


def next_event(stream):
    """The stream's next event, keepalives left out; fails if none comes within STREAM_CAP."""
    deadline = time.monotonic() + STREAM_CAP
    while True:
        ev = stream.next_event()
        if ev is None or ev["type"] != "keepalive":
            return ev
        assert time.monotonic() < deadline, f"only keepalives for {STREAM_CAP} s"


def test_an_exec_and_a_wait_that_outlive_the_idle_timeout_finish(api, cli):
    """`space exec` of a command that runs past the sandbox's idle timeout, and a wait on a
    background process that does too: both end with the command's output and exit, the sandbox
    still running; once nothing waits on it, the idle timeout suspends it as before."""
    sbid = api.create(timeout=2)
    try:
        pid = api.ok("POST", f"/v1/sandboxes/{sbid}/processes", {"cmd": ["sh", "-c", "sleep 7; exit 3"]},
                     expect=(201,))["pid"]
        with ThreadPoolExecutor(1) as pool:
            waited = pool.submit(api.json, "GET", f"/v1/sandboxes/{sbid}/processes/{pid}/wait", timeout=60)
            r = cli("exec", sbid, "--", "sh", "-c", "sleep 7; echo finished", timeout=60)
            assert (r.returncode, r.stdout, r.stderr) == (0, "finished\n", ""), r
            status, proc = waited.result(60)
        assert (status, proc["state"], proc["exit_code"]) == (200, "exited", 3), (status, proc)
        assert state_of(api, sbid) == "running"
        wait_until(lambda: state_of(api, sbid) == "suspended", 60, "the idle timeout, once nothing waits")
    finally:
        api.delete(sbid)


def test_an_open_watch_holds_off_the_idle_timeout(api):
    sbid = api.create(timeout=1)
    try:
        with api.stream("GET", f"/v1/sandboxes/{sbid}/files/watch?path=/tmp", timeout=60) as w:
            assert w.status == 200 and next_event(w) == {"type": "start", "path": "/tmp"}, w.body
            opened = time.time()

            def moved_on():  # the idle timeout passed more than once, and was moved on each time
                at = api.ok("GET", f"/v1/sandboxes/{sbid}")["timeout_at"]
                return at is not None and when(at) > opened + 3

            wait_until(moved_on, 30, "the idle timeout to be moved on")
            assert state_of(api, sbid) == "running"
            api.exec(sbid, ["touch", "/tmp/seen"])
            assert next_event(w) == {"type": "create", "name": "seen"}
    finally:
        api.delete(sbid)


def test_a_suspend_ends_the_streams_of_its_processes_with_the_state(api):
    """An exec stream and an output stream open when the sandbox is suspended each end with an
    error event naming the state, at once; the process itself waits in the image, and runs on
    after a resume."""
    sbid = api.create(timeout=3600)
    try:
        with api.exec_stream(sbid, ["sh", "-c", "echo up; sleep 600"], timeout=60) as s:
            start = next_event(s)
            assert start["type"] == "start", start
            pid = start["pid"]
            assert next_event(s) == {"type": "stdout", "data": "up\n"}
            with api.stream("GET", f"/v1/sandboxes/{sbid}/processes/{pid}/output", timeout=60) as o:
                assert o.status == 200, o.body
                wait_until(lambda: api.ok("GET", f"/v1/sandboxes/{sbid}/processes/{pid}")["readers"] == 2, 30,
                           "both streams to read the process")
                api.ok("POST", f"/v1/sandboxes/{sbid}/suspend")
                for stream in (s, o):
                    ev = next_event(stream)
                    assert ev["type"] == "error", ev
                    assert (ev["error"]["code"], ev["error"]["state"]) == ("conflict", "suspended"), ev
                    assert "suspended" in ev["error"]["message"], ev
                    assert next_event(stream) is None, "the stream goes on after its error"
        api.ok("POST", f"/v1/sandboxes/{sbid}/resume")
        assert api.ok("GET", f"/v1/sandboxes/{sbid}/processes/{pid}")["state"] == "running"
    finally:
        api.delete(sbid)


def test_a_delete_ends_an_open_stream_with_the_state(api):
    sbid = api.create()
    try:
        with api.exec_stream(sbid, ["sh", "-c", "echo up; sleep 600"], timeout=60) as s:
            assert next_event(s)["type"] == "start"
            assert next_event(s) == {"type": "stdout", "data": "up\n"}
            api.ok("DELETE", f"/v1/sandboxes/{sbid}", expect=(204,))
            ev = next_event(s)
            assert ev["type"] == "error" and ev["error"]["state"] == "deleting", ev
            assert "deleted" in ev["error"]["message"], ev
    finally:
        api.delete(sbid)


def test_a_pause_holds_an_exec_stream_until_the_resume(api):
    """A pause keeps the streams open (with their keepalives): after the resume the output goes
    on where it stopped, every line, and the exit comes."""
    sbid = api.create(timeout=3600)
    try:
        with api.exec_stream(sbid, ["sh", "-c", "for i in $(seq 1 30); do echo $i; sleep 0.1; done"],
                             timeout=60) as s:
            assert next_event(s)["type"] == "start"
            first = next_event(s)
            assert first["type"] == "stdout", first
            api.ok("POST", f"/v1/sandboxes/{sbid}/pause")
            assert state_of(api, sbid) == "paused"
            api.ok("POST", f"/v1/sandboxes/{sbid}/resume")
            out, _, events = collect(s)
        lines = (first["data"] + out.decode()).split()
        assert lines == [str(i) for i in range(1, 31)], lines
        assert [e["type"] for e in events if e["type"] not in ("stdout", "keepalive")] == ["exit"], events
        assert events[-1]["exit_code"] == 0
    finally:
        api.delete(sbid)
