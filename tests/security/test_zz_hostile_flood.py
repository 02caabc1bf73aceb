"""An impostor on the agent's socket that ignores flow control (runs last: it
may leave spaced's heap larger, which would blur the memory measurements of
the other attempts).

spaced bounds its memory per process by the agent's credit: the agent sends
output only against credit, so at most one window (256 KiB) per process waits
in spaced while nobody reads. That holds only if the peer obeys. A process
inside the sandbox can take the agent's place (see test_agent_channel.py),
say hello, and send output frames for a made-up pid without credit; spaced
must then drop the connection rather than buffer without bound.
"""

import time

import pytest

from conftest import wait_until

FLOOD = r"""
import socket, struct, sys, time
def frame(t, chan, payload=b""):
    return struct.pack("<IBBHI", len(payload), t, 0, 0, chan) + payload
chunk = b"x" * 65536
limit, sent, conns = 512 << 20, 0, 0
t0 = time.time()
while sent < limit and time.time() - t0 < 60:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect("/.space/sock/agent.sock")
        conns += 1
        s.sendall(frame(64, 0, struct.pack("<IIQ", 1, 0, 1)))
        while sent < limit:
            s.sendall(frame(67, 4242 + conns % 7, chunk))
            sent += len(chunk)
    except OSError:
        pass
    s.close()
print("sent", sent >> 20, "MiB over", conns, "connections", flush=True)
"""

STOP_AT_KIB = 256 * 1024   # the test stops the attack once spaced has grown this much
BOUND_KIB = 64 * 1024      # what spaced may grow by (a few windows and frames)


def test_output_without_credit_cannot_grow_spaced(attack, spaced):
    """An impostor says hello and sends 64 KiB output frames for made-up pids, ignoring credit,
    reconnecting whenever the real agent takes the socket back (up to 512 MiB in 60 s).

    Expected: spaced refuses output beyond the credit it granted (drops the
    connection): its VmRSS grows by less than 64 MiB, and the sandbox serves
    again once the impostor stops.
    """
    base = spaced.rss_kib()
    pid = attack.api.ok("POST", f"/v1/sandboxes/{attack.id}/processes", {"cmd": ["python3", "-c", FLOOD]},
                        expect=(201,))["pid"]
    assert pid
    peak = base
    deadline = time.monotonic() + 90
    stopped = False
    while time.monotonic() < deadline:
        peak = max(peak, spaced.rss_kib())
        if peak - base > STOP_AT_KIB:
            # protect the machine: end the attack by removing the sandbox (needs no agent)
            attack.api.delete(attack.id)
            stopped = True
            break
        state, _ = attack.state()
        proc = attack.api.ok("GET", f"/v1/sandboxes/{attack.id}/processes/{pid}")
        if state != "running" or proc["state"] == "exited":
            break
        time.sleep(0.25)
    grew = peak - base
    attack.note(f"spaced VmRSS grew by {grew >> 10} MiB (from {base >> 10} MiB)"
                + ("; the test removed the sandbox to stop it" if stopped else ""))
    assert grew < BOUND_KIB, f"spaced grew by {grew >> 10} MiB"
