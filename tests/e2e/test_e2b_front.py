"""The E2B front as a process of spaced's (docs/e2b.md): `--e2b-listen` serves on its port,
a taken port is spaced's error at its start, a front that dies is started again on the same
port, and the front ends with spaced. (What it serves is tests/e2b's, through E2B's own SDK.)

spaced's bookkeeping, the same for every kind: gVisor only.
"""

import os
import signal
import socket
import subprocess
import urllib.request

from conftest import Daemon, free_port, wait_until, gvisor_only

pytestmark = gvisor_only("the front's process, the same for every kind")


def front_pids(port):
    """The pids of space-e2b processes serving the given port."""
    out = subprocess.run(["pgrep", "-f", f"space-e2b --listen-fd 3 --name 127.0.0.1:{port} "],
                         capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def healthy(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as r:
            return r.status == 200
    except OSError:
        return False


def test_the_front_serves_comes_back_when_killed_and_ends_with_spaced(make_daemon):
    port = free_port()
    d = make_daemon(args=["--e2b-listen", f"127.0.0.1:{port}"])
    wait_until(lambda: healthy(port), 60, "the E2B front to answer")
    [first] = front_pids(port)
    os.kill(first, signal.SIGKILL)
    wait_until(lambda: front_pids(port) and front_pids(port) != [first] and healthy(port), 60,
               "spaced to start the front again")
    assert "the E2B front ended; starting it again" in open(d.log_path).read()
    d.kill(signal.SIGKILL)
    wait_until(lambda: not front_pids(port), 60, "the front to end with spaced")
    assert not healthy(port)


def test_a_taken_port_stops_spaced_at_its_start():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        d = Daemon(args=["--e2b-listen", f"127.0.0.1:{port}"])
        try:
            r = subprocess.run(d.argv(), capture_output=True, text=True, timeout=120)
        finally:
            d.cleanup()
    assert r.returncode != 0
    assert f"cannot listen on 127.0.0.1:{port}" in r.stdout + r.stderr, r.stdout + r.stderr
