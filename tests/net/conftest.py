"""The network suite: sandboxes' networks against a made-up internet (tests/support/nettopo.py).

The session makes two network namespaces, `host` and `inet`, and runs its spaced inside
`host` (nsenter), with the operator's settings the tests check: the shipped default egress
(open) and one permitted private range. Nothing any sandbox sends can leave the two
namespaces: they have no route to anything else (tests/README.md). The test process itself
stays in the machine's namespace: it talks to spaced over the Unix socket, and runs what must
run beside spaced (a client of a sandbox's address) through Topology.run.

Fixtures:
  topo     the namespaces and their servers
  spaced   the session's daemon, inside topo.host
  api      its API client
  probe    probe(sbid, targets) -> {target: "ok <body>" | "refused" | "timeout" | "error ..."}:
           a TCP connection and an HTTP GET from inside the sandbox to each HOST:PORT

Run: /usr/bin/python3 -m pytest -q tests/net   (SPACE_TEST_ISOLATION=microvm for microVMs)
"""

import functools
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))

import nettopo  # noqa: E402
import spacetest  # noqa: E402
from spacetest import SPACE, SPACED, AGENT, wait_until  # noqa: E402,F401

MICROVM = spacetest.ISOLATION == "microvm"
# What spaced decides before any sandbox's kind matters (parsing, the CLI and SDK, the proxy's
# routing and tokens, the resolver's decisions) runs under gVisor only: `make net-test-vm`
# spends its time on what differs for a microVM (its tap, its kernel's stack, its image).
PROXY_PORT = 18080  # inside the suite's own namespace: no other program's port


class NetDaemon(spacetest.Daemon):
    """A spaced that runs inside the topology's host namespace."""

    def __init__(self, topo, **kw):
        super().__init__(prefix="space-net-", **kw)
        self.topo = topo

    def argv(self):
        return ["nsenter", f"--net={self.topo.host_path}"] + super().argv()


@pytest.fixture(scope="session")
def topo():
    t = nettopo.Topology(f"spnet{os.getpid() % 100000}")
    yield t
    t.close()


@pytest.fixture(scope="session")
def spaced(topo):
    for binary in (SPACED, SPACE, AGENT):
        if not os.access(binary, os.X_OK):
            pytest.exit(f"{binary} is missing: run `make` first", returncode=2)
    d = NetDaemon(topo, args=["--default-egress", "open", "--egress-permit", nettopo.PERMIT_RANGE,
                              "--proxy-listen", f"127.0.0.1:{PROXY_PORT}", "--dns-upstream", nettopo.DNS,
                              # the proxy's idle connections closed soon enough for a test to see it
                              "--proxy-idle-timeout", "10"])
    try:
        d.start()
        yield d
    finally:
        d.cleanup()


@pytest.fixture(scope="session")
def api(spaced):
    return spaced.api


PROBE = r"""
import json, socket, sys
out = {}
for t in sys.argv[1:]:
    host, port = t.rsplit(":", 1)
    s = socket.socket()
    s.settimeout(float(TIMEOUT))
    try:
        s.connect((host, int(port)))
        s.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
        data = b""
        while True:
            b = s.recv(4096)
            if not b:
                break
            data += b
        out[t] = "ok " + data.split(b"\r\n\r\n", 1)[-1].decode(errors="replace")
    except ConnectionRefusedError:
        out[t] = "refused"
    except socket.timeout:
        out[t] = "timeout"
    except OSError as e:
        out[t] = "error %s" % e
    finally:
        s.close()
print(json.dumps(out))
"""


def probe_from(api, sbid, targets, timeout=3):
    res = api.exec(sbid, ["python3", "-c", PROBE.replace("TIMEOUT", str(timeout)), *targets], timeout=120)
    assert res["exit_code"] == 0, res
    return json.loads(res["stdout"])


@pytest.fixture
def probe(api):
    return functools.partial(probe_from, api)


@pytest.fixture
def make_sandbox(api):
    made = []

    def make(**fields):
        sbid = api.create(**fields)
        made.append(sbid)
        return sbid

    yield make
    for sbid in made:
        api.delete(sbid)
