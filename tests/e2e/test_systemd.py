"""spaced under a service manager (docs/spaced.md#under-systemd): READY=1 on NOTIFY_SOCKET once
its API answers, STATUS= lines of what it serves, STOPPING=1 when a SIGTERM stops it; and log
lines with sd-daemon(3) priorities when its stderr is the journal's stream (JOURNAL_STREAM).

The test is the service manager: it binds the Unix datagram socket NOTIFY_SOCKET names and
reads what spaced sends there, as systemd does for a Type=notify unit."""
import os
import re
import shutil
import signal
import socket
import tempfile
import time

import pytest

from conftest import AGENT, Daemon

NOTIFY_DEADLINE = 15 * 60  # the first start on a machine builds the default template
READY_AFTER_API = 60        # READY=1 follows the API's start at once: this is a deadline, no measure
READ_SLICE = 0.5            # a read's timeout, between looks at spaced and at the deadline


def parse(datagram):
    """sd_notify's "KEY=VALUE" lines as a dict."""
    return dict(line.split("=", 1) for line in datagram.decode().splitlines() if "=" in line)


def read_until(sock, daemon, wanted, deadline=NOTIFY_DEADLINE, idle=None):
    """The messages read from sock up to the first for which wanted(message) holds, that one last.
    Fails if spaced exits first with nothing more to read, or at the deadline; idle() is called
    whenever a read times out."""
    got, end = [], time.monotonic() + deadline
    sock.settimeout(READ_SLICE)
    while time.monotonic() < end:
        try:
            msg = parse(sock.recv(4096))
        except socket.timeout:
            if not daemon.alive():
                pytest.fail(f"spaced exited ({daemon.proc.returncode}) after {got}:\n{daemon.log_tail()}")
            if idle:
                idle()
            continue
        got.append(msg)
        if wanted(msg):
            return got
    pytest.fail(f"no such message within {deadline} s; read {got}")


@pytest.fixture
def notify(tmp_path):
    """(path, socket): the datagram socket spaced is told of in NOTIFY_SOCKET."""
    path = str(tmp_path / "notify")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
    s.bind(path)
    yield path, s
    s.close()


def test_ready_once_the_api_answers_status_and_stopping_at_sigterm(notify):
    path, sock = notify
    d = Daemon(env={"NOTIFY_SOCKET": path})
    try:
        d.start(wait=False)
        answered = []

        def api_started():
            """From when the API answers, READY=1 has READY_AFTER_API seconds to come: a spaced
            that never says it fails then, not at the start's long deadline."""
            if not answered and d.healthy():
                answered.append(time.monotonic())
            if answered and time.monotonic() > answered[0] + READY_AFTER_API:
                pytest.fail(f"the API answers, and no READY=1 came within {READY_AFTER_API} s")

        before = read_until(sock, d, lambda m: m.get("READY") == "1", idle=api_started)
        # asked once, right after READY=1 is read: the API answers already, nothing polled
        status, body = d.api.json("GET", "/v1/health", timeout=30)
        assert (status, body.get("status")) == (200, "ok"), body
        ready = before[-1]
        assert ready["MAINPID"] == str(d.proc.pid), ready
        assert ready["STATUS"] == "serving: 0 sandboxes (0 running, 0 paused, 0 suspended), 0 warm in pools"
        assert not any("READY" in m for m in before[:-1]), before
        assert any(m.get("STATUS", "").startswith("preparing the templates") for m in before[:-1]), before

        # the status follows what spaced serves
        sbid = d.api.create()
        read_until(sock, d, lambda m: m.get("STATUS", "").startswith("serving: 1 sandboxes (1 running"), 120)
        d.api.delete(sbid)
        read_until(sock, d, lambda m: m.get("STATUS", "").startswith("serving: 0 sandboxes"), 120)

        d.proc.send_signal(signal.SIGTERM)
        stopping = read_until(sock, d, lambda m: "STOPPING" in m, 120)[-1]
        assert stopping["STOPPING"] == "1" and "sandboxes keep running" in stopping["STATUS"], stopping
        assert d.proc.wait(timeout=120) == 0
    finally:
        d.cleanup()


# "<N>LEVEL TEXT", N the level's sd-daemon priority; or the time first, as on a terminal
JOURNAL_LINE = re.compile(r"^<(\d)>(info|warn|error) ")
STAMPED_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (info|warn|error) ")
PRIORITY = {"error": "3", "warn": "4", "info": "6"}


@pytest.mark.parametrize("same_file", [True, False], ids=["journal", "redirected"])
def test_log_lines_carry_priorities_on_the_journal_stream(make_daemon, tmp_path, same_file):
    """JOURNAL_STREAM names the device and inode of spaced's stderr: its lines start with their
    priority. Naming another file (stderr redirected since) leaves the usual stamped lines."""
    # an agent alone in its folder: spaced warns that the shim and space-build are not beside it
    agent = str(tmp_path / "space-agent")
    shutil.copy(AGENT, agent)
    state = tempfile.mkdtemp(prefix="space-e2e-")
    log = os.path.join(state, "spaced.log")
    open(log, "ab").close()
    st = os.stat(log if same_file else str(tmp_path))
    d = make_daemon(state_dir=state, agent=agent, env={"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"})
    d.stop()
    with open(d.log_path) as f:
        lines = [line for line in f if line.strip()]
    listening = [line for line in lines if " listening on " in line]
    missing = [line for line in lines if "libspace-shim.so is missing" in line]
    assert len(listening) == 1 and len(missing) == 1, lines
    for line in listening + missing:
        if same_file:
            m = JOURNAL_LINE.match(line)
            assert m and m.group(1) == PRIORITY[m.group(2)], line
        else:
            assert STAMPED_LINE.match(line), line
    if same_file:
        assert listening[0].startswith("<6>info spaced ") and missing[0].startswith("<4>warn "), lines
