"""Shared machinery of the end-to-end tests: a real spaced, an HTTP client, the CLI.

The suite drives build/spaced, build/space and build/space-agent exactly as a
user would: over the HTTP API on a Unix socket (or TCP with a token), and
through the `space` command. It builds nothing (`make e2e` does), and it
never touches the system's own spaced: every daemon it starts has its own
state directory and socket under /tmp.

Fixtures:
  spaced     the session's daemon (a Daemon); started once, stopped at the end,
             and every sandbox it still has is deleted first
  api        an Api client bound to that daemon's socket
  sandbox    a fresh sandbox id for one test, deleted after it
  neighbour  one sandbox shared by the whole session, to show that a bad
             request elsewhere leaves other sandboxes working
  cli        runs build/space against the session's daemon
  make_daemon  a factory of private daemons (own state dir), cleaned up after
             the test, for tests that kill, restart or reconfigure spaced

Synchronisation is always a read until an event or a poll until a condition,
each with a deadline; no test sleeps to let something happen.

Run: /usr/bin/python3 -m pytest -q tests/e2e
"""

import functools
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))

from spacetest import (  # noqa: E402,F401  (re-exported to the tests)
    AGENT, IO_TIMEOUT, ROOT, SPACE, SPACED, Api, ApiError, Stream, collect, event_bytes, free_port, mounts_under, q,
    result_bytes, spaced_survives, wait_until)
import spacetest  # noqa: E402

Daemon = functools.partial(spacetest.Daemon, prefix="space-e2e-")

# Under SPACE_TEST_ISOLATION=microvm (make e2e-vm) every sandbox is a microVM; a test of what
# only gVisor has, or that checks the operator's default kind, is skipped, saying why.
MICROVM = spacetest.ISOLATION == "microvm"


def gvisor_only(why):
    return pytest.mark.skipif(MICROVM, reason=f"gVisor only: {why}")


# --------------------------------------------------------------------------
# fixtures


@pytest.fixture(scope="session")
def spaced():
    for binary in (SPACED, SPACE, AGENT):
        if not os.access(binary, os.X_OK):
            pytest.exit(f"{binary} is missing: run `make` (or `make e2e`) first", returncode=2)
    d = Daemon()
    try:
        d.start()
        yield d
    finally:
        d.cleanup()


@pytest.fixture(scope="session")
def api(spaced):
    return spaced.api


@pytest.fixture
def sandbox(api):
    sbid = api.create()
    yield sbid
    api.delete(sbid)


@pytest.fixture(scope="session")
def neighbour(api):
    sbid = api.create()
    yield sbid
    api.delete(sbid)


def assert_alive(api, sbid):
    """The daemon answers and sandbox sbid still runs commands."""
    status, body = api.json("GET", "/v1/health")
    assert status == 200 and body["status"] == "ok"
    res = api.exec(sbid, ["echo", "alive"])
    assert res["exit_code"] == 0 and res["stdout"] == "alive\n", res


def wait_usable(api, sbid, timeout=60):
    """Polls until sbid runs commands; 503 (agent not connected yet) is the only answer tolerated."""
    def ready():
        status, body = api.json("POST", f"/v1/sandboxes/{sbid}/exec", {"cmd": ["true"]})
        assert status in (200, 503), (status, body)
        return status == 200
    wait_until(ready, timeout, f"sandbox {sbid}'s agent to be reachable", interval=0.1)


class Cli:
    """Runs build/space with SPACE_HOST pointing at a daemon."""

    def __init__(self, host, token=None):
        self.host = host
        self.token = token

    def env(self, extra=None):
        env = dict(os.environ)
        env.pop("SPACE_TOKEN", None)
        env["SPACE_HOST"] = self.host
        if self.token:
            env["SPACE_TOKEN"] = self.token
        env.update(extra or {})
        return env

    def __call__(self, *args, input=None, env=None, cwd=None, timeout=IO_TIMEOUT, text=True):
        return subprocess.run([SPACE, *args], input=input, capture_output=True, env=self.env(env),
                              cwd=cwd, timeout=timeout, text=text)

    def popen(self, *args, env=None, **kw):
        return subprocess.Popen([SPACE, *args], env=self.env(env), **kw)


@pytest.fixture(scope="session")
def cli(spaced):
    return Cli(f"unix://{spaced.socket}")


@pytest.fixture
def make_daemon():
    """Starts private daemons (own state dir) for one test; each is cleaned up after it."""
    made = []

    def make(**kw):
        d = Daemon(**kw)
        made.append(d)
        return d.start()

    yield make
    for d in made:
        d.cleanup()

