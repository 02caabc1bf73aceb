"""Shared machinery of the Python SDK tests: a private spaced and the SDK bound to it.

The suite drives sdk/python (imported from the tree, not installed) against a
real build/spaced started for the session with its own state directory,
Unix socket and a TCP listener with a token, so the system's own spaced is
never touched. It builds nothing: run `make` first.

Fixtures:
  spaced    the session's daemon (a Daemon); every sandbox it still has is
            deleted at the end, then it is stopped and its leftovers removed
  sandbox   a fresh space.Sandbox for one test, killed after it
  wait_until(cond, timeout, what)  polls until cond() is true, with a deadline

SPACE_TEST_KEEP_LOG=PATH keeps a copy of the daemon's log at PATH.
SPACE_HOST points at the session's socket for the whole session (and
SPACE_TOKEN is unset), so the SDK's defaults reach the private daemon.
Synchronisation is always a poll with a deadline or a read until an event;
no test sleeps to let something happen, and no test asserts a duration.

Run: /usr/bin/python3 -m pytest -q tests/sdk
"""

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SDK = os.path.join(ROOT, "sdk", "python")
BUILD = os.path.join(ROOT, "build")
SPACED = os.path.join(BUILD, "spaced")
AGENT = os.path.join(BUILD, "space-agent")
START_DEADLINE = 15 * 60   # a fresh machine builds the default template at start

sys.path.insert(0, SDK)

import space  # noqa: E402  (the SDK under test, from the tree)


def wait_until(cond, timeout, what, interval=0.05):
    """Polls cond() until it returns a true value, which is returned; fails at the deadline."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = cond()
        if last:
            return last
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what} (last: {last!r})")
        time.sleep(interval)


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class _Unix(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("space", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


class Daemon:
    """One build/spaced with its own state directory, socket and TCP listener."""

    def __init__(self):
        self.state_dir = tempfile.mkdtemp(prefix="sdk-test-spaced-")
        self.socket = os.path.join(self.state_dir, "space.sock")
        self.port = free_port()
        self.log_path = os.path.join(self.state_dir, "spaced.log")
        self.proc = None
        self.token = None

    @property
    def host(self):
        """SPACE_HOST for the Unix socket."""
        return "unix://" + self.socket

    @property
    def tcp_host(self):
        """SPACE_HOST for the TCP listener (needs the token)."""
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [SPACED, "--state-dir", self.state_dir, "--socket", self.socket, "--agent", AGENT,
             "--listen", f"127.0.0.1:{self.port}"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=ROOT)
        log.close()
        wait_until(self.healthy, START_DEADLINE, f"spaced on {self.socket} to answer /v1/health", interval=0.1)
        r = subprocess.run([SPACED, "--state-dir", self.state_dir, "token", "create"], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        self.token = r.stdout.strip()
        return self

    def log_tail(self, n=30):
        try:
            with open(self.log_path, "rb") as f:
                return b"".join(f.readlines()[-n:]).decode(errors="replace")
        except OSError:
            return ""

    def raw(self, method, path, timeout=30):
        """(status, decoded body) of a request made without the SDK."""
        c = _Unix(self.socket, timeout)
        try:
            c.request(method, path)
            r = c.getresponse()
            body = r.read()
            return r.status, (json.loads(body) if body else None)
        finally:
            c.close()

    def healthy(self):
        if self.proc.poll() is not None:
            pytest.exit(f"spaced exited with status {self.proc.returncode}:\n{self.log_tail()}", returncode=2)
        try:
            status, body = self.raw("GET", "/v1/health", timeout=5)
        except (OSError, http.client.HTTPException, ValueError):
            return False
        return status == 200 and body.get("status") == "ok"

    def cleanup(self):
        """Deletes every sandbox and snapshot, stops spaced, removes containers, mounts and files."""
        if self.proc and self.proc.poll() is None:
            try:
                for sb in self.raw("GET", "/v1/sandboxes")[1].get("sandboxes", []):
                    try:
                        self.raw("DELETE", f"/v1/sandboxes/{sb['id']}", timeout=120)
                    except (OSError, http.client.HTTPException, ValueError):
                        pass
                for snap in self.raw("GET", "/v1/snapshots")[1].get("snapshots", []):
                    try:
                        self.raw("DELETE", f"/v1/snapshots/{snap['id']}", timeout=120)
                    except (OSError, http.client.HTTPException, ValueError):
                        pass
            except (OSError, http.client.HTTPException, ValueError, AttributeError):
                pass
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        root = os.path.join(self.state_dir, "runsc")
        if os.path.isdir(root):
            r = subprocess.run(["runsc", "--root", root, "list", "-quiet"], capture_output=True, text=True)
            for cid in r.stdout.split():
                subprocess.run(["runsc", "--root", root, "kill", cid, "KILL"], capture_output=True)
                subprocess.run(["runsc", "--root", root, "delete", "--force", cid], capture_output=True)
        keep = os.environ.get("SPACE_TEST_KEEP_LOG")
        if keep:
            shutil.copyfile(self.log_path, keep)
        for mnt in mounts_under(self.state_dir):
            subprocess.run(["umount", "-l", mnt], capture_output=True)
        if not mounts_under(self.state_dir):
            shutil.rmtree(self.state_dir, ignore_errors=True)


def mounts_under(d):
    """Mount points at or below d, deepest first."""
    d = os.path.realpath(d)
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4].replace("\\040", " ")
            if mp == d or mp.startswith(d + "/"):
                found.append(mp)
    return sorted(found, key=len, reverse=True)


@pytest.fixture(scope="session")
def spaced():
    for binary in (SPACED, AGENT):
        if not os.access(binary, os.X_OK):
            pytest.exit(f"{binary} is missing: run `make` first", returncode=2)
    d = Daemon()
    saved = {k: os.environ.get(k) for k in ("SPACE_HOST", "SPACE_TOKEN")}
    try:
        d.start()
        os.environ["SPACE_HOST"] = d.host
        os.environ.pop("SPACE_TOKEN", None)
        yield d
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        d.cleanup()


@pytest.fixture(autouse=True)
def spaced_survives(request):
    """After every test that used the daemon: it must still be running."""
    yield
    if "spaced" in request.fixturenames:
        d = request.getfixturevalue("spaced")
        if d.proc.poll() is not None:
            pytest.fail(f"spaced died (status {d.proc.returncode}) during this test:\n{d.log_tail()}")


@pytest.fixture
def sandbox(spaced):
    sb = space.Sandbox.create()
    yield sb
    sb.kill()


@pytest.fixture(name="wait_until")
def wait_until_fixture():
    return wait_until
