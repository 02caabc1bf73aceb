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

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))

import spacetest  # noqa: E402
from spacetest import AGENT, ROOT, SPACED, free_port, spaced_survives, wait_until  # noqa: E402,F401  (re-exported)

SDK = os.path.join(ROOT, "sdk", "python")
sys.path.insert(0, SDK)

import space  # noqa: E402  (the SDK under test, from the tree)


class Daemon(spacetest.Daemon):
    """The session's spaced, with a TCP listener and a token for it besides the Unix socket."""

    def __init__(self):
        self.port = free_port()
        super().__init__(listen=f"127.0.0.1:{self.port}", prefix="sdk-test-spaced-")
        self.tcp_token = None

    @property
    def host(self):
        """SPACE_HOST for the Unix socket."""
        return "unix://" + self.socket

    @property
    def tcp_host(self):
        """SPACE_HOST for the TCP listener (needs tcp_token)."""
        return f"http://127.0.0.1:{self.port}"

    def start(self, deadline=spacetest.START_DEADLINE):
        super().start(deadline)
        self.tcp_token = self.token()
        return self


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


@pytest.fixture
def sandbox(spaced):
    sb = space.Sandbox.create()
    yield sb
    sb.kill()


@pytest.fixture(name="wait_until")
def wait_until_fixture():
    return wait_until
