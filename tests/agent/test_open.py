"""H_OPEN on the agent's Unix socket: a connection that starts over in place.

The virtio-serial port of a microVM has no connections of its own, so there the host opens
each one with H_OPEN (tests/vm boots a guest for that). The message means the same on any
transport, so its effects on the agent's state are checked here, where they are quick to
reach: A_OPEN with the host's nonce comes first and A_HELLO right after, with the same
boot; what belonged to the old connection (a download in progress) is dropped; processes
and their output are kept; a malformed H_OPEN is a protocol error like any other.

Run: /usr/bin/python3 -m pytest tests/agent
"""

import os
import struct

from test_agent import P, agent, host  # noqa: F401  (the fixtures: an agent and its host end)


def open_again(host, nonce):
    host.send("H_OPEN", 0, nonce)
    t, chan, p = host.next(chan=0)
    assert (t, p) == ("A_OPEN", nonce)
    t, chan, p = host.next(chan=0)
    assert t == "A_HELLO"
    version, max_pid, boot_id, features, _ = struct.unpack("<IIQII", p)
    return dict(version=version, max_pid=max_pid, boot_id=boot_id)


def test_open_answers_with_the_nonce_then_hello(host):
    nonce = os.urandom(8)
    hello = open_again(host, nonce)
    assert hello["boot_id"] == host.hello["boot_id"]
    assert hello["version"] == P["PROTO_VERSION"]
    host.ping()


def test_open_drops_the_old_connections_download(agent, host):
    path = os.path.join(agent.tmp, "big")
    with open(path, "wb") as f:
        f.write(b"x" * (P["WINDOW"] * 3))
    tag = host.request("H_FREAD", path.encode() + b"\0")
    host.expect("A_STAT", tag)
    got = 0
    while got < P["WINDOW"]:  # the agent sends one window, then waits for credit
        t, _, p = host.next(tag)
        assert t == "A_DATA"
        got += len(p)
    open_again(host, os.urandom(8))
    host.send("H_CREDIT", tag, struct.pack("<I", P["WINDOW"]))
    host.ping()  # answered after anything the credit could have caused
    assert host.quiet(tag, 0.5), "the old connection's download went on"


def test_open_keeps_processes_and_their_output(host):
    pid = host.exec(["/bin/sh", "-c", "read x; echo got $x"], stdin=True)
    hello = open_again(host, os.urandom(8))
    assert hello["max_pid"] >= pid
    host.send("H_STDIN", pid, b"it\n")
    out, _err, code, _signo, _flags = host.collect(pid)
    assert (out, code) == (b"got it\n", 0)


def test_malformed_open_is_a_protocol_error(agent, host):
    host.send("H_OPEN", 5, os.urandom(8))  # not on channel 0
    host.expect_eof()
    again = agent.accept()
    assert again.hello["boot_id"] == host.hello["boot_id"]
    host2 = again
    host2.send("H_OPEN", 0, b"short")  # less than its fixed part
    host2.expect_eof()
    agent.accept().ping()
